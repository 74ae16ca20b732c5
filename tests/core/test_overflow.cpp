// Overflow policies through the profiler: which records a full thread buffer keeps, and the
// exact loss counts in trace_data and stats().
#include <doctest/doctest.h>

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
