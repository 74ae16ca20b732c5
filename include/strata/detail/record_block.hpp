// strata/detail/record_block.hpp: the fixed-size block a thread records into.
//
// A session hands each recording thread 64 KiB blocks of records. A thread fills its block
// through its cursor (the hot path is unchanged: a compare with the block's end), then hands the
// full block itself back to the session and takes a fresh one on its cold path: no record is
// copied while the session runs. Blocks are allocated, and their pages touched, by the session
// (at start() and by its writer thread ahead of demand), not inside a user's scope.
#pragma once

#include <cstddef>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "strata/record.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// Bytes of one block: 2048 records.
inline constexpr std::size_t block_bytes = std::size_t{1} << 16;

/// 2048 records, page-aligned.
struct record_block {
  static constexpr std::size_t capacity = block_bytes / sizeof(record);
  record records[capacity];

  record* begin() noexcept { return records; }
  record* end() noexcept { return records + capacity; }
};
static_assert(sizeof(record_block) == block_bytes);

inline constexpr std::align_val_t block_alignment{4096};

/// A new block with every page touched (so that the thread recording into it takes no page
/// fault), or nullptr when memory is exhausted. One byte a page faults it in; writing the whole
/// block would only move 64 KiB through the cache that the recording thread then writes again.
inline record_block* allocate_block() noexcept {
  void* p = ::operator new(sizeof(record_block), block_alignment, std::nothrow);
  if (p == nullptr) return nullptr;
  constexpr std::size_t page = 4096;
  for (std::size_t at = 0; at < sizeof(record_block); at += page)
    static_cast<volatile char*>(p)[at] = 0;
  return static_cast<record_block*>(p);
}

inline void free_block(record_block* b) noexcept {
  if (b != nullptr) ::operator delete(static_cast<void*>(b), block_alignment);
}

/// Frees a block whose records were collected, giving its pages back to the system first: the
/// allocator would keep them resident (a freed 64 KiB chunk inside its heap), so a collected
/// session would go on holding its memory limit's worth of RSS. The block is page-aligned and
/// the allocator's bookkeeping lies before it, so only the block's own pages are dropped. Not
/// for the free blocks a session releases at its end (at most 16 MiB, reused by the next
/// session's blocks): a call per block costs a few microseconds, in the step that ends a window.
inline void discard_block(record_block* b) noexcept {
  if (b == nullptr) return;
#if defined(__linux__)
  ::madvise(static_cast<void*>(b), sizeof(record_block), MADV_DONTNEED);
#endif
  free_block(b);
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
