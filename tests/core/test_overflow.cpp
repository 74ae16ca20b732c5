// Overflow policies through the profiler: which records a full thread buffer keeps, and the
// exact loss counts in trace_data and stats().
#include <doctest/doctest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "support.hpp"

namespace {

struct outcome {
  std::vector<double> kept;  // values of the counter samples that survived, in order
  std::uint64_t lost = 0;
  strata::profiler_stats stats;
};

// Records `n` samples 0..n-1 of one counter on this thread into a buffer of `capacity`.
outcome record_samples(std::size_t capacity, strata::overflow_policy policy, int n) {
  strata_test::temp_dir dir("overflow");
  strata::profiler prof(strata_test::config_in(dir, capacity, policy));
  prof.start();
  for (int i = 0; i < n; ++i) STRATA_COUNTER("sample", i);
  prof.stop();
  outcome o;
  o.stats = prof.stats();
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  o.kept = strata_test::counter_values(*t, "sample");
  o.lost = t->lost;
  return o;
}

std::vector<double> values(int from, int to) {
  std::vector<double> v;
  for (int i = from; i < to; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("lossless: buffer_capacity does not bound a session") {
  const auto o = record_samples(8, strata::overflow_policy::lossless, 20000);
  CHECK(o.kept == values(0, 20000));
  CHECK(o.lost == 0);
  CHECK(o.stats.recorded == 20000);
  CHECK(o.stats.dropped == 0);
  CHECK(o.stats.threads == 1);
  CHECK(o.stats.memory.spilled == 0);  // far below the default memory limit
}

TEST_CASE("flight recorder: keeps exactly its newest records and counts the rest") {
  SUBCASE("capacity 8, 20 samples: 12..19 kept, 12 lost") {
    const auto o = record_samples(8, strata::overflow_policy::flight_recorder, 20);
    CHECK(o.kept == values(12, 20));
    CHECK(o.lost == 12);
    CHECK(o.stats.recorded == 8);
    CHECK(o.stats.dropped == 12);
  }
  SUBCASE("capacity 8, 8 samples: all kept") {
    const auto o = record_samples(8, strata::overflow_policy::flight_recorder, 8);
    CHECK(o.kept == values(0, 8));
    CHECK(o.lost == 0);
  }
  SUBCASE("capacity 8, 7 samples: all kept") {
    const auto o = record_samples(8, strata::overflow_policy::flight_recorder, 7);
    CHECK(o.kept == values(0, 7));
    CHECK(o.lost == 0);
  }
  SUBCASE("capacity 4096 (two blocks), 10,000 samples: the newest 4096") {
    const auto o = record_samples(4096, strata::overflow_policy::flight_recorder, 10000);
    CHECK(o.kept == values(10000 - 4096, 10000));
    CHECK(o.lost == 10000 - 4096);
  }
  SUBCASE("capacity 8192, 100,000 samples: the newest 8192, across many laps of its blocks") {
    const auto o = record_samples(8192, strata::overflow_policy::flight_recorder, 100000);
    CHECK(o.kept == values(100000 - 8192, 100000));
    CHECK(o.lost == 100000 - 8192);
    CHECK(o.stats.recorded == 8192);
  }
}

TEST_CASE("flight recorder: stats() reads without changing what a flight recorder keeps") {
  // A user polling stats() every 10 records of a flight recorder of 8 still gets the newest 8.
  strata_test::temp_dir dir("overflow-poll");
  strata::profiler prof(strata_test::config_in(dir, 8, strata::overflow_policy::flight_recorder));
  prof.start();
  for (int i = 0; i < 70; ++i) {
    STRATA_COUNTER("sample", i);
    if (i % 10 == 9) {
      const auto s = prof.stats();
      CHECK(s.recorded == 8);
      CHECK(s.recorded + s.dropped == static_cast<std::uint64_t>(i + 1));
    }
  }
  prof.stop();
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  CHECK(strata_test::counter_values(*t, "sample") == values(62, 70));
  CHECK(t->lost == 62);
  const auto s = prof.stats();
  CHECK(s.recorded == 8);
  CHECK(s.dropped == 62);
}
