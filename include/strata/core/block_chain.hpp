// strata/core/block_chain.hpp: one thread's records in a lossless session, as a chain of blocks.
//
// The producer (the recording thread) writes into its current block through its cursor, as into
// a ring: the hot path is the same compare with a limit (here, the block's end). At the limit,
// `push_slow` hands the full block to the chain and takes another from the session's store,
// under the store's lock; the consumer (collect, stats) reads the chain under the same lock, and
// the part-filled current block up to the cursor's published position. No record is copied
// while the thread records, and the thread never waits for a consumer: only, at the session's
// memory limit, for the store's writer to spill a block (block_store.hpp).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "strata/core/block_store.hpp"
#include "strata/core/bound_cursor.hpp"
#include "strata/core/record.hpp"
#include "strata/core/record_block.hpp"
#include "strata/core/recording_state.hpp"
#include "strata/core/trace_data.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

class block_chain {
 public:
  block_chain(std::shared_ptr<block_store> store, std::uint32_t thread)
      : store_(std::move(store)), thread_(thread) {}

  block_chain(const block_chain&) = delete;
  block_chain& operator=(const block_chain&) = delete;

  ~block_chain() {
    std::lock_guard lock(store_->mutex());
    for (block_entry& e : entries_) store_->forget_locked(e);
    if (current_ != nullptr) store_->release_current_locked(current_);
  }

  /// Producer's thread, with the registry's lock held: the thread writes through `c` from now
  /// on. Its first push finds the cursor at its limit and takes the first block.
  void bind(producer_cursor& c) noexcept {
    std::lock_guard lock(store_->mutex());
    cursor_.bind(c);
  }

  /// Undoes `bind`: the chain keeps the position in its own cursor; the outside cursor is left
  /// at its limit (nullptr) so that a push through it goes to the slow path.
  void unbind() noexcept {
    std::lock_guard lock(store_->mutex());
    cursor_.unbind();
  }

  /// Producer only: the cursor is at its limit (the current block is full, or there is none).
  /// Hands the full block off, takes a fresh one and stores `r`; or counts `r` as dropped when
  /// the session's memory is exhausted.
  bool push_slow(const record& r) noexcept {
    try {
      std::unique_lock lock(store_->mutex());
      const bool first = current_ == nullptr && !handed_off_any_;
      if (current_ != nullptr) seal_locked(record_block::capacity);
      // Not under the sequence count: taking a block may wait for the writer.
      record_block* fresh = store_->take_locked(lock, first);
      if (fresh == nullptr) {
        dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return false;
      }
      const std::uint64_t seq = begin_change();
      current_ = fresh;
      current_begin_.store(fresh->begin(), std::memory_order_relaxed);
      cursor_->store_next(fresh->begin());
      cursor_->limit = fresh->end();
      end_change(seq);
    } catch (...) {
      dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return false;  // out of memory for the chain's entry
    }
    record* p = cursor_->load_next();
    write_slot(p, r.begin, r.end, r.where, r.payload);
    cursor_->publish_next(p + 1);
    return true;
  }

