// ring_buffer, one thread: capacity, both overflow policies and their loss counters.
// The concurrent producer/consumer cases are in test_ring_buffer_concurrent.cpp.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "strata/core/ring_buffer.hpp"

namespace {

constexpr strata::site ring_site{"ring", __FILE__, __LINE__, strata::layer::user,
                                 strata::record_kind::scope};

// Record number i carries i in every field, so a record that was mixed up with another shows.
strata::record make(std::uint64_t i) { return {i, i + 1, &ring_site, i}; }

std::vector<std::uint64_t> payloads(const std::vector<strata::record>& rs) {
  std::vector<std::uint64_t> out;
  for (const auto& r : rs) out.push_back(r.payload);
  return out;
}

std::vector<std::uint64_t> range(std::uint64_t from, std::uint64_t to) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = from; i < to; ++i) out.push_back(i);
  return out;
}

bool intact(const std::vector<strata::record>& rs) {
  for (const auto& r : rs)
    if (r.begin != r.payload || r.end != r.payload + 1 || r.where != &ring_site) return false;
  return true;
}

}  // namespace

TEST_CASE("ring_buffer: records come out oldest first, each exactly once") {
  for (auto policy : {strata::overflow_policy::drop_newest, strata::overflow_policy::overwrite_oldest}) {
    CAPTURE(strata::overflow_policy_name(policy));
    strata::ring_buffer ring(8, policy);
    CHECK(ring.capacity() == 8);
    CHECK(ring.policy() == policy);
    std::vector<strata::record> out;

    SUBCASE("an empty drain copies nothing") {
      const auto r = ring.drain(out);
      CHECK(r.copied == 0);
      CHECK(r.lost == 0);
      CHECK(out.empty());
    }
    SUBCASE("drains append and wrap around the slots without loss") {
      for (std::uint64_t i = 0; i < 5; ++i) CHECK(ring.push(make(i)));
      auto r = ring.drain(out);
      CHECK(r.copied == 5);
      CHECK(r.lost == 0);
      // Seven pending records (capacity - 1) wrap past the end of the slot array.
      for (std::uint64_t i = 5; i < 12; ++i) CHECK(ring.push(make(i)));
      CHECK(ring.published() == 12);
      r = ring.drain(out);
      CHECK(r.copied == 7);
      CHECK(r.lost == 0);
      CHECK(payloads(out) == range(0, 12));
      CHECK(intact(out));
      r = ring.drain(out);
      CHECK(r.copied == 0);
      CHECK(out.size() == 12);
    }
  }
}

TEST_CASE("ring_buffer: drop_newest keeps the oldest and counts every drop") {
  strata::ring_buffer ring(8, strata::overflow_policy::drop_newest);
  std::vector<strata::record> out;

  SUBCASE("capacity 8, 20 pushes: 0..7 kept, 8..19 dropped") {
    int stored = 0;
    for (std::uint64_t i = 0; i < 20; ++i) stored += ring.push(make(i)) ? 1 : 0;
    CHECK(stored == 8);
    CHECK(ring.published() == 8);
    auto r = ring.drain(out);
    CHECK(r.copied == 8);
    CHECK(r.lost == 12);
    CHECK(payloads(out) == range(0, 8));
    CHECK(intact(out));

    SUBCASE("the count is reported once") {
      r = ring.drain(out);
      CHECK(r.copied == 0);
      CHECK(r.lost == 0);
    }
    SUBCASE("a drain makes room again") {
      // 20..31: the first 8 fit, the last 4 are dropped.
      for (std::uint64_t i = 20; i < 32; ++i) CHECK(ring.push(make(i)) == (i < 28));
      r = ring.drain(out);
      CHECK(r.copied == 8);
      CHECK(r.lost == 4);
      CHECK(payloads(out) == [] {
        auto v = range(0, 8);
        for (std::uint64_t i = 20; i < 28; ++i) v.push_back(i);
        return v;
      }());
    }
  }
  SUBCASE("exactly full, then one more: only that one is dropped") {
    for (std::uint64_t i = 0; i < 8; ++i) CHECK(ring.push(make(i)));
    CHECK_FALSE(ring.push(make(8)));
    const auto r = ring.drain(out);
    CHECK(r.copied == 8);
    CHECK(r.lost == 1);
    CHECK(payloads(out) == range(0, 8));
  }
}

