// strata/impl/profiler.hpp: the profiler's definitions. Part of strata's implementation
// (strata/implementation.hpp), compiled in the one file that defines STRATA_IMPLEMENTATION.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "strata/analysis/key_averages.hpp"
#include "strata/core/capture_cores.hpp"
#include "strata/core/clock.hpp"
#include "strata/core/error.hpp"
#include "strata/core/intern.hpp"
#include "strata/core/profiler_config.hpp"
#include "strata/core/schedule.hpp"
#include "strata/core/schedule_check.hpp"
#include "strata/core/scope.hpp"
#include "strata/core/session.hpp"
#include "strata/core/thread_registry.hpp"
#include "strata/export/atomic_file.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/export/perfetto_trace.hpp"
#include "strata/impl/cold_path.hpp"
#include "strata/profiler.hpp"

namespace strata {
inline namespace v1 {

namespace detail {

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
      dir / (".strata-write-check." + std::to_string(atomic_file::process_id()));
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  if (f == nullptr)
    throw error("profiler_config::output_dir '" + dir.string() +
                "' is not writable; choose a writable directory");
  std::fclose(f);
  std::filesystem::remove(probe, ec);
}

// The one profiler that may record at a time, like torch.profiler's single active session.
inline constinit std::atomic<profiler*> active_profiler{nullptr};

// Serialises start(), step() and stop() of the active profiler with STRATA_STEP() calls from
// other threads. Recursive, so that a call from on_trace_ready (on the thread that holds it)
// reaches no_reentry() and its clear error instead of a deadlock.
inline std::recursive_mutex& session_control_mutex() {
  static std::recursive_mutex* m = new std::recursive_mutex;  // never destroyed: used at exit
  return *m;
}

}  // namespace detail

struct profiler::session {
  session(profiler& owner, profiler_config config) : owner_(owner), config_(std::move(config)) {
    // The limit comes first: std::bit_ceil of a value above 2^63 (a wrapped -1, say) is undefined.
    if (config_.buffer_capacity > max_buffer_capacity)
      throw error("profiler_config::buffer_capacity " + std::to_string(config_.buffer_capacity) +
                  " exceeds the limit of " + std::to_string(max_buffer_capacity) +
                  " records per thread; lower it");
    if (!detail::is_power_of_two(config_.buffer_capacity) || config_.buffer_capacity < 2)
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
    clock::select_once();
  }

  ~session() {
    if (started_) {
      try {
        stop();
      } catch (...) {
        // stop() throws on allocation failure while collecting, or what on_trace_ready
        // throws; a destructor has nowhere to report either.
      }
    }
  }

  /// Starts the session at step 0 (recording at once without a schedule). Raises
  /// `strata::error` if another profiler is running or the output directory is no longer
  /// writable. Records and trace files of an earlier session of this profiler are forgotten
  /// (the files stay on disk).
  void start() {
    if (started_) throw error("profiler::start() called twice; call stop() first");
    no_reentry("start");
    detail::check_output_dir(config_.output_dir);
    profiler* expected = nullptr;
    if (!detail::active_profiler.compare_exchange_strong(expected, &owner_))
      throw error("another strata::profiler is recording; stop it before starting this one");
    started_ = true;
    __atomic_store_n(&detail::profiler_started, 1u, __ATOMIC_RELAXED);
    data_ = trace_data{};
    trace_files_.clear();
    window_ = {};
    step_num_ = 0;
    action_ = action_at(config_.schedule, 0);
    std::exception_ptr failed = transition(profiler_action::none, action_, false);
    open_step();
    if (failed) std::rethrow_exception(failed);
  }

  /// Ends the current step and enters the next (torch.profiler's `profile.step()`). With a
  /// schedule this may end a window (collecting it and calling `on_trace_ready`) and start
  /// another. Without one it only counts. Call it from one thread; an exception thrown by
  /// `on_trace_ready` is passed on once the profiler is in the new step. Does nothing when
  /// the profiler is not started.
  void step() {
    if (!started_) return;
    no_reentry("step");
    close_step();
    const profiler_action prev = action_;
    ++step_num_;
    action_ = action_at(config_.schedule, step_num_);
    std::exception_ptr failed = transition(prev, action_, false);
    open_step();
    if (failed) std::rethrow_exception(failed);
  }

  /// Stops the session and collects every thread's records of the open window (exited
  /// threads included), then calls `on_trace_ready` if a window was recording. A scope still
  /// open at this point is not recorded (as in torch.profiler).
  void stop() {
    if (!started_) return;
    no_reentry("stop");
    close_step();
    std::exception_ptr failed = transition(action_, profiler_action::none, true);
    if (failed) std::rethrow_exception(failed);
  }

