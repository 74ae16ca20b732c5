// strata/clock.hpp: raw tick reads on the hot path, nanoseconds only at export.
//
// Where the CPU reports an invariant TSC (constant rate, keeps counting in deep sleep) the hot
// path reads it with one `rdtsc`; everywhere else it reads `std::chrono::steady_clock`, whose
// ticks are already nanoseconds. The choice is made once per process, before the first
// profiler starts, and never changes afterwards, so every tick of a trace has one meaning.
#pragma once

#include <cstdint>
#include <ctime>
#include <cstdlib>
#include <string_view>

#include "strata/config.hpp"
#include "strata/detail/record_path.hpp"

#if STRATA_DETAIL_HAS_TSC
#include <cpuid.h>
#endif

namespace strata {
inline namespace v1 {

/// A duration in microseconds. Any `std::chrono::duration` converts to it (truncated to whole
/// microseconds), and `count()` reads it as `std::chrono::microseconds::count()` does, so a
/// config field of this type reads like one of std::chrono::microseconds while the profiler's
/// header does without <chrono>.
///
/// **Example**
/// ```cpp
/// strata::interval min_span = std::chrono::milliseconds(2);  // count() == 2000
/// ```
class interval {
 public:
  constexpr interval() noexcept = default;
  template <class Duration>
    requires requires(const Duration& d) {
      d.count();
      Duration::period::num;
      Duration::period::den;
    }
  constexpr interval(const Duration& d) noexcept  // NOLINT(google-explicit-constructor): reads like chrono
      : us_(static_cast<std::int64_t>(static_cast<long double>(d.count()) * Duration::period::num *
                                      1000000.0L / Duration::period::den)) {}

  static constexpr interval from_us(std::int64_t us) noexcept {
    interval i;
    i.us_ = us;
    return i;
  }

  /// Microseconds.
  constexpr std::int64_t count() const noexcept { return us_; }
  friend constexpr bool operator==(interval, interval) noexcept = default;

 private:
  std::int64_t us_ = 0;
};

/// What a tick is: a TSC cycle or a steady_clock nanosecond.
enum class clock_source : std::uint8_t { steady_clock, tsc };

constexpr std::string_view clock_source_name(clock_source s) noexcept {
  return s == clock_source::tsc ? "tsc" : "steady_clock";
}

namespace detail {

/// std::chrono::steady_clock's nanoseconds, read as libstdc++ reads them on Linux
/// (CLOCK_MONOTONIC), without <chrono>: this header is part of every profiler's file.
inline std::int64_t steady_now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

/// CPUID leaf 0x80000007, EDX bit 8: the TSC runs at a constant rate in every P-, C- and
/// T-state, which is what makes it usable as a wall clock.
inline bool cpu_has_invariant_tsc() noexcept {
#if STRATA_DETAIL_HAS_TSC
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  // clang's <cpuid.h> returns int, GCC's unsigned: compare as unsigned under both.
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) < 0x80000007u) return false;
  __cpuid(0x80000007u, eax, ebx, ecx, edx);
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

}  // namespace detail

/// The hot-path clock. `now()` returns raw ticks; `clock_calibration` turns them into ns.
struct clock {
  /// Reads the process's tick source: one `rdtsc`, or `steady_clock` where the TSC is not
  /// invariant.
  static STRATA_FORCE_INLINE std::uint64_t now() noexcept { return detail::now_ticks(); }

  /// What the hot path's fast branch reads: `rdtsc` on x86, steady_clock elsewhere. A thread
  /// takes the fast branch only while `fast_ticks_are_process_ticks()`; otherwise its records
  /// go through the cold path, which reads `now()`.
  static STRATA_FORCE_INLINE std::uint64_t fast_ticks() noexcept { return detail::fast_ticks(); }

  /// Whether `fast_ticks()` reads the process's tick source (false on x86 when the TSC is not
  /// invariant or `STRATA_CLOCK=steady_clock` chose the portable clock).
  static bool fast_ticks_are_process_ticks() noexcept {
#if STRATA_DETAIL_HAS_TSC
    return detail::tsc_selected();
#else
    return true;
#endif
  }

  /// Nanoseconds on `std::chrono::steady_clock`, the time base of exported traces: what
  /// records made off the hot path (device tracks) carry instead of ticks.
  static std::int64_t steady_ns() noexcept { return detail::steady_now_ns(); }

