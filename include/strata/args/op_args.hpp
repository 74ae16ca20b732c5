// strata/args/op_args.hpp: scopes that carry their op's input shapes and a few small arguments.
//
// The arguments are a struct reflected with Boost.Hana. They cost nothing unless the session
// records them (`profiler_config::record_shapes`): the struct is then built and encoded into a
// few machine words (no text), which a thread-local cache looks up. Only an argument set not
// seen before goes out of line to strata's implementation, which renders it once into torch's
// "Input Shapes" text and a JSON fragment and interns the pair with the call site, so the
// record stays one 32-byte record pointing at a descriptor that carries them.
//
// This header pulls in Hana; neither the instrumentation header nor the profiler's does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string_view>
#include <type_traits>
#include <vector>

#include <boost/hana/accessors.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/define_struct.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/string.hpp>

#include "strata/args/shape.hpp"
#include "strata/config.hpp"
#include "strata/macros.hpp"
#include "strata/record.hpp"
#include "strata/scope.hpp"
#include "strata/detail/arg_encoding.hpp"
#include "strata/detail/record_path.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

template <class T>
inline constexpr bool is_string_arg_v =
    std::is_convertible_v<const T&, std::string_view> && !std::is_same_v<T, std::nullptr_t>;

/// Whether a member of an args struct can be recorded: a shape, a number, a bool, an enum or
/// a string.
template <class T>
inline constexpr bool is_recordable_arg_v = std::is_same_v<T, shape> || std::is_arithmetic_v<T> ||
                                            std::is_enum_v<T> || is_string_arg_v<T>;

/// Encodes one member (see arg_encoding.hpp for the layout).
template <class T>
STRATA_FORCE_INLINE void encode_arg(arg_words& out, const char* name, const T& v) noexcept {
  if constexpr (std::is_same_v<T, shape>) {
    out.put(arg_header(arg_kind::shape, v.rank()));
    out.put(reinterpret_cast<std::uintptr_t>(name));
    for (std::size_t i = 0; i < v.rank(); ++i) out.put(static_cast<std::uint64_t>(v[i]));
  } else if constexpr (std::is_same_v<T, bool>) {
    out.put(arg_header(arg_kind::boolean, 0));
    out.put(reinterpret_cast<std::uintptr_t>(name));
    out.put(v ? 1 : 0);
  } else if constexpr (std::is_floating_point_v<T>) {
    const bool single = sizeof(T) <= sizeof(float);
    out.put(arg_header(single ? arg_kind::float32 : arg_kind::float64, 0));
    out.put(reinterpret_cast<std::uintptr_t>(name));
    out.put(__builtin_bit_cast(std::uint64_t, static_cast<double>(v)));
  } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
    using U = std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>, std::type_identity<T>>;
    using I = typename U::type;
    out.put(arg_header(std::is_signed_v<I> ? arg_kind::signed_int : arg_kind::unsigned_int, 0));
    out.put(reinterpret_cast<std::uintptr_t>(name));
    out.put(static_cast<std::uint64_t>(static_cast<I>(v)));
  } else {
    const std::string_view text(v);
    out.put(arg_header(arg_kind::string, text.size()));
    out.put(reinterpret_cast<std::uintptr_t>(name));
    out.put_bytes(text.data(), text.size());
  }
}

/// Encodes every member of `args`, in declaration order.
template <class Args>
STRATA_FORCE_INLINE void encode_args(arg_words& out, const Args& args) noexcept {
  static_assert(boost::hana::Struct<Args>::value,
                "strata: an args struct must be reflected: declare its members with "
                "BOOST_HANA_DEFINE_STRUCT (or adapt it with BOOST_HANA_ADAPT_STRUCT)");
  namespace hana = boost::hana;
  hana::for_each(hana::accessors<Args>(), [&](auto member) {
    using T = std::remove_cvref_t<decltype(hana::second(member)(args))>;
    static_assert(is_recordable_arg_v<T>,
                  "strata: an args member must be a strata::shape, a number, a bool, an enum or "
                  "a string");
    encode_arg(out, hana::to<const char*>(hana::first(member)), hana::second(member)(args));
  });
}

/// The calling thread's cache of argument sets already interned: direct-mapped on the
/// encoding's hash, each entry keeping the words to compare. It lives on the heap, reached
/// through a constant-initialised thread-local pointer, so that a hit needs no TLS guard and
/// threads that never record arguments carry none of it. Sets longer than `max_words` words
/// (long strings) are not cached here; the implementation's shared table still interns them.
struct args_cache {
  static constexpr std::size_t slots = 128;
  static constexpr std::size_t max_words = 30;
  struct entry {
    std::uint64_t hash;
    const site* base;
    const site* result;
    std::uint64_t count;
    std::uint64_t words[max_words];
  };
  entry entries[slots];
};

