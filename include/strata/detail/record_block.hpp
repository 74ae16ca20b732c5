// strata/detail/record_block.hpp: the fixed-size block a thread records into.
//
// A session hands each recording thread 64 KiB blocks of records. A thread fills its block
// through its cursor (the hot path is unchanged: a compare with the block's end), then hands the
// full block itself back to the session and takes a fresh one on its cold path: no record is
// copied while the session runs. Blocks are allocated, and their pages faulted in, by the
// session (in start(), and by its writer thread ahead of demand), not inside a user's scope.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "strata/record.hpp"
#include "strata/detail/huge_pages.hpp"

// Under AddressSanitizer, a block in the pool's free list is poisoned, so that a use after
// free_block() is still reported as it was when blocks came from operator new.
#if defined(__SANITIZE_ADDRESS__)
#define STRATA_DETAIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_DETAIL_ASAN 1
#endif
#endif
#if defined(STRATA_DETAIL_ASAN)
#include <sanitizer/asan_interface.h>
#define STRATA_DETAIL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define STRATA_DETAIL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define STRATA_DETAIL_POISON(p, n) static_cast<void>(0)
#define STRATA_DETAIL_UNPOISON(p, n) static_cast<void>(0)
#endif

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

#if defined(__linux__)
/// Where blocks come from on Linux: 2 MiB chunks of 32 blocks, aligned to 2 MiB and advised as
/// transparent huge pages, so that the first touch of a chunk faults in one huge page instead
/// of 512 small ones. A sustained session needs fresh memory all the time (every record it
/// keeps), and with a recording thread on every core the kernel's time for 4 KiB faults (one
/// per 16 records written) is taken from the recording threads. Where THP is off, a chunk
/// faults in 4 KiB pages as plain allocations do. A chunk is unmapped as soon as all its
/// blocks are free again, so a collected session gives its memory back.
///
/// One pool per copy of strata in a process (a function-local static): every block goes back
/// to the pool of the store that took it, so two shared libraries with their own copies never
/// mix blocks. It is never destroyed: blocks may be freed by threads that exit after main().
class block_pool {
 public:
  static constexpr std::size_t chunk_bytes = huge_page_bytes;  // a chunk is one huge page
  static constexpr std::size_t blocks_per_chunk = chunk_bytes / block_bytes;

  static block_pool& instance() noexcept {
    static block_pool* pool = new block_pool;  // never destroyed, see above
    return *pool;
  }

  record_block* take() noexcept {
    lock();
    if (free_.empty() && !map_chunk()) {
      unlock();
      return nullptr;
    }
    record_block* b = free_.back();
    free_.pop_back();
    ++chunk_of(b).used;
    unlock();
    STRATA_DETAIL_UNPOISON(b, sizeof(record_block));
    return b;
  }

  void give_back(record_block* b) noexcept {
    STRATA_DETAIL_POISON(b, sizeof(record_block));
    lock();
    chunk& c = chunk_of(b);
    if (--c.used == 0) {
      // Its other blocks are all in free_: drop them and unmap the chunk.
      const auto base = c.base;
      std::size_t kept = 0;
      for (record_block* f : free_)
        if (base_of(f) != base) free_[kept++] = f;
      free_.resize(kept);
      c = chunks_.back();
      chunks_.pop_back();
      STRATA_DETAIL_UNPOISON(reinterpret_cast<void*>(base), chunk_bytes);  // the range may be mapped again
      ::munmap(reinterpret_cast<void*>(base), chunk_bytes);
    } else {
      free_.push_back(b);  // cannot fail: reserved for every block of every chunk
    }
    unlock();
  }

  /// Chunks mapped, and blocks ready in them, now (for tests and diagnostics).
  std::size_t chunk_count() noexcept {
    lock();
    const std::size_t n = chunks_.size();
    unlock();
    return n;
  }
  std::size_t free_count() noexcept {
    lock();
    const std::size_t n = free_.size();
    unlock();
    return n;
  }

 private:
  struct chunk {
    std::uintptr_t base;
    std::size_t used;
  };

