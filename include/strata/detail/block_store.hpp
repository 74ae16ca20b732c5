// strata/detail/block_store.hpp: a session's blocks, its memory limit and its spill writer.
//
// Every recording thread of a lossless session (overflow_policy::lossless) fills blocks
// (record_block.hpp) taken from the session's store and hands the full ones back, pointer and
// all: nothing is copied while the session runs. The store bounds the memory this takes:
//
//   * `memory_limit` bounds the blocks held besides each thread's current one (full blocks
//     still in memory, and free blocks ready to be taken), so a session's peak is about the
//     limit plus one block per recording thread, whatever its length. A thread that hands a
//     block off takes the next only while the full blocks in memory are within the limit, so
//     what a session keeps with spilling off is exact: the limit's worth of blocks, plus each
//     thread's current one;
//   * past the limit, the store's writer thread appends the oldest full blocks to a spill file
//     in the output directory and recycles them; the session's trace writers read them back
//     (record_order.hpp), in order thanks to what the writer notes of each block it spills
//     (record_order.hpp);
//   * the writer also allocates (and touches) free blocks ahead of demand, so a thread taking a
//     block normally finds one ready. Without one, a thread allocates its own while the limit
//     allows; at the limit it waits for the writer to free one (counted as a wait), or, with
//     spilling off or failed, drops its newest records (counted as lost).
//
// A failed spill write (disk full, directory removed) is reported once on stderr and in the
// stats; blocks already spilled stay readable, and recording goes on in memory up to the limit.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "strata/profiler_config.hpp"
#include "strata/record.hpp"
#include "strata/detail/record_block.hpp"
#include "strata/detail/record_order.hpp"
#include "strata/detail/spill_file.hpp"

#if defined(__linux__)
#include <pthread.h>
#endif

