// thread_buffer, one thread: what a flight recorder and a lossless chain keep, in order, and
// what they count as lost. The producer and readers at once are in
// test_thread_buffer_concurrent.cpp; through a profiler, in test_overflow.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "buffer_support.hpp"

using strata_test::buffer_producer;
using strata_test::make_record;

namespace {

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

constexpr std::uint64_t block = strata::detail::record_block::capacity;

}  // namespace

TEST_CASE("thread_buffer: a flight recorder keeps exactly its newest records, whatever its size") {
  for (const std::uint64_t keep : {std::uint64_t{2}, std::uint64_t{8}, block, block + 1, 2 * block, std::uint64_t{5000}}) {
    for (const std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, keep - 1, keep, keep + 1, 3 * block + 7,
                                  std::uint64_t{20000}}) {
      CAPTURE(keep);
      CAPTURE(n);
      auto store = strata_test::test_store();
      strata::detail::thread_buffer buffer(store, 0, keep);
      buffer_producer p(buffer);
      for (std::uint64_t i = 0; i < n; ++i) CHECK(p.push(make_record(i)));
      const std::uint64_t kept = std::min(n, keep);
      const auto counted = buffer.counts();
      CHECK(counted.kept == kept);
      CHECK(counted.lost == n - kept);
      strata::thread_track t;
      strata_test::take_all(buffer, t);
      CHECK(payloads(t.records) == range(n - kept, n));
      CHECK(strata_test::intact(t.records));
      CHECK(t.lost == n - kept);
    }
  }
}

TEST_CASE("thread_buffer: reading a flight recorder does not change what it keeps") {
  auto store = strata_test::test_store();
  strata::detail::thread_buffer buffer(store, 0, 8);
  buffer_producer p(buffer);
  for (std::uint64_t i = 0; i < 30; ++i) {
    p.push(make_record(i));
    // Every reader at every record: the counts, and a snapshot's copy.
    const auto counted = buffer.counts();
    CHECK(counted.kept == std::min<std::uint64_t>(i + 1, 8));
    CHECK(counted.kept + counted.lost == i + 1);
    std::vector<strata::record> copy;
    bool ok = true;
    const auto copied = buffer.copy_to(copy, ok);
    CHECK(ok);
    CHECK(payloads(copy) == range(i + 1 - copied.kept, i + 1));
    CHECK(copied.kept == counted.kept);
  }
  strata::thread_track t;
  strata_test::take_all(buffer, t);
  CHECK(payloads(t.records) == range(22, 30));
  CHECK(t.lost == 22);
}

TEST_CASE("thread_buffer: a flight recorder takes K + 1 blocks and then reuses its oldest") {
  auto store = strata_test::test_store(false);
  strata::detail::thread_buffer buffer(store, 0, 2 * block);  // K = 2: three blocks
  buffer_producer p(buffer);
  for (std::uint64_t i = 0; i < 10 * block; ++i) p.push(make_record(i));
  CHECK(store->stats().peak == 3 * strata::detail::block_bytes);
  for (std::uint64_t i = 10 * block; i < 20 * block; ++i) p.push(make_record(i));
  CHECK(store->stats().peak == 3 * strata::detail::block_bytes);  // however many laps
  strata::thread_track t;
  strata_test::take_all(buffer, t);
  CHECK(payloads(t.records) == range(18 * block, 20 * block));
}

TEST_CASE("thread_buffer: a flight recorder whose thread exits keeps its newest records") {
  auto store = strata_test::test_store(false);
  for (const std::uint64_t n : {std::uint64_t{5}, block - 1, 3 * block + 5}) {
    CAPTURE(n);
    strata::detail::thread_buffer buffer(store, 0, 100);
    {
      buffer_producer p(buffer);
      for (std::uint64_t i = 0; i < n; ++i) p.push(make_record(i));
    }  // unbound
    buffer.retire();
    const std::uint64_t kept = std::min<std::uint64_t>(n, 100);
    const auto counted = buffer.counts();
    CHECK(counted.kept == kept);
    CHECK(counted.lost == n - kept);
    std::vector<strata::record> copy;
    bool ok = true;
    CHECK(buffer.copy_to(copy, ok).kept == kept);
    strata::thread_track t;
    strata_test::take_all(buffer, t);
    CHECK(payloads(t.records) == range(n - kept, n));
    CHECK(payloads(copy) == payloads(t.records));
    CHECK(t.lost == n - kept);
  }
}

