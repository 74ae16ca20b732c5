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

TEST_CASE("drop_newest is lossless: buffer_capacity does not bound a session") {
  const auto o = record_samples(8, strata::overflow_policy::drop_newest, 20000);
  CHECK(o.kept == values(0, 20000));
  CHECK(o.lost == 0);
  CHECK(o.stats.recorded == 20000);
  CHECK(o.stats.dropped == 0);
  CHECK(o.stats.threads == 1);
  CHECK(o.stats.spilled == 0);  // far below the default memory limit
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

TEST_CASE("overwrite_oldest: stats() while recording drains the ring, later records still counted once") {
  strata_test::temp_dir dir("overflow-drain");
  strata::profiler prof(strata_test::config_in(dir, 8, strata::overflow_policy::overwrite_oldest));
  prof.start();
  for (int i = 0; i < 7; ++i) STRATA_COUNTER("sample", i);
  CHECK(prof.stats().recorded == 7);  // drains the ring
  for (int i = 7; i < 14; ++i) STRATA_COUNTER("sample", i);
  prof.stop();
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  CHECK(strata_test::counter_values(*t, "sample") == values(0, 14));
  CHECK(t->lost == 0);
}