namespace strata {
inline namespace v1 {

namespace detail {

/// Where one handed-off block's records are: in memory, being written, or in the spill file.
struct block_entry {
  enum class place : std::uint8_t { memory, spilling, spilled, copied };
  record_block* block = nullptr;  ///< memory and spilling: the block
  std::vector<record> copy;       ///< copied: the records of a part-filled block, exactly sized
  std::uint64_t offset = 0;       ///< spilled: where its records start in the spill file
  std::uint32_t count = 0;        ///< records in it
  std::uint32_t thread = 0;       ///< the recording thread's registration order
  place at = place::memory;
};

/// Settings of a store (from profiler_config).
struct block_store_settings {
  std::size_t memory_limit = std::size_t{256} << 20;
  bool spill = true;
  /// Free blocks the writer keeps ready; 0: an eighth of the limit's blocks, at most 256. (A
  /// flight recorder's threads take their blocks once, so its store keeps one thread's ring.)
  std::size_t reserve_blocks = 0;
  std::string spill_dir;       ///< where the spill file goes
  std::uint64_t pid = 0;
  std::uint32_t session = 0;   ///< the session's epoch, for the spill file's name
  std::uint64_t start_ticks = 0;  ///< when the session began: a scope begun before is not its
};

/// What the writer noted of the blocks it spilled of one thread (record_order.hpp): where the
/// next block's records fall, the records that were not in order, and how many were.
struct spilled_thread {
  block_order order;
  std::vector<record> late;
  std::uint64_t in_order = 0;
};

class block_store {
 public:
  explicit block_store(block_store_settings settings)
      : settings_(std::move(settings)),
        max_blocks_(std::max<std::size_t>(settings_.memory_limit / block_bytes, 1)),
        reserve_(std::clamp<std::size_t>(settings_.reserve_blocks != 0 ? settings_.reserve_blocks : max_blocks_ / 8,
                                         1, max_reserve)) {
    // The first blocks (1 MiB at most), on the thread that starts the session: a thread's first
    // scope finds its block ready. The writer tops the reserve up from there.
    std::lock_guard lock(mutex_);
    free_.reserve(max_reserve);  // the writer's top-ups never grow it
    const std::size_t first_blocks = std::min<std::size_t>(reserve_, 16);
    while (free_.size() < first_blocks && full_ + free_.size() < max_blocks_) {
      record_block* b = allocate_block();
      if (b == nullptr) break;
      ++allocated_;
      free_.push_back(b);
    }
    note_peak_locked();
  }

  block_store(const block_store&) = delete;
  block_store& operator=(const block_store&) = delete;

  ~block_store() {
    stop_writer();
    for (record_block* b : free_) free_block(b);
  }

  /// Starts the writer thread (allocation ahead of demand, spilling).
  void start_writer() {
    if (writer_.joinable()) return;
    writer_ = std::thread([this] { run_writer(); });
  }

  /// Stops and joins the writer; threads waiting for a block stop waiting (and drop).
  void stop_writer() noexcept {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    work_.notify_all();
    freed_.notify_all();
    if (writer_.joinable()) writer_.join();
  }

  /// For tests: while paused, the writer neither allocates nor spills.
  void pause_writer(bool paused) {
    {
      std::lock_guard lock(mutex_);
      paused_ = paused;
    }
    work_.notify_all();
  }

  std::mutex& mutex() noexcept { return mutex_; }

  /// A recording thread's cold path, with `lock` held on mutex(): a block for the thread that
  /// has none now (`first`: its first in this session, or a flight recorder's, which the limit
  /// does not bound: always granted while memory lasts).
  /// Waits (releasing the lock) for the writer when the limit is reached and spilling works;
  /// returns nullptr when the thread must drop instead.
  record_block* take_locked(std::unique_lock<std::mutex>& lock, bool first) {
    bool waited = false;
    for (;;) {
      if (first || full_ <= max_blocks_) {
        record_block* b = nullptr;
        if (!free_.empty()) {
          b = free_.back();
          free_.pop_back();
        } else {
          b = allocate_block();  // the writer is behind: the thread allocates its own
          if (b == nullptr) return nullptr;
          ++allocated_;
          note_peak_locked();
        }
        wake_writer_if_due_locked();
        return b;
      }
      if (!settings_.spill || failed_ || closing_) return nullptr;
      if (!waited) bump(waits_);
      waited = true;
      work_.notify_one();
      freed_.wait(lock);
    }
  }

  /// With the lock held: the thread's full (or, at its exit, part-filled) block moves to its
  /// chain as `entry`; the writer may spill it once the limit is near.
  void hand_off_locked(block_entry& entry) {
    ++full_;
    fifo_.push_back(&entry);
    wake_writer_if_due_locked();
  }

  /// With the lock held: a block no longer needed (a thread's current block when it exits, after
  /// its records were copied out) goes back to the free list.
  void give_back_locked(record_block* b) {
    if (full_ + free_.size() < max_blocks_) {
      free_.push_back(b);
      freed_.notify_all();
    } else {
      free_block(b);
      --allocated_;
    }
  }

  /// With the lock held: forgets `entry` (its chain is being collected or destroyed), freeing its
  /// block. An entry being spilled keeps its block until the writer is done (it is stopped before
  /// a session is collected, so this only happens for a store being torn down).
  void forget_locked(block_entry& entry) {
    if (entry.at == block_entry::place::memory) {
      fifo_.erase(std::remove(fifo_.begin(), fifo_.end(), &entry), fifo_.end());
      discard_block(entry.block);
      --allocated_;
      --full_;
      entry.block = nullptr;
    }
  }

  /// With the lock held: releases a current block of a chain being destroyed.
  void release_current_locked(record_block* b) {
    free_block(b);
    --allocated_;
  }

  /// Appends `entry`'s records to `out`; false if its spilled records cannot be read back.
  bool read_locked(const block_entry& entry, std::vector<record>& out) const {
    switch (entry.at) {
      case block_entry::place::memory:
      case block_entry::place::spilling:
        out.insert(out.end(), entry.block->records, entry.block->records + entry.count);
        return true;
      case block_entry::place::copied:
        out.insert(out.end(), entry.copy.begin(), entry.copy.end());
        return true;
      case block_entry::place::spilled:
        return spill_->read(entry.offset, entry.count, out);
    }
    return false;
  }

  /// What the store did with the session's memory so far. Takes the lock only after a failed
  /// spill (for its message), so a caller polling it does not hold up the recording threads'
  /// hand-offs.
  session_memory stats() {
    session_memory s;
    s.limit = settings_.memory_limit;
    s.spilled = spilled_records_.load(std::memory_order_relaxed);
    s.spill_bytes = spill_bytes_.load(std::memory_order_relaxed);
    s.peak = peak_bytes_.load(std::memory_order_relaxed);
    s.waits = waits_.load(std::memory_order_relaxed);
    if (spill_failed_.load(std::memory_order_acquire)) {
      std::lock_guard lock(mutex_);
      s.spill_error = spill_error_;
    }
    return s;
  }

  /// Once the writer is stopped (the session is being collected): nothing more is spilled, so
  /// forgetting the blocks still in memory need not look for them in the spill queue.
  void clear_spill_queue() {
    std::lock_guard lock(mutex_);
    fifo_.clear();
  }

  /// Once the writer is stopped (the session is being collected): the spill file, its name
  /// removed, or null if nothing was spilled. The store keeps no reference to it, so the file
  /// (and its disk space) goes when its taker lets go, not when the registry drops this store at
  /// the next session.
  std::shared_ptr<const spill_file> take_spill_file() {
    std::lock_guard lock(mutex_);
    if (!spill_->open()) return nullptr;
    spill_->unlink_name();
    return std::exchange(spill_, std::make_shared<spill_file>());
  }

  /// Once the writer is stopped: what it noted of the blocks it spilled of thread `thread`
  /// (a fresh note if none).
  spilled_thread take_spilled(std::uint32_t thread) {
    std::lock_guard lock(mutex_);
    const auto found = spilled_threads_.find(thread);
    if (found == spilled_threads_.end()) return fresh_spilled_thread();
    spilled_thread t = std::move(found->second);
    spilled_threads_.erase(found);
    return t;
  }

  /// Frees the free list (the session is collected; nothing more is recorded into it).
  void release_free_blocks() {
    std::lock_guard lock(mutex_);
    for (record_block* b : free_) free_block(b);
    allocated_ -= free_.size();
    free_.clear();
  }

 private:
  // What the writer has noted of a thread before spilling any of its blocks.
  spilled_thread fresh_spilled_thread() const { return {block_order(settings_.start_ticks), {}, 0}; }

  // Wakes the writer when a wake-up is worth its cost to the recording thread (a futex call):
  // the free blocks are down to half the reserve, or full blocks must be spilled for a thread to
  // go on. The writer then works until it has nothing left to do.
  void wake_writer_if_due_locked() {
    if (free_.size() <= reserve_ / 2 || full_ > max_blocks_) work_.notify_one();
  }

  void note_peak_locked() noexcept {
    const std::uint64_t now = std::uint64_t{allocated_} * block_bytes;
    if (now > peak_bytes_.load(std::memory_order_relaxed)) peak_bytes_.store(now, std::memory_order_relaxed);
  }

  // What the writer should do now: allocate a free block, spill the oldest full one, or nothing.
  enum class job { none, allocate, spill };
  job next_job_locked() const noexcept {
    if (paused_) return job::none;
    const bool can_spill = settings_.spill && !failed_ && !fifo_.empty();
    if (full_ > max_blocks_ && can_spill) return job::spill;  // a thread is waiting for it
    if (free_.size() >= reserve_) return job::none;
    if (full_ + free_.size() < max_blocks_) return job::allocate;
    return can_spill ? job::spill : job::none;
  }

  void run_writer() {
#if defined(__linux__)
    pthread_setname_np(pthread_self(), "strata writer");
#endif
    std::unique_lock lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return closing_ || next_job_locked() != job::none; });
      if (closing_) return;
      if (next_job_locked() == job::allocate) {
        lock.unlock();
        record_block* b = allocate_block();  // pages touched here, not on a recording thread
        lock.lock();
        if (b == nullptr) {
          failed_allocation_locked();
          continue;
        }
        if (next_job_locked() != job::allocate) {
          free_block(b);  // a thread allocated its own meanwhile: the limit holds
          continue;
        }
        ++allocated_;
        free_.push_back(b);
        note_peak_locked();
        freed_.notify_all();
        continue;
      }
      block_entry* e = fifo_.front();
      fifo_.pop_front();
      e->at = block_entry::place::spilling;
      lock.unlock();
      std::string error = spill(*e);
      lock.lock();
      if (!error.empty()) {
        e->at = block_entry::place::memory;  // stays readable where it is
        fifo_.push_front(e);
        failed_ = true;
        spill_error_ = error;
        spill_failed_.store(true, std::memory_order_release);
        std::fprintf(stderr, "strata: %s; recording goes on in memory up to memory_limit\n",
                     error.c_str());
        freed_.notify_all();  // waiting threads now drop instead
        continue;
      }
      free_.push_back(e->block);
      --full_;
      e->block = nullptr;
      e->at = block_entry::place::spilled;
      bump(spilled_records_, e->count);
      spill_bytes_.store(spill_size_, std::memory_order_relaxed);
      freed_.notify_all();
    }
  }

