// strata/sim/record_execution.hpp: a kernel's execution timeline as device records, the way a
// hardware profile shows it.
//
// One trace process per NeuronCore, showing every engine of the core whether used or not. Its
// first track, "Kernel", holds the execution itself
// (one record named after the kernel, carrying the launch's correlation id: the device time
// key_averages attributes to the op) with the kernel's phases nested in it; then one track per
// engine and DMA queue holds the instructions. Instructions and phases are parts of the
// execution (categories `device.engine` and `device.phase`): drawn, but not counted again by
// key_averages. SBUF, PSUM and HBM usage and DMA bandwidth become counters of the process.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/device.hpp"
#include "strata/record.hpp"
#include "strata/sim/core_params.hpp"
#include "strata/sim/engine.hpp"
#include "strata/sim/execution.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// Where and when an execution ran, as the runtime that launched it knows.
struct device_launch {
  std::uint32_t core = 0;            ///< the NeuronCore's index: its trace process, capture_cores
  std::int64_t start_ns = 0;         ///< steady_clock ns (`clock::steady_ns()`) of the kernel's start
  std::uint64_t correlation_id = 0;  ///< of the op or submission that caused it; 0: none
};

/// What `record_execution` handed over.
struct recorded_execution {
  std::size_t records = 0;  ///< records made from the timeline
  std::size_t taken = 0;    ///< records the session kept (see `append_device_records`)
};

/// The trace track of the kernel itself and its phases; engines follow as 1 + track_index().
inline constexpr std::uint32_t kernel_track = 0;
/// Phases that overlap each other (pipelined tiles) continue on tracks phase_lane_track + 1, +2...
inline constexpr std::uint32_t phase_lane_track = 50;

namespace detail {

inline constexpr const char* engine_category = "device.engine";
inline constexpr const char* phase_category = "device.phase";

/// Simulated picoseconds from the kernel's start as steady_clock ns, rounded to nearest, so a
/// timeline always maps to the same durations.
constexpr std::uint64_t at_ns(std::int64_t start_ns, std::int64_t ps) noexcept {
  return static_cast<std::uint64_t>(start_ns + (ps >= 0 ? (ps + 500) / 1000 : -((-ps + 500) / 1000)));
}

/// The descriptor of one instruction: its name in the `device.engine` category, with its
/// cycles (compute engines) or bytes (DMA) as the trace event's args. Interned once per
/// distinct (name, cost), and cached per thread by the name's static address.
inline const site* instruction_site(const executed_instruction& in) {
  using key = std::tuple<const char*, std::size_t, std::uint64_t, std::uint64_t>;
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept {
      return std::hash<const void*>{}(std::get<0>(k)) ^ (std::get<2>(k) * 31 + std::get<3>(k)) * 1099511628211ull;
    }
  };
  thread_local std::unordered_map<key, const site*, key_hash> cache;
  const key k{in.name.data(), in.name.size(), in.bytes, in.cycles};
  if (auto it = cache.find(k); it != cache.end()) return it->second;
  const std::string args = in.bytes != 0 ? fmt::format("\"bytes\":{}", in.bytes)
                                         : fmt::format("\"cycles\":{}", in.cycles);
  const site like{nullptr, "", 0, layer::device, record_kind::scope, nullptr, nullptr, engine_category};
  const site* s = intern_site(like, in.name, args);
  cache.emplace(k, s);
  return s;
}

/// Names every engine track of `core` in the running session, in their fixed order (Kernel,
/// Tensor, Vector, Scalar, GpSimd, each DMA queue of the generation), whether or not a kernel
/// uses them: a hardware profile shows the whole core, and an idle engine is worth seeing.
/// Done when the core first records in a session (the session's epoch tells), since each
/// empty append takes the registry's lock.
inline void name_engine_tracks(std::uint32_t core, std::string_view process, core_generation g) {
  static std::mutex mutex;
  static std::vector<std::pair<std::uint32_t, std::uint32_t>> named;  // (epoch, core)
  const std::uint32_t epoch = recording_session();
  {
    std::lock_guard lock(mutex);
    if (std::find(named.begin(), named.end(), std::pair{epoch, core}) != named.end()) return;
    std::erase_if(named, [&](const auto& e) { return e.first != epoch; });  // earlier sessions'
    named.emplace_back(epoch, core);
  }
  const auto name = [&](std::uint32_t track, std::string_view track_name) {
    append_device_records({.core = core, .core_name = process, .track = track, .track_name = track_name}, {});
  };
  name(kernel_track, "Kernel");
  for (engine_kind k : {engine_kind::tensor, engine_kind::vector, engine_kind::scalar, engine_kind::gpsimd}) {
    const engine_id e{k, 0};
    name(kernel_track + 1 + e.track_index(), e.track_name());
  }
  for (std::uint32_t q = 0; q < params_for(g).dma_queues; ++q) {
    const engine_id e = engine_id::dma_queue(static_cast<std::uint16_t>(q));
    name(kernel_track + 1 + e.track_index(), e.track_name());
  }
}

inline const site* device_site(std::string_view name, record_kind kind, const char* category = nullptr) {
  const site like{nullptr, "", 0, layer::device, kind, nullptr, nullptr, category};
  return intern_site(like, name);
}

/// The descriptor of the execution itself: the kernel's name, with its FLOPs (the site's count,
/// which key_averages sums and gives the launching op) and HBM bytes as the trace event's args.
inline const site* execution_site(const execution& ex) {
  site like{nullptr, "", 0, layer::device, record_kind::scope};
  like.flops = ex.flops;
  return intern_site(like, ex.kernel_name, fmt::format("\"flops\":{},\"bytes\":{}", ex.flops, ex.hbm_bytes));
}

}  // namespace detail