  static clock_source source() noexcept {
    return detail::tsc_selected() ? clock_source::tsc : clock_source::steady_clock;
  }

  /// Chooses the tick source for the whole process; called before the first profiler starts
  /// recording. `STRATA_CLOCK=steady_clock` in the environment forces the portable clock.
  static void select_once() noexcept {
    static const bool chosen = [] {
      const char* forced = std::getenv("STRATA_CLOCK");
      const bool allow_tsc = forced == nullptr || std::string_view(forced) != "steady_clock";
      bool tsc = allow_tsc && detail::cpu_has_invariant_tsc();
      __atomic_store_n(&detail::use_tsc, tsc ? 1u : 0u, __ATOMIC_RELAXED);
      return tsc;
    }();
    static_cast<void>(chosen);
  }
};

/// A linear map from ticks to steady_clock nanoseconds, measured from two (tick, ns) pairs
/// taken far enough apart that the read jitter of either pair is negligible.
class clock_calibration {
 public:
  /// Takes the first anchor now.
  static clock_calibration begin() noexcept {
    clock_calibration c;
    c.source_ = clock::source();
    read_pair(c.anchor_ticks_, c.anchor_ns_);
    return c;
  }

  /// Takes the second anchor, waiting until at least `min_span` has passed since the first so
  /// that the rate is known to within about 1e-5.
  void finish(interval min_span = interval::from_us(2000)) noexcept {
    if (source_ == clock_source::steady_clock) {
      ns_per_tick_ = 1.0;
      return;
    }
    std::uint64_t ticks = 0;
    std::int64_t ns = 0;
    do {
      read_pair(ticks, ns);
    } while (ns - anchor_ns_ < min_span.count() * 1000);
    ns_per_tick_ = static_cast<double>(ns - anchor_ns_) /
                   static_cast<double>(ticks - anchor_ticks_);
  }

  /// Nanoseconds on the steady clock at which `ticks` was read.
  std::int64_t to_ns(std::uint64_t ticks) const noexcept {
    if (source_ == clock_source::steady_clock) return static_cast<std::int64_t>(ticks);
    // Rounded half away from zero. The sign is tested on the integer (a well-predicted branch:
    // a session's ticks follow the anchor), which costs the exporters less than a blend.
    const auto delta = static_cast<std::int64_t>(ticks - anchor_ticks_);
    const double ns = static_cast<double>(delta) * ns_per_tick_;
    return anchor_ns_ + static_cast<std::int64_t>(delta >= 0 ? ns + 0.5 : ns - 0.5);
  }

  clock_source source() const noexcept { return source_; }
  double ns_per_tick() const noexcept { return ns_per_tick_; }
  std::uint64_t anchor_ticks() const noexcept { return anchor_ticks_; }
  std::int64_t anchor_ns() const noexcept { return anchor_ns_; }

  /// A calibration measured elsewhere (a crash dump's header, say): `ticks` read at `ns` on
  /// the steady clock, `ns_per_tick` the rate.
  static clock_calibration from_parts(clock_source source, std::uint64_t ticks, std::int64_t ns,
                                      double ns_per_tick) noexcept {
    clock_calibration c;
    c.source_ = source;
    c.anchor_ticks_ = ticks;
    c.anchor_ns_ = ns;
    c.ns_per_tick_ = source == clock_source::steady_clock ? 1.0 : ns_per_tick;
    return c;
  }

 private:
  // One (ticks, ns) pair. A thread preempted between the two reads would pair a tick with a
  // much later time and skew every timestamp of the session (and the loop in finish() tends
  // to end on exactly such a read), so each tick read is bracketed by two steady_clock reads
  // and the tightest bracket of a few tries is kept.
  static void read_pair(std::uint64_t& ticks, std::int64_t& ns) noexcept {
    std::int64_t best = -1;
    for (int i = 0; i < 5; ++i) {
      const std::int64_t before = detail::steady_now_ns();
      const std::uint64_t t = clock::now();
      const std::int64_t after = detail::steady_now_ns();
      if (best < 0 || after - before < best) {
        best = after - before;
        ticks = t;
        ns = before + (after - before) / 2;
      }
    }
  }

  clock_source source_ = clock_source::steady_clock;
  std::uint64_t anchor_ticks_ = 0;
  std::int64_t anchor_ns_ = 0;
  double ns_per_tick_ = 1.0;
};

}  // namespace v1
}  // namespace strata
