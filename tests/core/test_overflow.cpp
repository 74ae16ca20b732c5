// Overflow policies through the profiler: which records a full thread buffer keeps, and the
// exact loss counts in trace_data and stats().
#include <doctest/doctest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "strata/core/macros.hpp"
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

TEST_CASE("drop_newest: a full buffer keeps the oldest records and counts each drop") {
  SUBCASE("capacity 8, 20 samples: 0..7 kept, 12 dropped") {
    const auto o = record_samples(8, strata::overflow_policy::drop_newest, 20);
    CHECK(o.kept == values(0, 8));
    CHECK(o.lost == 12);
    CHECK(o.stats.recorded == 8);
    CHECK(o.stats.dropped == 12);
    CHECK(o.stats.threads == 1);
  }
  SUBCASE("exactly full: nothing dropped") {
    const auto o = record_samples(8, strata::overflow_policy::drop_newest, 8);
    CHECK(o.kept == values(0, 8));
    CHECK(o.lost == 0);
  }
}

TEST_CASE("overwrite_oldest: a full buffer keeps the newest records and counts the lost ones") {
  // The final drain gives up the oldest slot of a full ring as possibly mid-rewrite (see
  // test_ring_buffer.cpp), so the newest capacity - 1 survive.
  SUBCASE("capacity 8, 20 samples: 13..19 kept, 13 lost") {
    const auto o = record_samples(8, strata::overflow_policy::overwrite_oldest, 20);
    CHECK(o.kept == values(13, 20));
    CHECK(o.lost == 13);
    CHECK(o.stats.recorded == 7);
    CHECK(o.stats.dropped == 13);
  }
  SUBCASE("capacity 8, 7 samples: all kept") {
    const auto o = record_samples(8, strata::overflow_policy::overwrite_oldest, 7);
    CHECK(o.kept == values(0, 7));
    CHECK(o.lost == 0);
  }
}

TEST_CASE("stats() drains while running, so a long session keeps more than one buffer's worth") {
  strata_test::temp_dir dir("overflow-drain");
  strata::profiler prof(strata_test::config_in(dir, 8, strata::overflow_policy::drop_newest));
  prof.start();
  for (int i = 0; i < 8; ++i) STRATA_COUNTER("sample", i);
  CHECK(prof.stats().recorded == 8);  // drains the ring
  for (int i = 8; i < 20; ++i) STRATA_COUNTER("sample", i);  // 8..15 fit, 16..19 dropped
  prof.stop();
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  CHECK(strata_test::counter_values(*t, "sample") == values(0, 16));
  CHECK(t->lost == 4);
}

TEST_CASE("drain_interval: a background drain empties the buffer, so a small one loses nothing") {
  strata_test::temp_dir dir("overflow-background");
  auto config = strata_test::config_in(dir, 16, strata::overflow_policy::drop_newest);
  config.drain_interval = std::chrono::microseconds(200);
  strata::profiler prof(config);
  prof.start();
  // 50 batches of 12 records into a buffer of 16: each batch fits once the previous one is
  // drained. Waits for two completed passes (the first may have begun before the batch), not
  // for any duration, so the test holds however slow the machine is.
  for (int batch = 0; batch < 50; ++batch) {
    for (int i = 0; i < 12; ++i) STRATA_COUNTER("sample", batch * 12 + i);
    const std::uint64_t seen = prof.background_drains();  // (stats() would drain itself)
    while (prof.background_drains() < seen + 2) std::this_thread::yield();
  }
  prof.stop();
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  CHECK(strata_test::counter_values(*t, "sample") == values(0, 600));
  CHECK(t->lost == 0);
}

TEST_CASE("max_session_records bounds what a session keeps and counts the rest as lost") {
  strata_test::temp_dir dir("overflow-session-limit");
  auto config = strata_test::config_in(dir, 64, strata::overflow_policy::drop_newest);
  config.max_session_records = 30;
  strata::profiler prof(config);
  prof.start();
  for (int i = 0; i < 20; ++i) STRATA_COUNTER("sample", i);
  prof.stats();  // drains 20
  for (int i = 20; i < 50; ++i) STRATA_COUNTER("sample", i);  // 10 more are kept
  prof.stop();
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  CHECK(strata_test::counter_values(*t, "sample") == values(0, 30));
  CHECK(t->lost == 20);
  CHECK(prof.stats().dropped == 20);
}

TEST_CASE("drain_interval must not be negative") {
  strata_test::temp_dir dir("overflow-bad-interval");
  auto config = strata_test::config_in(dir);
  config.drain_interval = std::chrono::microseconds(-1);
  CHECK_THROWS_WITH_AS(strata::profiler{config}, doctest::Contains("drain_interval is negative"),
                       strata::error);
}
