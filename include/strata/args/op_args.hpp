// strata/args/op_args.hpp: scopes that carry their op's input shapes and a few small arguments.
//
// The arguments are a struct reflected with Boost.Hana. They cost nothing unless the session
// records them (`profiler_config::record_shapes`): the struct is then built, rendered once into
// torch's "Input Shapes" text and a JSON fragment, and the pair is interned with the call
// site, so the record stays one 32-byte record pointing at a descriptor that carries them. A
// thread-local cache makes a repeated argument set one render, one hash and one compare.
//
// This header pulls in Hana and {fmt}; the plain scope macros (strata/core/macros.hpp) do not.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <boost/hana/accessors.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/define_struct.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/string.hpp>
#include <fmt/format.h>

#include "strata/args/shape.hpp"
#include "strata/core/config.hpp"
#include "strata/core/intern.hpp"
#include "strata/core/macros.hpp"
#include "strata/core/scope.hpp"
#include "strata/core/site.hpp"
#include "strata/core/thread_registry.hpp"
#include "strata/export/json_escape.hpp"

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

/// Names the exporter writes itself; a member with one of them is written as `arg:<name>`.
inline bool is_reserved_arg_name(std::string_view n) noexcept {
  return n == "Input Dims" || n == "Input Names" || n == "correlation_id";
}

inline void append_dims(fmt::memory_buffer& out, const shape& s, std::string_view separator) {
  out.push_back('[');
  for (std::size_t i = 0; i < s.rank(); ++i) {
    if (i != 0) out.append(separator);
    fmt::format_to(std::back_inserter(out), "{}", s[i]);
  }
  out.push_back(']');
}

template <class T>
void append_arg_value(fmt::memory_buffer& out, const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    out.append(std::string_view(v ? "true" : "false"));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isfinite(v))
      fmt::format_to(std::back_inserter(out), "{}", v);
    else
      out.append(std::string_view("null"));  // JSON has no NaN or infinity
  } else if constexpr (std::is_enum_v<T>) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<std::underlying_type_t<T>>(v));
  } else if constexpr (std::is_arithmetic_v<T>) {
    fmt::format_to(std::back_inserter(out), "{}", v);
  } else {
    append_json_string(out, std::string_view(v));
  }
}

/// One rendering of an argument set.
struct rendered_args {
  fmt::memory_buffer input_shapes;  ///< torch's text: `[[4, 8], [8], []]`
  fmt::memory_buffer json;          ///< `"Input Dims":[[4,8],[8],[]],"Input Names":[...],...`
};

/// Renders `args`: every member gets an entry in the shapes (a shape its dimensions, anything
/// else `[]`, as torch shows non-tensor inputs); members that are not shapes are also written
/// by name with their value.
template <class Args>
void render_args(const Args& args, rendered_args& out) {
  static_assert(boost::hana::Struct<Args>::value,
                "strata: an args struct must be reflected: declare its members with "
                "BOOST_HANA_DEFINE_STRUCT (or adapt it with BOOST_HANA_ADAPT_STRUCT)");
  namespace hana = boost::hana;
  out.input_shapes.clear();
  out.json.clear();
  auto& sh = out.input_shapes;
  auto& js = out.json;
  bool first = true;

  sh.push_back('[');
  js.append(std::string_view("\"Input Dims\":["));
  hana::for_each(hana::accessors<Args>(), [&](auto member) {
    using T = std::remove_cvref_t<decltype(hana::second(member)(args))>;
    static_assert(is_recordable_arg_v<T>,
                  "strata: an args member must be a strata::shape, a number, a bool, an enum or "
                  "a string");
    if (!first) {
      sh.append(std::string_view(", "));
      js.push_back(',');
    }
    first = false;
    if constexpr (std::is_same_v<T, shape>) {
      append_dims(sh, hana::second(member)(args), ", ");
      append_dims(js, hana::second(member)(args), ",");
    } else {
      sh.append(std::string_view("[]"));
      js.append(std::string_view("[]"));
    }
  });
  sh.push_back(']');
  js.append(std::string_view("],\"Input Names\":["));
  first = true;
  hana::for_each(hana::accessors<Args>(), [&](auto member) {
    if (!first) js.push_back(',');
    first = false;
    append_json_string(js, hana::to<const char*>(hana::first(member)));
  });
  js.push_back(']');
  hana::for_each(hana::accessors<Args>(), [&](auto member) {
    using T = std::remove_cvref_t<decltype(hana::second(member)(args))>;
    if constexpr (!std::is_same_v<T, shape>) {
      const std::string_view name = hana::to<const char*>(hana::first(member));
      js.push_back(',');
      if (is_reserved_arg_name(name)) {
        fmt::memory_buffer renamed;
        renamed.append(std::string_view("arg:"));
        renamed.append(name);
        append_json_string(js, std::string_view(renamed.data(), renamed.size()));
      } else {
        append_json_string(js, name);
      }
      js.push_back(':');
      append_arg_value(js, hana::second(member)(args));
    }
  });
}

/// The descriptor of `base` carrying `args` (interned once per distinct argument set).
template <class Args>
const site* site_with_args(const site* base, const Args& args) {
  thread_local rendered_args buffer;  // reused: no allocation once it has grown
  render_args(args, buffer);
  return intern_args_cached(
      base, std::string_view(buffer.input_shapes.data(), buffer.input_shapes.size()),
      std::string_view(buffer.json.data(), buffer.json.size()));
}

/// What `scope`'s lazy constructor calls: the plain descriptor unless the session records
/// arguments; then `make_args()` is called and its result rendered.
template <class ArgsFn>
auto args_site_maker(const site* base, ArgsFn& make_args) noexcept {
  return [base, &make_args](std::uint32_t state) -> const site* {
    if (!records_args(state)) return base;
    return site_with_args(base, make_args());
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
  return scope(detail::lazy_site, where->where, detail::args_site_maker(where, make_args), payload);
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
