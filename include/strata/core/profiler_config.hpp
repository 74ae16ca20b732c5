// strata/core/profiler_config.hpp: what a profiler captures and where it writes.
#pragma once

#include <cstddef>
#include <string>

#include "strata/core/interval.hpp"
#include "strata/core/layer.hpp"
#include "strata/core/overflow_policy.hpp"
#include "strata/core/schedule.hpp"
#include "strata/core/trace_handler.hpp"

namespace strata {
inline namespace v1 {

class profiler;

/// Configuration of a `strata::profiler`; checked by its constructor, which raises
/// `strata::error` naming the field to change.
///
/// **Example**
/// ```cpp
/// strata::profiler prof({.output_dir = "out", .layers = {strata::layer::framework},
///                        .buffer_capacity = 1 << 20});
/// ```
struct profiler_config {
  /// Where traces go; created if missing, and must be writable. (A string, not a
  /// std::filesystem::path, so that the profiler's header stays light; a path converts to it.)
  std::string output_dir = "strata-out";
  /// The captured layers (torch.profiler's activities). A scope of another layer costs one
  /// branch.
  layer_set layers = layer_set::all();
  /// Records per thread per session: a power of two. 32 bytes each.
  std::size_t buffer_capacity = std::size_t{1} << 16;
  /// What a full thread buffer does with the next record.
  overflow_policy overflow = overflow_policy::drop_newest;
  /// How often a background thread moves records out of every thread's buffer while a session
  /// records; 0 (the default): only stop() and stats() do. With it, a buffer only has to hold
  /// what its thread records in one interval, so long sessions lose nothing (see
  /// `max_session_records` for the memory this then takes). Must not be negative.
  interval drain_interval{};
  /// The most records of threads a session keeps once drained out of the buffers; 0 (the
  /// default): unlimited. Memory is then bounded by `buffer_capacity` x threads + this, 32
  /// bytes a record; records past it are dropped (the newest) and counted as lost.
  std::size_t max_session_records = 0;
  /// The process name shown in traces; empty: the program's name.
  std::string process_name = {};
  // The device-side settings below (capture_cores, correlate_device_time, record_shapes,
  // max_events_per_core) are checked and kept now; the simulated device and key_averages read
  // them (`profiler::capture_cores()` gives the parsed core set).

  /// The (simulated) NeuronCores captured, as Neuron's `capture_enabled_for_nc`: `"all"`, one
  /// index `"0"`, or a list with ranges `"0,1,2-5"` (see `core_set::parse`). A malformed value
  /// makes the constructor raise `strata::error` quoting the bad entry.
  std::string capture_cores = "all";
  /// Attribute device time to the framework op that caused it, through correlation ids
  /// (NeuronConfig's `correlate_device_time`).
  bool correlate_device_time = true;
  /// Record the arguments (input shapes and small values) of scopes that carry them
  /// (strata/args/op_args.hpp): they appear in the trace's `args` and drive key_averages'
  /// `group_by_input_shape`. Off, such a scope costs what a plain scope costs.
  bool record_shapes = false;
  /// The most device records kept per core and session; 0: unlimited.
  std::size_t max_events_per_core = 0;
  /// Which `profiler::step()`s are recorded (torch.profiler.schedule). The default (`active`
  /// 0) records everything from `start()` to `stop()`.
  ::strata::schedule schedule = {};
  /// Called with the profiler at the end of each recorded window, once its trace is collected
  /// (torch.profiler's `on_trace_ready`): in the `step()` that leaves a `record_and_save`
  /// step, and in `stop()` when it ends a window. Unset with a schedule: the window's trace is
  /// written to a file of its own (`profiler::export_window_trace()`). Unset without one:
  /// nothing is called.
  trace_handler on_trace_ready = {};
};

/// The largest accepted `buffer_capacity`: 2^26 records, 2 GiB per thread.
inline constexpr std::size_t max_buffer_capacity = std::size_t{1} << 26;

}  // namespace v1
}  // namespace strata
