// strata/profiler.hpp: the session front end: configure, start, stop, export, tables.
//
//   STRATA_* macros ──▶ per-thread buffers ──▶ profiler::stop() collects ──▶ trace_data
//                                                     │
//          export_chrome_trace(), key_averages() ◀────┘
//
// Include it in the file that runs a session. It only declares: the definitions are compiled
// once per program, in the one C++ file that defines STRATA_IMPLEMENTATION before including
// this header (or <strata/strata.h>); that file may be this one:
//
//   #define STRATA_IMPLEMENTATION
//   #include <strata/profiler.hpp>
//
// Built with STRATA_ENABLED=0, that implementation is a profiler that records nothing and
// says so once on stderr.
#pragma once

// The file that compiles strata's implementation stops here below C++20, before the headers
// below report their first C++20 construct.
#if defined(STRATA_IMPLEMENTATION) && defined(__cplusplus) && __cplusplus < 202002L
#error "strata's implementation needs C++20 (-std=c++20)"
#else

#include <cstdint>
#include <string>
#include <vector>

#include "strata/analysis/averages.hpp"
#include "strata/config.hpp"
#include "strata/export/trace_format.hpp"
#include "strata/profiler_config.hpp"
#include "strata/schedule.hpp"
// The macros, as strata/strata.hpp gives them; not strata.hpp itself, which would compile the
// implementation (STRATA_IMPLEMENTATION) before this header's declarations are complete.
#include "strata/macros.hpp"
#include "strata/detail/link_check.h"

