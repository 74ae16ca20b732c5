// strata/core/interval.hpp: a duration in whole microseconds, for configuration fields.
#pragma once

#include <cstdint>

namespace strata {
inline namespace v1 {

/// A duration in microseconds. Any `std::chrono::duration` converts to it (truncated to whole
/// microseconds), and `count()` reads it as `std::chrono::microseconds::count()` does, so a
/// config field of this type reads like one of std::chrono::microseconds while the profiler's
/// header does without <chrono>.
///
/// **Example**
/// ```cpp
/// config.drain_interval = std::chrono::milliseconds(1);  // count() == 1000
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

}  // namespace v1
}  // namespace strata
