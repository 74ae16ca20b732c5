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
//   * the store is made with `preallocate` bytes of blocks ready (all of the default limit),
//     their pages faulted in on the thread that starts the session, so that no thread faults
//     pages in while the threads record: the kernel zeroes every fresh page, and with a thread
//     recording on every core that time would be taken from them. Past those, the writer
//     allocates free blocks ahead of demand, so a thread taking a block normally finds one
//     ready. Without one, a thread allocates its own while the limit allows; at the limit it
//     waits for the writer to free one (counted as a wait), or, with spilling off or failed,
//     drops its newest records (counted as lost).
//
// A failed spill write (disk full, directory removed) is reported once on stderr and in the
// stats; blocks already spilled stay readable, and recording goes on in memory up to the limit.
//
// A store outlives one session when the next has the same settings (the windows of a
// schedule): its writer thread and its free blocks, pages already touched, carry over, so
// that entering a window neither starts a thread nor faults in memory. Between two sessions
// the writer spills nothing; what a session keeps is collected while the store is between
// sessions (end_session() to begin_session()).
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
#include "strata/detail/background_thread.hpp"
#include "strata/detail/record_block.hpp"
#include "strata/detail/record_order.hpp"
#include "strata/detail/spill_file.hpp"

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
  std::uint32_t session = 0;      ///< the session (epoch) of the thread's buffer
  place at = place::memory;
};

/// Settings of a store (from profiler_config).
struct block_store_settings {
  std::size_t memory_limit = std::size_t{256} << 20;
  bool spill = true;
  /// Bytes of blocks made ready when the store is made (at most `memory_limit`), and kept ready
  /// from then on (profiler_config::preallocate).
  std::size_t preallocate = 0;
  /// Free blocks the writer keeps ready besides (at least); 0: an eighth of the limit's blocks,
  /// at most 256. (A flight recorder's threads take their blocks once, so its store keeps one
  /// thread's ring.)
  std::size_t reserve_blocks = 0;
  std::string spill_dir;       ///< where the spill file goes
  std::uint64_t pid = 0;
  std::uint32_t session = 0;   ///< the session's epoch, for the spill file's name
  std::uint64_t start_ticks = 0;  ///< when the session began: a scope begun before is not its

