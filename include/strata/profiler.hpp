// strata/profiler.hpp: the session front end: configure, start, stop, export.
//
//   STRATA_* macros ──▶ per-thread ring buffers ──▶ profiler::stop() collects ──▶ trace_data
//                                                         │
//                                   export_chrome_trace() ◀┘ (export/chrome_trace.hpp)
#pragma once

#include <atomic>
#include <bit>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "strata/core/clock.hpp"
#include "strata/core/error.hpp"
#include "strata/core/profiler_config.hpp"
#include "strata/core/session.hpp"
#include "strata/core/thread_registry.hpp"
#include "strata/export/atomic_file.hpp"
#include "strata/export/chrome_trace.hpp"

namespace strata {
inline namespace v1 {

/// Totals of a session, like the footer of torch.profiler's table.
struct profiler_stats {
  std::uint64_t recorded = 0;  ///< records captured (collected or waiting in buffers)
  std::uint64_t dropped = 0;   ///< records lost to full buffers (dropped or overwritten)
  std::uint64_t threads = 0;   ///< threads that recorded at least once
};

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
inline constinit std::atomic<const void*> active_profiler{nullptr};

}  // namespace detail

/// A profiling session over the whole process: every thread's STRATA_* records between
/// `start()` and `stop()`. One profiler records at a time.
///
/// **Example**
/// ```cpp
/// strata::profiler prof({.output_dir = "strata-out"});
/// prof.start();
/// run_model();
/// prof.stop();
/// auto written = prof.export_chrome_trace();  // strata-out/trace.json
/// ```
class profiler {
 public:
  /// Checks `config`; raises `strata::error` naming the field to change.
  explicit profiler(profiler_config config = {}) : config_(std::move(config)) {
    // The limit comes first: std::bit_ceil of a value above 2^63 (a wrapped -1, say) is undefined.
    if (config_.buffer_capacity > max_buffer_capacity)
      throw error("profiler_config::buffer_capacity " + std::to_string(config_.buffer_capacity) +
                  " exceeds the limit of " + std::to_string(max_buffer_capacity) +
                  " records per thread; lower it");
    if (!detail::is_power_of_two(config_.buffer_capacity) || config_.buffer_capacity < 2)
      throw error("profiler_config::buffer_capacity must be a power of two of at least 2 "
                  "records per thread; got " + std::to_string(config_.buffer_capacity) +
                  (config_.buffer_capacity > 2 ? " (try " + std::to_string(std::bit_ceil(config_.buffer_capacity)) + ")" : ""));
    if (config_.layers.empty())
      throw error("profiler_config::layers is empty, so nothing would be recorded; "
                  "capture at least one layer");
    detail::check_output_dir(config_.output_dir);
    if (config_.process_name.empty()) config_.process_name = detail::program_name();
    clock::select_once();
  }

  profiler(const profiler&) = delete;
  profiler& operator=(const profiler&) = delete;

  ~profiler() {
    if (running_) {
      try {
        stop();
      } catch (...) {
        // stop() only throws on allocation failure while collecting; nothing more to do here.
      }
    }
  }

  /// Starts recording. Raises `strata::error` if another profiler is recording or the output
  /// directory is no longer writable. Records of an earlier session of this profiler are
  /// discarded.
  void start() {
    if (running_) throw error("profiler::start() called twice; call stop() first");
    detail::check_output_dir(config_.output_dir);
    const void* expected = nullptr;
    if (!detail::active_profiler.compare_exchange_strong(expected, this))
      throw error("another strata::profiler is recording; stop it before starting this one");
    data_ = trace_data{};
    data_.pid = static_cast<std::uint64_t>(atomic_file::process_id());
    data_.process_name = config_.process_name;
    data_.layers = config_.layers;
    data_.buffer_capacity = config_.buffer_capacity;
    data_.overflow = config_.overflow;
    data_.clock = clock_calibration::begin();
    data_.start_ticks = clock::now();
    running_ = true;
    detail::registry::instance().begin_session(config_.layers, config_.buffer_capacity,
                                               config_.overflow);
  }

  /// Stops recording and collects every thread's records, those of exited threads included.
  /// A scope still open at this point is not recorded (as in torch.profiler).
  void stop() {
    if (!running_) return;
    auto& reg = detail::registry::instance();
    reg.end_session();
    data_.stop_ticks = clock::now();
    running_ = false;
    detail::collect_session(data_);
    data_.clock.finish();
    detail::active_profiler.store(nullptr);
  }

  bool running() const noexcept { return running_; }

  /// Writes the stopped session as Chrome trace JSON to `path` (default:
  /// `output_dir/trace.json`), atomically. Returns what was written.
  export_result export_chrome_trace(std::filesystem::path path = {}) const {
    if (running_) throw error("profiler::export_chrome_trace() needs a stopped session; call stop() first");
    if (path.empty()) path = config_.output_dir / "trace.json";
    return write_chrome_trace(data_, path);
  }

  /// Totals: while running, what the buffers hold so far; after stop, the session's.
  profiler_stats stats() const {
    profiler_stats s;
    if (running_) {
      detail::registry::instance().for_each_buffer(
          [&](detail::thread_buffer& b, const detail::thread_info&) {
            s.recorded += b.drained.size();
            s.dropped += b.lost;
            ++s.threads;
          });
      return s;
    }
    s.recorded = data_.recorded();
    s.dropped = data_.lost();
    s.threads = data_.threads.size();
    return s;
  }

  /// What the last stopped session captured.
  const trace_data& data() const noexcept { return data_; }
  const profiler_config& config() const noexcept { return config_; }

 private:
  profiler_config config_;
  trace_data data_;
  bool running_ = false;
};

}  // namespace v1
}  // namespace strata
