// strata/profiler_config.hpp: what a profiler captures and where it writes: the config, what a
// full buffer does (overflow_policy), the handler of a finished window, and the figures of a
// lossless session's memory.
#pragma once

#include <cstddef>
#include <string>

#include "strata/distributed.hpp"
#include "strata/record.hpp"
#include "strata/schedule.hpp"

namespace strata {
inline namespace v1 {

class profiler;

/// What a full buffer does with the next record. Either way nothing blocks and every lost
/// record is counted.
enum class overflow_policy : std::uint8_t {
  lossless,         ///< keep every record: blocks past `memory_limit` spill to disk (default)
  flight_recorder,  ///< keep exactly each thread's newest `buffer_capacity` records
};

/// The policy's name, as traces (`otherData.overflow_policy`), tables and `STRATA_OVERFLOW` spell
/// it.
constexpr std::string_view overflow_policy_name(overflow_policy p) noexcept {
  return p == overflow_policy::lossless ? "lossless" : "flight_recorder";
}

/// The policy named `name`: its name, or the one strata used before (`drop_newest`,
/// `overwrite_oldest`), which traces written then carry. False for anything else.
constexpr bool overflow_policy_from_name(std::string_view name, overflow_policy& out) noexcept {
  if (name == "lossless" || name == "drop_newest") {
    out = overflow_policy::lossless;
    return true;
  }
  if (name == "flight_recorder" || name == "overwrite_oldest") {
    out = overflow_policy::flight_recorder;
    return true;
  }
  return false;
}

/// What a lossless session did with its memory (all 0 for a flight recorder): the one struct the
/// session's store reports, a collected session keeps (`trace_data::memory`) and
/// `profiler::stats()` returns.
struct session_memory {
  std::size_t limit = 0;          ///< `profiler_config::memory_limit`
  std::uint64_t spilled = 0;      ///< records that went through the spill file
  std::uint64_t spill_bytes = 0;  ///< the spill file's size
  std::uint64_t peak = 0;         ///< most bytes of record blocks held at once
  std::uint64_t waits = 0;        ///< times a recording thread waited at the limit for a block
  std::string spill_error;        ///< why spilling stopped (a failed write), if it did
};

/// What `profiler_config::on_trace_ready` holds: any callable taking `profiler&` (a lambda, a
/// function pointer, a std::function), copied with the config. It plays std::function's part
/// without <functional>, so that the profiler's header stays light.
///
/// **Example**
/// ```cpp
/// config.on_trace_ready = [](strata::profiler& p) { p.export_chrome_trace("window.json"); };
/// ```
class trace_handler {
 public:
  trace_handler() noexcept = default;
  trace_handler(decltype(nullptr)) noexcept {}  // NOLINT(google-explicit-constructor)
  template <class F>
    requires(!__is_same(F, trace_handler) && requires(F& f, profiler& p) { f(p); })
  trace_handler(F f) : held_(new holder<F>(static_cast<F&&>(f))) {}  // NOLINT: reads like std::function

  trace_handler(const trace_handler& other) : held_(other.held_ ? other.held_->clone() : nullptr) {}
  trace_handler(trace_handler&& other) noexcept : held_(other.held_) { other.held_ = nullptr; }
  trace_handler& operator=(trace_handler other) noexcept {
    base* old = held_;
    held_ = other.held_;
    other.held_ = old;
    return *this;
  }
  ~trace_handler() { delete held_; }

  explicit operator bool() const noexcept { return held_ != nullptr; }
  /// Calls the handler; it must be set.
  void operator()(profiler& p) const { held_->call(p); }

 private:
  struct base {
    virtual ~base() = default;
    virtual base* clone() const = 0;
    virtual void call(profiler& p) = 0;
  };
  template <class F>
  struct holder final : base {
    explicit holder(F&& fn) : f(static_cast<F&&>(fn)) {}
    base* clone() const override { return new holder(F(f)); }
    void call(profiler& p) override { f(p); }
    F f;
  };

  base* held_ = nullptr;
};

/// Configuration of a `strata::profiler`; checked by its constructor, which raises
/// `strata::error` naming the field to change.
///
/// **Example**
/// ```cpp
/// strata::profiler prof({.output_dir = "out", .layers = {strata::layer::framework},
///                        .memory_limit = 512 << 20});
/// ```
struct profiler_config {
  /// Where traces go; created if missing, and must be writable. (A string, not a
  /// std::filesystem::path, so that the profiler's header stays light; a path converts to it.)
  std::string output_dir = "strata-out";
  /// The captured layers (torch.profiler's activities). A scope of another layer costs one
  /// branch.
  layer_set layers = layer_set::all();
  /// Flight recorder (`overflow_policy::flight_recorder`): records each thread keeps, a power of
  /// two, 32 bytes each (in 64 KiB blocks: a thread holds this plus up to two blocks). A lossless
  /// session does not use it.
  std::size_t buffer_capacity = std::size_t{1} << 16;
  /// What happens to records past what the session may hold. `lossless` (the default): each
  /// thread records into 64 KiB blocks handed to the session without a copy, bounded by
  /// `memory_limit` and spilled to disk past it; records are dropped (the newest, and counted)
  /// only when the limit is reached and spilling is off or has failed. `flight_recorder`: each
  /// thread keeps exactly its newest `buffer_capacity` records in constant memory, reusing its
  /// oldest block.
  overflow_policy overflow = overflow_policy::lossless;
  /// Lossless sessions: bytes of records the session holds in memory besides each recording
  /// thread's current 64 KiB block (so its peak is about this plus one block per thread). Past
  /// it, full blocks go to a spill file in `output_dir` (see `spill`). At least 64 KiB.
  std::size_t memory_limit = std::size_t{256} << 20;
  /// Lossless sessions: bytes of blocks made ready in `start()` (at most `memory_limit`), their
  /// pages faulted in, and kept ready between the windows of a schedule. Every record a session
  /// keeps needs memory of its own, and the kernel zeroes each fresh page when it is first
  /// touched: made ready in `start()`, that time is spent before recording instead of being
  /// taken from the recording threads (with a thread recording on every core, nothing else can
  /// give it back). Costs `start()` about a millisecond per 10 MiB and holds the memory from
  /// `start()` to `stop()`; past it, blocks are made as the session needs them. 0: all of them
  /// so, for a session that records little and should hold little.
  std::size_t preallocate = std::size_t{256} << 20;
  /// Lossless sessions: past `memory_limit`, write full blocks to a spill file in `output_dir`
  /// (read back a block at a time by the exports and tables; its name is removed when the
  /// session is collected) instead of dropping the newest records. A failed spill write is
  /// reported once on stderr and in `stats()`; recording goes on in memory up to the limit.
  bool spill = true;
  /// Crash-safe flight recorder: while the profiler is started, a SIGSEGV, SIGBUS, SIGILL,
  /// SIGFPE or SIGABRT writes every thread's buffered records to `strata-crash-<pid>.dump` in
  /// `output_dir` (created at `start()`, removed at `stop()` when nothing crashed), then lets
  /// the signal take its course (docs/production.md#crash-dumps). `strata-report convert DUMP -o
  /// trace.json` turns the dump into a trace. Off by default.
  bool crash_dump = false;
  /// The process name shown in traces; empty: the program's name.
  std::string process_name = {};
  /// The process's rank in a distributed job, written into every trace as Kineto's
  /// `distributedInfo` (strata/distributed.hpp). Unset (`rank` < 0): read from the environment
  /// torchrun sets (`distributed_from_env`: RANK, WORLD_SIZE, LOCAL_RANK, or STRATA_RANK, ...);
  /// not there either: not part of a job.
  distributed_info distributed = {};
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
  /// Record memory events: allocations and frees (`STRATA_ALLOC`, `STRATA_FREE`, the C API's
  /// `strata_alloc`, the simulator's HBM and on-chip pools), which give the tables torch's
  /// memory columns and the trace Kineto's `[memory]` events (torch.profiler's
  /// `profile_memory`). Off, a memory event costs a branch.
  bool profile_memory = false;
  /// Record the FLOP counts of scopes that carry one (`STRATA_SCOPE_FLOPS`, the simulator's
  /// kernels): the tables' `Total FLOPs` column and the trace's `args.flops` (torch.profiler's
  /// `with_flops`). Off, such a scope costs what a plain scope costs.
  bool with_flops = false;
  /// The most device records kept per core and session; 0: unlimited.
  std::size_t max_events_per_core = 0;
  /// Which `profiler::step()`s are recorded (torch.profiler.schedule). The default (`active`
  /// 0) records everything from `start()` to `stop()`.
  ::strata::schedule schedule = {};
  /// Called with the profiler at the end of each recorded window, once its trace is collected
  /// (torch.profiler's `on_trace_ready`): synchronously, on the thread that calls the `step()`
  /// that leaves a `record_and_save` step (or `stop()` when it ends a window), which returns
  /// once the handler has; so that step lasts as long as collecting the window and the handler.
  /// Unset with a schedule: the window's trace is written to a file of its own (named as by
  /// `profiler::export_window_trace()`) on a thread the profiler owns, and the step only copies
  /// the window's records out (see `profiler::trace_files()`). Unset without one: nothing is
  /// called.
  trace_handler on_trace_ready = {};
};

/// The largest accepted `buffer_capacity`: 2^26 records, 2 GiB per thread.
inline constexpr std::size_t max_buffer_capacity = std::size_t{1} << 26;
/// The smallest accepted `memory_limit`: one 64 KiB block.
inline constexpr std::size_t min_memory_limit = std::size_t{1} << 16;

}  // namespace v1
}  // namespace strata