  /// Whether the profiler is between `start()` and `stop()` (with a schedule, also during
  /// steps that do not record).
  bool running() const noexcept { return started_; }
  /// Whether records are being taken now: a session runs and the step records.
  bool recording() const noexcept { return recording_; }
  /// The current step: 0 after `start()`, one more after each `step()`.
  std::int64_t step_num() const noexcept { return step_num_; }
  /// The action of the current step.
  profiler_action current_action() const noexcept { return action_; }
  /// The first and last steps of the last collected window (or of the one recording now).
  step_window window() const noexcept { return window_; }

  /// Writes the last collected window as Chrome trace JSON to `path` (default:
  /// `output_dir/trace.json`), atomically. Returns what was written. Raises `strata::error`
  /// while a window is recording.
  export_result export_perfetto_trace(const std::string& path) const {
    if (recording_) throw error("profiler::export_perfetto_trace() needs a stopped session; call stop() first");
    return write_perfetto_trace(
        data_, path.empty() ? std::filesystem::path(config_.output_dir) / "trace.pftrace"
                            : std::filesystem::path(path));
  }

  export_result export_chrome_trace(const std::string& path) const {
    if (recording_) throw error("profiler::export_chrome_trace() needs a stopped session; call stop() first");
    return write_chrome_trace(
        data_, path.empty() ? std::filesystem::path(config_.output_dir) / "trace.json"
                            : std::filesystem::path(path));
  }

  /// torch.profiler's `prof.key_averages()`: per-op totals of the last collected window, as a
  /// table object (`table()`, `to_csv()`, `to_json()`). Device time is attributed through
  /// correlation ids unless `profiler_config::correlate_device_time` is off. Raises
  /// `strata::error` while a window is recording.
  ///
  /// **Example**
  /// ```cpp
  /// std::puts(prof.key_averages().table({.sort_by = "self_cpu_time_total", .row_limit = 10}).c_str());
  /// ```
  averages key_averages(key_averages_options options = {}) const {
    if (recording_) throw error("profiler::key_averages() needs a stopped session; call stop() first");
    if (!config_.correlate_device_time) options.correlate_device_time = false;
    return strata::key_averages(data_, options);
  }

  /// Writes the last collected window to a file of its own,
  /// `output_dir/trace_step<first>-<last>.json` (its first and last steps; `trace_step0-0`
  /// for a session without a schedule and without `step()` calls), adding `.1`, `.2`, …
  /// before `.json` while the name exists, so an earlier file is never overwritten. This is
  /// the default `on_trace_ready` with a schedule. The path is added to `trace_files()`.
  export_result export_window_trace() {
    if (recording_) throw error("profiler::export_window_trace() needs a collected window; call it from on_trace_ready or after stop()");
    const std::string stem =
        "trace_step" + std::to_string(window_.first) + "-" + std::to_string(window_.last);
    const std::filesystem::path dir(config_.output_dir);
    std::filesystem::path path = dir / (stem + ".json");
    for (int n = 1; std::filesystem::exists(path); ++n)
      path = dir / (stem + "." + std::to_string(n) + ".json");
    export_result r = write_chrome_trace(data_, path);
    trace_files_.push_back(r.path);
    return r;
  }

  /// The files `export_window_trace()` wrote since `start()`, oldest first.
  const std::vector<std::string>& trace_files() const noexcept { return trace_files_; }

  /// Totals: while recording, what the buffers hold so far; otherwise the last window's.
  profiler_stats stats() const {
    profiler_stats s;
    if (recording_) {
      auto& reg = detail::registry::instance();
      reg.for_each_buffer([&](detail::thread_buffer& b, const detail::thread_info&) {
        s.recorded += b.recorded();
        s.dropped += b.lost_so_far();
        ++s.threads;
      });
      if (auto store = reg.store()) {
        const detail::block_store_stats m = store->stats();
        s.spilled = m.spilled_records;
        s.spill_bytes = m.spill_bytes;
        s.peak_memory = m.peak_bytes;
        s.memory_waits = m.waits;
        s.spill_error = m.spill_error;
      }
      return s;
    }
    s.recorded = data_.recorded();
    s.dropped = data_.lost();
    s.threads = data_.threads.size();
    s.spilled = data_.spilled;
    s.spill_bytes = data_.spill_bytes;
    s.peak_memory = data_.peak_memory;
    s.memory_waits = data_.memory_waits;
    s.spill_error = data_.spill_error;
    return s;
  }