namespace strata {
inline namespace v1 {

class core_set;
struct trace_data;
namespace detail {
struct profiler_access;
}

/// Totals of a session, like the footer of torch.profiler's table.
struct profiler_stats {
  std::uint64_t recorded = 0;  ///< records captured (collected or waiting in buffers)
  std::uint64_t dropped = 0;   ///< records lost to full buffers (dropped or overwritten)
  /// Threads of the program that recorded at least once (device and steps tracks are not
  /// threads: see `tracks`).
  std::uint64_t threads = 0;
  /// Every track of the trace: the threads, a steps track per thread that called `step()`
  /// under a schedule, and one track per engine or DMA queue of each captured device core.
  std::uint64_t tracks = 0;
  /// A lossless session's memory: its limit, records that went through the spill file, the
  /// most bytes of blocks held at once, times a thread waited for the spill writer at the
  /// limit, and why spilling stopped (a failed write: disk full, directory removed), if it did.
  session_memory memory;
  /// strata's implementation was compiled with STRATA_ENABLED=0: nothing is ever recorded.
  bool compiled_out = false;
};

/// The steps of one recorded window of a schedule, both included (-1: none yet).
struct step_window {
  std::int64_t first = -1;
  std::int64_t last = -1;
};

/// A profiling session over the whole process: every thread's STRATA_* records between
/// `start()` and `stop()`. One profiler records at a time.
///
/// With a `schedule` in the config, `start()` enters step 0 and each `step()` enters the
/// next one; only the steps whose `action_at` is `record` or `record_and_save` are recorded,
/// each as a `ProfilerStep#N` scope (framework layer) on the *steps track* of the thread that
/// calls `step()` (a track of its own beside the thread's, so that a scope left open across
/// `step()` never partly overlaps a step; docs/trace-format.md), with the records of every
/// thread made during it. A window of consecutive recorded steps ends in the `step()` that
/// leaves its `record_and_save` step, or in `stop()` (a partial window).
///
/// With `on_trace_ready` set, the window is then collected into `data()` and the handler runs,
/// in that `step()` or `stop()`, on the calling thread (torch.profiler's contract): the step
/// lasts as long as the collection and the handler. Without a handler, the window's trace is
/// written to `output_dir/trace_step<first>-<last>.json` (`.1.json`, `.2.json`, … if that name
/// exists, so no window overwrites an earlier file) by a thread the profiler owns: the step
/// that ends the window only copies its records out of the threads' buffers, and the file is
/// sorted and written while the loop goes on. `stop()` and the destructor wait for those
/// writes, `trace_files()` lists the files in window order, and a window that cannot be written
/// (a full disk, a removed directory) raises its `strata::error` from the next `step()` or from
/// `stop()`. A window that stops in warmup delivers nothing.
///
/// Without a schedule, everything from `start()` to `stop()` is one window, `step()` only
/// counts steps, no `ProfilerStep#N` is recorded, and `on_trace_ready` (if set) runs in
/// `stop()`.
///
/// **Example**
/// ```cpp
/// strata::profiler prof({.output_dir = "strata-out"});
/// prof.start();
/// run_model();
/// prof.stop();
/// auto written = prof.export_chrome_trace();  // strata-out/trace.json
///
/// strata::profiler stepped({.output_dir = "strata-out",
///                           .schedule = {.wait = 1, .warmup = 1, .active = 2, .repeat = 1}});
/// stepped.start();
/// for (int i = 0; i < 6; ++i) { run_model(); stepped.step(); }
/// stepped.stop();  // strata-out/trace_step2-3.json, listed in stepped.trace_files()
/// ```
class profiler {
 public:
  /// Checks `config`; raises `strata::error` naming the field to change.
  explicit profiler(profiler_config config = {});
  /// Stops a running session as `stop()` does, waiting for window traces still being written;
  /// what `stop()` would raise is named on stderr instead.
  ~profiler();
  profiler(const profiler&) = delete;
  profiler& operator=(const profiler&) = delete;

  /// Starts the session at step 0 (recording at once without a schedule). Raises
  /// `strata::error` if another profiler is running or the output directory is no longer
  /// writable. Records and trace files of an earlier session of this profiler are forgotten
  /// (the files stay on disk).
  void start();

  /// Ends the current step and enters the next (torch.profiler's `profile.step()`; also what
  /// `STRATA_STEP()` calls). With a schedule this may end a window (collecting it and calling
  /// `on_trace_ready`, or handing it to the window writer) and start another. Without one it
  /// only counts. Call it from one thread at a time; an exception thrown by `on_trace_ready` is
  /// passed on once the profiler is in the new step, and so is the error of an earlier window
  /// the writer could not write (each error once). Does nothing when the profiler is not
  /// started.
  void step();

  /// Stops the session and collects every thread's records of the open window (exited
  /// threads included), then calls `on_trace_ready` if a window was recording (or writes its
  /// file). Waits for every window trace still being written; raises the first error not
  /// raised yet (any other is named on stderr). A scope still open at this point is not
  /// recorded (as in torch.profiler).
  void stop();

  /// Whether the profiler is between `start()` and `stop()` (with a schedule, also during
  /// steps that do not record).
  bool running() const noexcept;
  /// Whether records are being taken now: a session runs and the step records.
  bool recording() const noexcept;
  /// The current step: 0 after `start()`, one more after each `step()`.
  std::int64_t step_num() const noexcept;
  /// The action of the current step.
  profiler_action current_action() const noexcept;
  /// The first and last steps of the last collected window (or of the one recording now).
  step_window window() const noexcept;

  /// Writes the last collected window as Chrome trace JSON to `path` (default:
  /// `output_dir/trace.json`), atomically: a name ending in `.json`, or `.json.gz` to write it
  /// gzip-compressed (strata/export/trace_format.hpp: a `.pftrace` name is refused, it names
  /// `export_perfetto_trace()`'s format). Waits for a window still being written in the
  /// background. Returns what was written. Raises `strata::error` while a window is recording.
  export_result export_chrome_trace(const std::string& path = {});

  /// Writes the last collected window in Perfetto's native protobuf format to `path` (default:
  /// `output_dir/trace.pftrace`), atomically; about a sixth of the JSON trace's bytes, for big
  /// traces and trace_processor (docs/trace-format.md). The name ends in `.pftrace`, or in
  /// `.pftrace.gz` to write it gzip-compressed. Raises `strata::error` while a window is
  /// recording.
  export_result export_perfetto_trace(const std::string& path = {});

  /// torch.profiler's `prof.key_averages()`: per-op totals of the last collected window, as a
  /// table object (`table()`, `to_csv()`, `to_json()`). Device time is attributed through
  /// correlation ids unless `profiler_config::correlate_device_time` is off. Raises
  /// `strata::error` while a window is recording.
  ///
  /// **Example**
  /// ```cpp
  /// std::puts(prof.key_averages().table({.sort_by = "self_cpu_time_total", .row_limit = 10}).c_str());
  /// ```
  averages key_averages(key_averages_options options = {});

  /// torch.profiler's `prof.export_stacks(path, metric)`: the last collected window as
  /// collapsed stacks for flame graphs (flamegraph.pl, speedscope), one line `outer;inner;leaf
  /// <µs>` per distinct nesting path, written atomically to `path`. `metric` is
  /// `self_cpu_time_total` or `self_device_time_total` (device kernels under the calls that
  /// launched them; `self_cuda_time_total` is the same); strata/analysis/stacks.hpp has the
  /// rules. Raises `strata::error` for another metric, a path that cannot be written (no file
  /// is left), or while a window is recording.
  ///
  /// **Example**
  /// ```cpp
  /// prof.export_stacks("strata-out/stacks.folded", "self_cpu_time_total");
  /// ```
  export_result export_stacks(const std::string& path, const std::string& metric = "self_cpu_time_total");

  /// torch.profiler's `export_memory_timeline`: the allocated and reserved bytes of each device
  /// after every memory event of the last collected window (`profiler_config::profile_memory`),
  /// to `path` (default: `output_dir/memory_timeline.json`), atomically: `.json` in torch's
  /// `[times, sizes]` shape or `.csv` with a header, and `<path>.peak.json` beside it with each
  /// device's peak, the op open at it, and the leaks (strata/analysis/memory.hpp). Raises
  /// `strata::error` for another name, a file that cannot be written, or while recording.
  export_result export_memory_timeline(const std::string& path = {});

  /// The last collected window as one self-contained HTML page (strata/export/html_report.hpp:
  /// summary with ranked recommendations, timeline overview, the key_averages table, the
  /// device's engines and memory), written atomically to `path` (default:
  /// `output_dir/report.html`). `label` names the run on the page (default: the process name).
  /// Raises `strata::error` for a path that cannot be written (no file is left) or while a
  /// window is recording.
  ///
  /// **Example**
  /// ```cpp
  /// prof.export_html("strata-out/report.html");
  /// ```
  export_result export_html(const std::string& path = {}, const std::string& label = {});

  /// Writes the last collected window to a file of its own,
  /// `output_dir/trace_step<first>-<last>.json` (its first and last steps; `trace_step0-0`
  /// for a session without a schedule and without `step()` calls), adding `.1`, `.2`, …
  /// before `.json` while the name exists, so an earlier file is never overwritten. This is
  /// the default `on_trace_ready` with a schedule. The path is added to `trace_files()`.
  export_result export_window_trace();

  /// The window traces written since `start()` (by the default handler, or by
  /// `export_window_trace()`), oldest first; waits for windows still being written. The list
  /// stays as it is until the next `step()`, `stop()`, `start()` or `export_window_trace()`.
  const std::vector<std::string>& trace_files();

  /// Writes what the session holds now, without stopping it: while a window records, a copy of
  /// every thread's records so far (a flight recorder's newest records; a lossless session's
  /// blocks, spilled ones included), ordered and written as `export_chrome_trace` writes a
  /// collected window; recording threads go on meanwhile, and the window's own trace later
  /// still holds every record. Otherwise (stopped, or between windows of a schedule), the last
  /// collected window. The name picks the format (strata/export/trace_format.hpp): `.json` or
  /// `.pftrace`, `.gz` after either gzip-compressed; empty: `output_dir/snapshot-<pid>-<n>.json`, never
  /// overwriting a file (`.1`, `.2`, ... before `.json` while the name exists). While a window
  /// records it may be called from any thread; a `step()` or `stop()` at the same time waits
  /// for the copy (not for the file). Scopes still open are not in it, nor is the step in
  /// progress. Raises `strata::error` if the file cannot be written.
  ///
  /// **Example**
  /// ```cpp
  /// auto written = prof.snapshot();  // strata-out/snapshot-<pid>-1.json; prof keeps recording
  /// ```
  export_result snapshot(const std::string& path = {});

  /// Totals: while recording, what the buffers hold so far (read without changing what any
  /// buffer keeps); otherwise the last window's.
  profiler_stats stats();

  /// What the last collected window (the whole session without a schedule) captured
  /// (strata/trace_data.hpp defines it), once the window writer is done with it; while a
  /// window records, that window's facts so far (its records come when it ends). Records a
  /// lossless session spilled to disk are read back into memory by the first call (the
  /// profiler's own exports and `key_averages()` read them from the spill file instead, in
  /// bounded memory); if that fails, `memory.spill_error` says why and the tracks hold the rest.
  const trace_data& data();
  const profiler_config& config() const noexcept;
  /// The cores of `config().capture_cores` (strata/device.hpp defines core_set).
  const core_set& capture_cores() const noexcept;

 private:
  friend struct detail::profiler_access;  // on-demand capture (detail/impl/ondemand.hpp)
  struct session;
  session* session_;
};

/// torch.profiler's `tensorboard_trace_handler`: an `on_trace_ready` that writes each window
/// to `dir/<worker>.<time_ns>.pt.trace.json` (`.pt.trace.json.gz` with `use_gzip`), where
/// `time_ns` is the wall clock's nanoseconds when it is written and `worker` defaults to
/// `rank<R>` for a rank of a distributed job (`profiler_config::distributed`) and to
/// `<hostname>_<pid>` otherwise, as torch names it. `dir` is created if missing.
///
/// **Example**
/// ```cpp
/// strata::profiler prof({.schedule = {.wait = 1, .warmup = 1, .active = 2},
///                        .on_trace_ready = strata::tensorboard_trace_handler("log")});
/// ```
trace_handler tensorboard_trace_handler(std::string dir, std::string worker = {}, bool use_gzip = false);

/// The file name `tensorboard_trace_handler` writes for `worker` (empty: the default for
/// `rank`, a rank of a job or none) at wall-clock `time_ns`.
std::string worker_trace_name(std::string worker, const distributed_info& rank, std::int64_t time_ns,
                              bool use_gzip = false);

}  // namespace v1
}  // namespace strata

#if defined(STRATA_IMPLEMENTATION)
#include "strata/implementation.hpp"
#endif

#endif  // C++20 check
