// strata/schedule.hpp: which steps a profiler records, as torch.profiler.schedule.
//
//   step:    0 .. skip_first-1 | wait      | warmup    | active ............ | wait | ...
//   action:  none              | none      | warmup    | record ... r&save   | none | ...
//            (skipped once)      └──────────── one cycle, `repeat` times (0: forever) ──┘
#pragma once

#include <cstdint>

namespace strata {
inline namespace v1 {

/// The steps `profiler::step()` records, with torch.profiler.schedule's parameters: after
/// `skip_first` steps, cycles of `wait` idle steps, `warmup` steps and `active` recorded steps,
/// `repeat` times (0: forever). `skip_first_wait` drops the wait steps of the first cycle
/// (which still counts as one of the `repeat` cycles).
///
/// `active == 0` (the default) means no schedule: the profiler records from `start()` to
/// `stop()`, like torch.profiler without a schedule. The other fields must then stay 0.
///
/// **Example**
/// ```cpp
/// strata::profiler prof({.output_dir = "out",
///                        .schedule = {.skip_first = 1, .wait = 1, .warmup = 1, .active = 2}});
/// ```
struct schedule {
  int skip_first = 0;
  int wait = 0;
  int warmup = 0;
  int active = 0;
  int repeat = 0;
  bool skip_first_wait = false;

  /// Whether this is a schedule at all (`active > 0`).
  constexpr bool enabled() const noexcept { return active > 0; }
};

/// What the profiler does during one step (torch.profiler.ProfilerAction).
enum class profiler_action : std::uint8_t {
  none = 0,             ///< not recording
  warmup = 1,           ///< about to record; strata has nothing to prepare, so nothing is recorded
  record = 2,           ///< recording
  record_and_save = 3,  ///< recording, and the window's trace is delivered when the step ends
};

/// True for `record` and `record_and_save`.
constexpr bool is_recording(profiler_action a) noexcept {
  return a == profiler_action::record || a == profiler_action::record_and_save;
}

/// The action of step `step` (0 is the step entered by `profiler::start()`) under `s`,
/// following torch.profiler.schedule: steps below `skip_first` are `none`; then, within each
/// cycle of `wait + warmup + active` steps, `none`, `warmup`, `record`, and `record_and_save`
/// for the cycle's last step; after `repeat` cycles (when `repeat > 0`), `none` forever.
/// Without a schedule (`active <= 0`) every step is `record`. A negative step is `none`.
constexpr profiler_action action_at(const schedule& s, std::int64_t step) noexcept {
  if (!s.enabled()) return profiler_action::record;
  if (step < 0 || step < s.skip_first) return profiler_action::none;
  const std::int64_t k = step - s.skip_first;
  const std::int64_t cycle = std::int64_t{s.wait} + s.warmup + s.active;
  // Which cycle and where in it; skipping the first wait shifts every step by `wait`, added to
  // the remainder rather than to k so that a step near the largest int64 does not overflow.
  std::int64_t q = k / cycle;
  std::int64_t m = k % cycle;
  if (s.skip_first_wait) {
    m += s.wait;
    if (m >= cycle) {  // only with wait > 0, so cycle >= 2 and q + 1 cannot overflow
      m -= cycle;
      ++q;
    }
  }
  if (s.repeat > 0 && q >= s.repeat) return profiler_action::none;
  if (m < s.wait) return profiler_action::none;
  if (m < std::int64_t{s.wait} + s.warmup) return profiler_action::warmup;
  if (m < cycle - 1) return profiler_action::record;
  return profiler_action::record_and_save;
}

namespace detail {

/// Raises `strata::error` naming the first field of `s` that is out of range (defined with the
/// implementation, detail/impl/profiler.hpp).
void check_schedule(const schedule& s);

}  // namespace detail

}  // namespace v1
}  // namespace strata
