// strata/detail/thread_buffer.hpp: one thread's records in one session, in blocks.
//
// Every recording thread writes into 64 KiB blocks taken from the session's store
// (block_store.hpp) through its cursor (record_path.hpp): the hot path compares the cursor with
// the block's end, for every session alike. Only when the block is full does `push_slow` run,
// and that is where the two kinds of session differ:
//
//   * lossless (the default): the full block is handed to the store, pointer and all, and
//     joins the thread's chain (the store's writer may spill it to disk later); the next block
//     comes from the store's free list. Nothing is copied while the thread records.
//   * flight recorder: the thread keeps a ring of K + 1 blocks, K the blocks that hold its
//     `buffer_capacity` records; its first lap takes them from the store (allocated and touched
//     ahead of demand, like a lossless thread's), and from then on it reuses its oldest. It
//     always holds at least its newest `buffer_capacity` records, in constant memory, and
//     that is what a reader takes.
//
// A flight recorder's blocks are reused while readers may be copying them (a snapshot, a crash
// handler, a collection racing with a thread's last record), so each is read under a
// *generation*: its number in the thread's stream of blocks, which the producer changes before
// it writes the first record of its new lap. A copy whose generation changed meanwhile is
// dropped and its records counted as lost (they were overwritten, as a flight recorder does).
// A lossless chain is read under the store's lock, one block at a time.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "strata/record.hpp"
#include "strata/trace_data.hpp"
#include "strata/detail/block_store.hpp"
#include "strata/detail/record_path.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// What a thread's buffer holds, as stats() and snapshots count it.
struct buffer_counts {
  std::uint64_t kept = 0;  ///< records a collection now would take
  std::uint64_t lost = 0;  ///< records lost so far (dropped at the memory limit, or overwritten)
};

class thread_buffer {
 public:
  /// A buffer for thread number `thread` (its registration order) with blocks from `store`:
  /// lossless when `keep` is 0, else a flight recorder of the newest `keep` records.
  thread_buffer(std::shared_ptr<block_store> store, std::uint32_t thread, std::size_t keep)
      : store_(std::move(store)), thread_(thread), session_(store_->session()), keep_(keep) {
    if (keep_ != 0) {
      ring_size_ = (keep_ + record_block::capacity - 1) / record_block::capacity + 1;
      ring_ = std::make_unique<ring_slot[]>(ring_size_);
    }
  }

  thread_buffer(const thread_buffer&) = delete;
  thread_buffer& operator=(const thread_buffer&) = delete;

  ~thread_buffer() {
    std::lock_guard lock(store_->mutex());
    for (block_entry& e : entries_) store_->forget_locked(e);
    if (keep_ != 0) {
      for (std::size_t i = 0; i < ring_size_; ++i)
        if (ring_[i].block != nullptr) store_->release_current_locked(ring_[i].block);
    } else if (current_ != nullptr) {
      store_->release_current_locked(current_);
    }
  }

  bool flight_recorder() const noexcept { return keep_ != 0; }

  // ---- the producer (the recording thread) ------------------------------------------------

  /// The producer's thread, with the registry's lock held: the thread writes through `c` from
  /// now on. Its first push finds the cursor at its limit and takes the first block.
  void bind(cursor& c) noexcept {
    std::lock_guard lock(store_->mutex());
    c.store_next(at_->load_next());
    c.limit = at_->limit;
    at_ = &c;
  }

  /// Undoes `bind` (a new session's buffer replaces this one, or the thread exits): the buffer
  /// keeps the position in its own cursor, and the thread's is left at its limit (nullptr) so
  /// that a push through it goes to the slow path.
  void unbind() noexcept {
    std::lock_guard lock(store_->mutex());
    if (at_ == &own_) return;
    own_.store_next(at_->load_next());
    own_.limit = at_->limit;
    at_->store_next(nullptr);
    at_->limit = nullptr;
    at_ = &own_;
  }

  /// The producer's cold path: the cursor is at its limit (the block is full, or there is
  /// none yet). Moves on to the next block and stores `r` there, or counts `r` as lost.
  bool push_slow(const record& r) noexcept {
    const bool moved = keep_ != 0 ? next_flight_block() : next_lossless_block();
    if (!moved) {
      dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return false;
    }
    record* p = at_->load_next();
    write_slot(p, r.begin, r.end, r.site, r.payload);
    at_->publish_next(p + 1);
    return true;
  }

