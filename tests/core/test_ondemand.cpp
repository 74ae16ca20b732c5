// request_capture() in the test process: accepted, refused while a capture runs or another
// profiler records, invalid requests, and the file the capture's thread writes. The signal path
// runs in a child process (tests/check_ondemand.py).
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "strata/macros.hpp"
#include "strata/ondemand.hpp"
#include "strata/profiler.hpp"
#include "support.hpp"

namespace {

// Waits (a bounded number of polls, nothing asserted on time) until no capture runs.
strata::capture_state wait_until_written() {
  strata::capture_state s = strata::ondemand_state();
  for (int i = 0; i < 60000 && s.running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    s = strata::ondemand_state();
  }
  return s;
}

}  // namespace

TEST_CASE("on-demand: request_capture records the next N steps into a file of its own") {
  strata_test::temp_dir dir("ondemand");
  const strata::profiler_config config = strata_test::config_in(dir);
  const std::uint64_t before = wait_until_written().written;

  const strata::capture_result r = strata::request_capture({.steps = 3, .config = config});
  REQUIRE_MESSAGE(r, r.message);
  CHECK(r.message.find("the next 3 steps") != std::string::npos);

  // While it runs: a second request is refused, not queued; so is a profiler of the program's own.
  const strata::capture_result again = strata::request_capture({.steps = 1, .config = config});
  CHECK(again.outcome == strata::capture_outcome::capture_running);
  CHECK(again.message.find("refused") != std::string::npos);
  strata::profiler own(config);
  CHECK_THROWS_AS(own.start(), strata::error);

  // Steps from several threads, one at a time; the capture begins at the first boundary.
  { STRATA_SCOPE("before the capture"); }
  STRATA_STEP();
  for (int i = 0; i < 5; ++i) {
    std::thread t([] {
      { STRATA_SCOPE("work"); }
    });
    t.join();
    STRATA_STEP();
  }
  const strata::capture_state s = wait_until_written();
  REQUIRE_FALSE(s.running);
  CHECK(s.written == before + 1);
  CHECK(s.last_error.empty());
  const std::filesystem::path file = s.last_file;
  CHECK(file.parent_path() == dir / "out");
  CHECK(file.filename().string().starts_with("ondemand-"));
  const std::string json = strata_test::read_file(file);
  CHECK(strata_test::lines_with(json, "\"name\":\"ProfilerStep#").size() == 3);
  CHECK(json.find("before the capture") == std::string::npos);
  CHECK(strata_test::lines_with(json, "\"name\":\"work\"").size() == 3);

  // Armed again: the next capture gets another file.
  REQUIRE(strata::request_capture({.steps = 1, .config = config}));
  STRATA_STEP();
  STRATA_STEP();
  const strata::capture_state s2 = wait_until_written();
  CHECK(s2.written == before + 2);
  CHECK(s2.last_file != s.last_file);
  CHECK(std::filesystem::exists(s.last_file));
}

TEST_CASE("on-demand: a capture by duration, for a program without steps") {
  strata_test::temp_dir dir("ondemand");
  const std::uint64_t before = wait_until_written().written;
  REQUIRE(strata::request_capture({.duration = std::chrono::milliseconds(5),
                                   .config = strata_test::config_in(dir)}));
  { STRATA_SCOPE("while capturing"); }
  const strata::capture_state s = wait_until_written();
  CHECK(s.written == before + 1);
  CHECK(std::filesystem::path(s.last_file).parent_path() == dir / "out");
}

TEST_CASE("on-demand: refused while another profiler records; invalid requests") {
  strata_test::temp_dir dir("ondemand");
  strata::profiler_config config = strata_test::config_in(dir);
  {
    strata::profiler own(config);
    own.start();
    const strata::capture_result r = strata::request_capture({.steps = 2, .config = config});
    CHECK(r.outcome == strata::capture_outcome::profiler_running);
    CHECK(r.message.find("another strata::profiler") != std::string::npos);
    own.stop();
  }
  CHECK(strata::request_capture({.steps = 2, .duration = std::chrono::milliseconds(3), .config = config})
            .outcome == strata::capture_outcome::invalid);
  CHECK(strata::request_capture({.steps = -1, .config = config}).outcome ==
        strata::capture_outcome::invalid);
  strata::profiler_config scheduled = config;
  scheduled.schedule = {.active = 1};
  const strata::capture_result r = strata::request_capture({.steps = 2, .config = scheduled});
  CHECK(r.outcome == strata::capture_outcome::invalid);
  CHECK(r.message.find("schedule") != std::string::npos);
  strata::profiler_config bad = config;
  bad.overflow = strata::overflow_policy::flight_recorder;
  bad.buffer_capacity = 1000;  // a flight recorder's rings are a power of two
  CHECK(strata::request_capture({.steps = 2, .config = bad}).outcome ==
        strata::capture_outcome::invalid);
  CHECK_FALSE(strata::ondemand_state().running);
}

TEST_CASE("on-demand: a capture that spills past its memory limit keeps every record") {
  strata_test::temp_dir dir("ondemand");
  strata::profiler_config config = strata_test::config_in(dir);
  config.memory_limit = strata::min_memory_limit;  // one block in memory: the rest is spilled
  const std::uint64_t before = wait_until_written().written;
  REQUIRE(strata::request_capture({.steps = 2, .config = config}));
  STRATA_STEP();
  for (int step = 0; step < 2; ++step) {
    for (int i = 0; i < 10000; ++i) STRATA_SCOPE("many");
    STRATA_STEP();
  }
  const strata::capture_state s = wait_until_written();
  REQUIRE(s.written == before + 1);
  const std::string json = strata_test::read_file(s.last_file);
  CHECK(strata_test::lines_with(json, "\"name\":\"many\"").size() == 20000);
  CHECK(strata_test::lines_with(json, "\"name\":\"ProfilerStep#").size() == 2);
}
