// strata/trace_data.hpp: what one profiling session captured.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "strata/clock.hpp"
#include "strata/detail/shared_handle.hpp"
#include "strata/profiler_config.hpp"
#include "strata/record.hpp"

namespace strata {
inline namespace v1 {
namespace detail {
class spill_file;
class site_pool;
class taken_blocks;
}

/// Where one spilled block's records are in a session's spill file.
struct spill_extent {
  std::uint64_t offset = 0;
  std::uint32_t count = 0;
};

/// The part of a thread's records a lossless session spilled (see `thread_track`).
struct spilled_records {
  std::vector<spill_extent> extents;  ///< the thread's spilled blocks, in the order it wrote them
  std::vector<record> late;           ///< their records that are not in order block by block, sorted
  std::uint64_t in_order = 0;         ///< the other records of the extents

  bool empty() const noexcept { return extents.empty(); }
};

/// Who a track is in a trace: a thread of the traced process, one of a device's engines or
/// queues, or the steps a thread marked. One struct, made where the track is first known (a
/// thread's first record, a device track's first append) and copied whole into the trace.
struct track_identity {
  std::uint64_t tid = 0;
  std::uint64_t pid = 0;        ///< 0: a thread of the traced process; else a device's process
  std::string process_name;     ///< a device track's process name
  /// Device tracks: begin and end are steady_clock nanoseconds (`clock::steady_ns()`), so a
  /// simulated duration stays exact; other tracks hold ticks. Use `trace_data::ns_of`.
  bool timestamps_in_ns = false;
  std::uint32_t sort_index = 0; ///< a thread's registration order; a device track's place in its core
  std::string name;
  bool exited = false;          ///< the thread had exited when the session stopped
  /// A steps track: the `ProfilerStep#N` scopes of a profiler with a schedule, which the thread
  /// `steps_of` marked by calling `step()`. They are a track of their own (tid
  /// `steps_track_tid(steps_of)`, named after the thread), so that a scope left open across
  /// `step()` never partly overlaps a step on one track. It is listed just before its thread,
  /// with the same `sort_index`.
  bool steps = false;
  std::uint64_t steps_of = 0;   ///< a steps track: the tid of the thread that called `step()`
  /// A device track: its core's peak FLOP/s and HBM bytes/s (`device_track`), 0: unknown.
  double peak_flops_per_s = 0;
  double peak_hbm_bytes_per_s = 0;
};

/// The records of one track in one session, oldest first (a parent before its children), and
/// who the track is (its `track_identity`, whose fields it has as its own).
///
/// A thread of a session that spilled to disk may hold most of its records in the session's
/// spill file instead (`spilled` is then not empty, and `records` holds only the rest): the
/// trace writers and `key_averages` read them from there in order (detail/record_order.hpp), and
/// `profiler::data()` reads them all back into `records` first.
struct thread_track : track_identity {
  std::vector<record> records;
  spilled_records spilled;      ///< empty unless the session spilled some of the thread's records
  std::uint64_t lost = 0;       ///< dropped at the memory limit, or overwritten (flight recorder)
  /// Between the end of a session and its ordering (detail/session.hpp): the thread's blocks,
  /// handed over as they are (its current one lent) instead of copied while the session ended;
  /// ordering moves their records to the front of `records`. Null in an ordered trace.
  detail::shared_handle<detail::taken_blocks> taken;

  /// Every record of the track, in `records` or spilled.
  std::uint64_t record_count() const noexcept {
    return records.size() + spilled.late.size() + spilled.in_order;
  }
};

/// The tid of the steps track of thread `tid`: 2^24 + `tid`, above any Linux tid (at most
/// 2^22), so it is never a real thread's.
constexpr std::uint64_t steps_track_tid(std::uint64_t tid) noexcept {
  return (std::uint64_t{1} << 24) + tid;
}

/// Everything a stopped session captured, with what is needed to turn ticks into time.
struct trace_data {
  std::vector<thread_track> threads;
  clock_calibration clock;
  std::uint64_t pid = 0;
  std::string process_name;
  layer_set layers;
  std::size_t buffer_capacity = 0;
  overflow_policy overflow = overflow_policy::lossless;
  std::uint64_t start_ticks = 0;
  std::uint64_t stop_ticks = 0;
  session_memory memory;   ///< a lossless session's memory (all 0 for a flight recorder)
  /// Wall-clock (system_clock) nanoseconds at steady_clock nanosecond 0, read when the session
  /// began: a timestamp plus this is wall time, so traces of several processes or hosts line up
  /// (Kineto's `baseTimeNanoseconds`). 0: not known.
  std::int64_t base_time_ns = 0;
  /// CLOCK_BOOTTIME nanoseconds at steady_clock nanosecond 0, read when the session began
  /// (they differ by the time the machine spent suspended): the Perfetto trace relates its
  /// clock to BOOTTIME, the clock of Perfetto's own system traces, with it. Empty: not known
  /// (a session built by hand, a crash dump), and the Perfetto trace claims no system clock.
  std::optional<std::int64_t> boot_time_ns;
  distributed_info distributed;  ///< the rank that recorded it (none: `rank` < 0)
  /// The session recorded memory events (`profiler_config::profile_memory`): the exporters
  /// read them (strata/analysis/memory.hpp) only then.
  bool profile_memory = false;
  /// The spill file the tracks' `spilled` extents are in (its name is already removed; the file
  /// goes when the last copy of this pointer does).
  detail::shared_handle<const detail::spill_file> spill;
  /// The descriptors of the session's `ProfilerStep#N` marks: its steps tracks' records point
  /// into it, so it lives as long as the last copy of the trace (detail/intern.hpp).
  detail::shared_handle<detail::site_pool> step_sites;

  /// A timestamp of `track` (begin or end of one of its records) in steady_clock ns.
  std::int64_t ns_of(const thread_track& track, std::uint64_t t) const noexcept {
    return track.timestamps_in_ns ? static_cast<std::int64_t>(t) : clock.to_ns(t);
  }

  std::uint64_t recorded() const noexcept {
    std::uint64_t n = 0;
    for (const auto& t : threads) n += t.record_count();
    return n;
  }
  std::uint64_t lost() const noexcept {
    std::uint64_t n = 0;
    for (const auto& t : threads) n += t.lost;
    return n;
  }
  /// Threads of the traced process that recorded (or lost) at least one record: neither the
  /// device tracks (one per engine of each captured core) nor the steps tracks count.
  /// The peaks of the first device track that has them: {FLOP/s, HBM bytes/s}, 0 each unknown.
  std::pair<double, double> device_peaks() const noexcept {
    for (const auto& t : threads)
      if (t.peak_flops_per_s != 0 || t.peak_hbm_bytes_per_s != 0)
        return {t.peak_flops_per_s, t.peak_hbm_bytes_per_s};
    return {0.0, 0.0};
  }
  std::uint64_t host_threads() const noexcept {
    std::uint64_t n = 0;
    for (const auto& t : threads)
      if (t.pid == 0 && !t.steps && t.record_count() + t.lost != 0) ++n;
    return n;
  }
};

}  // namespace v1
}  // namespace strata
