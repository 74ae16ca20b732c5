// strata/core/device_track.hpp: records of a device's engines, made off the hot path.
//
// A (simulated) NeuronCore does not run on a thread of its own: its engines' instructions are
// timed by a model and handed over in bulk, with timestamps in steady_clock nanoseconds (the
// traces' time base; `clock::steady_ns()`), so that a modelled duration reaches the trace and
// key_averages exactly instead of through a tick-rate estimate. They go to device tracks: one trace process per core, one track per engine or DMA queue, as
// hardware profiles show them. The profiler's `capture_cores` decides which cores are taken
// and `max_events_per_core` bounds each core's records per session.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "strata/core/record.hpp"
#include "strata/detail/registry.hpp"

namespace strata {
inline namespace v1 {

/// Trace process ids of device cores start here, far above any Linux pid (at most 2^22), so
/// they never collide with the host process.
inline constexpr std::uint64_t device_pid_base = std::uint64_t{1} << 24;

/// The trace process id of device core `core`.
constexpr std::uint64_t device_pid(std::uint32_t core) noexcept { return device_pid_base + core; }

/// One track of one device core: `track` orders the tracks within the core's process.
struct device_track {
  std::uint32_t core = 0;
  std::string_view core_name;   ///< the process name, e.g. "NeuronCore 0 (trn1)"
  std::uint32_t track = 0;
  std::string_view track_name;  ///< e.g. "Tensor", "DMA queue 0"
};

/// Whether a running session takes device records of `core` (device layer captured, core in
/// `capture_cores`). A producer asks once per execution and skips building records otherwise.
inline bool device_core_captured(std::uint32_t core) {
  return detail::registry::instance().captures_device_core(static_cast<int>(core));
}

/// Appends `records` (begin and end in steady_clock nanoseconds, see `clock::steady_ns()`;
/// sites of the device layer) to `track`. Returns how many were taken: none without a session capturing the device layer,
/// and no more than the session's `max_events_per_core` for the core; the rest is counted as
/// lost and reported like a full buffer's. Cold path: takes the registry's lock once.
///
/// **Example**
/// ```cpp
/// const strata::site* mm = strata::intern(strata::layer::device, "matmul");
/// const std::int64_t launch = strata::clock::steady_ns();
/// strata::record r{std::uint64_t(launch + 100), std::uint64_t(launch + 350), mm, correlation_id};
/// strata::append_device_records({.core = 0, .core_name = "NeuronCore 0", .track = 0,
///                                 .track_name = "Tensor"}, {&r, 1});
/// ```
inline std::size_t append_device_records(const device_track& track, std::span<const record> records) {
  if (!device_core_captured(track.core)) return 0;
  return detail::registry::instance().append_device_records(
      device_pid(track.core), track.core_name, track.track, track.track_name, records);
}

}  // namespace v1
}  // namespace strata
