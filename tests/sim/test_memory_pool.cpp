// sim/memory_pool.hpp: reservations in program order, overflow errors, space that is released
// in program order but still read in simulated time, and the usage samples.
#include <doctest/doctest.h>

#include <string_view>
#include <vector>

#include "strata/sim/execution.hpp"
#include "strata/sim/memory_pool.hpp"

namespace sim = strata::sim;

TEST_CASE("memory_pool: a reservation waits only for the released space it needs") {
  sim::detail::memory_pool pool("SBUF", sim::counter_names::sbuf_used, 100, 2);
  CHECK(pool.reserve(60, "a", 0) == 0);
  pool.note_first_use(60, 10);
  pool.release(60, true, 500);  // gone in program order, read until 500
  CHECK(pool.live_bytes_per_partition() == 0);
  CHECK(pool.reserve(30, "b", 0) == 0);    // 30 + 60 still held fits in 100
  CHECK(pool.reserve(30, "c", 0) == 500);  // 60 + 60 does not: wait for a's last read
  CHECK(pool.reserve(10, "d", 600) == 0);  // nothing starts before 600: a's space is free
  CHECK_THROWS_WITH_AS(pool.reserve(50, "e", 600),
                       "strata: sim: e: SBUF overflow: 120 bytes per partition needed, 100 bytes "
                       "available (70 bytes held by live tiles)",
                       strata::error);
  CHECK(pool.live_bytes_per_partition() == 70);

  std::vector<sim::counter_sample> samples;
  pool.samples(samples);
  REQUIRE(samples.size() == 3);
  CHECK(samples[0].t_ps == 0);
  CHECK(samples[0].value == 0);
  CHECK(samples[1].t_ps == 10);
  CHECK(samples[1].value == 120);  // 60 per partition x 2 partitions
  CHECK(samples[2].t_ps == 500);
  CHECK(samples[2].value == 0);
  CHECK(samples[2].name == sim::counter_names::sbuf_used);
}

TEST_CASE("memory_pool: after close, releases free space but record nothing") {
  sim::detail::memory_pool pool("PSUM", sim::counter_names::psum_used, 16384, 128);
  CHECK(pool.reserve(2048, "psum_tile", 0) == 0);
  pool.close();
  pool.note_first_use(2048, 5);
  pool.release(2048, true, 9);
  CHECK(pool.live_bytes_per_partition() == 0);
  std::vector<sim::counter_sample> samples;
  pool.samples(samples);
  CHECK(samples.size() == 1);
}