// overwrite_oldest never refuses a record. A drain cannot tell a producer that is idle from
// one about to rewrite the oldest slot, so once the ring holds `capacity` undrained records it
// gives up the oldest one as possibly torn (ring_buffer::drain): the newest capacity - 1 are
// kept and everything else is counted as lost.
TEST_CASE("ring_buffer: overwrite_oldest keeps the newest and counts the overwritten") {
  strata::ring_buffer ring(8, strata::overflow_policy::overwrite_oldest);
  std::vector<strata::record> out;

  SUBCASE("capacity 8, 20 pushes: 13..19 kept, 13 lost") {
    for (std::uint64_t i = 0; i < 20; ++i) CHECK(ring.push(make(i)));
    CHECK(ring.published() == 20);
    auto r = ring.drain(out);
    CHECK(r.copied == 7);
    CHECK(r.lost == 13);
    CHECK(payloads(out) == range(13, 20));
    CHECK(intact(out));

    SUBCASE("after the lap, the next drain is exact again") {
      for (std::uint64_t i = 20; i < 23; ++i) CHECK(ring.push(make(i)));
      r = ring.drain(out);
      CHECK(r.copied == 3);
      CHECK(r.lost == 0);
      CHECK(payloads(out) == range(13, 23));
    }
    SUBCASE("several laps") {
      for (std::uint64_t i = 20; i < 100; ++i) CHECK(ring.push(make(i)));
      r = ring.drain(out);
      CHECK(r.copied == 7);
      CHECK(r.lost == 73);  // 80 pushed since the last drain
      CHECK(payloads(out) == [] {
        auto v = range(13, 20);
        for (std::uint64_t i = 93; i < 100; ++i) v.push_back(i);
        return v;
      }());
      CHECK(intact(out));
    }
  }
  SUBCASE("capacity - 1 pending records are all kept") {
    for (std::uint64_t i = 0; i < 7; ++i) CHECK(ring.push(make(i)));
    const auto r = ring.drain(out);
    CHECK(r.copied == 7);
    CHECK(r.lost == 0);
    CHECK(payloads(out) == range(0, 7));
  }
  SUBCASE("capacity pending records: the oldest is given up") {
    for (std::uint64_t i = 0; i < 8; ++i) CHECK(ring.push(make(i)));
    const auto r = ring.drain(out);
    CHECK(r.copied == 7);
    CHECK(r.lost == 1);
    CHECK(payloads(out) == range(1, 8));
  }
}

TEST_CASE("ring_buffer: the smallest ring (2 slots)") {
  SUBCASE("drop_newest") {
    strata::ring_buffer ring(2, strata::overflow_policy::drop_newest);
    std::vector<strata::record> out;
    CHECK(ring.push(make(0)));
    CHECK(ring.push(make(1)));
    CHECK_FALSE(ring.push(make(2)));
    const auto r = ring.drain(out);
    CHECK(r.copied == 2);
    CHECK(r.lost == 1);
    CHECK(payloads(out) == range(0, 2));
  }
  SUBCASE("overwrite_oldest") {
    strata::ring_buffer ring(2, strata::overflow_policy::overwrite_oldest);
    std::vector<strata::record> out;
    for (std::uint64_t i = 0; i < 5; ++i) CHECK(ring.push(make(i)));
    const auto r = ring.drain(out);
    CHECK(r.copied == 1);
    CHECK(r.lost == 4);
    CHECK(payloads(out) == range(4, 5));
  }
}

TEST_CASE("overflow policy names") {
  CHECK(strata::overflow_policy_name(strata::overflow_policy::drop_newest) == "drop_newest");
  CHECK(strata::overflow_policy_name(strata::overflow_policy::overwrite_oldest) == "overwrite_oldest");
}

// The recording thread's hot path writes through a thread-local cursor bound to its ring
// (thread_registry.hpp); binding and unbinding must hand the position over intact.
TEST_CASE("ring_buffer: a bound cursor takes over the position and gives it back") {
  for (const auto policy : {strata::overflow_policy::drop_newest,
                            strata::overflow_policy::overwrite_oldest}) {
    CAPTURE(strata::overflow_policy_name(policy));
    strata::ring_buffer ring(8, policy);
    std::vector<strata::record> out;
    for (std::uint64_t i = 0; i < 3; ++i) CHECK(ring.push(make(i)));

    strata::producer_cursor cursor;
    ring.bind(cursor);
    CHECK(ring.published() == 3);
    // Pushes now move the outside cursor, across the end of the array (a wrap).
    for (std::uint64_t i = 3; i < 6; ++i) CHECK(ring.push(make(i)));
    CHECK(ring.drain(out).copied == 6);
    for (std::uint64_t i = 6; i < 12; ++i) CHECK(ring.push(make(i)));
    CHECK(ring.published() == 12);
    CHECK(cursor.load_next() != nullptr);

    ring.unbind();
    CHECK(cursor.load_next() == nullptr);  // a push through it now takes the slow path
    CHECK(cursor.limit == nullptr);
    CHECK(ring.published() == 12);
    CHECK(ring.push(make(12)));  // 7 waiting: below a full ring, so both policies keep all
    const auto r = ring.drain(out);
    CHECK(r.copied == 7);
    CHECK(r.lost == 0);
    CHECK(payloads(out) == range(0, 13));
    CHECK(intact(out));
  }
}
