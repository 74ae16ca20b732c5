// strata/detail/registry.hpp: which threads record, into which buffers, for which session; and
// the tracks whose records are made elsewhere (a device's engines, a thread's steps).
//
// A recording thread gets its buffer (thread_buffer.hpp) on its first record after a session
// starts: the cold path `acquire_buffer` binds the thread's cursor to it and opens its gate.
// From then on it records without reading any global; the registry closes every gate when the
// session ends, which sends the thread to the state word, and to the cold path when a new
// session has begun.
//
// A thread's part of a session is shared between the registry (which collects it) and the
// thread (which records into it): it outlives a thread that exits, so its records are still
// exported, and outlives a stopped session for a thread still inside a scope, so a late write
// never touches freed memory.
//
// Several shared libraries: the registry is a function-local static of an inline function. On
// ELF platforms with default symbol visibility it is unified across the executable and its
// shared libraries, so one process has one registry. A library built with -fvisibility=hidden
// (or a Windows DLL) gets a registry of its own and its records would not reach a profiler
// started elsewhere: build strata users with default visibility for the strata namespace.
#pragma once

#include <algorithm>
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

#include "strata/clock.hpp"
#include "strata/device.hpp"
#include "strata/profiler_config.hpp"
#include "strata/record.hpp"
#include "strata/trace_data.hpp"
#include "strata/detail/block_store.hpp"
#include "strata/detail/record_path.hpp"
#include "strata/detail/thread_buffer.hpp"

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

/// What a session records, as the registry applies it.
struct session_settings {
  layer_set layers = layer_set::all();
  overflow_policy overflow = overflow_policy::lossless;
  std::size_t buffer_capacity = 1024;   ///< a flight recorder's records per thread
  bool record_args = false;             ///< scopes that carry arguments record them
  bool profile_memory = false;          ///< memory events (allocations, frees) are recorded
  bool record_flops = false;            ///< scopes that carry a FLOP count record it
  core_set cores = core_set::all();     ///< device cores whose records are taken
  std::size_t max_events_per_core = 0;  ///< device records kept per core; 0: unlimited
  block_store_settings blocks = {};     ///< the memory limit and spilling (lossless)
};

/// One thread's part of one session: who it is, its buffer, and its gate while the buffer is
/// its current one (null otherwise; guarded by the registry's lock, which the thread holds
/// when it binds or unbinds).
struct recording_thread {
  std::shared_ptr<track_identity> thread;  ///< name and exit guarded by the registry's lock
  thread_buffer buffer;
  std::uint32_t* gate = nullptr;

  recording_thread(std::shared_ptr<track_identity> who, std::shared_ptr<block_store> store,
                   std::size_t keep)
      : thread(std::move(who)), buffer(std::move(store), thread->sort_index, keep) {}
};

/// Records appended in bulk under the registry's lock, kept in chunks that are never moved:
/// an append never copies what earlier ones took (a single growing vector would copy
/// everything at each doubling).
class record_chunks {
 public:
  void append(std::span<const record> records) {
    if (records.empty()) return;
    if (chunks_.empty() || chunks_.back().capacity() - chunks_.back().size() < records.size()) {
      const std::size_t grown =
          chunks_.empty() ? first_chunk : std::min(chunks_.back().capacity() * 2, largest_chunk);
      chunks_.emplace_back().reserve(std::max(records.size(), grown));
    }
    chunks_.back().insert(chunks_.back().end(), records.begin(), records.end());
  }

  std::size_t size() const noexcept {
    std::size_t n = 0;
    for (const auto& c : chunks_) n += c.size();
    return n;
  }

  /// Calls `f(const record*, std::size_t)` for each chunk, oldest first, without allocating
  /// (what a crash handler may do).
  template <class F>
  void for_each_chunk(F&& f) const noexcept {
    for (const auto& c : chunks_)
      if (!c.empty()) f(c.data(), c.size());
  }

  /// Appends everything to `out`, oldest first.
  void copy_to(std::vector<record>& out) const {
    out.reserve(out.size() + size());
    for (const auto& c : chunks_) out.insert(out.end(), c.begin(), c.end());
  }

 private:
  // A steps track takes a record per step: its first chunk stays small.
  static constexpr std::size_t first_chunk = 64;
  static constexpr std::size_t largest_chunk = std::size_t{1} << 22;
  std::vector<std::vector<record>> chunks_;
};