  /// The thread is exiting (registry's lock held, on its own thread): its part-filled block's
  /// records are copied into an exact-size entry and the block goes back to the store, so a
  /// short-lived thread holds the memory of its records, not of a block.
  void retire() {
    std::lock_guard lock(store_->mutex());
    if (current_ == nullptr) return;
    const std::size_t n = static_cast<std::size_t>(cursor_->load_next() - current_->begin());
    block_entry& e = entries_.emplace_back();
    e.where = block_entry::place::copied;
    e.copy.assign(current_->begin(), current_->begin() + n);
    e.count = static_cast<std::uint32_t>(n);
    e.thread = thread_;
    store_->give_back_locked(current_);
    const std::uint64_t seq = begin_change();
    sealed_.store(sealed_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    forget_current();
    end_change(seq);
  }

  /// A snapshot's reader, from any thread, while the producer records: appends every record so
  /// far to `out`, oldest first (the current block up to what the producer has published),
  /// taking the store's lock for one block at a time, so that a thread handing a block off waits for at most one block's copy. False if
  /// spilled records could not be read back. The chain must not be collected meanwhile.
  bool copy_to(std::vector<record>& out) const {
    bool ok = true;
    for (std::size_t i = 0;; ++i) {
      std::lock_guard lock(store_->mutex());
      if (i < entries_.size()) {
        ok = store_->read_locked(entries_[i], out) && ok;
        continue;
      }
      // No block was handed off since the last one read: the current block completes the copy.
      if (current_ != nullptr) out.insert(out.end(), current_->begin(), cursor_->acquire_next());
      return ok;
    }
  }

  /// Consumer, once the session has stopped and the store's writer with it: takes the chain's
  /// records out. Where its spilled blocks are in the spill file, in order, goes to `spilled`;
  /// every other record is appended to `in_memory`, each block freed once copied, so collecting
  /// a session holds about its memory limit, not twice that. The spilled blocks are the chain's
  /// oldest (the writer spills the session's oldest full blocks first). The current block stays,
  /// for a late write of a thread that passed its gate before the session ended.
  void take(std::vector<spill_extent>& spilled, std::vector<record>& in_memory) {
    std::lock_guard lock(store_->mutex());
    std::size_t n = 0;
    for (const block_entry& e : entries_)
      if (e.where != block_entry::place::spilled) n += e.count;
    const record* const current_end = current_ != nullptr ? cursor_->acquire_next() : nullptr;
    const record* const current_begin = current_ != nullptr ? current_->begin() : nullptr;
    n += static_cast<std::size_t>(current_end - current_begin);
    in_memory.reserve(in_memory.size() + n);  // pages come as records are copied in
    for (block_entry& e : entries_) {
      if (e.where == block_entry::place::spilled) {
        spilled.push_back({e.offset, e.count});
        continue;
      }
      store_->read_locked(e, in_memory);  // in memory: cannot fail
      store_->forget_locked(e);
    }
    entries_.clear();
    in_memory.insert(in_memory.end(), current_begin, current_end);
  }

  /// Consumer, with the registry's lock held: records so far (stored, whether in memory or
  /// spilled). Reads a count the producer keeps under a sequence count rather than taking the
  /// store's lock, so polling it (stats()) never holds up a thread's hand-off.
  std::uint64_t size() const {
    for (;;) {
      const std::uint64_t seq = seq_.load(std::memory_order_acquire);
      if ((seq & 1) == 0) {
        std::uint64_t n = sealed_.load(std::memory_order_relaxed);
        const record* first = current_begin_.load(std::memory_order_relaxed);
        const record* next = cursor_->acquire_next();
        std::atomic_thread_fence(std::memory_order_acquire);
        if (seq_.load(std::memory_order_relaxed) == seq) {
          if (first != nullptr) n += static_cast<std::uint64_t>(next - first);
          return n;
        }
      }
      std::this_thread::yield();  // the producer is between two blocks (a few instructions)
    }
  }

  /// A crash handler (core/crash_recorder.hpp), with the store's lock held (taken with
  /// try_lock): calls `f(const record*, std::size_t)` for each run of records still in memory,
  /// oldest first, without allocating, and returns how many records of the chain are only in
  /// the spill file (left out).
  template <class F>
  std::uint64_t for_each_in_memory_locked(F&& f) const noexcept {
    std::uint64_t spilled = 0;
    for (const block_entry& e : entries_) {
      switch (e.where) {
        case block_entry::place::memory:
        case block_entry::place::spilling:
          if (e.block != nullptr) f(e.block->records, std::size_t{e.count});
          break;
        case block_entry::place::copied:
          f(e.copy.data(), e.copy.size());
          break;
        case block_entry::place::spilled:
          spilled += e.count;
          break;
      }
    }
    if (current_ != nullptr) {
      const record* first = current_->begin();
      const record* end = cursor_->acquire_next();
      if (end >= first && end <= first + record_block::capacity)
        f(first, static_cast<std::size_t>(end - first));
    }
    return spilled;
  }

  /// Records dropped because the session's memory was exhausted.
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

 private:
  // The current block, holding `count` records, joins the chain.
  void seal_locked(std::size_t count) {
    block_entry& e = entries_.emplace_back();
    e.block = current_;
    e.count = static_cast<std::uint32_t>(count);
    e.thread = thread_;
    handed_off_any_ = true;
    store_->hand_off_locked(e);
    const std::uint64_t seq = begin_change();
    sealed_.store(sealed_.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
    forget_current();
    end_change(seq);
  }

  // No current block: the cursor is left at its limit, so the next push comes back here.
  void forget_current() noexcept {
    current_ = nullptr;
    current_begin_.store(nullptr, std::memory_order_relaxed);
    cursor_->store_next(nullptr);
    cursor_->limit = nullptr;
  }

  // The producer's side of the sequence count that size() reads under (a seqlock: odd while
  // the current block and the sealed count change together).
  std::uint64_t begin_change() noexcept {
    const std::uint64_t seq = seq_.load(std::memory_order_relaxed);
    seq_.store(seq + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    return seq;
  }
  void end_change(std::uint64_t seq) noexcept { seq_.store(seq + 2, std::memory_order_release); }

  std::shared_ptr<block_store> store_;
  std::uint32_t thread_;
  // Guarded by the store's lock (entries are never moved: the store's spill queue points at
  // them).
  std::deque<block_entry> entries_;
  record_block* current_ = nullptr;
  bool handed_off_any_ = false;
  bound_cursor cursor_;
  std::atomic<std::uint64_t> dropped_{0};  // written by the producer only
  // What size() reads without the lock: records in the chain's entries, the current block's
  // first slot (null: none), and the sequence count that makes the two consistent.
  std::atomic<std::uint64_t> sealed_{0};
  std::atomic<record*> current_begin_{nullptr};
  std::atomic<std::uint64_t> seq_{0};
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
