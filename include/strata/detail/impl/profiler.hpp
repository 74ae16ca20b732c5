// strata/detail/impl/profiler.hpp: the profiler's definitions. Part of strata's implementation
// (strata/implementation.hpp), compiled in the one file that defines STRATA_IMPLEMENTATION.
#pragma once

#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <unistd.h>

#include "strata/analysis/key_averages.hpp"
#include "strata/analysis/stacks.hpp"
#include "strata/analysis/memory.hpp"
#include "strata/clock.hpp"
#include "strata/device.hpp"
#include "strata/error.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/export/html_report.hpp"
#include "strata/export/perfetto_trace.hpp"
#include "strata/export/write_trace.hpp"
#include "strata/profiler.hpp"
#include "strata/profiler_config.hpp"
#include "strata/schedule.hpp"
#include "strata/scope.hpp"
#include "strata/detail/background_thread.hpp"
#include "strata/detail/crash_recorder.hpp"
#include "strata/detail/env_capture.hpp"
#include "strata/detail/impl/cold_path.hpp"
#include "strata/detail/intern.hpp"
#include "strata/detail/record_order.hpp"
#include "strata/detail/registry.hpp"
#include "strata/detail/session.hpp"
#include "strata/detail/trace_file.hpp"

namespace strata {
inline namespace v1 {

namespace detail {

/// Raises `strata::error` naming the first field of `s` that is out of range.
void check_schedule(const schedule& s) {
  const auto field = [](const char* name, int value, const char* rule) {
    return std::string("profiler_config::schedule.") + name + " is " + std::to_string(value) +
           "; " + rule;
  };
  if (s.skip_first < 0) throw error(field("skip_first", s.skip_first, "it must be 0 or more"));
  if (s.wait < 0) throw error(field("wait", s.wait, "it must be 0 or more"));
  if (s.warmup < 0) throw error(field("warmup", s.warmup, "it must be 0 or more"));
  if (s.active < 0)
    throw error(field("active", s.active, "it must be more than 0 (or 0 for no schedule)"));
  if (s.repeat < 0)
    throw error(field("repeat", s.repeat, "it must be 0 (repeat forever) or more"));
  if (s.active == 0) {
    const char* set = s.skip_first != 0 ? "skip_first"
                      : s.wait != 0     ? "wait"
                      : s.warmup != 0   ? "warmup"
                      : s.repeat != 0   ? "repeat"
                      : s.skip_first_wait ? "skip_first_wait"
                                          : nullptr;
    if (set != nullptr)
      throw error(std::string("profiler_config::schedule.active is 0 (no schedule) but "
                              "schedule.") + set + " is set; set active to the number of "
                              "steps to record, or leave every schedule field at 0");
  }
  // One cycle's length must fit an int: wait + warmup + active are summed in 64 bits anyway,
  // but a cycle longer than INT_MAX steps is surely a mistake.
  if (std::int64_t{s.wait} + s.warmup + s.active > 0x7fffffff)
    throw error("profiler_config::schedule: wait + warmup + active exceeds 2^31-1 steps; "
                "lower them");
}

inline std::string program_name() {
#if defined(__linux__)
  std::ifstream comm("/proc/self/comm");
  std::string name;
  if (std::getline(comm, name) && !name.empty()) return name;
#endif
  return "strata";
}

inline bool is_power_of_two(std::size_t n) noexcept { return n != 0 && (n & (n - 1)) == 0; }

/// Creates `dir` if needed and proves it writable by creating and removing a file in it.
inline void check_output_dir(const std::filesystem::path& dir) {
  if (dir.empty()) throw error("profiler_config::output_dir is empty; set it to a directory path");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw error("profiler_config::output_dir '" + dir.string() + "' cannot be created" +
                (ec ? ": " + ec.message() : std::string(": a file of that name exists")) +
                "; choose a writable directory");
  const std::filesystem::path probe =
      dir / (".strata-write-check." + std::to_string(detail::atomic_file::process_id()));
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  if (f == nullptr)
    throw error("profiler_config::output_dir '" + dir.string() +
                "' is not writable; choose a writable directory");
  std::fclose(f);
  std::filesystem::remove(probe, ec);
}

// The one profiler that may record at a time, like torch.profiler's single active session.
inline constinit std::atomic<profiler*> active_profiler{nullptr};
// The process-wide profiler of STRATA_PROFILE=1 (detail/impl/env_capture.hpp), to say so when the
// program's own profiler cannot start beside it.
inline constinit std::atomic<const profiler*> environment_profiler{nullptr};

// Serialises start(), step() and stop() of the active profiler with STRATA_STEP() calls from
// other threads. Recursive, so that a call from on_trace_ready (on the thread that holds it)
// reaches no_reentry() and its clear error instead of a deadlock.
inline std::recursive_mutex& session_control_mutex() {
  static std::recursive_mutex* m = new std::recursive_mutex;  // never destroyed: used at exit
  return *m;
}

/// `dir/stem.ext`, or `dir/stem.1.ext`, `dir/stem.2.ext`, ...: the first name that does not
/// exist, so that no file is ever overwritten.
inline std::filesystem::path unused_path(const std::filesystem::path& dir, const std::string& stem,
                                         const std::string& ext) {
  std::filesystem::path path = dir / (stem + ext);
  for (int n = 1; std::filesystem::exists(path); ++n)
    path = dir / (stem + "." + std::to_string(n) + ext);
  return path;
}

/// Writes a window's trace to a file of its own in `dir`, `trace_step<first>-<last>.json`,
/// adding `.1`, `.2`, … before `.json` while the name exists.
inline export_result write_window_trace(const trace_data& data, step_window window,
                                        const std::filesystem::path& dir) {
  return write_chrome_trace(
      data, unused_path(dir, "trace_step" + std::to_string(window.first) + "-" + std::to_string(window.last),
                        ".json"));
}

/// The default `on_trace_ready` of a schedule, off the recording thread: the `step()` that
/// ends a window only takes its records out of the registry (`take_session`) and queues them;
/// this writer's thread (started on first use, one per profiler) sorts them, finishes the
/// clock calibration and writes the file, one window after another in the order they ended,
/// so each file gets the name it would have got written in `step()`. What it leaves (the files
/// written, the last window, what failed) is read by the profiler's thread after `wait()`.
class window_writer {
 public:
  window_writer() = default;
  window_writer(const window_writer&) = delete;
  window_writer& operator=(const window_writer&) = delete;

  /// Writes what is still queued, then joins the thread. A failure no one has taken is named
  /// on stderr: nothing else could report it.
  ~window_writer() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    work_.notify_all();
    if (thread_.joinable()) thread_.join();
    for (const std::exception_ptr& f : failures_) report(f);
  }

  /// Starts the writer's thread, if it is not running yet (submit() starts it otherwise).
  void start() {
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }

  /// Queues an ended window (records taken, not yet ordered) for `dir`.
  void submit(std::shared_ptr<trace_data> data, step_window window, std::string dir) {
    start();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({std::move(data), window, std::move(dir)});
      ++pending_;
    }
    work_.notify_one();
  }

  /// Waits until every queued window is written (or has failed).
  void wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
  }

