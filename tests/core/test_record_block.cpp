// Where blocks come from: the pool of 2 MiB chunks (Linux), aligned, reused, and unmapped with
// their last block.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstdint>
#include <set>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "strata/detail/record_block.hpp"

namespace {

using strata::detail::block_pool;
using strata::detail::record_block;

bool mapped(const void* p) {
  // msync fails with ENOMEM on an address no mapping covers.
  void* page = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{4095});
  return ::msync(page, 4096, MS_ASYNC) == 0 || errno != ENOMEM;
}

}  // namespace

TEST_CASE("record blocks: 64 KiB aligned chunks of 32, unmapped with their last block") {
  block_pool& pool = block_pool::instance();
  const std::size_t chunks_before = pool.chunk_count();
  const std::size_t ready_before = pool.free_count();
  constexpr std::size_t n = 96;

  std::vector<record_block*> blocks;
  std::set<std::uintptr_t> new_chunks;
  for (std::size_t i = 0; i < n; ++i) {
    record_block* b = strata::detail::allocate_block();
    REQUIRE(b != nullptr);
    const auto at = reinterpret_cast<std::uintptr_t>(b);
    CHECK(at % strata::detail::block_bytes == 0);
    if (i >= ready_before) new_chunks.insert(at & ~std::uintptr_t{block_pool::chunk_bytes - 1});
    b->records[0].payload = i;
    b->records[record_block::capacity - 1].payload = i;
    blocks.push_back(b);
  }
  // Blocks ready before came first; the rest filled whole new chunks, in order.
  const std::size_t fresh = n > ready_before ? n - ready_before : 0;
  const std::size_t opened = (fresh + block_pool::blocks_per_chunk - 1) / block_pool::blocks_per_chunk;
  CHECK(pool.chunk_count() == chunks_before + opened);
  CHECK(new_chunks.size() == opened);
  CHECK(std::set<record_block*>(blocks.begin(), blocks.end()).size() == n);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(blocks[i]->records[0].payload == i);
    CHECK(blocks[i]->records[record_block::capacity - 1].payload == i);
  }

  SUBCASE("a freed block is taken again before a new chunk is mapped") {
    record_block* last = blocks.back();
    strata::detail::free_block(last);
    CHECK(strata::detail::allocate_block() == last);
    CHECK(pool.chunk_count() == chunks_before + opened);
  }

  // Discarded or freed alike, the chunks opened for these blocks go back to the system.
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 2 == 0)
      strata::detail::discard_block(blocks[i]);
    else
      strata::detail::free_block(blocks[i]);
  }
  CHECK(pool.chunk_count() == chunks_before);
  CHECK(pool.free_count() == ready_before);
  for (std::uintptr_t c : new_chunks) CHECK_FALSE(mapped(reinterpret_cast<const void*>(c)));
}