TEST_CASE("thread_buffer: a short-lived thread gives its block back when it exits") {
  // A store that allocates only what is taken: a second buffer's block is the first one's,
  // given back, so the store allocated one block in all.
  auto store = strata_test::test_store(false);
  for (const std::size_t keep : {std::size_t{0}, std::size_t{64}}) {
    CAPTURE(keep);
    for (int thread = 0; thread < 3; ++thread) {
      strata::detail::thread_buffer buffer(store, 0, keep);
      {
        buffer_producer p(buffer);
        for (std::uint64_t i = 0; i < 10; ++i) p.push(make_record(i));
      }
      buffer.retire();
      strata::thread_track t;
      strata_test::take_all(buffer, t);
      CHECK(payloads(t.records) == range(0, 10));
    }
  }
  CHECK(store->stats().peak == strata::detail::block_bytes);
}

TEST_CASE("thread_buffer: a lossless chain keeps every record, in order, across its blocks") {
  for (const std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, block, block + 1, 5 * block + 3}) {
    CAPTURE(n);
    auto store = strata_test::test_store();
    strata::detail::thread_buffer buffer(store, 0, 0);
    buffer_producer p(buffer);
    for (std::uint64_t i = 0; i < n; ++i) CHECK(p.push(make_record(i)));
    const auto counted = buffer.counts();
    CHECK(counted.kept == n);
    CHECK(counted.lost == 0);
    std::vector<strata::record> copy;
    bool ok = true;
    CHECK(buffer.copy_to(copy, ok).kept == n);
    CHECK(ok);
    CHECK(payloads(copy) == range(0, n));
    strata::thread_track t;
    store->stop_writer();
    strata_test::take_all(buffer, t);
    CHECK(payloads(t.records) == range(0, n));
    CHECK(strata_test::intact(t.records));
    CHECK(t.lost == 0);
    CHECK(t.spilled.empty());
  }
}

TEST_CASE("thread_buffer: the current block is lent until its records are copied, kept alive by its owner") {
  auto store = strata_test::test_store(false);
  auto buffer = std::make_shared<strata::detail::thread_buffer>(store, 0, 0);
  constexpr std::uint64_t n = block + 5;  // one full block and 5 records in the current one
  {
    buffer_producer p(*buffer);
    for (std::uint64_t i = 0; i < n; ++i) CHECK(p.push(make_record(i)));
  }
  strata::thread_track t;
  buffer->take(t, buffer);
  const std::weak_ptr<strata::detail::thread_buffer> alive = buffer;
  buffer.reset();  // the session's registry lets go; the lent block must outlive it
  REQUIRE(t.taken != nullptr);
  CHECK_FALSE(alive.expired());
  t.taken->move_to_front_of(t.records);
  CHECK(payloads(t.records) == range(0, n));
  CHECK(alive.expired());  // copied: the buffer, and its block, went
}

TEST_CASE("thread_buffer: a chain's full blocks are handed over as they are, and go back to the store") {
  const std::size_t chunks_before = strata::detail::block_pool::instance().chunk_count();
  {
    auto store = strata_test::test_store(false);
    strata::detail::thread_buffer buffer(store, 0, 0);
    constexpr std::uint64_t n = 3 * block + 7;
    {
      buffer_producer p(buffer);
      for (std::uint64_t i = 0; i < n; ++i) CHECK(p.push(make_record(i)));
    }
    SUBCASE("copied out when the session is put in order") {
      strata::thread_track t;
      buffer.take(t, nullptr);
      // Nothing was copied: the three full blocks were handed over, the current one's records lent.
      CHECK(t.records.empty());
      REQUIRE(t.taken != nullptr);
      CHECK(t.taken->record_count() == n);
      t.taken->move_to_front_of(t.records);
      CHECK(payloads(t.records) == range(0, n));
    }
    SUBCASE("given back unread when the track goes") {
      strata::thread_track t;
      buffer.take(t, nullptr);
      CHECK(t.taken != nullptr);
    }
  }
  // Every block of the store is back in the pool, so the chunks it mapped are unmapped again.
  CHECK(strata::detail::block_pool::instance().chunk_count() == chunks_before);
}