  void failed_allocation_locked() {
    // Out of memory: behave as at the limit (spill if possible, else threads drop).
    max_blocks_ = std::max<std::size_t>(full_ + free_.size(), 1);
  }

  // Off the lock: the writer owns the spill file's appends; the entry's block is not recycled
  // while it is being spilled.
  std::string spill(block_entry& e) {
    if (!spill_->open()) {
      const std::string path = settings_.spill_dir + "/.strata-spill-" +
                               std::to_string(settings_.pid) + "-" +
                               std::to_string(settings_.session) + ".bin";
      if (std::string error = spill_->create(path, settings_.pid); !error.empty()) return error;
    }
    // The thread's late records are noted while the block is in memory, so that reading the
    // file back in order takes one pass; undone if the block does not reach the file.
    spilled_thread* t = nullptr;
    std::size_t in_order = 0;
    std::size_t late_before = 0;
    block_order order_before;
    try {
      t = &spilled_threads_.try_emplace(e.thread, fresh_spilled_thread()).first->second;
      order_before = t->order;
      late_before = t->late.size();
      in_order = t->order.split(e.block->records, e.count, nullptr, &t->late);
    } catch (const std::bad_alloc&) {
      if (t != nullptr) {
        t->order = order_before;
        t->late.resize(late_before);
      }
      return "out of memory while spilling";
    }
    std::uint64_t offset = 0;
    std::string error = spill_->append(e.thread, e.block->records, e.count, offset);
    spill_size_ = spill_->size();  // published to stats() under the lock, by the caller
    if (!error.empty()) {
      t->order = order_before;
      t->late.resize(late_before);
      return error;
    }
    e.offset = offset;
    t->in_order += in_order;
    return {};
  }

