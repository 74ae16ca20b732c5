// strata/scope.hpp: what instrumented code calls: the RAII scope, instants and counters,
// records with explicit times, run-time names, thread names, step marks and correlation ids.
//
// A scope asks the record path (strata/detail/record_path.hpp) how it records when it opens,
// reads the time, and stores one 32-byte record through the thread's cursor when it closes.
// Nothing here locks, allocates, copies a string or throws; and nothing here includes more than
// <cstdint> and <cstddef>.
#pragma once

#include <cstddef>
#include <cstdint>

#include "strata/config.hpp"
#include "strata/record.hpp"
#include "strata/detail/record_path.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// A run-time name without <string_view>: anything with `data()` and `size()` (std::string,
/// std::string_view, ...) or a NUL-terminated `const char*` (nullptr: the empty name).
struct name_ref {
  const char* data;
  std::size_t size;
};

template <class Name>
STRATA_FORCE_INLINE name_ref to_name_ref(const Name& name) noexcept {
  if constexpr (requires { name.data(); name.size(); }) {
    return {name.data(), static_cast<std::size_t>(name.size())};
  } else {
    const char* text = name;
    return {text != nullptr ? text : "", text != nullptr ? __builtin_strlen(text) : 0};
  }
}

/// Cold: the interned descriptor of a run-time name (never null).
template <class Name>
inline const site* intern_name(layer l, record_kind k, const Name& name) noexcept {
  const name_ref n = to_name_ref(name);
  return cold().intern(l, k, n.data, n.size);
}

/// Tag that selects the run-time-name constructor of `scope`.
struct dynamic_name_t {};
inline constexpr dynamic_name_t dynamic_name{};

/// Tag that selects the constructor of `scope` that makes its descriptor only when recording.
struct lazy_site_t {};
inline constexpr lazy_site_t lazy_site{};

/// The calling thread's descriptors that carry a FLOP count: direct-mapped on (site, count),
/// filled by the implementation on a miss (`cold_path_table::intern_flops`). Reached through a
/// constant-initialised thread-local pointer, so a hit needs no TLS guard and a thread that
/// never records a count carries none of it.
struct flops_cache {
  static constexpr std::size_t slots = 64;
  struct entry {
    const site* base;
    std::uint64_t flops;
    const site* result;
  };
  entry entries[slots];

  static std::size_t slot_of(const site* base, std::uint64_t flops) noexcept {
    const std::uint64_t h = (reinterpret_cast<std::uintptr_t>(base) >> 3) ^ (flops * 0x9e3779b97f4a7c15ull);
    return static_cast<std::size_t>(h ^ (h >> 32)) & (slots - 1);
  }
};

inline thread_local constinit flops_cache* tl_flops_cache = nullptr;

/// The descriptor of `base` carrying `flops` (never null): `base` itself when it carries that
/// count already; one look-up in the thread's cache once the pair has been seen.
inline const site* site_with_flops(const site* base, std::uint64_t flops) noexcept {
  if (flops == base->flops) return base;
  if (const flops_cache* c = tl_flops_cache; c != nullptr) [[likely]] {
    const flops_cache::entry& e = c->entries[flops_cache::slot_of(base, flops)];
    if (e.base == base && e.flops == flops) [[likely]]
      return e.result;
  }
  return cold().intern_flops(base, flops);
}

/// What `scope`'s lazy constructor calls for a scope with a FLOP count: `where` unless the
/// session records FLOPs; then `count()` is called and `where` with that count is recorded.
template <class CountFn>
STRATA_FORCE_INLINE auto flops_site_maker(const site* where, CountFn count) noexcept {
  return [where, count](std::uint32_t state) -> const site* {
    if (!records_flops(state)) return where;
    return site_with_flops(where, static_cast<std::uint64_t>(count()));
  };
}

}  // namespace detail

/// A scope's count of floating-point operations, as torch's `with_flops` shows them: what
/// selects the FLOP-carrying constructor of `scope` (a matmul of M×K by K×N: 2·M·N·K).
struct flop_count {
  std::uint64_t value = 0;
};

/// Records the interval between its construction and destruction on the calling thread.
/// Use it through `STRATA_SCOPE` and friends; it stays declared (as a no-op) when strata is
/// compiled out, so code that names it still compiles.
///
/// **Example**
/// ```cpp
/// static constexpr strata::site where{"load_weights", __FILE__, __LINE__,
///                                     strata::layer::user, strata::record_kind::scope};
/// { strata::scope s{&where}; load(); }
/// ```
class scope {
 public:
  /// Opens a scope for a static descriptor. `payload` is stored with the record (the
  /// correlation id of framework and runtime scopes).
  STRATA_FORCE_INLINE explicit scope(const site* where, std::uint64_t payload = 0) noexcept
      : where_(where), payload_(payload) {
#if STRATA_ENABLED
    mode_ = detail::open_mode(where->layer);
    if (mode_ != detail::record_mode::off) [[likely]]
      begin_ = detail::ticks_for(mode_);
#endif
  }