/// The trace process name of core `core`: "NeuronCore 0 (trn1)".
inline std::string core_process_name(std::uint32_t core, core_generation g) {
  return fmt::format("NeuronCore {} ({})", core, to_string(g));
}

/// Appends `ex` to the device tracks of `at.core`, anchored at `at.start_ns`, when a session
/// captures the device layer and that core (nothing is built otherwise). Every record carries
/// `at.correlation_id`.
///
/// **Example**
/// ```cpp
/// const std::int64_t launch = strata::clock::steady_ns();
/// sim::execution ex = core.run("relu", body);
/// sim::record_execution(ex, {.core = 0, .start_ns = launch, .correlation_id = 42});
/// ```
inline recorded_execution record_execution(const execution& ex, const device_launch& at) {
  recorded_execution out;
  if (!device_core_captured(at.core)) return out;
  const std::string process = core_process_name(at.core, ex.generation);
  detail::name_engine_tracks(at.core, process, ex.generation);
  const std::uint64_t c = at.correlation_id;
  const core_params params = params_for(ex.generation);
  const auto append = [&](std::uint32_t track, std::string_view track_name,
                          const std::vector<record>& records) {
    out.records += records.size();
    out.taken += append_device_records({.core = at.core,
                                        .core_name = process,
                                        .track = track,
                                        .track_name = track_name,
                                        .peak_flops_per_s = params.peak_bf16_flops_per_s,
                                        .peak_hbm_bytes_per_s = params.hbm_bytes_per_s_per_core()},
                                       records);
  };

  // The kernel's own track: the execution, its phases inside it, and the counters. Phases of
  // different tiles overlap in time when the engines pipeline them, and one track can only
  // show nested slices, so a phase that would cross another goes to the next phase lane.
  std::vector<std::vector<record>> lanes(1);
  lanes[0].reserve(1 + ex.phases.size() + ex.counters.size());
  lanes[0].push_back({detail::at_ns(at.start_ns, 0), detail::at_ns(at.start_ns, ex.duration_ps),
                      detail::execution_site(ex), c});
  // Per lane, the slices still open: (end, phase index; -1 for the kernel itself).
  struct open_slice {
    std::int64_t end_ps;
    std::int32_t phase;
  };
  std::vector<std::vector<open_slice>> open(1, std::vector<open_slice>{{ex.duration_ps, -1}});
  std::vector<std::size_t> order(ex.phases.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const phase_span &pa = ex.phases[a], &pb = ex.phases[b];
    return pa.start_ps != pb.start_ps ? pa.start_ps < pb.start_ps : pa.end_ps > pb.end_ps;
  });
  for (std::size_t i : order) {
    const phase_span& p = ex.phases[i];
    // A phase goes on top of its parent (the kernel, for an outermost phase); where its parent
    // is covered by a sibling still running, or it would cross something, on a fresh lane.
    std::size_t lane = 0;
    for (; lane < open.size(); ++lane) {
      auto& stack = open[lane];
      while (stack.size() > (lane == 0 ? 1u : 0u) && stack.back().end_ps <= p.start_ps) stack.pop_back();
      const std::int32_t top = stack.empty() ? -1 : stack.back().phase;
      const bool nests = stack.empty() || stack.back().end_ps >= p.end_ps;
      if (nests && top == p.parent) break;
    }
    if (lane == open.size()) {
      lane = 0;
      while (lane < open.size() && !open[lane].empty()) ++lane;
      if (lane == open.size()) open.emplace_back();
      if (lane >= lanes.size()) lanes.resize(lane + 1);
    }
    open[lane].push_back({p.end_ps, static_cast<std::int32_t>(i)});
    lanes[lane].push_back({detail::at_ns(at.start_ns, p.start_ps), detail::at_ns(at.start_ns, p.end_ps),
                           detail::device_site(p.name, record_kind::scope, detail::phase_category), c});
  }
  for (const counter_sample& s : ex.counters)
    lanes[0].push_back({detail::at_ns(at.start_ns, s.t_ps), std::bit_cast<std::uint64_t>(s.value),
                        detail::device_site(s.name, record_kind::counter), 0});
  append(kernel_track, "Kernel", lanes[0]);
  for (std::size_t lane = 1; lane < lanes.size(); ++lane)
    append(phase_lane_track + static_cast<std::uint32_t>(lane), fmt::format("Kernel phases {}", lane),
           lanes[lane]);

  // One track per engine and DMA queue, in the engines' fixed order.
  std::vector<std::vector<record>> per_engine;
  std::vector<engine_id> engines;
  for (const executed_instruction& in : ex.instructions) {
    const std::uint32_t index = in.engine.track_index();
    if (index >= per_engine.size()) {
      per_engine.resize(index + 1);
      engines.resize(index + 1);
    }
    engines[index] = in.engine;
    per_engine[index].push_back({detail::at_ns(at.start_ns, in.start_ps),
                                 detail::at_ns(at.start_ns, in.end_ps), detail::instruction_site(in), c});
  }
  for (std::size_t i = 0; i < per_engine.size(); ++i)
    if (!per_engine[i].empty())
      append(kernel_track + 1 + static_cast<std::uint32_t>(i), engines[i].track_name(), per_engine[i]);
  return out;
}

}  // namespace sim
}  // namespace v1
}  // namespace strata