  /// The files written, oldest first (complete after `wait()`); `add_file` appends one
  /// written elsewhere. The list is only changed by the writer's thread between `submit()` and
  /// `wait()`.
  const std::vector<std::string>& files() const noexcept { return files_; }
  void add_file(std::string path) {
    std::lock_guard lock(mutex_);
    files_.push_back(std::move(path));
  }
  void clear_files() {
    std::lock_guard lock(mutex_);
    files_.clear();
  }

  /// The last window it ordered since the previous call, or null.
  std::shared_ptr<trace_data> take_last() {
    std::lock_guard lock(mutex_);
    return std::move(last_);
  }

  /// The oldest failure not taken yet, or null; does not wait.
  std::exception_ptr take_failure() {
    std::lock_guard lock(mutex_);
    if (failures_.empty()) return nullptr;
    std::exception_ptr f = failures_.front();
    failures_.pop_front();
    return f;
  }

  /// Names a failure on stderr, for when it cannot be raised.
  static void report(const std::exception_ptr& f) noexcept {
    try {
      std::rethrow_exception(f);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "strata: writing a window's trace failed: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "strata: writing a window's trace failed\n");
    }
  }

 private:
  struct job {
    std::shared_ptr<trace_data> data;
    step_window window;
    std::string dir;
  };