  /// Opens a scope whose descriptor is made only when the scope records: `make_site(state)`
  /// gets the state word (see `detail::records_args`) and returns the descriptor, or nullptr
  /// to record nothing; if it throws (a run-time name that cannot be built), nothing is
  /// recorded.
  /// The run-time-name and argument-carrying scopes are built on it.
  template <class SiteFn>
  STRATA_FORCE_INLINE scope(detail::lazy_site_t, layer l, SiteFn&& make_site,
                            std::uint64_t payload = 0) noexcept
      : payload_(payload) {
#if STRATA_ENABLED
    const detail::record_mode mode = detail::open_mode(l);
    if (mode != detail::record_mode::off) [[likely]] {
      try {
        where_ = make_site(detail::load_state());
        if (where_ != nullptr) {
          begin_ = detail::ticks_for(mode);
          mode_ = mode;
        }
      } catch (...) {
        // The name could not be made (out of memory building a run-time name): not recorded.
      }
    }
#else
    static_cast<void>(l);
    static_cast<void>(make_site);
#endif
  }

  /// Opens a scope on `where` that carries `flops` when the session records FLOPs
  /// (`profiler_config::with_flops`): the table's `Total FLOPs` column and the trace event's
  /// `args.flops`. Otherwise it records exactly what `scope{where, payload}` does.
  STRATA_FORCE_INLINE scope(const site* where, flop_count flops, std::uint64_t payload = 0) noexcept
      : scope(
            detail::lazy_site, where->layer,
            [where, flops](std::uint32_t state) noexcept {
              return detail::records_flops(state) ? detail::site_with_flops(where, flops.value) : where;
            },
            payload) {}

  /// Opens a scope whose name is only known at run time. `name` is a callable returning a
  /// string (anything with `data()` and `size()`, or a `const char*`); it is called only when
  /// the layer is captured, and the name is interned once per distinct value.
  template <class NameFn>
  STRATA_FORCE_INLINE scope(detail::dynamic_name_t, layer l, NameFn&& name,
                            std::uint64_t payload = 0) noexcept
      : scope(
            detail::lazy_site, l,
            [&](std::uint32_t) { return detail::intern_name(l, record_kind::scope, name()); },
            payload) {}

  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;

  STRATA_FORCE_INLINE ~scope() {
#if STRATA_ENABLED
    detail::close_record(mode_, begin_, where_, payload_);
#endif
  }

  /// Sets the FLOP count of this scope when it is known only inside it (the last call wins;
  /// 0: none). Does nothing unless the scope records and the session records FLOPs; then one
  /// look-up in the thread's cache once the (site, count) pair has been seen.
  ///
  /// **Example**
  /// ```cpp
  /// static constexpr strata::site where{"attention", __FILE__, __LINE__,
  ///                                     strata::layer::user, strata::record_kind::scope};
  /// strata::scope s{&where};
  /// s.set_flops(4 * 64 * 64 * 128);  // known once the sequence length is
  /// ```
  void set_flops(std::uint64_t flops) noexcept {
#if STRATA_ENABLED
    if (mode_ != detail::record_mode::off && detail::records_flops(detail::load_state()))
      where_ = detail::site_with_flops(where_, flops);
#else
    static_cast<void>(flops);
#endif
  }

  /// Sets the payload (correlation id) stored when the scope closes.
  void set_payload(std::uint64_t payload) noexcept { payload_ = payload; }
  /// Whether this scope will produce a record.
  bool active() const noexcept { return mode_ != detail::record_mode::off; }

 private:
  // Unused when STRATA_ENABLED=0, where the type stays only so that code naming it compiles.
  [[maybe_unused]] const site* where_ = nullptr;
  [[maybe_unused]] std::uint64_t payload_ = 0;
  [[maybe_unused]] std::uint64_t begin_ = 0;
  detail::record_mode mode_ = detail::record_mode::off;
};

