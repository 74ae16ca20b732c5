// ring_buffer with a concurrent producer and consumer: nothing torn, nothing duplicated,
// nothing reordered, and copied + lost accounts for every push.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "strata/core/ring_buffer.hpp"

namespace {

constexpr strata::site producer_site{"producer", __FILE__, __LINE__, strata::layer::user,
                                     strata::record_kind::scope};

// Record i carries i in every field in a different form, so a torn copy (fields of two
// records) cannot pass for an intact one.
strata::record make(std::uint64_t i) { return {i, ~i, &producer_site, i * 3 + 1}; }

bool intact(const strata::record& r) {
  return r.end == ~r.begin && r.where == &producer_site && r.payload == r.begin * 3 + 1;
}

struct run_result {
  std::vector<strata::record> out;
  std::uint64_t copied = 0;
  std::uint64_t lost = 0;
  int drains = 0;
};

// One producer pushes `n` records while this thread drains until it is done, then once more.
run_result run(std::size_t capacity, strata::overflow_policy policy, std::uint64_t n) {
  strata::ring_buffer ring(capacity, policy);
  run_result res;
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < n; ++i) ring.push(make(i));
    done.store(true, std::memory_order_release);
  });
  while (!done.load(std::memory_order_acquire)) {
    const auto d = ring.drain(res.out);
    res.copied += d.copied;
    res.lost += d.lost;
    ++res.drains;
  }
  producer.join();
  const auto d = ring.drain(res.out);
  res.copied += d.copied;
  res.lost += d.lost;
  return res;
}

void check_stream(const run_result& res, std::uint64_t n) {
  CHECK(res.copied == res.out.size());
  CHECK(res.copied + res.lost == n);  // every push is either delivered or counted
  std::uint64_t torn = 0;
  std::uint64_t out_of_order = 0;
  for (std::size_t i = 0; i < res.out.size(); ++i) {
    if (!intact(res.out[i])) ++torn;
    if (i > 0 && res.out[i].begin <= res.out[i - 1].begin) ++out_of_order;
  }
  CHECK(torn == 0);
  CHECK(out_of_order == 0);  // strictly increasing: no duplicates either
}

}  // namespace

TEST_CASE("ring_buffer: concurrent producer and consumer") {
  constexpr std::uint64_t n = 200'000;

  const auto drop_newest = [&](std::size_t capacity) {
    const auto res = run(capacity, strata::overflow_policy::drop_newest, n);
    check_stream(res, n);
    // The first push always finds room: drop_newest never discards old records.
    REQUIRE_FALSE(res.out.empty());
    CHECK(res.out.front().begin == 0);
  };
  const auto overwrite_oldest = [&](std::size_t capacity) {
    const auto res = run(capacity, strata::overflow_policy::overwrite_oldest, n);
    check_stream(res, n);
    // The last push always survives: the final drain runs after the producer finished.
    REQUIRE_FALSE(res.out.empty());
    CHECK(res.out.back().begin == n - 1);
  };
  // A small ring makes the producer lap the consumer often, in the middle of a copy too.
  SUBCASE("drop_newest, 16 slots") { drop_newest(16); }
  SUBCASE("drop_newest, 256 slots") { drop_newest(256); }
  SUBCASE("overwrite_oldest, 16 slots") { overwrite_oldest(16); }
  SUBCASE("overwrite_oldest, 256 slots") { overwrite_oldest(256); }
  SUBCASE("a ring large enough for everything loses nothing under either policy") {
    for (auto policy : {strata::overflow_policy::drop_newest, strata::overflow_policy::overwrite_oldest}) {
      const auto res = run(1 << 16, policy, 50'000);
      check_stream(res, 50'000);
      CHECK(res.lost == 0);
      CHECK(res.copied == 50'000);
    }
  }
}