/// A track whose records are made elsewhere and appended to it under the registry's lock: one
/// of a device's engines or queues (`id` says which; timestamps in steady_clock ns), or the
/// `ProfilerStep#N` marks of thread `steps_of` (its identity is its thread's, read when the
/// session is collected: see `steps_identity`).
struct appended_track {
  track_identity id;
  std::shared_ptr<track_identity> steps_of;
  record_chunks records;
  std::uint64_t lost = 0;  ///< past the session's `max_events_per_core`

  track_identity identity() const;
};

/// A steps track's identity, from its thread's as it is now: tid `steps_track_tid(tid)`, named
/// "<thread> steps", listed just before its thread.
inline track_identity steps_identity(const track_identity& of) {
  track_identity id;
  id.tid = steps_track_tid(of.tid);
  id.sort_index = of.sort_index;
  id.name = (of.name.empty() ? "thread " + std::to_string(of.tid) : of.name) + " steps";
  id.exited = of.exited;
  id.steps = true;
  id.steps_of = of.tid;
  return id;
}

inline track_identity appended_track::identity() const {
  return steps_of ? steps_identity(*steps_of) : id;
}

// The calling thread's cold-path state (the hot path's gate and cursor are in
// record_path.hpp): its current buffer and the epoch it belongs to.
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

  /// Starts a session: later records go into fresh buffers, with blocks from the store of the
  /// session before when its block settings are the same (its writer and free blocks carry
  /// over: the windows of a schedule), else from a new store. Returns the new epoch. The
  /// threads' parts of earlier sessions are released here (their threads may still hold them
  /// until their next record or their exit).
  std::uint32_t begin_session(const session_settings& settings) {
    std::lock_guard lock(mutex_);
    close_gates_locked();
    epoch_ = (epoch_ + 1) & (0xffffffu);
    if (epoch_ == 0) epoch_ = 1;  // 0 means "no buffer yet" in tl_epoch
    settings_ = settings;
    threads_.clear();
    retired_.clear();
    device_tracks_.clear();
    device_counts_.clear();
    step_tracks_.clear();
    block_store_settings blocks = store_settings_of(settings);
    blocks.session = epoch_;
    if (store_ && store_->serves(blocks)) {
      store_->begin_session(epoch_, blocks.start_ticks);
    } else {
      store_.reset();
      store_ = std::make_shared<block_store>(std::move(blocks));
      store_->start_writer();
    }
    __atomic_store_n(&state,
                     (epoch_ << epoch_shift) | (settings.layers.bits() & layer_mask_bits) |
                         (settings.record_args ? record_args_bit : 0u) |
                         (settings.profile_memory ? profile_memory_bit : 0u) |
                         (settings.record_flops ? record_flops_bit : 0u),
                     __ATOMIC_RELEASE);
    return epoch_;
  }

  /// Stops taking records: the hot path sees no captured layer from now on, and the store
  /// spills no more (a thread waiting for a block at the memory limit drops instead). The
  /// store stays for the next session until release_store().
  void end_session() noexcept {
    std::shared_ptr<block_store> store;
    {
      std::lock_guard lock(mutex_);
      __atomic_store_n(&state, epoch_ << epoch_shift, __ATOMIC_RELEASE);
      close_gates_locked();
      store = store_;
    }
    if (store) store->end_session();
  }

  /// Between sessions, when no session follows (a profiler stops): the store's writer stops, its
  /// free blocks go back to the system, and so will the blocks of the session being collected,
  /// as their records are copied out. The store stays until release_store().
  void release_free_blocks() {
    std::shared_ptr<block_store> store;
    {
      std::lock_guard lock(mutex_);
      if ((load_state() & layer_mask_bits) != 0) return;  // a session records: it is in use
      store = store_;
    }
    if (store) store->release_free_blocks();
  }

  /// Between sessions, when no session follows soon (a profiler stopped): the store's writer
  /// stops and its free blocks go back to the system. The next session makes a new store.
  void release_store() {
    std::shared_ptr<block_store> store;
    {
      std::lock_guard lock(mutex_);
      if ((load_state() & layer_mask_bits) != 0) return;  // a session records: it is in use
      store = std::move(store_);
    }
    if (store) store->release_free_blocks();
  }

  /// Between sessions: makes the store a session with `settings` would take its blocks from,
  /// so that a schedule's first window begins as cheaply as the later ones (its store, its
  /// writer thread and the blocks the writer touches ahead are made here, not in the step that
  /// enters the window). A store that serves `settings` already is kept.
  void prepare_store(const session_settings& settings) {
    std::lock_guard lock(mutex_);
    if ((load_state() & layer_mask_bits) != 0) return;  // a session records: it has its store
    block_store_settings blocks = store_settings_of(settings);
    if (store_ && store_->serves(blocks)) return;
    store_.reset();
    store_ = std::make_shared<block_store>(std::move(blocks));
    store_->start_writer();
  }

  /// Under the registry's lock: calls `on_thread(const std::shared_ptr<recording_thread>&)`
  /// for each thread's part of the session, then `on_appended(appended_track&)` for each device
  /// and steps track.
  template <class OnThread, class OnAppended>
  void visit(OnThread&& on_thread, OnAppended&& on_appended) {
    std::lock_guard lock(mutex_);
    for (const auto& t : threads_) on_thread(t);
    for (auto& [key, track] : device_tracks_) on_appended(track);
    for (auto& [key, track] : step_tracks_) on_appended(track);
  }

  /// The current session's block store (null before any session).
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
      auto fresh = std::make_shared<recording_thread>(identity_locked(guard), store_,
                                                      flight_recorder_keep());
      threads_.push_back(fresh);
      if (guard.current) {
        // The thread's part of an earlier session: released by the next begin_session, on the
        // profiler's thread, not here inside the user's scope (it may be the last owner of that
        // session's store and blocks).
        detach_locked(*guard.current);
        retired_.push_back(std::move(guard.current));
      }
      guard.current = std::move(fresh);
      guard.current->buffer.bind(tl_cursor);
      guard.current->gate = &tl_gate;
      // The gate opens only for a session still running (it may have ended since the caller
      // read the state word) whose clock is the one the fast path reads.
      const std::uint32_t s = load_state();
      const bool fast = epoch_of(s) == epoch_ && clock::fast_ticks_are_process_ticks();
      __atomic_store_n(&tl_gate, fast ? (s & layer_mask_bits) : 0u, __ATOMIC_RELAXED);
      tl_buffer = &guard.current->buffer;
      tl_epoch = epoch_;
      return true;
    } catch (...) {
      return false;  // out of memory: this record is not taken
    }
  }

  /// The running session's epoch, or 0 when none records: what a producer that prepares
  /// something once per session (naming a device's tracks) compares with.
  static std::uint32_t recording_epoch() noexcept {
    const std::uint32_t s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    return (s & layer_mask_bits) != 0 ? epoch_of(s) : 0;
  }

  /// Whether the running session takes device records of `core`.
  bool captures_device_core(int core) {
    if ((load_state() & layer_set::bit(layer::device)) == 0) return false;
    std::lock_guard lock(mutex_);
    return (load_state() & layer_set::bit(layer::device)) != 0 &&
           settings_.cores.contains(core);
  }

  /// Appends records made elsewhere (timestamps in steady_clock ns) to a track that is not an
  /// OS thread: track `tid` of the device process `pid`, named on first use. Takes them only
  /// while a session captures the device layer, and at most the session's
  /// `max_events_per_core` per pid; the rest is counted as lost on the track. Returns how many
  /// were taken. Any thread may call it; the registry's lock orders the appends.
  std::size_t append_device_records(std::uint64_t pid, std::string_view process_name,
                                    std::uint64_t tid, std::string_view track_name,
                                    std::span<const record> records, double peak_flops_per_s = 0,
                                    double peak_hbm_bytes_per_s = 0) {
    std::lock_guard lock(mutex_);
    if ((load_state() & layer_set::bit(layer::device)) == 0) return 0;
    auto [at, fresh] = device_tracks_.try_emplace({pid, tid});
    appended_track& track = at->second;
    if (fresh) {
      track.id.tid = tid;
      track.id.sort_index = static_cast<std::uint32_t>(tid);
      track.id.name = std::string(track_name);
      track.id.pid = pid;
      track.id.process_name = std::string(process_name);
      track.id.timestamps_in_ns = true;
    }
    if (track.id.peak_flops_per_s == 0) track.id.peak_flops_per_s = peak_flops_per_s;
    if (track.id.peak_hbm_bytes_per_s == 0) track.id.peak_hbm_bytes_per_s = peak_hbm_bytes_per_s;
    std::size_t& taken_so_far = device_counts_[pid];
    std::size_t take = records.size();
    if (settings_.max_events_per_core != 0)
      take = std::min(take, settings_.max_events_per_core - std::min(taken_so_far,
                                                                      settings_.max_events_per_core));
    track.records.append(records.first(take));
    taken_so_far += take;
    track.lost += records.size() - take;
    return take;
  }

  /// The calling thread's identity in traces (made on first use), so that a step mark can be
  /// appended for it by another thread (append_step's `of`); null once the thread is exiting.
  std::shared_ptr<track_identity> current_thread() {
    if (tl_exited) return nullptr;
    exit_guard& guard = tl_guard;
    std::lock_guard lock(mutex_);
    return identity_locked(guard);
  }

  /// Appends a step mark (`ProfilerStep#N`: a scope from `begin` to `end` ticks) to the steps
  /// track of thread `of` (the calling thread when null), a track of its own rather than the
  /// thread's buffer: a scope the thread left open across the step then never partly overlaps
  /// the step on one track. Taken only while the session captures the framework layer; returns
  /// whether it was. Cold path (one per step): takes the registry's lock and may allocate.
  bool append_step(const site* where, std::uint64_t begin, std::uint64_t end,
                   std::shared_ptr<track_identity> of = nullptr) {
    if (!of && !(of = current_thread())) return false;
    std::lock_guard lock(mutex_);
    if ((load_state() & layer_set::bit(layer::framework)) == 0) return false;
    appended_track& track = step_tracks_[of.get()];
    if (!track.steps_of) track.steps_of = of;
    const record mark{begin, end, where, 0};
    track.records.append({&mark, 1});
    return true;
  }

  /// Once a session's steps tracks are taken (copied into its trace): the registry lets go of
  /// them, since their records point into names the trace alone keeps alive.
  void clear_step_tracks() {
    std::lock_guard lock(mutex_);
    step_tracks_.clear();
  }

  /// What `walk_for_crash` could reach.
  struct crash_walk {
    bool registry_locked = false;  ///< false: no buffer was visited
    bool store_locked = true;      ///< false: the lossless chains were not visited
    std::uint32_t layers = 0;      ///< the layers the session was capturing
  };

  /// A crash handler's view of the session (crash_recorder.hpp), from a signal handler: takes
  /// the registry's lock and the store's with try_lock, retrying for about `wait_ms` (the
  /// crashed thread itself may hold one, and would never release it), stops the session (the
  /// state word and every gate close, so other threads stop recording within a record), calls
  /// `on_thread(const recording_thread&, bool store_locked)` for each thread's part and
  /// `on_appended(const appended_track&)` for each device and steps track, and unlocks.
  /// Allocates nothing; calls no function that is not async-signal-safe in practice
  /// (pthread_mutex_trylock/unlock, nanosleep).
  template <class OnThread, class OnAppended>
  crash_walk walk_for_crash(OnThread&& on_thread, OnAppended&& on_appended, int wait_ms) noexcept {
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
    for (const auto& t : threads_) on_thread(static_cast<const recording_thread&>(*t), walk.store_locked);
    for (const auto& [key, track] : device_tracks_) on_appended(track);
    for (const auto& [key, track] : step_tracks_) on_appended(track);
    if (store != nullptr && walk.store_locked) store->mutex().unlock();
    mutex_.unlock();
    return walk;
  }

  /// Names the calling thread in traces (like Perfetto's thread_name metadata).
  void set_current_thread_name(std::string name) {
    if (tl_exited) return;  // called from another thread_local's destructor: too late to matter
    exit_guard& guard = tl_guard;
    std::lock_guard lock(mutex_);
    identity_locked(guard)->name = std::move(name);
  }

 private:
  registry() = default;

  // Keeps the calling thread's current part of a session alive and, at thread exit, marks it
  // exited so the registry knows no more records will come. Only the cold path touches it.
  struct exit_guard {
    std::shared_ptr<track_identity> thread;
    std::shared_ptr<recording_thread> current;
    ~exit_guard() {
      tl_exited = true;
      if (thread) {
        std::lock_guard lock(registry::instance().mutex_);
        if (current) {
          detach_locked(*current);
          current->buffer.retire();
        }
        thread->exited = true;
      }
      __atomic_store_n(&tl_gate, 0u, __ATOMIC_RELAXED);
      tl_buffer = nullptr;
      tl_epoch = 0;
    }
  };
  static inline thread_local exit_guard tl_guard;

  // The calling thread's identity, made on its first use: its OS id and name, and the order in
  // which threads first used the registry (the trace's sort index).
  std::shared_ptr<track_identity> identity_locked(exit_guard& guard) {
    if (!guard.thread) {
      guard.thread = std::make_shared<track_identity>();
      guard.thread->tid = current_thread_id();
      guard.thread->sort_index = next_order_++;
      guard.thread->name = os_thread_name();
    }
    return guard.thread;
  }

  static std::string os_thread_name() {
#if defined(__linux__)
    char buf[32] = {};
    if (pthread_getname_np(pthread_self(), buf, sizeof buf) == 0) return buf;
#endif
    return {};
  }

  // A flight recorder's records per thread, or 0 for a lossless session.
  std::size_t flight_recorder_keep() const noexcept { return flight_recorder_keep(settings_); }
  static std::size_t flight_recorder_keep(const session_settings& s) noexcept {
    return s.overflow == overflow_policy::flight_recorder ? s.buffer_capacity : 0;
  }

  // The block store a session with `settings` takes its blocks from.
  static block_store_settings store_settings_of(const session_settings& settings) {
    block_store_settings blocks = settings.blocks;
    if (const std::size_t keep = flight_recorder_keep(settings); keep != 0) {
      // A flight recorder's threads take their blocks once, on their first lap, and then reuse
      // them: nothing is spilled, and the limit (which a flight recorder's blocks do not count
      // against) bounds only the free blocks the store keeps. The writer keeps a few ready (a
      // block lasts a recording thread tens of microseconds; the writer touches one in a few),
      // not a whole ring, which would stay allocated once every thread has its own.
      const std::size_t ready = std::min<std::size_t>(keep / record_block::capacity + 2, 16);
      blocks.spill = false;
      blocks.memory_limit = ready * block_bytes;
      blocks.reserve_blocks = ready;
    }
    return blocks;
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
    for (auto& t : threads_)
      if (t->gate != nullptr) __atomic_store_n(t->gate, 0u, __ATOMIC_RELAXED);
  }

  // On the thread's own thread: `t` stops being its current part of a session (a new session's
  // replaces it, or the thread exits). The buffer keeps its position; the thread-local cursor
  // and gate are no longer reachable through it.
  static void detach_locked(recording_thread& t) noexcept {
    t.buffer.unbind();
    if (t.gate != nullptr) __atomic_store_n(t.gate, 0u, __ATOMIC_RELAXED);
    t.gate = nullptr;
  }

  std::mutex mutex_;
  std::vector<std::shared_ptr<recording_thread>> threads_;
  // Parts of earlier sessions that their threads let go of when they took a new one.
  std::vector<std::shared_ptr<recording_thread>> retired_;
  std::uint32_t epoch_ = 0;
  std::uint32_t next_order_ = 0;
  session_settings settings_;
  std::shared_ptr<block_store> store_;  // the current session's (or the last one's, between sessions)
  // Device tracks of the current session by (pid, tid), and device records taken per pid.
  std::map<std::pair<std::uint64_t, std::uint64_t>, appended_track> device_tracks_;
  std::map<std::uint64_t, std::size_t> device_counts_;
  // Steps tracks of the current session, by the thread that marks the steps.
  std::map<const track_identity*, appended_track> step_tracks_;
};

/// Out of line so that every caller carries one call, not the registry's static-init guard.
STRATA_NOINLINE inline bool acquire_thread_buffer() noexcept {
  return registry::instance().acquire_buffer();
}

/// The cold path's `prepare_to_record` (record_path.hpp): whether the calling thread can
/// record `l` now, taking its buffer for the running session if it has none yet.
inline bool prepare_to_record_cold(layer l) noexcept {
  const std::uint32_t s = load_state();
  if ((s & layer_set::bit(l)) == 0) return false;
  return tl_epoch == epoch_of(s) || acquire_thread_buffer();
}

/// The cold path's `push_slow`: the cursor is at its limit, or the thread has no buffer (it
/// exited: the record is not taken, as documented for records made after a thread's exit).
inline bool push_slow_cold(std::uint64_t begin, std::uint64_t end, const site* where,
                           std::uint64_t payload) noexcept {
  thread_buffer* b = tl_buffer;
  return b != nullptr && b->push_slow(record{begin, end, where, payload});
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