  static std::uintptr_t base_of(const record_block* b) noexcept {
    return reinterpret_cast<std::uintptr_t>(b) & ~(std::uintptr_t{chunk_bytes} - 1);
  }
  chunk& chunk_of(const record_block* b) noexcept {
    const std::uintptr_t base = base_of(b);
    // Newest first: a block is most often one of the latest chunk's. (128 chunks for the
    // default 256 MiB limit.)
    for (auto c = chunks_.rbegin(); c != chunks_.rend(); ++c)
      if (c->base == base) return *c;
    __builtin_unreachable();
  }

  // Maps a 2 MiB-aligned chunk in huge pages and lists its blocks as free, lowest address last
  // so that it is taken first.
  bool map_chunk() noexcept {
    try {
      chunks_.reserve(chunks_.size() + 1);
      free_.reserve(free_.size() + blocks_per_chunk * (chunks_.size() + 1));
    } catch (...) {
      return false;
    }
    // Counted against the commit limit now: blocks are written to in full, and a chunk the
    // system cannot back is refused here (the record path's policy then applies), not by a
    // fault in a recording thread.
    void* p = map_huge_pages(chunk_bytes, swap_reserve::reserved);
    if (p == nullptr) return false;
    const auto base = reinterpret_cast<std::uintptr_t>(p);
    chunks_.push_back({base, 0});
    STRATA_DETAIL_POISON(reinterpret_cast<void*>(base), chunk_bytes);
    for (std::size_t i = blocks_per_chunk; i-- > 0;)
      free_.push_back(reinterpret_cast<record_block*>(base + i * block_bytes));
    return true;
  }

  void lock() noexcept { mutex_.lock(); }  // std::mutex::lock throws only on misuse
  void unlock() noexcept { mutex_.unlock(); }

  std::mutex mutex_;
  std::vector<chunk> chunks_;
  std::vector<record_block*> free_;
};
#endif

/// Faults in the pages of `[p, p + bytes)` for writing, so that the thread recording into them
/// takes no page fault. One madvise(MADV_POPULATE_WRITE) call (Linux 5.14) where the kernel has
/// it: the kernel walks the range itself, and a sanitizer's shadow memory is not touched for
/// each page as a store from this code would touch it. Elsewhere, one byte a page: writing the
/// whole range would only move it through the cache that the recording thread writes again.
inline void populate_for_writing(void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  static std::atomic<bool> unsupported{false};  // an older kernel says EINVAL once
  if (!unsupported.load(std::memory_order_relaxed)) {
    if (::madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return;
    if (errno == EINVAL) unsupported.store(true, std::memory_order_relaxed);
  }
#endif
  constexpr std::size_t page = 4096;
  for (std::size_t at = 0; at < bytes; at += page) static_cast<volatile char*>(p)[at] = 0;
}

/// A new block with every page faulted in, or nullptr when memory is exhausted.
inline record_block* allocate_block() noexcept {
#if defined(__linux__)
  void* p = block_pool::instance().take();
#else
  void* p = ::operator new(sizeof(record_block), block_alignment, std::nothrow);
#endif
  if (p == nullptr) return nullptr;
  populate_for_writing(p, sizeof(record_block));
  return static_cast<record_block*>(p);
}

/// Gives a block back; its chunk is unmapped, and its memory returned to the system, once the
/// chunk's last block is given back.
inline void free_block(record_block* b) noexcept {
  if (b == nullptr) return;
#if defined(__linux__)
  block_pool::instance().give_back(b);
#else
  ::operator delete(static_cast<void*>(b), block_alignment);
#endif
}

/// Frees a block whose records were collected, giving its pages back to the system first: its
/// chunk is unmapped only once every block of it is free, and a session's chunks hold blocks of
/// all its threads, so without this a collection that copies one thread's records out at a time
/// would hold about half as much memory again as the session recorded. Not for the free blocks
/// a session releases at its end (at most 16 MiB, reused by the next session's blocks): a call
/// per block costs a few microseconds, in the step that ends a window.
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
