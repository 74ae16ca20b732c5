// schedule: action_at against torch.profiler.schedule's worked tables, and validation.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "strata/error.hpp"
#include "strata/schedule.hpp"
#include "support.hpp"

using strata::profiler_action;

namespace {

constexpr auto N = profiler_action::none;
constexpr auto W = profiler_action::warmup;
constexpr auto R = profiler_action::record;
constexpr auto S = profiler_action::record_and_save;

std::vector<profiler_action> actions(const strata::schedule& s, int steps) {
  std::vector<profiler_action> out;
  for (int i = 0; i < steps; ++i) out.push_back(action_at(s, i));
  return out;
}

std::string schedule_error(const strata::schedule& s) {
  try {
    strata::detail::check_schedule(s);
  } catch (const strata::error& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

namespace doctest {
template <>
struct StringMaker<profiler_action> {
  static String convert(profiler_action a) {
    switch (a) {
      case profiler_action::none: return "none";
      case profiler_action::warmup: return "warmup";
      case profiler_action::record: return "record";
      case profiler_action::record_and_save: return "record_and_save";
    }
    return "?";
  }
};
}  // namespace doctest

TEST_CASE("action_at follows torch.profiler.schedule") {
  SUBCASE("skip_first=1, wait=1, warmup=1, active=2, repeat=2 (the notes' worked table)") {
    const strata::schedule s{.skip_first = 1, .wait = 1, .warmup = 1, .active = 2, .repeat = 2};
    CHECK(actions(s, 14) == std::vector{N, N, W, R, S, N, W, R, S, N, N, N, N, N});
  }
  SUBCASE("the same with skip_first_wait") {
    const strata::schedule s{.skip_first = 1, .wait = 1, .warmup = 1, .active = 2, .repeat = 2,
                             .skip_first_wait = true};
    CHECK(actions(s, 11) == std::vector{N, W, R, S, N, W, R, S, N, N, N});
  }
  SUBCASE("wait=1, warmup=1, active=2, repeat=1: one window, then none forever") {
    const strata::schedule s{.wait = 1, .warmup = 1, .active = 2, .repeat = 1};
    CHECK(actions(s, 9) == std::vector{N, W, R, S, N, N, N, N, N});
    CHECK(action_at(s, 1'000'000) == N);
  }
  SUBCASE("repeat=0 repeats forever with period wait+warmup+active") {
    const strata::schedule s{.wait = 1, .warmup = 1, .active = 2};
    CHECK(actions(s, 12) == std::vector{N, W, R, S, N, W, R, S, N, W, R, S});
    CHECK(action_at(s, 4'000'003) == S);
  }
  SUBCASE("active=1 alone: every step is record_and_save") {
    const strata::schedule s{.active = 1};
    CHECK(actions(s, 4) == std::vector{S, S, S, S});
  }
  SUBCASE("active=1 has no plain record step") {
    const strata::schedule s{.wait = 2, .warmup = 0, .active = 1, .repeat = 2};
    CHECK(actions(s, 8) == std::vector{N, N, S, N, N, S, N, N});
  }
  SUBCASE("skip_first=3, wait=0, warmup=2, active=3, repeat=1") {
    const strata::schedule s{.skip_first = 3, .warmup = 2, .active = 3, .repeat = 1};
    CHECK(actions(s, 10) == std::vector{N, N, N, W, W, R, R, S, N, N});
  }
  SUBCASE("no schedule (active=0): every step records") {
    CHECK(actions(strata::schedule{}, 3) == std::vector{R, R, R});
  }
  SUBCASE("a negative step is none") {
    CHECK(action_at(strata::schedule{.active = 1}, -1) == N);
  }
  SUBCASE("is_recording") {
    CHECK_FALSE(strata::is_recording(N));
    CHECK_FALSE(strata::is_recording(W));
    CHECK(strata::is_recording(R));
    CHECK(strata::is_recording(S));
  }
}

TEST_CASE("action_at is usable at compile time") {
  constexpr strata::schedule s{.wait = 1, .active = 1};
  static_assert(action_at(s, 0) == profiler_action::none);
  static_assert(action_at(s, 1) == profiler_action::record_and_save);
  CHECK(action_at(s, 2) == N);
}

TEST_CASE("action_at near the largest step: skip_first_wait does not overflow") {
  // INT64_MAX = 5 * 1844674407370955161 + 2: with the first wait skipped, step INT64_MAX is 2 +
  // 2 = 4 into its cycle of 5 (record_and_save), in cycle 1844674407370955161.
  constexpr std::int64_t last = INT64_MAX;
  strata::schedule s{.wait = 2, .warmup = 1, .active = 2, .skip_first_wait = true};
  CHECK(action_at(s, last) == S);
  CHECK(action_at(s, last - 1) == R);
  CHECK(action_at(s, last - 2) == W);
  CHECK(action_at(s, last - 3) == N);  // 4 + 2 wraps into the next cycle's wait
  s.repeat = 3;
  CHECK(action_at(s, last) == N);
  // The shift itself, at the start: the first cycle has no wait steps.
  s.repeat = 0;
  CHECK(actions(s, 6) == std::vector<profiler_action>{W, R, S, N, N, W});
}

TEST_CASE("schedule validation names the field") {
  const auto has = [](const std::string& m, std::string_view part) {
    return m.find(part) != std::string::npos;
  };
  SUBCASE("valid") {
    CHECK(schedule_error({}) == "<no error>");
    CHECK(schedule_error({.active = 1}) == "<no error>");
    CHECK(schedule_error({.skip_first = 2, .wait = 1, .warmup = 1, .active = 2, .repeat = 3}) ==
          "<no error>");
  }
  SUBCASE("negative values") {
    CHECK(has(schedule_error({.skip_first = -1, .active = 1}), "schedule.skip_first is -1"));
    CHECK(has(schedule_error({.wait = -2, .active = 1}), "schedule.wait is -2"));
    CHECK(has(schedule_error({.warmup = -1, .active = 1}), "schedule.warmup is -1"));
    CHECK(has(schedule_error({.active = -1}), "schedule.active is -1"));
    CHECK(has(schedule_error({.active = 1, .repeat = -1}), "schedule.repeat is -1"));
  }
  SUBCASE("active=0 with another field set") {
    const std::string m = schedule_error({.wait = 1});
    CHECK(has(m, "profiler_config::schedule.active is 0"));
    CHECK(has(m, "schedule.wait is set"));
    CHECK(has(schedule_error({.repeat = 2}), "schedule.repeat is set"));
    CHECK(has(schedule_error({.skip_first = 1}), "schedule.skip_first is set"));
    CHECK(has(schedule_error({.skip_first_wait = true}), "schedule.skip_first_wait is set"));
  }
  SUBCASE("a cycle too long") {
    CHECK(has(schedule_error({.wait = 0x7fffffff, .active = 1}), "exceeds"));
  }
  SUBCASE("the profiler's constructor checks it") {
    strata_test::temp_dir dir("schedule");
    auto config = strata_test::config_in(dir);
    config.schedule = {.warmup = -1, .active = 2};
    CHECK_THROWS_WITH_AS(strata::profiler{config},
                         doctest::Contains("profiler_config::schedule.warmup"), strata::error);
  }
}