  /// What the last collected window (the whole session without a schedule) captured.
  const trace_data& data() const noexcept { return data_; }
  const profiler_config& config() const noexcept { return config_; }
  /// The cores of `config().capture_cores`.
  const core_set& capture_cores() const noexcept { return cores_; }

  void no_reentry(const char* what) const {
    if (in_handler_)
      throw error(std::string("profiler::") + what + "() called from on_trace_ready; "
                  "the handler may only read the profiler and export its trace");
  }

  // torch.profiler's transition table, with nothing to prepare in warmup. `exiting`: the
  // transition of stop() (`next` is then ignored). Returns what on_trace_ready threw, so the
  // caller finishes its own bookkeeping first.
  std::exception_ptr transition(profiler_action prev, profiler_action next, bool exiting) {
    const bool next_records = !exiting && is_recording(next);
    bool ready = false;
    if (prev == profiler_action::record_and_save) {
      end_window();
      ready = true;
    } else if (prev == profiler_action::record && !next_records) {
      end_window();
      ready = exiting;  // RECORD -> NONE/WARMUP discards the window, as torch does
    }
    if (exiting) {
      started_ = false;
      __atomic_store_n(&detail::profiler_started, 0u, __ATOMIC_RELAXED);
      detail::active_profiler.store(nullptr);
    }
    std::exception_ptr failed;
    if (ready) failed = trace_ready();
    if (next_records && !recording_) begin_window();
    return failed;
  }

  void begin_window() {
    data_ = trace_data{};
    data_.pid = static_cast<std::uint64_t>(atomic_file::process_id());
    data_.process_name = config_.process_name;
    data_.layers = config_.layers;
    data_.buffer_capacity = config_.buffer_capacity;
    data_.overflow = config_.overflow;
    if (config_.overflow == overflow_policy::drop_newest) data_.memory_limit = config_.memory_limit;
    data_.clock = clock_calibration::begin();
    data_.start_ticks = clock::now();
    window_ = {step_num_, step_num_};
    recording_ = true;
    detail::registry::instance().begin_session({.layers = config_.layers,
                                                .buffer_capacity = config_.buffer_capacity,
                                                .overflow = config_.overflow,
                                                .record_args = config_.record_shapes,
                                                .cores = cores_,
                                                .max_events_per_core = config_.max_events_per_core,
                                                .blocks = {.memory_limit = config_.memory_limit,
                                                           .spill = config_.spill,
                                                           .spill_dir = config_.output_dir,
                                                           .pid = data_.pid}});
  }

  void end_window() {
    auto& reg = detail::registry::instance();
    reg.end_session();
    data_.stop_ticks = clock::now();
    recording_ = false;
    detail::collect_session(data_);
    data_.clock.finish();
  }

  std::exception_ptr trace_ready() {
    const bool use_default = !config_.on_trace_ready && config_.schedule.enabled();
    if (!config_.on_trace_ready && !use_default) return nullptr;
    in_handler_ = true;
    std::exception_ptr failed;
    try {
      if (use_default)
        export_window_trace();
      else
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
    if (!config_.schedule.enabled() || !config_.layers.contains(layer::framework)) return;
    step_site_ = intern(layer::framework, "ProfilerStep#" + std::to_string(step_num_));
    step_begin_ = clock::now();
  }

  void close_step() {
    if (step_begin_ != 0 && recording_)
      detail::registry::instance().append_step(step_site_, step_begin_, clock::now());
    step_begin_ = 0;
  }

  profiler& owner_;
  profiler_config config_;
  core_set cores_;
  trace_data data_;
  std::vector<std::string> trace_files_;
  step_window window_;
  std::int64_t step_num_ = 0;
  profiler_action action_ = profiler_action::none;
  const site* step_site_ = nullptr;
  std::uint64_t step_begin_ = 0;
  bool started_ = false;    // between start() and stop()
  bool recording_ = false;  // a registry session runs
  bool in_handler_ = false;
};


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
export_result profiler::export_chrome_trace(const std::string& path) const {
  return session_->export_chrome_trace(path);
}
export_result profiler::export_perfetto_trace(const std::string& path) const {
  return session_->export_perfetto_trace(path);
}
averages profiler::key_averages(key_averages_options options) const {
  return session_->key_averages(std::move(options));
}
export_result profiler::export_window_trace() { return session_->export_window_trace(); }
const std::vector<std::string>& profiler::trace_files() const noexcept {
  return session_->trace_files();
}
profiler_stats profiler::stats() const { return session_->stats(); }
const trace_data& profiler::data() const noexcept { return session_->data(); }
const profiler_config& profiler::config() const noexcept { return session_->config(); }
const core_set& profiler::capture_cores() const noexcept { return session_->capture_cores(); }

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
