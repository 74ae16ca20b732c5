// strata/sim/execution.hpp: the execution timeline of one simulated kernel: which instruction
// ran on which engine from when to when, the kernel's phases and counter samples. Times are
// integer picoseconds from the kernel's start (see docs/simulator.md, "Time").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/sim/core_params.hpp"
#include "strata/sim/engine.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// Names of the counters an execution samples. They point to static storage.
namespace counter_names {
inline constexpr std::string_view sbuf_used = "SBUF used (bytes)";
inline constexpr std::string_view psum_used = "PSUM used (bytes)";
inline constexpr std::string_view hbm_used = "HBM used (bytes)";
inline constexpr std::string_view dma_bandwidth = "DMA bandwidth (GB/s)";
}  // namespace counter_names

constexpr double ps_to_ns(std::int64_t ps) noexcept { return static_cast<double>(ps) / 1000.0; }

/// One instruction as it ran.
struct executed_instruction {
  std::uint32_t id = 0;          ///< its index in execution::instructions (issue order)
  engine_id engine = {};
  std::string_view name = {};    ///< "matmul", "activation(exp)", "load": static storage
  std::int64_t start_ps = 0;     ///< from the kernel's start
  std::int64_t end_ps = 0;
  std::uint64_t bytes = 0;       ///< bytes moved (DMA instructions), else 0
  std::uint64_t cycles = 0;      ///< engine cycles charged (compute engines), else 0
  std::uint64_t flops = 0;       ///< floating-point operations: a matmul's 2·K·M·N, else 0
  std::int32_t phase = -1;       ///< innermost phase (index into execution::phases), -1: none
  /// Instructions this one waited for or had to follow (data and anti-dependencies, any
  /// engine): ids, ascending. The previous instruction on the same engine is implied.
  std::vector<std::uint32_t> depends_on = {};

  double start_ns() const noexcept { return ps_to_ns(start_ps); }
  double end_ns() const noexcept { return ps_to_ns(end_ps); }
  std::int64_t duration_ps() const noexcept { return end_ps - start_ps; }
};

/// A named phase of the kernel (sim::kernel::phase): the span of the instructions issued
/// while it was open. Phases nest; depth 0 is outermost. Listed in the order they were opened,
/// so a parent precedes its children.
struct phase_span {
  std::string name = {};
  std::int64_t start_ps = 0;
  std::int64_t end_ps = 0;
  std::uint32_t depth = 0;
  std::int32_t parent = -1;            ///< index into execution::phases, -1: none
  std::uint32_t instruction_count = 0;  ///< issued while open, nested phases included

  double start_ns() const noexcept { return ps_to_ns(start_ps); }
  double end_ns() const noexcept { return ps_to_ns(end_ps); }
};

/// A counter's value from time t on, until its next sample.
struct counter_sample {
  std::string_view name = {};  ///< one of counter_names
  std::int64_t t_ps = 0;
  double value = 0;

  double t_ns() const noexcept { return ps_to_ns(t_ps); }
};

/// How long one engine was busy during the kernel.
struct engine_busy {
  engine_id engine = {};
  std::int64_t busy_ps = 0;
  std::uint32_t instructions = 0;
};

/// The timeline of one kernel run on a simulated NeuronCore. Deterministic: the same kernel on
/// the same parameters gives the same timeline.
struct execution {
  std::string kernel_name = {};
  core_generation generation = core_generation::trn1;
  std::vector<executed_instruction> instructions = {};  ///< in issue order
  std::vector<phase_span> phases = {};
  std::vector<counter_sample> counters = {};  ///< by time, then by counter
  std::int64_t duration_ps = 0;               ///< end of the last instruction
  std::vector<engine_busy> busy = {};         ///< engines that ran anything, by track_index
  /// The kernel's work: the Tensor engine's matmul FLOPs (2·K·M·N each; transposes and
  /// Vector/Scalar/GpSimd element work are not counted, as model FLOPs utilisation counts
  /// them) and the bytes its DMA queues moved between HBM and SBUF.
  std::uint64_t flops = 0;
  std::uint64_t hbm_bytes = 0;

  double duration_ns() const noexcept { return ps_to_ns(duration_ps); }

  /// The busy time of `e` (0 when it ran nothing).
  std::int64_t busy_ps_of(engine_id e) const noexcept {
    for (const auto& b : busy)
      if (b.engine == e) return b.busy_ps;
    return 0;
  }

  /// The samples of one counter, in time order.
  std::vector<counter_sample> counter(std::string_view name) const {
    std::vector<counter_sample> out;
    for (const auto& s : counters)
      if (s.name == name) out.push_back(s);
    return out;
  }
};

}  // namespace sim
}  // namespace v1
}  // namespace strata