  void run() {
    become_background_thread("strata traces");
    std::unique_lock lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing, and nothing left to write
      job j = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      bool ordered = false;
      std::string path;
      std::exception_ptr failed;
      try {
        order_session(*j.data);
        j.data->clock.finish();
        ordered = true;
        path = write_window_trace(*j.data, j.window, j.dir).path;
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      if (ordered) last_ = std::move(j.data);
      if (failed)
        failures_.push_back(std::move(failed));
      else
        files_.push_back(std::move(path));
      --pending_;
      done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_;  // the thread waits for a window (or for closing)
  std::condition_variable done_;  // wait() waits for pending_ to reach 0
  std::deque<job> queue_;
  std::size_t pending_ = 0;       // queued or being written
  bool closing_ = false;
  std::vector<std::string> files_;
  std::shared_ptr<trace_data> last_;
  std::deque<std::exception_ptr> failures_;
  std::thread thread_;            // started and joined by the profiler's thread only
};

}  // namespace detail

namespace detail {

/// A rank identity given in the config: a rank below the world size, groups of ranks in it.
inline void check_distributed(const distributed_info& d) {
  if (!d.known()) return;
  if (d.rank >= d.world_size)
    throw error("profiler_config::distributed.rank " + std::to_string(d.rank) +
                " is not below world_size " + std::to_string(d.world_size) +
                ": set world_size to the number of ranks in the job");
  for (const process_group& g : d.groups)
    for (int r : g.ranks)
      if (r < 0 || r >= d.world_size)
        throw error("profiler_config::distributed.groups: group '" + g.name + "' lists rank " +
                    std::to_string(r) + ", outside the world of " + std::to_string(d.world_size) + " ranks");
}

/// Wall-clock nanoseconds at steady_clock nanosecond 0: the smallest of a few bracketed reads,
/// so that a preemption between the two clocks does not shift every rank's timeline.
inline std::int64_t wall_minus_steady_ns() noexcept {
  std::int64_t best_gap = -1, offset = 0;
  for (int i = 0; i < 5; ++i) {
    const std::int64_t before = steady_now_ns();
    const std::int64_t wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::system_clock::now().time_since_epoch()).count();
    const std::int64_t after = steady_now_ns();
    if (best_gap < 0 || after - before < best_gap) {
      best_gap = after - before;
      offset = wall - (before + (after - before) / 2);
    }
  }
  return offset;
}

/// CLOCK_BOOTTIME nanoseconds at steady_clock (CLOCK_MONOTONIC) nanosecond 0, read the same
/// way; empty where the system has no CLOCK_BOOTTIME.
inline std::optional<std::int64_t> boot_minus_steady_ns() noexcept {
#ifdef CLOCK_BOOTTIME
  std::int64_t best_gap = -1, offset = 0;
  for (int i = 0; i < 5; ++i) {
    const std::int64_t before = steady_now_ns();
    timespec ts{};
    if (::clock_gettime(CLOCK_BOOTTIME, &ts) != 0) return std::nullopt;
    const std::int64_t after = steady_now_ns();
    if (best_gap < 0 || after - before < best_gap) {
      best_gap = after - before;
      offset = static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec - (before + (after - before) / 2);
    }
  }
  return offset;
#else
  return std::nullopt;
#endif
}

}  // namespace detail

struct profiler::session {
  session(profiler& owner, profiler_config config) : owner_(owner), config_(std::move(config)) {
    // Only a flight recorder is sized by buffer_capacity; a lossless session ignores it,
    // as its documentation says. The limit comes first: std::bit_ceil of a value above 2^63 (a
    // wrapped -1, say) is undefined.
    const bool flight = config_.overflow == overflow_policy::flight_recorder;
    if (flight && config_.buffer_capacity > max_buffer_capacity)
      throw error("profiler_config::buffer_capacity " + std::to_string(config_.buffer_capacity) +
                  " exceeds the limit of " + std::to_string(max_buffer_capacity) +
                  " records per thread; lower it");
    if (flight && (!detail::is_power_of_two(config_.buffer_capacity) || config_.buffer_capacity < 2))
      throw error("profiler_config::buffer_capacity must be a power of two of at least 2 "
                  "records per thread; got " + std::to_string(config_.buffer_capacity) +
                  (config_.buffer_capacity > 2 ? " (try " + std::to_string(std::bit_ceil(config_.buffer_capacity)) + ")" : ""));
    if (config_.memory_limit < min_memory_limit)
      throw error("profiler_config::memory_limit " + std::to_string(config_.memory_limit) +
                  " bytes is below one 64 KiB block; use at least " +
                  std::to_string(min_memory_limit) + " (the default is 256 MiB)");
    if (config_.layers.empty())
      throw error("profiler_config::layers is empty, so nothing would be recorded; "
                  "capture at least one layer");
    detail::check_schedule(config_.schedule);
    cores_ = core_set::parse(config_.capture_cores);
    detail::check_output_dir(config_.output_dir);
    if (config_.process_name.empty()) config_.process_name = detail::program_name();
    if (!config_.distributed.known())
      config_.distributed = distributed_from_env([](const char* n) { return std::getenv(n); });
    detail::check_distributed(config_.distributed);
    clock::select_once();
  }

