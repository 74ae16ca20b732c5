// strata/core/thread_registry.hpp: which threads record, into which buffers, for which session.
//
// Every recording thread owns one buffer per session: a chain of blocks taken from the session's
// store (block_chain.hpp; lossless, bounded by the session's memory limit and spilled past it),
// or, for a flight recorder (overwrite_oldest), a ring that keeps the newest records
// (ring_buffer.hpp). A thread gets its buffer on its first record after a session starts (the
// cold path below). From then on the hot path tests
// one thread-local word, the thread's *gate* (which layers it records straight into its ring),
// and writes through its thread-local cursor: no global is read while a session records. The
// registry closes every gate when the session ends; a closed gate sends the thread to the
// global state word, and to the cold path when a new session has begun.
//
// Buffers are shared between the registry (which drains them) and the owning thread (which
// writes them): a buffer outlives a thread that exits, so its records are still exported, and
// outlives a stopped session for a thread that is still inside a scope, so a late write never
// touches freed memory.
//
// Several shared libraries: the globals here are C++17 inline variables. On ELF platforms with
// default symbol visibility they are unified across the executable and its shared libraries,
// so one process has one registry. A library built with -fvisibility=hidden (or a Windows DLL)
// gets a registry of its own and its records would not reach a profiler started elsewhere:
// build strata users with default visibility for the strata namespace.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <time.h>

#include "strata/core/block_chain.hpp"
#include "strata/core/block_store.hpp"
#include "strata/core/capture_cores.hpp"
#include "strata/core/clock.hpp"
#include "strata/core/config.hpp"
#include "strata/core/drained_records.hpp"
#include "strata/core/layer.hpp"
#include "strata/core/recording_state.hpp"
#include "strata/core/ring_buffer.hpp"
#include "strata/core/trace_data.hpp"

