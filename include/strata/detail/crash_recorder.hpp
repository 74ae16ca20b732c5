// strata/detail/crash_recorder.hpp: writes every thread's records to a file when the process
// crashes (profiler_config::crash_dump; docs/production.md#crash-dumps).
//
// Armed when a profiler with crash_dump starts: the dump file is created in the output directory
// then, and everything the handler needs (its write buffer, the table that dedupes sites) is
// allocated then, so that the handler only reads memory and calls write(2), ftruncate(2),
// nanosleep(2), sigaction(2), raise(3) and pthread_mutex_trylock/unlock. On SIGSEGV, SIGBUS,
// SIGILL, SIGFPE or SIGABRT it stops the session, writes the dump (crash_dump_format.hpp), names
// it in one line on stderr, puts the previous action back and runs it: a previous handler is called, a default action is
// re-raised, so the exit status and the core dump are what they would have been.
//
// What a dump may miss, all flagged in its header: buffers whose lock the crashed thread held
// (it would never release it: the handler gives up after a short wait), records already in the
// spill file (counted per thread), sites past the table's size. If the process's memory is
// corrupted, the handler may itself fault: it then lets that fault kill the process as it would
// have without strata (the dump is left truncated; the reader says so).
//
// One recorder per process, like the profiler it serves; a dump is written once.
#pragma once

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "strata/clock.hpp"
#include "strata/crash_dump.hpp"
#include "strata/profiler_config.hpp"
#include "strata/record.hpp"
#include "strata/detail/registry.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// The signals a crash dump is written for.
inline constexpr int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

class crash_recorder {
 public:
  static crash_recorder& instance() noexcept {
    static crash_recorder* r = new crash_recorder;  // never destroyed: a crash may come at exit
    return *r;
  }

  /// The dump's name in `dir` for process `pid`.
  static std::string dump_path(const std::string& dir, std::uint64_t pid) {
    return dir + "/strata-crash-" + std::to_string(pid) + ".dump";
  }

  /// Creates the dump file, prepares the handler's memory and installs the handlers. Returns a
  /// message on failure (nothing is then installed).
  std::string arm(const std::string& dir, std::uint64_t pid, std::string_view process_name,
                  overflow_policy overflow, std::size_t buffer_capacity) {
    disarm();
    std::string path = dump_path(dir, pid);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return "cannot create the crash dump file '" + path + "': " + std::strerror(errno);
    try {
      // Kept from one session to the next: a thread may still have the alternate stack
      // installed (stop() may run on another thread than start()), so it is never freed.
      if (!out_) out_ = std::make_unique<char[]>(out_bytes);
      if (!sites_) sites_ = std::make_unique<const site*[]>(site_slots);
      if (!alt_stack_) alt_stack_ = std::make_unique<char[]>(alt_stack_bytes);
    } catch (...) {
      ::close(fd);
      ::unlink(path.c_str());
      throw;
    }
    // What the handler says once the dump is written: prepared here, since it may only write(2).
    written_line_ = "strata: crash dump written to " + path + " (strata-report convert " + path +
                    " -o crash.json)\n";
    failed_line_ = "strata: crash dump " + path +
                   " is incomplete: writing it failed (disk full?); strata-report says what it holds\n";
    path_ = std::move(path);
    process_name_ = std::string(process_name);
    fd_ = fd;
    pid_ = pid;
    overflow_ = overflow;
    buffer_capacity_ = buffer_capacity;
    written_.store(false);
    install_alt_stack();
    struct sigaction action {};
    action.sa_sigaction = &on_signal;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    armed_.store(this, std::memory_order_release);
    for (std::size_t i = 0; i < signal_count; ++i) ::sigaction(crash_signals[i], &action, &previous_[i]);
    return {};
  }

  /// The window being recorded: its clock's first anchor and its start. Read by the handler
  /// with relaxed loads (a crash while a window begins may pair two windows' values: the times
  /// are then off, the records are not).
  void set_window(const clock_calibration& clock, std::uint64_t start_ticks) noexcept {
    clock_source_.store(clock.source() == clock_source::tsc ? 1 : 0, std::memory_order_relaxed);
    anchor_ticks_.store(clock.anchor_ticks(), std::memory_order_relaxed);
    anchor_ns_.store(clock.anchor_ns(), std::memory_order_relaxed);
    start_ticks_.store(start_ticks, std::memory_order_relaxed);
  }