  ~session() {
    if (started_) {
      try {
        stop();
      } catch (...) {
        // What on_trace_ready threw, an allocation failure while collecting, or a window's
        // trace that could not be written: a destructor can only name it.
        detail::window_writer::report(std::current_exception());
      }
    }
  }

  void start() {
    if (started_) throw error("profiler::start() called twice; call stop() first");
    no_reentry("start");
    detail::check_output_dir(config_.output_dir);
    profiler* expected = nullptr;
    if (!detail::active_profiler.compare_exchange_strong(expected, &owner_))
      throw error(expected == detail::environment_profiler.load()
                      ? "STRATA_PROFILE=1 records this whole run, so the program's own profiler "
                        "cannot start (one profiler records at a time); unset STRATA_PROFILE to run it"
                      : "another strata::profiler is recording; stop it before starting this one");
    if (config_.crash_dump) {
      std::string failed;
      try {
        failed = detail::crash_recorder::instance().arm(
            config_.output_dir, static_cast<std::uint64_t>(detail::atomic_file::process_id()),
            config_.process_name, config_.overflow, config_.buffer_capacity);
      } catch (...) {
        detail::active_profiler.store(nullptr);
        throw;
      }
      if (!failed.empty()) {
        detail::active_profiler.store(nullptr);
        throw error(failed + "; profiler_config::crash_dump needs a writable output_dir");
      }
    }
    started_ = true;
    __atomic_store_n(&detail::profiler_started, 1u, __ATOMIC_RELAXED);
    writer_.wait();  // nothing is queued once stop() has returned; this keeps it so
    writer_.take_last();
    writer_.clear_files();
    data_ = std::make_shared<trace_data>();
    window_ = {};
    step_num_ = 0;
    stepping_thread_.reset();
    action_ = action_at(config_.schedule, 0);
    // A schedule that waits first: its first window should not make the store in its step.
    if (!is_recording(action_)) detail::registry::instance().prepare_store(window_settings(clock::now()));
    // Nor should the step that ends the first window start the thread that writes it.
    if (writes_in_background()) writer_.start();
    std::exception_ptr failed = transition(profiler_action::none, action_, false);
    open_step();
    if (failed) std::rethrow_exception(failed);
  }

  void step() {
    if (!started_) return;
    no_reentry("step");
    close_step();
    if (marks_steps()) stepping_thread_ = detail::registry::instance().current_thread();
    const profiler_action prev = action_;
    ++step_num_;
    action_ = action_at(config_.schedule, step_num_);
    std::exception_ptr failed = transition(prev, action_, false);
    open_step();
    if (!failed) failed = writer_.take_failure();  // an earlier window that could not be written
    if (failed) std::rethrow_exception(failed);
  }

  void stop() {
    if (!started_) return;
    no_reentry("stop");
    close_step(stepping_thread_);  // the step in progress belongs to the thread that steps
    stepping_thread_.reset();
    std::exception_ptr failed = transition(action_, profiler_action::none, true);
    settle();
    // Every window is written now: the first failure not raised yet is raised, any other one
    // named on stderr, so none goes unreported.
    for (std::exception_ptr f = writer_.take_failure(); f; f = writer_.take_failure()) {
      if (!failed)
        failed = std::move(f);
      else
        detail::window_writer::report(f);
    }
    if (failed) std::rethrow_exception(failed);
  }