#if defined(__linux__)
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace strata {
inline namespace v1 {
namespace detail {

/// The OS's id for the calling thread (what Perfetto shows as tid).
inline std::uint64_t current_thread_id() noexcept {
#if defined(__linux__)
  return static_cast<std::uint64_t>(::syscall(SYS_gettid));
#else
  return std::hash<std::thread::id>{}(std::this_thread::get_id());
#endif
}

/// What the registry knows about one OS thread (or one device track), for as long as any of
/// its buffers lives.
struct thread_info {
  std::uint64_t tid = 0;
  std::uint32_t order = 0;       // registration order, used as the Perfetto sort index
  std::string name;              // guarded by the registry's mutex
  bool exited = false;           // guarded by the registry's mutex
  std::uint64_t pid = 0;         // 0: an OS thread of this process; else a device's process
  std::string process_name;      // a device track's process name
  bool timestamps_in_ns = false; // device tracks: steady_clock ns, not ticks
  // A steps track (ProfilerStep#N marks): the thread that called step(). Its name and exit are
  // that thread's, read when the session is collected.
  std::shared_ptr<thread_info> steps_of;
};

/// What a session records, as the registry applies it.
struct session_settings {
  layer_set layers = layer_set::all();
  std::size_t buffer_capacity = 1024;   ///< overwrite_oldest: records per thread's ring
  overflow_policy overflow = overflow_policy::drop_newest;
  bool record_args = false;             ///< scopes that carry arguments record them
  core_set cores = core_set::all();     ///< device cores whose records are taken
  std::size_t max_events_per_core = 0;  ///< device records kept per core; 0: unlimited
  block_store_settings blocks = {};     ///< drop_newest: the memory limit and spilling
};

/// One thread's buffer for one session: a chain of blocks from the session's `store`, or
/// without a store a ring of `capacity` records, plus what the consumer has drained out of the
/// ring so far.
struct thread_buffer {
  thread_buffer(std::shared_ptr<thread_info> owner, std::uint32_t session_epoch,
                std::size_t capacity, overflow_policy policy, std::shared_ptr<block_store> store)
      : info(std::move(owner)), epoch(session_epoch) {
    if (store)
      chain = std::make_unique<block_chain>(std::move(store), info->order);
    else
      ring = std::make_unique<ring_buffer>(capacity, policy);
  }

  /// Producer's cold path: the cursor is at its limit.
  bool push_slow(const record& r) noexcept { return chain ? chain->push_slow(r) : ring->push_slow(r); }
  /// Producer's thread, registry's lock held.
  void bind(producer_cursor& c) noexcept {
    if (chain)
      chain->bind(c);
    else
      ring->bind(c);
  }
  void unbind() noexcept {
    if (chain)
      chain->unbind();
    else
      ring->unbind();
  }

  std::unique_ptr<block_chain> chain;  // lossless sessions
  std::unique_ptr<ring_buffer> ring;   // flight recorders (and device tracks, which leave it empty)
  std::shared_ptr<thread_info> info;
  std::uint32_t epoch;
  // The owner's gate while this is its current buffer (null otherwise); guarded by the
  // registry's mutex, which the owner holds when it binds or unbinds.
  std::uint32_t* gate = nullptr;
  // Consumer side of a ring, guarded by the registry's mutex.
  drained_records drained;
  std::uint64_t lost = 0;
  // A steps track's marks, guarded by the registry's mutex: a few records per session, which a
  // drained list (its first chunk 128 KiB) would make a step pay for.
  std::vector<record> steps;

  /// Consumer, registry's lock held: records taken so far, and lost so far.
  std::uint64_t recorded() const { return chain ? chain->size() : drained.size() + steps.size(); }
  std::uint64_t lost_so_far() const noexcept { return chain ? chain->dropped() : lost; }
};

// The calling thread's cold-path state (the hot path's gate and cursor are in
// recording_state.hpp).
// The thread's current buffer and the epoch it belongs to (cold paths only).
inline thread_local constinit thread_buffer* tl_buffer = nullptr;
inline thread_local constinit std::uint32_t tl_epoch = 0;
// Set once the thread's exit handler ran: records after that point are not taken.
inline thread_local constinit bool tl_exited = false;

/// The process-wide registry of buffers. Only cold paths take its mutex.
class registry {
 public:
  static registry& instance() noexcept {
    // Never destroyed: threads that exit after main() returns still reach it.
    static registry* r = new registry;
    return *r;
  }

  /// Starts a session: later records go into fresh buffers (block chains from a new store, or
  /// rings of `settings.buffer_capacity` records for a flight recorder). Returns the new epoch.
  /// Buffers of earlier sessions are released here (their owners may still hold them until
  /// their next record or their exit).
  std::uint32_t begin_session(const session_settings& settings) {
    std::lock_guard lock(mutex_);
    close_gates_locked();
    epoch_ = (epoch_ + 1) & (0xffffffu);
    if (epoch_ == 0) epoch_ = 1;  // 0 means "no buffer yet" in tl_epoch
    settings_ = settings;
    buffers_.clear();
    retired_.clear();
    store_.reset();
    if (settings.overflow == overflow_policy::drop_newest) {
      block_store_settings blocks = settings.blocks;
      blocks.session = epoch_;
      store_ = std::make_shared<block_store>(std::move(blocks));
      store_->start_writer();
    }
    device_tracks_.clear();
    device_counts_.clear();
    step_tracks_.clear();
    __atomic_store_n(&state,
                     (epoch_ << epoch_shift) | (settings.layers.bits() & layer_mask_bits) |
                         (settings.record_args ? record_args_bit : 0u),
                     __ATOMIC_RELEASE);
    return epoch_;
  }

  /// Stops taking records: the hot path sees no captured layer from now on, and the store's
  /// writer stops (a thread waiting for a block at the memory limit drops instead).
  void end_session() noexcept {
    std::shared_ptr<block_store> store;
    {
      std::lock_guard lock(mutex_);
      __atomic_store_n(&state, epoch_ << epoch_shift, __ATOMIC_RELEASE);
      close_gates_locked();
      store = store_;
    }
    if (store) store->stop_writer();
  }

  /// Calls `f(thread_buffer&, const thread_info&)` for each buffer of the session, under the
  /// registry's lock; a ring is drained first (a chain is read by `f` itself).
  template <class F>
  void for_each_buffer(F&& f) {
    std::lock_guard lock(mutex_);
    for (auto& b : buffers_) {
      if (b->ring) drain_locked(*b);
      f(*b, *b->info);
    }
  }

  /// Calls `f(const std::shared_ptr<thread_buffer>&)` for each buffer of the session, under the
  /// registry's lock, leaving rings undrained (a snapshot copies them without taking them).
  template <class F>
  void visit_buffers(F&& f) {
    std::lock_guard lock(mutex_);
    for (const auto& b : buffers_) f(b);
  }

  /// The current session's block store (null for a flight recorder or before any session).
  std::shared_ptr<block_store> store() {
    std::lock_guard lock(mutex_);
    return store_;
  }

  /// Cold path of the first record of a thread in a session. Returns false when the thread can
  /// no longer record (it is exiting).
  STRATA_NOINLINE bool acquire_buffer() noexcept {
    if (tl_exited) return false;
    try {
      exit_guard& guard = tl_guard;  // first use registers the thread-exit handler
      std::lock_guard lock(mutex_);
      if (!guard.info) {
        guard.info = std::make_shared<thread_info>();
        guard.info->tid = current_thread_id();
        guard.info->order = next_order_++;
        guard.info->name = os_thread_name();
      }
      auto fresh = std::make_shared<thread_buffer>(guard.info, epoch_, settings_.buffer_capacity,
                                                   settings_.overflow, store_);
      buffers_.push_back(fresh);
      if (guard.current) {
        // The thread's buffer of an earlier session: released by the next begin_session, on
        // the profiler's thread, not here inside the user's scope (it may be the last owner of
        // that session's store and blocks).
        detach_locked(*guard.current);
        retired_.push_back(std::move(guard.current));
      }
      guard.current = std::move(fresh);
      guard.current->bind(tl_cursor);
      guard.current->gate = &tl_gate;
      // The gate opens only for a session still running (it may have ended since the caller
      // read the state word) whose clock is the one the fast path reads.
      const std::uint32_t s = load_state();
      const bool fast = epoch_of(s) == epoch_ && clock::fast_ticks_are_process_ticks();
      __atomic_store_n(&tl_gate, fast ? (s & layer_mask_bits) : 0u, __ATOMIC_RELAXED);
      tl_buffer = guard.current.get();
      tl_epoch = epoch_;
      return true;
    } catch (...) {
      return false;  // out of memory: this record is not taken
    }
  }

  /// Whether the running session takes device records of `core`.
  bool captures_device_core(int core) {
    if ((load_state() & layer_set::bit(layer::device)) == 0) return false;
    std::lock_guard lock(mutex_);
    return (load_state() & layer_set::bit(layer::device)) != 0 &&
           settings_.cores.contains(core);
  }

  /// Appends records made elsewhere (timestamps in steady_clock ns) to a track that is not an OS
  /// thread: track `tid` of the device process `pid`, named on first use. Takes them only
  /// while a session captures the device layer, and at most the session's
  /// `max_events_per_core` per pid; the rest is counted as lost on the track. Returns how many
  /// were taken. Any thread may call it; the registry's lock orders the appends.
  std::size_t append_device_records(std::uint64_t pid, std::string_view process_name,
                                    std::uint64_t tid, std::string_view track_name,
                                    std::span<const record> records) {
    std::lock_guard lock(mutex_);
    if ((load_state() & layer_set::bit(layer::device)) == 0) return 0;
    thread_buffer*& track = device_tracks_[{pid, tid}];
    if (track == nullptr) {
      auto info = std::make_shared<thread_info>();
      info->tid = tid;
      info->order = static_cast<std::uint32_t>(tid);
      info->name = std::string(track_name);
      info->pid = pid;
      info->process_name = std::string(process_name);
      info->timestamps_in_ns = true;
      // The ring stays unused (records go straight to the drained list): keep it minimal.
      auto buffer = std::make_shared<thread_buffer>(std::move(info), epoch_, 2, settings_.overflow,
                                                    nullptr);
      track = buffer.get();
      buffers_.push_back(std::move(buffer));
    }
    std::size_t& taken_so_far = device_counts_[pid];
    std::size_t take = records.size();
    if (settings_.max_events_per_core != 0)
      take = std::min(take, settings_.max_events_per_core - std::min(taken_so_far,
                                                                      settings_.max_events_per_core));
    track->drained.append(records.first(take));
    taken_so_far += take;
    track->lost += records.size() - take;
    return take;
  }

  /// The calling thread's identity in traces (made on first use), so that a step mark can be
  /// appended for it by another thread (append_step's `of`); null once the thread is exiting.
  std::shared_ptr<thread_info> current_thread() {
    if (tl_exited) return nullptr;
    exit_guard& guard = tl_guard;
    std::lock_guard lock(mutex_);
    if (!guard.info) {
      guard.info = std::make_shared<thread_info>();
      guard.info->tid = current_thread_id();
      guard.info->order = next_order_++;
      guard.info->name = os_thread_name();
    }
    return guard.info;
  }

  /// Appends a step mark (`ProfilerStep#N`: a scope from `begin` to `end` ticks) to the steps
  /// track of thread `of` (the calling thread when null), a track of its own rather than the
  /// thread's buffer: a scope the thread left open across the step then never partly overlaps
  /// the step on one track. Taken only while the session captures the framework layer; returns
  /// whether it was. Cold path (one per step): takes the registry's lock and may allocate.
  bool append_step(const site* where, std::uint64_t begin, std::uint64_t end,
                   std::shared_ptr<thread_info> of = nullptr) {
    if (!of && !(of = current_thread())) return false;
    std::lock_guard lock(mutex_);
    if ((load_state() & layer_set::bit(layer::framework)) == 0) return false;
    thread_buffer*& track = step_tracks_[of.get()];
    if (track == nullptr) {
      auto info = std::make_shared<thread_info>();
      info->tid = steps_track_tid(of->tid);
      info->order = of->order;
      info->steps_of = of;
      // Like a device track's, the ring stays unused: marks go to `steps`.
      auto buffer = std::make_shared<thread_buffer>(std::move(info), epoch_, 2, settings_.overflow,
                                                    nullptr);
      track = buffer.get();
      buffers_.push_back(std::move(buffer));
    }
    track->steps.push_back({begin, end, where, 0});
    return true;
  }

  /// What `walk_for_crash` could reach.
  struct crash_walk {
    bool registry_locked = false;  ///< false: no buffer was visited
    bool store_locked = true;      ///< false: the lossless chains were not visited
    std::uint32_t layers = 0;      ///< the layers the session was capturing
  };

  /// A crash handler's view of the session (core/crash_recorder.hpp), from a signal handler:
  /// takes the registry's lock and the store's with try_lock, retrying for about `wait_ms`
  /// (the crashed thread itself may hold one, and would never release it), stops the session
  /// (the state word and every gate close, so other threads stop recording within a record),
  /// calls `f(const thread_buffer&, const thread_info&, bool store_locked)` for each buffer,
  /// and unlocks. Allocates nothing; calls no function that is not async-signal-safe in
  /// practice (pthread_mutex_trylock/unlock, nanosleep).
  template <class F>
  crash_walk walk_for_crash(F&& f, int wait_ms) noexcept {
    crash_walk walk;
    walk.layers = load_state() & layer_mask_bits;
    __atomic_store_n(&state, epoch_of(load_state()) << epoch_shift, __ATOMIC_RELEASE);
    if (!try_lock_for_signal(mutex_, wait_ms)) {
      walk.registry_locked = false;
      return walk;
    }
    walk.registry_locked = true;
    close_gates_locked();
    block_store* store = store_.get();
    walk.store_locked = store == nullptr || try_lock_for_signal(store->mutex(), wait_ms);
    for (const auto& b : buffers_) f(static_cast<const thread_buffer&>(*b), *b->info, walk.store_locked);
    if (store != nullptr && walk.store_locked) store->mutex().unlock();
    mutex_.unlock();
    return walk;
  }

  /// Names the calling thread in traces (like Perfetto's thread_name metadata).
  void set_current_thread_name(std::string name) {
    if (tl_exited) return;  // called from another thread_local's destructor: too late to matter
    exit_guard& guard = tl_guard;
    std::lock_guard lock(mutex_);
    if (!guard.info) {
      guard.info = std::make_shared<thread_info>();
      guard.info->tid = current_thread_id();
      guard.info->order = next_order_++;
    }
    guard.info->name = std::move(name);
  }

 private:
  registry() = default;

  // Keeps the calling thread's current buffer alive and, at thread exit, marks it exited so
  // the registry knows no more records will come. Only the cold path touches it.
  struct exit_guard {
    std::shared_ptr<thread_info> info;
    std::shared_ptr<thread_buffer> current;
    ~exit_guard() {
      tl_exited = true;
      if (info) {
        std::lock_guard lock(registry::instance().mutex_);
        if (current) {
          detach_locked(*current);
          if (current->chain) current->chain->retire();
        }
        info->exited = true;
      }
      __atomic_store_n(&tl_gate, 0u, __ATOMIC_RELAXED);
      tl_buffer = nullptr;
      tl_epoch = 0;
    }
  };
  static inline thread_local exit_guard tl_guard;

  static std::string os_thread_name() {
#if defined(__linux__)
    char buf[32] = {};
    if (pthread_getname_np(pthread_self(), buf, sizeof buf) == 0) return buf;
#endif
    return {};
  }

  // try_lock, retried every millisecond for about `wait_ms` (nanosleep is async-signal-safe).
  static bool try_lock_for_signal(std::mutex& m, int wait_ms) noexcept {
    for (int i = 0;; ++i) {
      if (m.try_lock()) return true;
      if (i >= wait_ms) return false;
      timespec pause{0, 1000000};
      ::nanosleep(&pause, nullptr);
    }
  }

  // Closes the gate of every thread that records into this session, so its next record reads
  // the state word (and finds the session over, or a new one to take a buffer for).
  void close_gates_locked() noexcept {
    for (auto& b : buffers_)
      if (b->gate != nullptr) __atomic_store_n(b->gate, 0u, __ATOMIC_RELAXED);
  }

  // On the owner's thread: `b` stops being its current buffer (a new session's buffer replaces
  // it, or the thread exits). The ring keeps its position; the thread-local cursor and gate are
  // no longer reachable through it.
  static void detach_locked(thread_buffer& b) noexcept {
    b.unbind();
    if (b.gate != nullptr) __atomic_store_n(b.gate, 0u, __ATOMIC_RELAXED);
    b.gate = nullptr;
  }

  // A flight recorder's ring: what it holds now moves to the buffer's drained list.
  void drain_locked(thread_buffer& b) {
    std::vector<record>& out = b.drained.room_for(b.ring->capacity());
    b.lost += b.ring->drain(out).lost;
  }

  std::mutex mutex_;
  std::vector<std::shared_ptr<thread_buffer>> buffers_;
  // Buffers of earlier sessions that their threads let go of when they took a new one.
  std::vector<std::shared_ptr<thread_buffer>> retired_;
  std::uint32_t epoch_ = 0;
  std::uint32_t next_order_ = 0;
  session_settings settings_;
  std::shared_ptr<block_store> store_;  // the current session's, for a lossless session
  // Device tracks of the current session by (pid, tid), and device records taken per pid.
  std::map<std::pair<std::uint64_t, std::uint64_t>, thread_buffer*> device_tracks_;
  std::map<std::uint64_t, std::size_t> device_counts_;
  // Steps tracks of the current session, by the thread that marks the steps.
  std::map<const thread_info*, thread_buffer*> step_tracks_;
};

/// Out of line so that every caller carries one call, not the registry's static-init guard.
STRATA_NOINLINE inline bool acquire_thread_buffer() noexcept {
  return registry::instance().acquire_buffer();
}

/// The cold path's `prepare_to_record` (core/cold_path.hpp): whether the calling thread can
/// record `l` now, taking its buffer for the running session if it has none yet.
inline bool prepare_to_record_cold(layer l) noexcept {
  const std::uint32_t s = load_state();
  if ((s & layer_set::bit(l)) == 0) return false;
  return tl_epoch == epoch_of(s) || acquire_thread_buffer();
}

/// The cold path's `push_slow`: the cursor is at its limit, or the thread has no ring (it
/// exited: the record is not taken, as documented for records made after a thread's exit).
inline bool push_slow_cold(std::uint64_t begin, std::uint64_t end, const site* where,
                           std::uint64_t payload) noexcept {
  thread_buffer* b = tl_buffer;
  return b != nullptr && b->push_slow(record{begin, end, where, payload});
}

}  // namespace detail

}  // namespace v1
}  // namespace strata
