// thread_buffer with its producer and readers at once: a snapshot's copy or the counts, read
// while the thread records, see nothing torn, duplicated or reordered, and account for every
// record; a flight recorder reusing the block being copied drops that copy instead of mixing
// two laps.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "buffer_support.hpp"

namespace {

struct read_result {
  std::uint64_t reads = 0;
  std::uint64_t torn = 0;          // records that are not one whole record
  std::uint64_t out_of_order = 0;  // not strictly increasing: duplicated or reordered
  std::uint64_t too_many = 0;      // copies holding more than the flight recorder keeps
  std::uint64_t went_back = 0;     // counts that decreased
};

// One producer pushes `n` records while this thread reads the buffer until it is done.
read_result read_while_recording(std::size_t keep, std::uint64_t n, std::vector<strata::record>& final_copy) {
  auto store = strata_test::test_store();
  strata::detail::thread_buffer buffer(store, 0, keep);
  std::atomic<bool> bound{false}, done{false};
  std::thread producer([&] {
    strata_test::buffer_producer p(buffer);
    bound.store(true, std::memory_order_release);
    for (std::uint64_t i = 0; i < n; ++i) p.push(strata_test::make_record(i));
    done.store(true, std::memory_order_release);
    while (bound.load(std::memory_order_acquire)) std::this_thread::yield();  // stay bound
  });
  while (!bound.load(std::memory_order_acquire)) std::this_thread::yield();
  read_result res;
  std::uint64_t last_total = 0;
  std::vector<strata::record> copy;
  for (bool last = false; !last;) {
    last = done.load(std::memory_order_acquire);
    copy.clear();
    bool ok = true;
    const auto copied = buffer.copy_to(copy, ok);
    const auto counted = buffer.counts();
    ++res.reads;
    for (std::size_t i = 0; i < copy.size(); ++i) {
      if (copy[i].end != ~copy[i].begin || copy[i].payload != copy[i].begin) ++res.torn;
      if (i > 0 && copy[i].begin <= copy[i - 1].begin) ++res.out_of_order;
    }
    if (keep != 0 && copied.kept > keep) ++res.too_many;
    if (counted.kept + counted.lost < last_total) ++res.went_back;
    last_total = counted.kept + counted.lost;
  }
  final_copy = copy;
  bound.store(false, std::memory_order_release);
  producer.join();
  return res;
}

void check_reads(const read_result& res) {
  CHECK(res.reads > 0);
  CHECK(res.torn == 0);
  CHECK(res.out_of_order == 0);
  CHECK(res.too_many == 0);
  CHECK(res.went_back == 0);
}

}  // namespace

TEST_CASE("thread_buffer: a snapshot reads a recording thread's buffer without tearing it") {
  constexpr std::uint64_t n = 300'000;
  std::vector<strata::record> final_copy;
  // Small rings make the producer reuse the block being copied often.
  for (const std::size_t keep : {std::size_t{16}, std::size_t{2048}, std::size_t{5000}}) {
    CAPTURE(keep);
    check_reads(read_while_recording(keep, n, final_copy));
    // Read after the producer finished: exactly the newest `keep`.
    REQUIRE(final_copy.size() == keep);
    CHECK(final_copy.front().begin == n - keep);
    CHECK(final_copy.back().begin == n - 1);
  }
  SUBCASE("lossless: every record, once, in order") {
    check_reads(read_while_recording(0, n, final_copy));
    REQUIRE(final_copy.size() == n);
    CHECK(final_copy.back().begin == n - 1);
  }
}