inline thread_local constinit args_cache* tl_args_cache = nullptr;

/// Owns the calling thread's cache and frees it when the thread exits; touched only on a miss.
struct args_cache_owner {
  ~args_cache_owner() {
    delete tl_args_cache;
    tl_args_cache = nullptr;
  }
};

/// A set the cache did not hold: interned by the implementation, and remembered.
STRATA_NOINLINE inline const site* site_with_args_miss(const site* base, const arg_words& words,
                                                       std::uint64_t hash,
                                                       args_cache::entry* e) noexcept {
  const site* s = cold().intern_args(base, words.data(), words.size());
  if (e == nullptr && words.size() <= args_cache::max_words) {
    static thread_local args_cache_owner owner;  // registers the free at thread exit
    static_cast<void>(owner);
    tl_args_cache = new (std::nothrow) args_cache{};
    if (tl_args_cache == nullptr) return s;
    e = &tl_args_cache->entries[(hash ^ (hash >> 17)) & (args_cache::slots - 1)];
  }
  if (e != nullptr && words.size() <= args_cache::max_words) {
    e->hash = hash;
    e->base = base;
    e->result = s;
    e->count = words.size();
    std::memcpy(e->words, words.data(), words.size() * sizeof(std::uint64_t));
  }
  return s;
}

/// The descriptor of `base` carrying `args`. Never throws: a set that cannot be interned (out
/// of memory) is recorded without its arguments.
template <class Args>
const site* site_with_args(const site* base, const Args& args) noexcept {
  arg_words words;
  encode_args(words, args);
  if (words.overflowed()) [[unlikely]] {
    // Longer than the inline buffer (long strings): encoded again on the heap, not cached.
    try {
      std::vector<std::uint64_t> heap(words.size());
      arg_words big(heap.data(), heap.size());
      encode_args(big, args);
      return cold().intern_args(base, heap.data(), heap.size());
    } catch (...) {
      return base;
    }
  }
  const std::uint64_t hash = words.hash() ^ reinterpret_cast<std::uintptr_t>(base);
  args_cache* cache = tl_args_cache;
  args_cache::entry* e = nullptr;
  if (cache != nullptr) [[likely]] {
    e = &cache->entries[(hash ^ (hash >> 17)) & (args_cache::slots - 1)];
    if (e->hash == hash && e->base == base && e->count == words.size()) [[likely]] {
      std::size_t i = 0;
      while (i < words.size() && e->words[i] == words.data()[i]) ++i;
      if (i == words.size()) [[likely]]
        return e->result;
    }
  }
  return site_with_args_miss(base, words, hash, e);
}

/// What `scope`'s lazy constructor calls: the plain descriptor unless the session records
/// arguments; then `make_args()` is called and its result rendered.
template <class ArgsFn>
auto args_site_maker(const site* base, ArgsFn& make_args) noexcept {
  return [base, &make_args](std::uint32_t state) noexcept -> const site* {
    if (!records_args(state)) return base;
    try {
      return site_with_args(base, make_args());
    } catch (...) {
      return base;  // building the arguments threw (a shape of too many dimensions, say)
    }
  };
}

}  // namespace detail

/// Opens a scope on `where` (a static or interned scope descriptor) that records the arguments
/// `make_args()` returns (a Hana-reflected struct of `strata::shape`s, numbers, bools, enums
/// and strings) when the session records shapes. `make_args` is not called otherwise.
///
/// **Example**
/// ```cpp
/// struct mm_args {
///   BOOST_HANA_DEFINE_STRUCT(mm_args, (strata::shape, self), (strata::shape, mat2));
/// };
/// strata::scope s = strata::scope_with_args(mm_site, [&] { return mm_args{a.dims(), b.dims()}; });
/// ```
template <class ArgsFn>
STRATA_FORCE_INLINE scope scope_with_args(const site* where, ArgsFn&& make_args,
                                          std::uint64_t payload = 0) noexcept {
  return scope(detail::lazy_site, where->layer, detail::args_site_maker(where, make_args), payload);
}

}  // namespace v1
}  // namespace strata

#if STRATA_ENABLED
/// Records the enclosing block as a scope of `layer` named `name` (a string literal), with
/// the arguments `args` (an expression giving a Hana-reflected struct, evaluated only when
/// the session records shapes).
#define STRATA_SCOPE_ARGS(layer, name, args)                                                     \
  ::strata::scope STRATA_DETAIL_CAT(strata_scope_, __COUNTER__) =                                \
      ::strata::scope_with_args(STRATA_DETAIL_SITE(layer, ::strata::record_kind::scope, name), \
                                [&]() { return (args); })
#else
#define STRATA_SCOPE_ARGS(layer, name, args) static_cast<void>(0)
#endif