  /// Puts the previous handlers back and removes the dump file (the session ended without a
  /// crash). Nothing if not armed.
  void disarm() noexcept {
    if (fd_ < 0) return;
    for (std::size_t i = 0; i < signal_count; ++i) {
      struct sigaction current {};
      ::sigaction(crash_signals[i], nullptr, &current);
      // Leave a handler installed after ours (by someone else) where it is.
      if ((current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == &on_signal)
        ::sigaction(crash_signals[i], &previous_[i], nullptr);
    }
    armed_.store(nullptr, std::memory_order_release);
    remove_alt_stack();
    ::close(fd_);
    if (!written_.load()) ::unlink(path_.c_str());
    fd_ = -1;
  }

  bool armed() const noexcept { return fd_ >= 0; }
  const std::string& path() const noexcept { return path_; }

 private:
  crash_recorder() = default;

  static constexpr std::size_t signal_count = sizeof(crash_signals) / sizeof(crash_signals[0]);
  static constexpr std::size_t out_bytes = std::size_t{1} << 16;
  static constexpr std::size_t site_slots = std::size_t{1} << 16;  // 512 KiB of pointers
  static constexpr std::size_t alt_stack_bytes = std::size_t{1} << 16;
  static constexpr int lock_wait_ms = 100;

  static void on_signal(int sig, siginfo_t* info, void* context) {
    const int saved_errno = errno;
    crash_recorder* self = armed_.load(std::memory_order_acquire);
    std::size_t index = 0;
    while (index < signal_count && crash_signals[index] != sig) ++index;
    if (self == nullptr || index == signal_count) {  // disarmed meanwhile
      default_action(sig);
      return;
    }
    const auto tid = static_cast<long>(::syscall(SYS_gettid));
    long expected = 0;
    if (!dumping_thread_.compare_exchange_strong(expected, tid)) {
      if (expected == tid) {
        // A crash inside the handler: no second dump, but the default action, which is what
        // the first crash leads to anyway.
        default_action(sig);
        return;
      }
      // Another thread is writing the dump: let it finish (its signal then usually ends the
      // process), for up to 10 s in case it is itself stuck; then this signal takes the
      // course it would have taken without strata.
      for (int i = 0; !dump_done_.load() && i < 10000; ++i) {
        timespec pause{0, 1000000};
        ::nanosleep(&pause, nullptr);
      }
      errno = saved_errno;
      run_previous(self->previous_[index], sig, info, context);
      return;
    }
    self->write_dump(sig);
    dump_done_.store(true);
    const std::string& line = self->failed_ ? self->failed_line_ : self->written_line_;
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
    errno = saved_errno;
    run_previous(self->previous_[index], sig, info, context);
  }

  // Puts `prev` back for `sig` and runs it, as if strata had not been there.
  static void run_previous(const struct sigaction& prev, int sig, siginfo_t* info, void* context) {
    ::sigaction(sig, &prev, nullptr);
    if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
      prev.sa_sigaction(sig, info, context);
    } else if (prev.sa_handler == SIG_IGN) {
      // Returning ignores it, as before (a hardware fault then repeats with the default).
    } else if (prev.sa_handler == SIG_DFL) {
      // Blocked while this handler runs: delivered, with its default action, as it returns (a
      // fault's instruction would fault again anyway; a raise() or kill() would not).
      ::raise(sig);
    } else {
      prev.sa_handler(sig);
    }
  }

  static void default_action(int sig) noexcept {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    ::raise(sig);  // delivered as the handler returns
  }

  // ---- the handler's writer: a buffer allocated at arm(), flushed with write(2) ------------

  void flush() noexcept {
    const char* p = out_.get();
    std::size_t left = used_;
    while (left > 0 && !failed_) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failed_ = true;  // disk full: the dump ends here, and the reader says it is truncated
        break;
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    used_ = 0;
  }