namespace detail {

/// Records a point in time.
STRATA_FORCE_INLINE void emit_instant(const site* where, std::uint64_t payload = 0) noexcept {
#if STRATA_ENABLED
  const record_mode mode = open_mode(where->layer);
  if (mode != record_mode::off) [[likely]] {
    const std::uint64_t t = ticks_for(mode);
    push_record(t, t, where, payload);
  }
#else
  static_cast<void>(where);
  static_cast<void>(payload);
#endif
}

/// Records a counter sample; `value` is a callable, called only when the layer is captured.
template <class ValueFn>
STRATA_FORCE_INLINE void emit_counter(const site* where, ValueFn&& value) noexcept {
#if STRATA_ENABLED
  const record_mode mode = open_mode(where->layer);
  if (mode != record_mode::off) [[likely]] {
    const double v = static_cast<double>(value());
    push_record(ticks_for(mode), __builtin_bit_cast(std::uint64_t, v), where, 0);
  }
#else
  static_cast<void>(where);
  static_cast<void>(value);
#endif
}

/// Records an instant with a run-time name (interned once per distinct name).
template <class NameFn>
inline void emit_instant_dynamic(layer l, NameFn&& name) noexcept {
#if STRATA_ENABLED
  const site* where = nullptr;
  std::uint64_t t = 0;
  const auto make_site = [&]() noexcept -> const site* {
    try {
      return intern_name(l, record_kind::instant, name());
    } catch (...) {
      return nullptr;  // the name could not be built (out of memory): not recorded
    }
  };
  record_mode mode;
  open_record(l, make_site, mode, where, t);
  if (mode != record_mode::off && where != nullptr) push_record(t, t, where, 0);
#else
  static_cast<void>(l);
  static_cast<void>(name);
#endif
}

}  // namespace detail

/// Appends a record with explicit timestamps to the calling thread's buffer, when a session
/// runs and captures `where`'s layer: for a scope, the interval `[begin_ticks, end_ticks]`;
/// for an instant, the point `begin_ticks` (`end_ticks` is ignored). Ticks are
/// `strata::clock::now()` values, so the record can describe an interval measured earlier
/// (or by another component) on the same clock. Returns whether the record was taken; it is
/// not when the layer is not captured, for a counter site (use `STRATA_COUNTER`), for a scope
/// that ends before it begins, or when the buffer is full (then it is counted as lost).
/// A scope that begins before the session started is left out at collection, like a scope
/// that straddles two sessions. Cold path: costs what a scope costs, plus the checks.
///
/// **Example**
/// ```cpp
/// const strata::site* s = strata::intern(strata::layer::framework, "replayed op");
/// strata::append_record(s, begin, end);  // begin, end: earlier strata::clock::now() values
/// ```
inline bool append_record(const site* where, std::uint64_t begin_ticks, std::uint64_t end_ticks,
                          std::uint64_t payload = 0) noexcept {
#if STRATA_ENABLED
  if (where == nullptr || where->kind == record_kind::counter) return false;
  if (where->kind == record_kind::instant) end_ticks = begin_ticks;
  if (end_ticks < begin_ticks) return false;
  if (detail::open_mode(where->layer) == detail::record_mode::off) return false;
  return detail::push_record(begin_ticks, end_ticks, where, payload);
#else
  static_cast<void>(where);
  static_cast<void>(begin_ticks);
  static_cast<void>(end_ticks);
  static_cast<void>(payload);
  return false;
#endif
}

/// Names the calling thread in traces (Perfetto's thread name). `name` is a `const char*` or
/// anything with `data()` and `size()`; it is copied. Call it before or during a session.
template <class Name>
inline void set_thread_name(const Name& name) noexcept {
  const detail::name_ref n = detail::to_name_ref(name);
  detail::cold().set_thread_name(n.data, n.size);
}

/// Interns a run-time name once and returns its descriptor (never null). Keep it when the same
/// dynamic name is used in a hot loop, and open scopes on it directly: `strata::scope s{site};`
/// costs what a static-name scope costs, with no per-call hash.
///
/// **Example**
/// ```cpp
/// const strata::site* layer_site = strata::intern(strata::layer::framework, "layer " + std::to_string(i));
/// { strata::scope s{layer_site}; run_layer(i); }
/// ```
template <class Name>
inline const site* intern(layer l, const Name& name, record_kind k = record_kind::scope) noexcept {
  return detail::intern_name(l, k, name);
}

namespace detail {

/// STRATA_STEP(): a branch, and a call only while a profiler is started.
STRATA_FORCE_INLINE void mark_step() noexcept {
  if (__atomic_load_n(&profiler_started, __ATOMIC_RELAXED) != 0) [[unlikely]]
    cold().step();
}

}  // namespace detail

/// A fresh correlation id, never 0 (0 means "none" in a record's payload). Take one when a
/// framework op is dispatched and pass it to the scopes and submissions it causes; the trace
/// joins them with flow arrows and key_averages gives the device time to the op. One atomic
/// increment: call it per op, not per scope.
inline std::uint64_t new_correlation_id() noexcept {
  static constinit std::uint64_t last = 0;  // __atomic builtins: <atomic> is not light
  return __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
}

}  // namespace v1
}  // namespace strata