  /// The thread is exiting (on its own thread, the registry's lock held). A thread still on
  /// its first block has its records copied into an exact-size list and the block goes back to
  /// the store, so a short-lived thread holds the memory of its records, not of a block. A
  /// flight recorder further along keeps its blocks as they are: its ring is what it holds
  /// anyway, and copying it would take that much memory again.
  void retire() {
    if (keep_ != 0) {
      if (current_ == nullptr || number_.load(std::memory_order_relaxed) != 0) return;
      std::vector<record> kept;
      const buffer_counts c = copy_flight(kept);
      std::lock_guard lock(store_->mutex());
      retired_lost_ = c.lost;
      retired_ = std::move(kept);
      retired_flag_ = true;
      for (std::size_t i = 0; i < ring_size_; ++i) {
        if (ring_[i].block != nullptr) store_->give_back_locked(ring_[i].block);
        ring_[i].block = nullptr;
      }
      const std::uint64_t seq = begin_change();
      forget_current();
      end_change(seq);
      return;
    }
    std::lock_guard lock(store_->mutex());
    if (current_ == nullptr) return;
    const std::size_t n = static_cast<std::size_t>(at_->load_next() - current_->begin());
    block_entry& e = entries_.emplace_back();
    e.at = block_entry::place::copied;
    e.copy.assign(current_->begin(), current_->begin() + n);
    e.count = static_cast<std::uint32_t>(n);
    e.thread = thread_;
    e.session = session_;
    store_->give_back_locked(current_);
    const std::uint64_t seq = begin_change();
    sealed_.store(sealed_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    forget_current();
    end_change(seq);
  }

  // ---- readers ----------------------------------------------------------------------------

  /// With the registry's lock held (stats()): what the buffer holds and has lost so far. Reads
  /// only counters, under a sequence count, so polling it never holds up the thread nor
  /// changes what it keeps.
  buffer_counts counts() const {
    const std::uint64_t dropped = dropped_.load(std::memory_order_relaxed);
    if (keep_ != 0 && retired_flag_) return {retired_.size(), retired_lost_ + dropped};
    const position at = read_position();
    const std::uint64_t total = at.sealed + at.in_current();
    if (keep_ == 0) return {total, dropped};
    const std::uint64_t kept = std::min<std::uint64_t>(total, keep_);
    return {kept, total - kept + dropped};
  }

  /// A snapshot, from any thread while the producer records (a flight recorder: with the
  /// registry's lock held, which orders it with `retire`): appends every record the buffer
  /// holds to `out`, oldest first, and returns its counts. A lossless chain is read one block
  /// at a time under the store's lock, so that a thread handing a block off waits for at most
  /// one block's copy; `ok` turns false if spilled records could not be read back.
  buffer_counts copy_to(std::vector<record>& out, bool& ok) const {
    if (keep_ != 0) return copy_flight_or_retired(out);
    const std::size_t base = out.size();
    for (std::size_t i = 0;; ++i) {
      std::lock_guard lock(store_->mutex());
      if (i < entries_.size()) {
        ok = store_->read_locked(entries_[i], out) && ok;
        continue;
      }
      // No block was handed off since the last one read: the current block completes the copy.
      if (current_ != nullptr) out.insert(out.end(), current_->begin(), at_->acquire_next());
      return {out.size() - base, dropped_.load(std::memory_order_relaxed)};
    }
  }

  /// Once the session has ended (the registry's lock held, the store spilling no more): takes
  /// the buffer's records into `t`. A lossless chain's spilled blocks stay in the spill file
  /// (where they are goes to `t.spilled.extents`, oldest first: the writer spills the oldest
  /// full blocks first), its blocks in memory are handed over as they are (`t.taken`: ending
  /// a window copies nothing), and so are the current block's records, lent: the current block
  /// stays the buffer's, for a late write of a thread that passed its gate before the session
  /// ended, and `owner` (what holds this buffer) keeps it until they are copied. A flight
  /// recorder's newest records are copied.
  void take(thread_track& t, std::shared_ptr<const void> owner) {
    if (keep_ != 0) {
      t.lost = copy_flight_or_retired(t.records).lost;
      return;
    }
    shared_handle<taken_blocks> taken;
    const bool lends = current_ != nullptr && at_->acquire_next() != current_->begin();
    if (!entries_.empty() || lends) taken = make_shared_handle<taken_blocks>(store_);
    std::lock_guard lock(store_->mutex());
    for (block_entry& e : entries_) {
      switch (e.at) {
        case block_entry::place::spilled:
          t.spilled.extents.push_back({e.offset, e.count});
          break;
        case block_entry::place::memory:
          taken->add_block_locked(store_->take_entry_locked(e), e.count);
          break;
        case block_entry::place::copied:
          taken->add_copy(std::move(e.copy));
          break;
        case block_entry::place::spilling:  // not while a session is collected; read as in memory
          {
            std::vector<record> copy;
            store_->read_locked(e, copy);
            taken->add_copy(std::move(copy));
            store_->forget_locked(e);
          }
          break;
      }
    }
    entries_.clear();
    if (lends) {
      const record* const end = at_->acquire_next();
      taken->add_lent(current_->begin(), static_cast<std::uint32_t>(end - current_->begin()), std::move(owner));
    }
    t.lost = dropped_.load(std::memory_order_relaxed);
    t.taken = std::move(taken);
  }

  /// What a crash handler could take of a buffer.
  struct crash_counts {
    std::uint64_t dumped = 0;      ///< records passed to the callback
    std::uint64_t lost = 0;        ///< dropped, overwritten, or in a block being reused
    std::uint64_t not_dumped = 0;  ///< a lossless chain's records only in the spill file
    bool complete = true;          ///< false: the producer's position could not be read
  };

  /// A crash handler (strata/detail/crash_recorder.hpp), with the registry's lock held and,
  /// when `store_locked`, the store's (both taken with try_lock): calls `f(const record*,
  /// std::size_t)` for each run of records still in memory, oldest first, without allocating.
  /// The other threads' gates are closed by then, so a flight recorder's blocks change under
  /// the handler only for a thread's last record or two; a block being reused is left out.
  template <class F>
  crash_counts for_each_for_crash(F&& f, bool store_locked) const noexcept {
    crash_counts c;
    c.lost = dropped_.load(std::memory_order_relaxed);
    position at;
    const auto emit = [&](const record* first, std::size_t n) {
      if (n == 0) return;
      f(first, n);
      c.dumped += n;
    };
    if (keep_ != 0) {
      if (retired_flag_) {
        emit(retired_.data(), retired_.size());
        c.lost += retired_lost_;
        return c;
      }
      // A few tries, not a wait: the producer between two blocks may be the crashed thread.
      int tries = 0;
      while (!try_read_position(at))
        if (++tries == 1000) {
          c.complete = false;
          return c;
        }
      const flight_range range = newest_range(at);
      c.lost += range.total - range.wanted;
      for (std::uint64_t j = range.first_block; range.wanted != 0 && j <= range.current_block; ++j) {
        const ring_slot& s = ring_[j % ring_size_];
        const record* first = s.block->begin() + (j == range.first_block ? range.skip : 0);
        const record* last = j == range.current_block ? range.next : s.block->end();
        if (s.generation.load(std::memory_order_acquire) != j)
          c.lost += static_cast<std::uint64_t>(last - first);  // being reused: overwritten
        else
          emit(first, static_cast<std::size_t>(last - first));
      }
      return c;
    }
    if (!store_locked) return c;
    for (const block_entry& e : entries_) {
      switch (e.at) {
        case block_entry::place::memory:
        case block_entry::place::spilling:
          if (e.block != nullptr) emit(e.block->records, e.count);
          break;
        case block_entry::place::copied:
          emit(e.copy.data(), e.copy.size());
          break;
        case block_entry::place::spilled:
          c.not_dumped += e.count;
          break;
      }
    }
    if (current_ != nullptr) {
      const record* first = current_->begin();
      const record* end = at_->acquire_next();
      if (end >= first && end <= first + record_block::capacity)
        emit(first, static_cast<std::size_t>(end - first));
    }
    return c;
  }

 private:
  // A flight recorder's block: where it is, and which of the thread's blocks it holds now.
  struct ring_slot {
    record_block* block = nullptr;
    std::atomic<std::uint64_t> generation{~std::uint64_t{0}};
  };

  // Where the producer is, read consistently: records in sealed blocks, the current block's
  // number, first slot and the next slot to write.
  struct position {
    std::uint64_t sealed = 0;
    std::uint64_t number = 0;
    const record* first = nullptr;  // null: no block yet
    const record* next = nullptr;
    std::uint64_t in_current() const noexcept {
      return first != nullptr ? static_cast<std::uint64_t>(next - first) : 0;
    }
  };

  // One consistent read; false if the producer was between two blocks.
  bool try_read_position(position& at) const noexcept {
    const std::uint64_t seq = seq_.load(std::memory_order_acquire);
    if ((seq & 1) != 0) return false;
    at.sealed = sealed_.load(std::memory_order_relaxed);
    at.number = number_.load(std::memory_order_relaxed);
    at.first = current_begin_.load(std::memory_order_relaxed);
    at.next = at_->acquire_next();
    std::atomic_thread_fence(std::memory_order_acquire);
    return seq_.load(std::memory_order_relaxed) == seq;
  }

  position read_position() const {
    position at;
    // The producer is between two blocks (a few instructions): let it finish.
    while (!try_read_position(at)) std::this_thread::yield();
    return at;
  }

  // Of a flight recorder at `at`: the newest `keep_` records are blocks first_block ..
  // current_block, skipping `skip` records of the first; `total` is everything it recorded.
  struct flight_range {
    std::uint64_t total = 0, wanted = 0;
    std::uint64_t first_block = 0, current_block = 0, skip = 0;
    const record* next = nullptr;
  };

  flight_range newest_range(const position& at) const noexcept {
    flight_range r;
    const std::uint64_t in_current = at.in_current();
    r.total = at.sealed + in_current;
    r.wanted = std::min<std::uint64_t>(r.total, keep_);
    if (r.wanted == 0) return r;
    r.current_block = at.number;
    r.next = at.next;
    const std::uint64_t from_full = r.wanted > in_current ? r.wanted - in_current : 0;
    const std::uint64_t full_blocks = (from_full + record_block::capacity - 1) / record_block::capacity;
    r.first_block = at.number - full_blocks;
    r.skip = full_blocks * record_block::capacity - from_full;
    if (full_blocks == 0) r.skip = in_current - r.wanted;
    return r;
  }

  // A flight recorder's newest records (or, once its thread exited, what it kept then),
  // appended to `out` oldest first.
  buffer_counts copy_flight_or_retired(std::vector<record>& out) const {
    if (retired_flag_) {
      out.insert(out.end(), retired_.begin(), retired_.end());
      return {retired_.size(), retired_lost_ + dropped_.load(std::memory_order_relaxed)};
    }
    buffer_counts c = copy_flight(out);
    c.lost += dropped_.load(std::memory_order_relaxed);
    return c;
  }

  // Copies the newest `keep_` records, oldest first, each block validated by its generation:
  // records of a block reused meanwhile are left out and counted as lost.
  buffer_counts copy_flight(std::vector<record>& out) const {
    const flight_range range = newest_range(read_position());
    buffer_counts c{0, range.total - range.wanted};
    out.reserve(out.size() + range.wanted);  // one allocation: no copy of a half-grown vector
    for (std::uint64_t j = range.first_block; range.wanted != 0 && j <= range.current_block; ++j) {
      const ring_slot& s = ring_[j % ring_size_];
      const record* first = s.block->begin() + (j == range.first_block ? range.skip : 0);
      const record* last = j == range.current_block ? range.next : s.block->end();
      const auto n = static_cast<std::size_t>(last - first);
      const std::size_t base = out.size();
      if (s.generation.load(std::memory_order_acquire) == j) {
        out.resize(base + n);
        for (std::size_t i = 0; i < n; ++i) {
          record& slot = const_cast<record&>(first[i]);
          record& dst = out[base + i];
          dst.begin = std::atomic_ref<std::uint64_t>(slot.begin).load(std::memory_order_relaxed);
          dst.end = std::atomic_ref<std::uint64_t>(slot.end).load(std::memory_order_relaxed);
          dst.site = std::atomic_ref<const site*>(slot.site).load(std::memory_order_relaxed);
          dst.payload = std::atomic_ref<std::uint64_t>(slot.payload).load(std::memory_order_relaxed);
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        if (s.generation.load(std::memory_order_relaxed) == j) {
          c.kept += n;
          continue;
        }
        out.resize(base);  // reused while it was copied
      }
      c.lost += n;
    }
    return c;
  }

  // Lossless: the full block (if any) joins the chain and a fresh one comes from the store,
  // under its lock. False when the session's memory is exhausted.
  bool next_lossless_block() noexcept {
    try {
      std::unique_lock lock(store_->mutex());
      const bool first = current_ == nullptr && !handed_off_any_;
      if (current_ != nullptr) seal_locked();
      // Not under the sequence count: taking a block may wait for the writer.
      record_block* fresh = store_->take_locked(lock, first);
      if (fresh == nullptr) return false;
      const std::uint64_t seq = begin_change();
      make_current(fresh, 0);  // a chain's blocks need no number
      end_change(seq);
      return true;
    } catch (...) {
      return false;  // out of memory for the chain's entry
    }
  }

  // The current block, full, joins the chain.
  void seal_locked() {
    block_entry& e = entries_.emplace_back();
    e.block = current_;
    e.count = static_cast<std::uint32_t>(record_block::capacity);
    e.thread = thread_;
    e.session = session_;
    handed_off_any_ = true;
    store_->hand_off_locked(e);
    const std::uint64_t seq = begin_change();
    sealed_.store(sealed_.load(std::memory_order_relaxed) + record_block::capacity,
                  std::memory_order_relaxed);
    forget_current();
    end_change(seq);
  }

  // Flight recorder: the next block of the ring, taken from the store on the first lap, else
  // the oldest, reused under a new generation. False (the full block stays current) when the
  // store has no memory left.
  bool next_flight_block() noexcept {
    const bool have_current = current_ != nullptr;
    const std::uint64_t number = have_current ? number_.load(std::memory_order_relaxed) + 1 : 0;
    ring_slot& s = ring_[number % ring_size_];
    if (s.block == nullptr) {
      try {
        std::unique_lock lock(store_->mutex());
        s.block = store_->take_locked(lock, true);
      } catch (...) {
        s.block = nullptr;
      }
      if (s.block == nullptr) {
        if (have_current) at_->limit = at_->load_next();  // full: every push asks again
        return false;
      }
    }
    // The new generation is stored before any record of the new lap (write_slot's fence
    // orders it first), so a reader that copied any of those sees the block as reused.
    s.generation.store(number, std::memory_order_relaxed);
    const std::uint64_t seq = begin_change();
    if (have_current)
      sealed_.store(sealed_.load(std::memory_order_relaxed) + record_block::capacity,
                    std::memory_order_relaxed);
    make_current(s.block, number);
    end_change(seq);
    return true;
  }

  // Under the sequence count: `b` (the thread's block number `number`) becomes current.
  void make_current(record_block* b, std::uint64_t number) noexcept {
    current_ = b;
    number_.store(number, std::memory_order_relaxed);
    current_begin_.store(b->begin(), std::memory_order_relaxed);
    at_->store_next(b->begin());
    at_->limit = b->end();
  }

  // No current block: the cursor is left at its limit, so the next push comes back here.
  void forget_current() noexcept {
    current_ = nullptr;
    current_begin_.store(nullptr, std::memory_order_relaxed);
    at_->store_next(nullptr);
    at_->limit = nullptr;
  }

  // The producer's side of the sequence count that read_position() reads under (a seqlock: odd
  // while the current block and the sealed count change together).
  std::uint64_t begin_change() noexcept {
    const std::uint64_t seq = seq_.load(std::memory_order_relaxed);
    seq_.store(seq + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    return seq;
  }
  void end_change(std::uint64_t seq) noexcept { seq_.store(seq + 2, std::memory_order_release); }

  std::shared_ptr<block_store> store_;
  std::uint32_t thread_;
  std::uint32_t session_;  // the store's session when the buffer was made: its blocks' session
  std::size_t keep_;  // 0: lossless; else a flight recorder's records

  // Where the producer writes: the thread's cursor while bound to it, else `own_`.
  cursor own_;
  cursor* at_ = &own_;
  record_block* current_ = nullptr;
  std::atomic<std::uint64_t> dropped_{0};  // written by the producer only
  // What read_position() reads without a lock: records in sealed blocks, the current block's
  // number and first slot (null: none), and the sequence count that makes them consistent.
  std::atomic<std::uint64_t> sealed_{0};
  std::atomic<std::uint64_t> number_{0};
  std::atomic<record*> current_begin_{nullptr};
  std::atomic<std::uint64_t> seq_{0};

  // Lossless: the chain, guarded by the store's lock (entries never move: the store's spill
  // queue points at them).
  std::deque<block_entry> entries_;
  bool handed_off_any_ = false;

  // Flight recorder: the ring of blocks, and what the thread kept when it exited (guarded by
  // the registry's lock).
  std::size_t ring_size_ = 0;
  std::unique_ptr<ring_slot[]> ring_;
  std::vector<record> retired_;
  std::uint64_t retired_lost_ = 0;
  bool retired_flag_ = false;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