  void put(const void* data, std::size_t n) noexcept {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      if (used_ == out_bytes) flush();
      const std::size_t take = n < out_bytes - used_ ? n : out_bytes - used_;
      std::memcpy(out_.get() + used_, p, take);
      used_ += take;
      p += take;
      n -= take;
    }
  }

  template <class T>
  void put_value(const T& v) noexcept {
    put(&v, sizeof v);
  }

  void put_string(const char* s, std::size_t n) noexcept {
    if (s == nullptr) {
      put_value(crash_dump_null_string);
      return;
    }
    const auto len = static_cast<std::uint32_t>(n < crash_dump_max_string ? n : crash_dump_max_string);
    put_value(len);
    put(s, len);
  }

  void put_c_string(const char* s) noexcept {
    std::size_t n = 0;
    if (s != nullptr)
      while (n < crash_dump_max_string && s[n] != '\0') ++n;
    put_string(s, n);
  }

  // ---- sites: an open-addressing set of the pointers the dumped records hold ---------------

  void note_site(const site* s) noexcept {
    if (s == nullptr) return;
    auto h = static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(s) >> 4) *
                                      0x9e3779b97f4a7c15ull);
    for (std::size_t probe = 0; probe < site_slots; ++probe) {
      const site*& slot = sites_[(h + probe) & (site_slots - 1)];
      if (slot == s) return;
      if (slot == nullptr) {
        if (site_count_ * 4 >= site_slots * 3) break;  // keep probes short: three quarters full
        slot = s;
        ++site_count_;
        return;
      }
    }
    flags_ |= crash_dump_sites_missing;
  }

  void put_records(const record* r, std::size_t n) noexcept {
    put(r, n * sizeof(record));
    for (std::size_t i = 0; i < n; ++i) note_site(r[i].site);
  }

  // ---- the dump --------------------------------------------------------------------------

  void write_dump(int sig) noexcept {
    used_ = 0;
    failed_ = false;
    flags_ = 0;
    site_count_ = 0;
    for (std::size_t i = 0; i < site_slots; ++i) sites_[i] = nullptr;
    // The file may hold an earlier session's dump attempt: start over.
    if (::lseek(fd_, 0, SEEK_SET) != 0) {
      failed_ = true;
      return;
    }

    crash_dump_header h;
    std::memcpy(h.magic, crash_dump_magic, sizeof h.magic);
    h.header_bytes = sizeof h;
    h.record_bytes = sizeof(record);
    h.signal = static_cast<std::uint32_t>(sig);
    h.pid = pid_;
    h.overflow = overflow_ == overflow_policy::flight_recorder ? 1 : 0;
    h.buffer_capacity = buffer_capacity_;
    h.clock_source = static_cast<std::uint8_t>(clock_source_.load(std::memory_order_relaxed));
    // The second anchor, now: the rate over the whole window (finish() waits at most 2 ms
    // after the first anchor, and only reads clocks).
    clock_calibration c = clock_calibration::from_parts(
        h.clock_source == 1 ? clock_source::tsc : clock_source::steady_clock,
        anchor_ticks_.load(std::memory_order_relaxed), anchor_ns_.load(std::memory_order_relaxed), 1.0);
    c.finish();
    h.anchor_ticks = c.anchor_ticks();
    h.anchor_ns = c.anchor_ns();
    h.ns_per_tick = c.ns_per_tick();
    h.start_ticks = start_ticks_.load(std::memory_order_relaxed);
    h.crash_ticks = clock::now();
    // The header is written once the walk has said what it missed.
    const off_t header_at = 0;
    put_value(h);
    put_string(process_name_.data(), process_name_.size());

    std::uint64_t threads = 0;
    const registry::crash_walk walk = registry::instance().walk_for_crash(
        [&](const recording_thread& rt, bool store_locked) {
          put_thread(rt, store_locked);
          ++threads;
        },
        [&](const appended_track& a) {
          put_appended(a);
          ++threads;
        },
        lock_wait_ms);
    if (!walk.registry_locked) flags_ |= crash_dump_threads_missing;
    if (!walk.store_locked) flags_ |= crash_dump_blocks_missing;
    h.layers = walk.layers;

    std::uint64_t sites = 0;
    for (std::size_t i = 0; i < site_slots; ++i) {
      const site* s = sites_[i];
      if (s == nullptr) continue;
      put_value(crash_dump_site_tag);
      crash_dump_site d;
      d.address = reinterpret_cast<std::uintptr_t>(s);
      d.line = s->line;
      d.layer = static_cast<std::uint8_t>(s->layer);
      d.kind = static_cast<std::uint8_t>(s->kind);
      put_value(d);
      put_c_string(s->name);
      put_c_string(s->file);
      put_c_string(s->input_shapes);
      put_c_string(s->args_json);
      put_c_string(s->category);
      ++sites;
    }
    put_value(crash_dump_end_tag);
    put_value(crash_dump_end{threads, sites});
    flush();
    h.flags = flags_;
    const off_t size = ::lseek(fd_, 0, SEEK_CUR);
    ::pwrite(fd_, &h, sizeof h, header_at);
    if (size > 0) ::ftruncate(fd_, size);
    written_.store(true);
  }

  // A thread section: its header, then `count` records from `emit_records(emit)`. The count is
  // taken first, in a pass of its own; records published between the two passes are left out,
  // and a shortfall (none expected: the counted records stay where they are) is padded with
  // records the reader skips (a null site).
  template <class Records>
  void put_section(crash_dump_thread& t, const track_identity& id, std::uint64_t count,
                   Records&& emit_records) noexcept {
    t.tid = id.tid;
    t.pid = id.pid;
    t.order = id.sort_index;
    if (id.exited) t.flags |= crash_dump_thread_exited;
    if (id.timestamps_in_ns) t.flags |= crash_dump_thread_ns;
    if (id.steps) {
      t.flags |= crash_dump_thread_steps;
      t.steps_of = id.steps_of;
    }
    t.records = count;
    put_value(crash_dump_thread_tag);
    put_value(t);
    put_string(id.name.data(), id.name.size());
    put_string(id.process_name.data(), id.process_name.size());
    std::uint64_t written = 0;
    emit_records([&](const record* r, std::size_t n) {
      if (written + n > count) n = static_cast<std::size_t>(count - written);  // the section's count holds
      put_records(r, n);
      written += n;
    });
    const record blank{0, 0, nullptr, 0};
    for (; written < count; ++written) put_value(blank);
  }

  void put_thread(const recording_thread& rt, bool store_locked) noexcept {
    const auto counted = rt.buffer.for_each_for_crash([](const record*, std::size_t) {}, store_locked);
    if (!counted.complete) flags_ |= crash_dump_ring_missing;
    crash_dump_thread t;
    t.lost = counted.lost;
    t.not_dumped = counted.not_dumped;
    put_section(t, *rt.thread, counted.dumped, [&](const auto& emit) {
      rt.buffer.for_each_for_crash(emit, store_locked);
    });
  }

  void put_appended(const appended_track& a) noexcept {
    crash_dump_thread t;
    t.lost = a.lost;
    std::uint64_t count = 0;
    a.records.for_each_chunk([&](const record*, std::size_t n) { count += n; });
    const auto emit_all = [&](const auto& emit) { a.records.for_each_chunk(emit); };
    if (!a.steps_of) return put_section(t, a.id, count, emit_all);
    // A steps track: the reader names it after its thread, as a collected session does, so its
    // identity here has no name, and building it allocates nothing.
    track_identity steps;
    steps.tid = steps_track_tid(a.steps_of->tid);
    steps.sort_index = a.steps_of->sort_index;
    steps.steps = true;
    steps.steps_of = a.steps_of->tid;
    put_section(t, steps, count, emit_all);
  }

  void install_alt_stack() noexcept {
    stack_t current{};
    if (::sigaltstack(nullptr, &current) != 0 || (current.ss_flags & SS_DISABLE) == 0) return;
    stack_t ours{};
    ours.ss_sp = alt_stack_.get();
    ours.ss_size = alt_stack_bytes;
    if (::sigaltstack(&ours, nullptr) == 0) alt_stack_installed_ = true;
  }

  void remove_alt_stack() noexcept {
    if (!alt_stack_installed_) return;
    stack_t current{};
    // Only on the thread that installed it, and only if it is still ours.
    if (::sigaltstack(nullptr, &current) == 0 && current.ss_sp == alt_stack_.get() &&
        (current.ss_flags & SS_ONSTACK) == 0) {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      ::sigaltstack(&off, nullptr);
      alt_stack_installed_ = false;
    }
  }

  static inline std::atomic<crash_recorder*> armed_{nullptr};
  // The thread writing the dump (0: none yet). Never reset: one dump per process.
  static inline std::atomic<long> dumping_thread_{0};
  static inline std::atomic<bool> dump_done_{false};

  int fd_ = -1;
  std::string path_;
  std::string written_line_;  // the line on stderr after a dump (prepared at arm())
  std::string failed_line_;
  std::string process_name_;
  std::uint64_t pid_ = 0;
  overflow_policy overflow_ = overflow_policy::lossless;
  std::size_t buffer_capacity_ = 0;
  struct sigaction previous_[signal_count] = {};
  std::unique_ptr<char[]> out_;
  std::unique_ptr<const site*[]> sites_;
  std::unique_ptr<char[]> alt_stack_;
  bool alt_stack_installed_ = false;
  std::atomic<int> clock_source_{0};
  std::atomic<std::uint64_t> anchor_ticks_{0};
  std::atomic<std::int64_t> anchor_ns_{0};
  std::atomic<std::uint64_t> start_ticks_{0};
  std::atomic<bool> written_{false};
  // The handler's own state (one handler at a time: dumping_thread_).
  std::size_t used_ = 0;
  bool failed_ = false;
  std::uint32_t flags_ = 0;
  std::size_t site_count_ = 0;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
