// strata/core/scope.hpp: the RAII scope and the one-shot records (instants, counters).
//
// This is all the hot path there is. A scope tests its thread's gate (one thread-local word),
// reads two timestamps, and stores one 32-byte record through the thread-local cursor when it
// closes. With the gate closed it reads the global state word, and only when a session captures
// its layer goes out of line (to take the thread's buffer, or to use the portable clock).
// Nothing here locks, allocates (after a thread's first record of a session), copies a string
// or throws.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>

#include "strata/core/clock.hpp"
#include "strata/core/config.hpp"
#include "strata/core/intern.hpp"
#include "strata/core/layer.hpp"
#include "strata/core/record.hpp"
#include "strata/core/site.hpp"
#include "strata/core/thread_registry.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// How a scope records: not at all, through the fast branch (its thread's gate was open), or
/// through the cold path (first record of the thread in the session, or the portable clock).
enum class scope_mode : std::uint8_t { off, fast, cold };

/// Cold: whether a record of `l` can be taken through the cold path now.
STRATA_FORCE_INLINE bool cold_path_records(layer l) noexcept {
  return session_captures(l) && prepare_to_record(l);
}

/// Cold: closes a scope opened through the cold path.
STRATA_NOINLINE inline void close_cold(std::uint64_t begin, const site* where,
                                       std::uint64_t payload) noexcept {
  push_record(begin, clock::now(), where, payload);
}

/// Cold: an instant through the cold path.
STRATA_NOINLINE inline void emit_instant_cold(const site* where, std::uint64_t payload) noexcept {
  if (!prepare_to_record(where->where)) return;
  const std::uint64_t t = clock::now();
  push_record(t, t, where, payload);
}

/// Tag that selects the run-time-name constructor of `scope`.
struct dynamic_name_t {};
inline constexpr dynamic_name_t dynamic_name{};

/// Tag that selects the constructor of `scope` that makes its descriptor only when recording.
struct lazy_site_t {};
inline constexpr lazy_site_t lazy_site{};

}  // namespace detail

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
    if (detail::gate_open(where->where)) [[likely]] {
      begin_ = clock::fast_ticks();
      mode_ = detail::scope_mode::fast;
    } else if (detail::cold_path_records(where->where)) [[unlikely]] {
      begin_ = clock::now();
      mode_ = detail::scope_mode::cold;
    }
#endif
  }

  /// Opens a scope whose descriptor is made only when the scope records: `make_site(state)`
  /// gets the state word (see `detail::records_args`) and returns the descriptor, or nullptr
  /// to record nothing; if it throws (out of memory while interning), nothing is recorded.
  /// The run-time-name and argument-carrying scopes are built on it.
  template <class SiteFn>
  STRATA_FORCE_INLINE scope(detail::lazy_site_t, layer l, SiteFn&& make_site,
                            std::uint64_t payload = 0) noexcept
      : payload_(payload) {
#if STRATA_ENABLED
    detail::scope_mode mode = detail::scope_mode::off;
    if (detail::gate_open(l)) [[likely]]
      mode = detail::scope_mode::fast;
    else if (detail::cold_path_records(l)) [[unlikely]]
      mode = detail::scope_mode::cold;
    if (mode != detail::scope_mode::off) {
      try {
        where_ = make_site(detail::load_state());
        if (where_ != nullptr) {
          begin_ = mode == detail::scope_mode::fast ? clock::fast_ticks() : clock::now();
          mode_ = mode;
        }
      } catch (...) {
        // The descriptor could not be made (out of memory): this scope is not recorded.
      }
    }
#else
    static_cast<void>(l);
    static_cast<void>(make_site);
#endif
  }

  /// Opens a scope whose name is only known at run time. `name` is a callable returning
  /// something convertible to `std::string_view`; it is called only when the layer is
  /// captured, and the name is interned once per distinct value.
  template <class NameFn>
  STRATA_FORCE_INLINE scope(detail::dynamic_name_t, layer l, NameFn&& name,
                            std::uint64_t payload = 0) noexcept
      : scope(
            detail::lazy_site, l,
            [&](std::uint32_t) {
              return detail::intern_cached(l, record_kind::scope, std::string_view(name()));
            },
            payload) {}

  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;

  STRATA_FORCE_INLINE ~scope() {
#if STRATA_ENABLED
    if (mode_ == detail::scope_mode::fast) [[likely]]
      detail::push_record(begin_, clock::fast_ticks(), where_, payload_);
    else if (mode_ == detail::scope_mode::cold) [[unlikely]]
      detail::close_cold(begin_, where_, payload_);
#endif
  }

  /// Sets the payload (correlation id) stored when the scope closes.
  void set_payload(std::uint64_t payload) noexcept { payload_ = payload; }
  /// Whether this scope will produce a record.
  bool active() const noexcept { return mode_ != detail::scope_mode::off; }

 private:
  // Unused when STRATA_ENABLED=0, where the type stays only so that code naming it compiles.
  [[maybe_unused]] const site* where_ = nullptr;
  [[maybe_unused]] std::uint64_t payload_ = 0;
  [[maybe_unused]] std::uint64_t begin_ = 0;
  detail::scope_mode mode_ = detail::scope_mode::off;
};

namespace detail {

/// Records a point in time.
STRATA_FORCE_INLINE void emit_instant(const site* where, std::uint64_t payload = 0) noexcept {
#if STRATA_ENABLED
  if (gate_open(where->where)) [[likely]] {
    const std::uint64_t t = clock::fast_ticks();
    push_record(t, t, where, payload);
  } else if (session_captures(where->where)) [[unlikely]] {
    emit_instant_cold(where, payload);
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
  if (gate_open(where->where)) [[likely]] {
    const double v = static_cast<double>(value());
    push_record(clock::fast_ticks(), std::bit_cast<std::uint64_t>(v), where, 0);
  } else if (cold_path_records(where->where)) [[unlikely]] {
    const double v = static_cast<double>(value());
    push_record(clock::now(), std::bit_cast<std::uint64_t>(v), where, 0);
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
  if (gate_open(l) || cold_path_records(l)) {
    try {
      const site* where = intern_cached(l, record_kind::instant, std::string_view(name()));
      const std::uint64_t t = clock::now();
      push_record(t, t, where, 0);
    } catch (...) {
    }
  }
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
  if (!detail::gate_open(where->where) && !detail::cold_path_records(where->where)) return false;
  return detail::push_record(begin_ticks, end_ticks, where, payload);
#else
  static_cast<void>(where);
  static_cast<void>(begin_ticks);
  static_cast<void>(end_ticks);
  static_cast<void>(payload);
  return false;
#endif
}

}  // namespace v1
}  // namespace strata
