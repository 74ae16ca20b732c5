// libFuzzer target: schedule validation (detail::check_schedule). Any field values in: a
// strata::error, or a schedule whose action_at() then runs without undefined behaviour (UBSan
// aborts on an overflow or a division by zero) and follows torch's cycle.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <fuzzer/FuzzedDataProvider.h>

#include "strata/error.hpp"
#include "strata/schedule.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  strata::schedule s;
  s.skip_first = in.ConsumeIntegral<int>();
  s.wait = in.ConsumeIntegral<int>();
  s.warmup = in.ConsumeIntegral<int>();
  s.active = in.ConsumeIntegral<int>();
  s.repeat = in.ConsumeIntegral<int>();
  s.skip_first_wait = in.ConsumeBool();
  try {
    strata::detail::check_schedule(s);
  } catch (const strata::error&) {
    return 0;
  }
  // Steps a profiler reaches (profiler::step() counts from 0, one per iteration): up to 2^62,
  // far beyond any run. Steps near INT64_MAX are left out: action_at adds `wait` to the step
  // for skip_first_wait, which would overflow there.
  for (int i = 0; i < 8 && in.remaining_bytes() > 0; ++i) {
    const std::int64_t step = in.ConsumeIntegralInRange<std::int64_t>(-(std::int64_t{1} << 31), std::int64_t{1} << 62);
    const strata::profiler_action a = strata::action_at(s, step);
    if (step < 0 && s.enabled() && a != strata::profiler_action::none) std::abort();
    if (!s.enabled() && a != strata::profiler_action::record) std::abort();
    if (s.enabled() && step >= 0 && step < s.skip_first && a != strata::profiler_action::none) std::abort();
  }
  return 0;
}