  // Free blocks the writer keeps ready: at most 16 MiB, which two threads recording 5 M scopes/s
  // each fill in 50 ms, so the writer may miss the cores for that long before a thread has to
  // allocate a block itself.
  static constexpr std::size_t max_reserve = 256;

  block_store_settings settings_;
  std::size_t max_blocks_;
  const std::size_t reserve_;

  std::mutex mutex_;
  std::condition_variable work_;   // the writer waits for something to do
  // Threads at the limit wait for a free block. Notified with notify_all: a block freed while
  // the full blocks are still past the limit wakes a waiter that must wait again, and a single
  // notification would leave another waiter asleep once they no longer are.
  std::condition_variable freed_;
  std::vector<record_block*> free_;
  std::deque<block_entry*> fifo_;  // full blocks in memory, oldest first: the next to spill
  std::size_t allocated_ = 0;
  std::size_t full_ = 0;           // full blocks in memory (spilling ones included)
  bool paused_ = false;
  bool failed_ = false;            // a spill write failed: no more spilling this session
  bool closing_ = false;
  // What stats() reads without the lock; written under it.
  std::atomic<std::uint64_t> spilled_records_{0};
  std::atomic<std::uint64_t> spill_bytes_{0};
  std::atomic<std::uint64_t> peak_bytes_{0};
  std::atomic<std::uint64_t> waits_{0};
  std::atomic<bool> spill_failed_{false};
  std::string spill_error_;        // guarded by mutex_

  static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  // Appended by the writer, read by the collector (and after it, by the trace writers).
  std::shared_ptr<spill_file> spill_ = std::make_shared<spill_file>();
  std::map<std::uint32_t, spilled_thread> spilled_threads_;  // the writer's, until it stops
  std::uint64_t spill_size_ = 0;   // the writer's own copy of spill_.size()
  std::thread writer_;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