  bool running() const noexcept { return started_; }
  bool recording() const noexcept { return recording_; }
  std::int64_t step_num() const noexcept { return step_num_; }
  profiler_action current_action() const noexcept { return action_; }
  step_window window() const noexcept { return window_; }

  export_result export_perfetto_trace(const std::string& path) {
    if (recording_) throw error("profiler::export_perfetto_trace() needs a stopped session; call stop() first");
    return write_perfetto_trace(
        collected(), path.empty() ? std::filesystem::path(config_.output_dir) / "trace.pftrace"
                             : std::filesystem::path(path));
  }

  export_result export_chrome_trace(const std::string& path) {
    if (recording_) throw error("profiler::export_chrome_trace() needs a stopped session; call stop() first");
    return write_chrome_trace(
        collected(), path.empty() ? std::filesystem::path(config_.output_dir) / "trace.json"
                             : std::filesystem::path(path));
  }

  export_result export_memory_timeline(const std::string& path) {
    if (recording_) throw error("profiler::export_memory_timeline() needs a stopped session; call stop() first");
    return strata::export_memory_timeline(
        collected(), path.empty() ? std::filesystem::path(config_.output_dir) / "memory_timeline.json"
                             : std::filesystem::path(path));
  }

  export_result export_html(const std::string& path, const std::string& label) {
    if (recording_) throw error("profiler::export_html() needs a stopped session; call stop() first");
    html_report rep;
    rep.runs.push_back(html_run_of(collected(), key_averages(), label));
    return write_html_report(rep, path.empty() ? std::filesystem::path(config_.output_dir) / "report.html"
                                               : std::filesystem::path(path));
  }

  averages key_averages(key_averages_options options = {}) {
    if (recording_) throw error("profiler::key_averages() needs a stopped session; call stop() first");
    if (!config_.correlate_device_time) options.correlate_device_time = false;
    if (config_.profile_memory) options.profile_memory = true;  // the table shows the memory columns
    if (config_.with_flops) options.with_flops = true;  // torch's table shows what was recorded
    return strata::key_averages(collected(), options);
  }

  export_result export_stacks(const std::string& path, const std::string& metric) {
    if (recording_) throw error("profiler::export_stacks() needs a stopped session; call stop() first");
    return write_stacks(strata::stacks(collected(), metric), path);
  }

  // From any thread while a window records (the control mutex keeps the session from ending
  // during the copy; the file is written after it is released).
  export_result snapshot(const std::string& path) {
    std::shared_ptr<const trace_data> last;
    trace_data copy;
    {
      std::lock_guard lock(detail::session_control_mutex());
      if (!recording_) {
        settle();
        last = data_;
      } else {
        copy = recording_data_;  // the window's facts; the records come from the buffers
        copy.stop_ticks = clock::now();
        detail::snapshot_session(copy);
      }
    }
    if (!last) {
      detail::order_session(copy);
      copy.clock.finish();
    }
    static std::atomic<std::uint64_t> count{0};
    const std::filesystem::path target =
        !path.empty() ? std::filesystem::path(path)
                      : detail::unused_path(config_.output_dir,
                                            "snapshot-" + std::to_string(detail::atomic_file::process_id()) +
                                                "-" + std::to_string(count.fetch_add(1) + 1),
                                            ".json");
    return write_trace(last ? *last : copy, target);
  }

  export_result export_window_trace() {
    if (recording_) throw error("profiler::export_window_trace() needs a collected window; call it from on_trace_ready or after stop()");
    const trace_data& d = collected();  // after the windows being written in the background
    export_result r = detail::write_window_trace(d, window_, config_.output_dir);
    writer_.add_file(r.path);
    return r;
  }

  const std::vector<std::string>& trace_files() {
    settle();
    return writer_.files();
  }

  profiler_stats stats() {
    profiler_stats s;
    if (recording_) {
      const detail::recording_counts c = detail::count_session();
      s.recorded = c.recorded;
      s.dropped = c.lost;
      s.threads = c.threads;
      s.tracks = c.tracks;
      if (config_.overflow == overflow_policy::lossless)
        if (auto store = detail::registry::instance().store()) s.memory = store->stats();
      return s;
    }
    const trace_data& d = collected();
    s.recorded = d.recorded();
    s.dropped = d.lost();
    s.threads = d.host_threads();
    s.tracks = d.threads.size();
    s.memory = d.memory;
    return s;
  }

