// clock: which tick source the process uses, and the tick-to-nanosecond calibration.
// meson runs this file twice: as is, and with STRATA_CLOCK=steady_clock in the environment.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "strata/clock.hpp"

namespace {

bool steady_clock_forced() {
  const char* v = std::getenv("STRATA_CLOCK");
  return v != nullptr && std::string_view(v) == "steady_clock";
}

// Whether the CPU has an invariant TSC, as the kernel reports it (its `nonstop_tsc` flag comes
// from the same CPUID bit); unknown off x86 Linux.
std::optional<bool> kernel_reports_invariant_tsc() {
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    std::string w;
    while (words >> w)
      if (w == "nonstop_tsc") return true;
    return false;
  }
#endif
  return std::nullopt;
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE("clock: the process picks its tick source once") {
  strata::clock::select_once();
  const strata::clock_source chosen = strata::clock::source();

  SUBCASE("STRATA_CLOCK=steady_clock forces the portable clock; otherwise an invariant TSC wins") {
    if (steady_clock_forced()) {
      CHECK(chosen == strata::clock_source::steady_clock);
    } else if (const auto invariant = kernel_reports_invariant_tsc()) {
      CHECK(chosen == (*invariant ? strata::clock_source::tsc : strata::clock_source::steady_clock));
    } else {
      CHECK(chosen == strata::clock_source::steady_clock);  // no TSC on this architecture
    }
  }
  SUBCASE("a second selection changes nothing") {
    strata::clock::select_once();
    CHECK(strata::clock::source() == chosen);
  }
  SUBCASE("source names") {
    CHECK(strata::clock_source_name(strata::clock_source::tsc) == "tsc");
    CHECK(strata::clock_source_name(strata::clock_source::steady_clock) == "steady_clock");
  }
}

TEST_CASE("clock: steady_clock ticks are nanoseconds") {
  strata::clock::select_once();
  if (strata::clock::source() != strata::clock_source::steady_clock) {
    MESSAGE("tick source is the TSC; the steady_clock run of this test covers this case");
    return;
  }
  const std::int64_t before = steady_ns();
  const std::uint64_t t = strata::clock::now();
  const std::int64_t after = steady_ns();
  CHECK(before <= static_cast<std::int64_t>(t));
  CHECK(static_cast<std::int64_t>(t) <= after);

  auto cal = strata::clock_calibration::begin();
  cal.finish();
  CHECK(cal.source() == strata::clock_source::steady_clock);
  CHECK(cal.ns_per_tick() == 1.0);
  CHECK(cal.to_ns(0) == 0);
  CHECK(cal.to_ns(123456789) == 123456789);
  CHECK(cal.to_ns(t) == static_cast<std::int64_t>(t));
}

TEST_CASE("clock: the TSC calibration agrees with steady_clock") {
  strata::clock::select_once();
  if (strata::clock::source() != strata::clock_source::tsc) {
    MESSAGE("tick source is steady_clock; nothing to calibrate");
    return;
  }
  // A tick read between two steady_clock reads must map between them. A preemption between
  // the two reads of a calibration anchor skews it, so a few attempts are allowed; a wrong
  // rate or offset fails them all.
  bool agreed = false;
  double rate = 0;
  for (int attempt = 0; attempt < 5 && !agreed; ++attempt) {
    auto cal = strata::clock_calibration::begin();
    cal.finish(std::chrono::milliseconds(10));
    rate = cal.ns_per_tick();
    const std::int64_t before = steady_ns();
    const std::uint64_t t = strata::clock::now();
    const std::int64_t after = steady_ns();
    const std::int64_t ns = cal.to_ns(t);
    constexpr std::int64_t slack = 200'000;  // 200 us: anchor jitter plus rate error
    agreed = ns >= before - slack && ns <= after + slack;
  }
  CHECK(agreed);
  // Any real TSC runs between 50 MHz and 20 GHz.
  CHECK(rate > 0.05);
  CHECK(rate < 20.0);
}

TEST_CASE("clock: to_ns is monotonic in ticks, before and after the anchor") {
  strata::clock::select_once();
  auto cal = strata::clock_calibration::begin();
  cal.finish(std::chrono::milliseconds(2));
  const std::uint64_t mid = strata::clock::now();

  SUBCASE("ticks read in sequence") {
    std::uint64_t prev_ticks = strata::clock::now();
    std::int64_t prev_ns = cal.to_ns(prev_ticks);
    for (int i = 0; i < 1000; ++i) {
      const std::uint64_t t = strata::clock::now();
      REQUIRE(t >= prev_ticks);
      const std::int64_t ns = cal.to_ns(t);
      REQUIRE(ns >= prev_ns);
      prev_ticks = t;
      prev_ns = ns;
    }
  }
  SUBCASE("a sweep across the anchor, one tick at a time and in large steps") {
    // Ticks before the anchor take the negative-delta rounding branch.
    std::int64_t prev = cal.to_ns(mid - 2'000'000'000u);
    for (std::uint64_t t = mid - 2'000'000'000u + 1'000'000u; t < mid + 2'000'000'000u; t += 1'000'000u) {
      const std::int64_t ns = cal.to_ns(t);
      REQUIRE(ns >= prev);
      prev = ns;
    }
    prev = cal.to_ns(mid - 5000);
    for (std::uint64_t t = mid - 4999; t < mid + 5000; ++t) {
      const std::int64_t ns = cal.to_ns(t);
      REQUIRE(ns >= prev);
      prev = ns;
    }
  }
  SUBCASE("later ticks map to later times by the calibrated rate") {
    const std::int64_t a = cal.to_ns(mid);
    const std::int64_t b = cal.to_ns(mid + 1'000'000'000u);
    const double expected = 1e9 * cal.ns_per_tick();
    CHECK(static_cast<double>(b - a) == doctest::Approx(expected).epsilon(1e-8));
  }
}