  /// Whether a store made with these settings serves a session with `next` as well: the same
  /// blocks, limit and spill place (the session and its start differ from one to the next).
  bool same_store_as(const block_store_settings& next) const noexcept {
    return memory_limit == next.memory_limit && spill == next.spill && preallocate == next.preallocate &&
           reserve_blocks == next.reserve_blocks && spill_dir == next.spill_dir && pid == next.pid;
  }
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
        preallocated_(std::min(settings_.preallocate / block_bytes, max_blocks_)),
        reserve_(std::clamp<std::size_t>(settings_.reserve_blocks != 0 ? settings_.reserve_blocks : max_blocks_ / 8,
                                         1, max_reserve)),
        kept_(std::max(preallocated_, reserve_)) {
    // The preallocated blocks (or the first 16, 1 MiB), on the thread that starts the session:
    // a recording thread finds its blocks ready, their pages faulted in, and no other thread
    // takes a core from it to fault pages in while it records (every fresh page is zeroed by
    // the kernel: with a thread recording on every core that time would be theirs). The writer
    // keeps the reserve topped up from there (spilling to do so near the limit), and blocks
    // given back are kept up to what was preallocated.
    std::lock_guard lock(mutex_);
    free_.reserve(max_blocks_);  // it never holds more, so a push onto it cannot throw
    const std::size_t first_blocks = std::max<std::size_t>(preallocated_, std::min<std::size_t>(reserve_, 16));
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

  /// Whether the store can serve a session with `next` too (same_store_as its own settings).
  bool serves(const block_store_settings& next) {
    std::lock_guard lock(mutex_);
    return settings_.same_store_as(next);
  }

  /// The session (epoch) whose blocks the store takes now.
  std::uint32_t session() {
    std::lock_guard lock(mutex_);
    return settings_.session;
  }

  /// The session that recorded into this store has ended: threads waiting for a block stop
  /// waiting (and drop), and the writer spills no more. Returns once the writer is not in the
  /// middle of a spill, so the session's blocks and spill file can be collected.
  void end_session() noexcept {
    std::unique_lock lock(mutex_);
    open_ = false;
    freed_.notify_all();
    idle_.wait(lock, [&] { return !spilling_; });
  }

  /// Starts serving `next` (same_store_as the settings the store was made with): its blocks
  /// are the free blocks the store keeps, its counters and spill file start afresh. Whatever
  /// an earlier session's thread still hands over is never spilled into this session's file.
  void begin_session(std::uint32_t next, std::uint64_t start_ticks) {
    {
      std::lock_guard lock(mutex_);
      settings_.session = next;
      settings_.start_ticks = start_ticks;
      max_blocks_ = std::max<std::size_t>(settings_.memory_limit / block_bytes, 1);
      open_ = true;
      failed_ = false;
      fifo_.clear();
      spilled_threads_.clear();
      spill_size_ = 0;
      spill_error_.clear();
      spilled_records_.store(0, std::memory_order_relaxed);
      spill_bytes_.store(0, std::memory_order_relaxed);
      waits_.store(0, std::memory_order_relaxed);
      spill_failed_.store(false, std::memory_order_relaxed);
      peak_bytes_.store(0, std::memory_order_relaxed);
      note_peak_locked();
      // Woken only when the reserve needs topping up: a wake-up costs the thread that begins
      // the session (a schedule's step) a futex call and often a switch to the writer.
      if (next_job_locked() == job::none) return;
    }
    work_.notify_one();
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
      if (!settings_.spill || failed_ || closing_ || !open_) return nullptr;
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
    if (entry.session != settings_.session) return;  // a late one of an earlier session: kept, never spilled
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

  /// With the lock held: forgets `entry` (its chain is being destroyed), its block going back
  /// as return_taken_locked() takes one. An entry being spilled keeps its block until the writer
  /// is done (no session is collected while it spills, so this only happens for a store being
  /// torn down).
  void forget_locked(block_entry& entry) {
    if (entry.at == block_entry::place::memory) return_taken_locked(take_entry_locked(entry));
  }

  /// With the lock held: `entry`'s block, in memory, leaves its chain as it is (a session being
  /// collected hands it over instead of copying it); it still counts against the limit until
  /// it comes back through return_taken_locked().
  record_block* take_entry_locked(block_entry& entry) {
    fifo_.erase(std::remove(fifo_.begin(), fifo_.end(), &entry), fifo_.end());
    return std::exchange(entry.block, nullptr);
  }

  /// With the lock held: a block take_entry_locked() handed over, its records copied out.
  void return_taken_locked(record_block* b) {
    --full_;
    if (!closing_ && free_.size() < kept_) {
      free_.push_back(b);
      freed_.notify_all();
    } else {
      discard_block(b);
      --allocated_;
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

  /// Once the session ended (it is being collected): nothing more is spilled, so forgetting the
  /// blocks still in memory need not look for them in the spill queue.
  void clear_spill_queue() {
    std::lock_guard lock(mutex_);
    fifo_.clear();
  }

  /// Once the session ended (it is being collected): the spill file, its name
  /// removed, or null if nothing was spilled. The store keeps no reference to it, so the file
  /// (and its disk space) goes when its taker lets go, not when the registry drops this store at
  /// the next session.
  shared_handle<const spill_file> take_spill_file() {
    std::lock_guard lock(mutex_);
    if (!spill_->open()) return nullptr;
    spill_->unlink_name();
    return std::exchange(spill_, make_shared_handle<spill_file>());
  }

  /// Once the session ended: what the writer noted of the blocks it spilled of thread `thread`
  /// (a fresh note if none).
  spilled_thread take_spilled(std::uint32_t thread) {
    std::lock_guard lock(mutex_);
    const auto found = spilled_threads_.find(thread);
    if (found == spilled_threads_.end()) return fresh_spilled_thread();
    spilled_thread t = std::move(found->second);
    spilled_threads_.erase(found);
    return t;
  }

  /// Stops the writer and frees the free list: no session will record into the store again.
  void release_free_blocks() {
    stop_writer();
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
    const bool can_spill = open_ && settings_.spill && !failed_ && !fifo_.empty();
    if (full_ > max_blocks_ && can_spill) return job::spill;  // a thread is waiting for it
    if (free_.size() >= reserve_) return job::none;
    if (full_ + free_.size() < max_blocks_) return job::allocate;
    return can_spill ? job::spill : job::none;
  }

  void run_writer() {
    become_background_thread("strata writer");
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
      spilling_ = true;
      lock.unlock();
      std::string error = spill(*e);
      lock.lock();
      spilling_ = false;
      idle_.notify_all();
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
  const std::size_t preallocated_;  // blocks made in the constructor
  const std::size_t reserve_;       // free blocks the writer keeps ready (spilling near the limit)
  const std::size_t kept_;          // free blocks kept when blocks come back (windows)

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
  bool closing_ = false;           // the writer is stopping: the store serves no more sessions
  bool open_ = true;               // a session records into the store (spills may go on)
  bool spilling_ = false;          // the writer is writing a block to the spill file
  std::condition_variable idle_;   // end_session() waits for a spill to finish
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
  shared_handle<spill_file> spill_ = make_shared_handle<spill_file>();
  std::map<std::uint32_t, spilled_thread> spilled_threads_;  // the writer's, until it stops
  std::uint64_t spill_size_ = 0;   // the writer's own copy of spill_.size()
  std::thread writer_;
};

/// One thread's blocks as its session handed them over (thread_track::taken): in chain order,
/// each a block of the store's, a part-filled block's copy, or, last, the thread's current
/// block lent by its buffer. Their records are copied out when the session is put in order, off
/// the thread that ended it; whatever is not copied by then (a window discarded unordered) goes
/// back to the store with this.
class taken_blocks : public shared_object {
 public:
  explicit taken_blocks(std::shared_ptr<block_store> store) : store_(std::move(store)) {}
  ~taken_blocks() override { give_back(); }

  /// With the store's lock held: the next part of the chain.
  void add_block_locked(record_block* b, std::uint32_t count) { parts_.push_back({b, {}, count}); }
  void add_copy(std::vector<record> copy) {
    const auto n = static_cast<std::uint32_t>(copy.size());
    parts_.push_back({nullptr, std::move(copy), n});
  }
  /// The first `count` records of a block that stays its buffer's (the thread's current block,
  /// where a thread that passed its gate before the session ended may still write, past
  /// `count`): `owner` keeps the buffer, and so the block, alive until they are copied. Copying
  /// them here instead would allocate on the thread that ends the session, which is the step
  /// of a schedule.
  void add_lent(const record* first, std::uint32_t count, std::shared_ptr<const void> owner) {
    lent_ = first;
    lent_count_ = count;
    lent_owner_ = std::move(owner);
  }

  std::size_t record_count() const noexcept {
    std::size_t n = lent_count_;
    for (const part& p : parts_) n += p.count;
    return n;
  }

  /// Copies every record, in chain order, to `out` (in front of what is there already), giving
  /// each block back once it is copied, so that the copy and the blocks together hold about
  /// what the blocks held.
  void move_to_front_of(std::vector<record>& out) {
    std::vector<record> all;
    all.reserve(record_count() + out.size());
    for (part& p : parts_) {
      if (p.block != nullptr) {
        all.insert(all.end(), p.block->records, p.block->records + p.count);
        std::lock_guard lock(store_->mutex());
        store_->return_taken_locked(std::exchange(p.block, nullptr));
      } else {
        all.insert(all.end(), p.copy.begin(), p.copy.end());
      }
    }
    all.insert(all.end(), lent_, lent_ + lent_count_);
    all.insert(all.end(), out.begin(), out.end());
    out = std::move(all);
    give_back();
  }

 private:
  struct part {
    record_block* block;     // null: a copy
    std::vector<record> copy;
    std::uint32_t count;
  };

  void give_back() noexcept {
    lent_ = nullptr;
    lent_count_ = 0;
    lent_owner_.reset();
    if (parts_.empty()) return;
    std::lock_guard lock(store_->mutex());
    for (const part& p : parts_)
      if (p.block != nullptr) store_->return_taken_locked(p.block);
    parts_.clear();
  }

  std::shared_ptr<block_store> store_;
  std::vector<part> parts_;
  const record* lent_ = nullptr;
  std::uint32_t lent_count_ = 0;
  std::shared_ptr<const void> lent_owner_;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