  // While a window records: its facts so far (no records yet). Otherwise the last collected
  // window, once the background writer has ordered it, with its spilled records read back.
  const trace_data& data() {
    if (recording_) return recording_data_;
    trace_data& d = collected();
    if (d.spill) {
      try {
        detail::load_spilled(d);
      } catch (const std::exception& e) {
        // The tracks keep what was in memory; the spilled part stays readable by the writers.
        d.memory.spill_error = e.what();
      }
    }
    return d;
  }

  // The last collected window as it was collected: the trace writers and tables read its
  // spilled records from the spill file, a block at a time.
  trace_data& collected() {
    settle();
    return *data_;
  }
  const profiler_config& config() const noexcept { return config_; }
  const core_set& capture_cores() const noexcept { return cores_; }

  void no_reentry(const char* what) const {
    if (in_handler_)
      throw error(std::string("profiler::") + what + "() called from on_trace_ready; "
                  "the handler may only read the profiler and export its trace");
  }

  // Waits for the windows being written in the background; the last of them becomes data().
  void settle() {
    writer_.wait();
    if (std::shared_ptr<trace_data> last = writer_.take_last()) data_ = std::move(last);
  }

  // With a schedule and no on_trace_ready, each window's trace is written in the background.
  bool writes_in_background() const noexcept {
    return !config_.on_trace_ready && config_.schedule.enabled();
  }

  // torch.profiler's transition table, with nothing to prepare in warmup. `exiting`: the
  // transition of stop() (`next` is then ignored). Returns what on_trace_ready threw, so the
  // caller finishes its own bookkeeping first.
  std::exception_ptr transition(profiler_action prev, profiler_action next, bool exiting) {
    const bool next_records = !exiting && is_recording(next);
    std::shared_ptr<trace_data> ended;
    bool ready = false;
    if (prev == profiler_action::record_and_save) {
      ended = end_window(exiting);
      ready = true;
    } else if (prev == profiler_action::record && !next_records) {
      ended = end_window(exiting);
      ready = exiting;  // RECORD -> NONE/WARMUP discards the window, as torch does
    }
    if (exiting) {
      // No window follows: the blocks kept ready for the next one go back to the system.
      detail::registry::instance().release_store();
      if (config_.crash_dump) detail::crash_recorder::instance().disarm();
      started_ = false;
      __atomic_store_n(&detail::profiler_started, 0u, __ATOMIC_RELAXED);
      detail::active_profiler.store(nullptr);
    }
    std::exception_ptr failed;
    if (ended && ready && window_sink_) {
      window_sink_(std::move(ended));  // on-demand capture: its own thread orders and writes it
    } else if (ended) {
      if (ready && writes_in_background()) {
        try {
          writer_.submit(std::move(ended), window_, config_.output_dir);
        } catch (...) {
          failed = std::current_exception();  // no thread to write it: the window is lost
        }
      } else {
        // on_trace_ready runs here, as in torch, with the window collected.
        detail::order_session(*ended);
        ended->clock.finish();
        settle();
        data_ = std::move(ended);
        if (ready) failed = trace_ready();
      }
    }
    if (next_records && !recording_) begin_window();
    return failed;
  }

  void begin_window() {
    recording_data_ = trace_data{};
    recording_data_.pid = static_cast<std::uint64_t>(detail::atomic_file::process_id());
    recording_data_.process_name = config_.process_name;
    recording_data_.layers = config_.layers;
    recording_data_.buffer_capacity = config_.buffer_capacity;
    recording_data_.overflow = config_.overflow;
    recording_data_.profile_memory = config_.profile_memory;
    if (config_.overflow == overflow_policy::lossless) recording_data_.memory.limit = config_.memory_limit;
    recording_data_.clock = clock_calibration::begin();
    recording_data_.base_time_ns = detail::wall_minus_steady_ns();
    recording_data_.boot_time_ns = detail::boot_minus_steady_ns();
    recording_data_.distributed = config_.distributed;
    if (marks_steps()) recording_data_.step_sites = detail::make_shared_handle<detail::site_pool>();
    recording_data_.start_ticks = clock::now();
    if (config_.crash_dump)
      detail::crash_recorder::instance().set_window(recording_data_.clock, recording_data_.start_ticks);
    window_ = {step_num_, step_num_};
    recording_ = true;
    detail::registry::instance().begin_session(window_settings(recording_data_.start_ticks));
  }

