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
#include <vector>

#include "strata/core/block_store.hpp"
#include "strata/core/bound_cursor.hpp"
#include "strata/core/record.hpp"
#include "strata/core/record_block.hpp"
#include "strata/core/recording_state.hpp"

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
      current_ = store_->take_locked(lock, first);
      if (current_ == nullptr) {
        cursor_->store_next(nullptr);
        cursor_->limit = nullptr;
        dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return false;
      }
      cursor_->store_next(current_->begin());
      cursor_->limit = current_->end();
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
    current_ = nullptr;
    cursor_->store_next(nullptr);
    cursor_->limit = nullptr;
  }

  /// Consumer, with the registry's lock held: appends every record so far to `out`, oldest
  /// first (the current block up to what the producer has published). False if spilled records
  /// could not be read back (what was read is kept).
  bool read(std::vector<record>& out) const {
    std::lock_guard lock(store_->mutex());
    bool ok = true;
    for (const block_entry& e : entries_) ok = store_->read_locked(e, out) && ok;
    if (current_ != nullptr) {
      const record* first = current_->begin();
      const record* end = cursor_->acquire_next();
      out.insert(out.end(), first, end);
    }
    return ok;
  }

  /// Consumer, once the chain's records are collected: frees its blocks (the current block
  /// stays, for a late write of a thread that passed its gate before the session ended).
  void discard() {
    std::lock_guard lock(store_->mutex());
    for (block_entry& e : entries_) store_->forget_locked(e);
    entries_.clear();
  }

  /// Consumer: records so far (stored, whether in memory or spilled).
  std::uint64_t size() const {
    std::lock_guard lock(store_->mutex());
    std::uint64_t n = 0;
    for (const block_entry& e : entries_) n += e.count;
    if (current_ != nullptr) n += static_cast<std::uint64_t>(cursor_->acquire_next() - current_->begin());
    return n;
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
    current_ = nullptr;
    handed_off_any_ = true;
    store_->hand_off_locked(e);
  }

  std::shared_ptr<block_store> store_;
  std::uint32_t thread_;
  // Guarded by the store's lock (entries are never moved: the store's spill queue points at
  // them).
  std::deque<block_entry> entries_;
  record_block* current_ = nullptr;
  bool handed_off_any_ = false;
  bound_cursor cursor_;
  std::atomic<std::uint64_t> dropped_{0};  // written by the producer only
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