  // What the registry's session of a window records and where its blocks come from.
  detail::session_settings window_settings(std::uint64_t start_ticks) const {
    return {.layers = config_.layers,
            .overflow = config_.overflow,
            .buffer_capacity = config_.buffer_capacity,
            .record_args = config_.record_shapes,
            .profile_memory = config_.profile_memory,
            .record_flops = config_.with_flops,
            .cores = cores_,
            .max_events_per_core = config_.max_events_per_core,
            .blocks = {.memory_limit = config_.memory_limit,
                       .spill = config_.spill,
                       .preallocate = config_.overflow == overflow_policy::lossless ? config_.preallocate : 0,
                       .spill_dir = config_.output_dir,
                       .pid = static_cast<std::uint64_t>(detail::atomic_file::process_id()),
                       .start_ticks = start_ticks}};
  }

  // Ends the registry's session and takes its records, unordered: what must happen before the
  // next window may begin. Ordering them and finishing the clock can wait. `last`: no window
  // follows, so the store keeps no free blocks for one, and the blocks whose records are copied
  // out (now, for a thread that spilled; else when the window is ordered) go back to the system
  // one by one instead of doubling what the session holds.
  std::shared_ptr<trace_data> end_window(bool last) {
    detail::registry::instance().end_session();
    if (last) detail::registry::instance().release_free_blocks();
    auto ended = std::make_shared<trace_data>(std::move(recording_data_));
    ended->stop_ticks = clock::now();
    recording_ = false;
    detail::take_session(*ended);
    return ended;
  }

  // on_trace_ready, on the thread that ended the window (the default handler of a schedule
  // runs on the window writer's thread instead).
  std::exception_ptr trace_ready() {
    if (!config_.on_trace_ready) return nullptr;
    in_handler_ = true;
    std::exception_ptr failed;
    try {
      config_.on_trace_ready(owner_);
    } catch (...) {
      failed = std::current_exception();
    }
    in_handler_ = false;
    return failed;
  }

  // ProfilerStep#N: opened after the transition into step N, closed before the next one, so
  // a window holds exactly its own steps. It goes to the stepping thread's steps track.
  void open_step() {
    step_begin_ = 0;
    if (!recording_) return;
    window_.last = step_num_;
    if (!marks_steps()) return;
    step_site_ = recording_data_.step_sites->make(layer::framework, record_kind::scope,
                                                  "ProfilerStep#" + std::to_string(step_num_));
    step_begin_ = clock::now();
  }

  bool marks_steps() const noexcept {
    return config_.schedule.enabled() && config_.layers.contains(layer::framework);
  }

  // On the steps track of `of`: the calling thread's when null (step(): the thread that steps
  // ends its step), else the thread whose step() began it (stop(), which may run on another
  // thread: an on-demand capture ended at exit, a session stopped by an admin thread).
  void close_step(std::shared_ptr<track_identity> of = nullptr) {
    if (step_begin_ != 0 && recording_)
      detail::registry::instance().append_step(step_site_, step_begin_, clock::now(), std::move(of));
    step_begin_ = 0;
  }

  profiler& owner_;
  profiler_config config_;
  core_set cores_;
  trace_data recording_data_;  // the facts of the window being recorded (its records come at its end)
  // The last collected window; replaced by settle() (from const accessors) when the background
  // writer has ordered a newer one.
  std::shared_ptr<trace_data> data_ = std::make_shared<trace_data>();
  detail::window_writer writer_;
  step_window window_;
  std::int64_t step_num_ = 0;
  profiler_action action_ = profiler_action::none;
  const site* step_site_ = nullptr;
  std::uint64_t step_begin_ = 0;
  std::shared_ptr<track_identity> stepping_thread_;  // the last to call step(), if steps are marked
  bool started_ = false;    // between start() and stop()
  bool recording_ = false;  // a registry session runs
  bool in_handler_ = false;
  // Set by on-demand capture (detail::profiler_access) before start(): takes each ended window,
  // unordered, instead of on_trace_ready or the window writer.
  std::function<void(std::shared_ptr<trace_data>)> window_sink_;
};

namespace detail {

/// What on-demand capture (impl/ondemand.hpp) needs of a profiler beyond its public interface.
struct profiler_access {
  /// Before `start()`: every window that ends is handed to `sink` (records taken, not yet
  /// ordered), on the thread that ends it, instead of being collected into `data()`.
  static void set_window_sink(profiler& p, std::function<void(std::shared_ptr<trace_data>)> sink) {
    std::lock_guard lock(session_control_mutex());
    p.session_->window_sink_ = std::move(sink);
  }
};

}  // namespace detail


profiler::profiler(profiler_config config) {
  detail::install_cold_path();
  session_ = new session(*this, std::move(config));
}

profiler::~profiler() {
  std::lock_guard lock(detail::session_control_mutex());
  delete session_;  // stops a running session first (see ~session)
}

void profiler::start() {
  std::lock_guard lock(detail::session_control_mutex());
  session_->start();
}
void profiler::step() {
  std::lock_guard lock(detail::session_control_mutex());
  session_->step();
}
void profiler::stop() {
  std::lock_guard lock(detail::session_control_mutex());
  session_->stop();
}
bool profiler::running() const noexcept { return session_->running(); }
bool profiler::recording() const noexcept { return session_->recording(); }
std::int64_t profiler::step_num() const noexcept { return session_->step_num(); }
profiler_action profiler::current_action() const noexcept { return session_->current_action(); }
step_window profiler::window() const noexcept { return session_->window(); }
export_result profiler::export_chrome_trace(const std::string& path) {
  return session_->export_chrome_trace(path);
}
export_result profiler::export_perfetto_trace(const std::string& path) {
  return session_->export_perfetto_trace(path);
}
averages profiler::key_averages(key_averages_options options) {
  return session_->key_averages(std::move(options));
}
export_result profiler::export_stacks(const std::string& path, const std::string& metric) {
  return session_->export_stacks(path, metric);
}
export_result profiler::export_memory_timeline(const std::string& path) {
  return session_->export_memory_timeline(path);
}
export_result profiler::export_html(const std::string& path, const std::string& label) {
  return session_->export_html(path, label);
}
export_result profiler::export_window_trace() { return session_->export_window_trace(); }
const std::vector<std::string>& profiler::trace_files() {
  return session_->trace_files();
}
profiler_stats profiler::stats() { return session_->stats(); }
export_result profiler::snapshot(const std::string& path) { return session_->snapshot(path); }
const trace_data& profiler::data() { return session_->data(); }
const profiler_config& profiler::config() const noexcept { return session_->config(); }
const core_set& profiler::capture_cores() const noexcept { return session_->capture_cores(); }

std::string worker_trace_name(std::string worker, const distributed_info& rank, std::int64_t time_ns,
                              bool use_gzip) {
  if (worker.empty()) {
    if (rank.known()) {
      worker = "rank" + std::to_string(rank.rank);
    } else {
      char host[256] = {};
      if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "localhost");
      worker = std::string(host) + "_" + std::to_string(detail::atomic_file::process_id());
    }
  }
  for (char& c : worker)
    if (c == '/' || c == '\0') c = '_';  // a worker name is one file name, never a path
  return worker + "." + std::to_string(time_ns) + (use_gzip ? ".pt.trace.json.gz" : ".pt.trace.json");
}

trace_handler tensorboard_trace_handler(std::string dir, std::string worker, bool use_gzip) {
  if (dir.empty()) throw error("tensorboard_trace_handler: the directory is empty; name one, such as \"log\"");
  return [dir = std::move(dir), worker = std::move(worker), use_gzip](profiler& p) {
    detail::check_output_dir(dir);
    const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
    const std::string name = worker_trace_name(worker, p.config().distributed, now, use_gzip);
    p.export_chrome_trace((std::filesystem::path(dir) / name).string());
  };
}

namespace detail {

// STRATA_STEP(): the active profiler's step(), if one is started. A step that fails (an
// exception from on_trace_ready, say) cannot be reported from a noexcept macro: it is named on
// stderr.
void step_active_profiler() noexcept {
  try {
    std::lock_guard lock(session_control_mutex());
    if (profiler* p = active_profiler.load()) p->step();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: STRATA_STEP(): %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "strata: STRATA_STEP(): an unknown exception\n");
  }
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
