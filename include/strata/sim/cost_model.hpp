// strata/sim/cost_model.hpp: how long one instruction keeps its engine busy. Pure functions of
// the instruction's shape and a table of parameters; the rules and their sources are in
// docs/simulator.md ("Cost model").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "strata/sim/core_params.hpp"
#include "strata/sim/dtype.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// The tunable constants of the cost model, in engine cycles.
struct cost_params {
  /// A MultiplyMoving issues at most every max(N, matmul_min_cycles) Tensor cycles
  /// (MM_INIT_LATENCY, 64 on NeuronCore-v2).
  std::uint64_t matmul_min_cycles = 64;
  /// fp32 operands make a matmul about this many times slower than bf16.
  std::uint64_t fp32_matmul_factor = 4;
  /// Vector/Scalar/GpSimd static instruction overhead, charged when the instruction is small
  /// (free size below small_free_size) or reads the output of the instruction just before it
  /// on the same engine (it cannot overlap with it in the pipeline).
  std::uint64_t static_overhead_cycles = 100;
  std::uint64_t small_free_size = 128;
  /// Vector/Scalar/GpSimd instructions that read PSUM pay the tensor-access bubble
  /// (about 60 cycles on NeuronCore-v2); SBUF reads are assumed hidden by the pipeline.
  std::uint64_t psum_access_cycles = 60;
};

/// What a streaming (Vector, Scalar, GpSimd) instruction reads, for its cost.
struct stream_access {
  std::size_t free_size = 0;        ///< N: elements per partition of the largest input
  std::uint32_t tensor_inputs = 1;  ///< full-size input tiles read (tensor_tensor: 2)
  bool dependent = false;           ///< reads the previous instruction's output on its engine
  bool reads_psum = false;
};

/// Tensor-engine cycles of one matmul with a moving tile of free size `moving_free`.
constexpr std::uint64_t matmul_cycles(std::size_t moving_free, dtype operands,
                                      const cost_params& c = {}) noexcept {
  const std::uint64_t base = std::max<std::uint64_t>(moving_free, c.matmul_min_cycles);
  return operands == dtype::fp32 ? base * c.fp32_matmul_factor : base;
}

/// Tensor-engine cycles of a transpose of a tile with `partitions` partitions: on hardware a
/// matmul whose moving tile is a partitions x partitions identity.
constexpr std::uint64_t transpose_cycles(std::size_t partitions, dtype operand,
                                         const cost_params& c = {}) noexcept {
  return matmul_cycles(partitions, operand, c);
}

/// Cycles of a Vector, Scalar or GpSimd instruction: N per full-size input, plus the static
/// overhead and the PSUM bubble when they apply.
constexpr std::uint64_t stream_cycles(const stream_access& a, const cost_params& c = {}) noexcept {
  std::uint64_t cycles = static_cast<std::uint64_t>(a.free_size) * a.tensor_inputs;
  if (a.dependent || a.free_size < c.small_free_size) cycles += c.static_overhead_cycles;
  if (a.reads_psum) cycles += c.psum_access_cycles;
  return cycles;
}

/// Picoseconds of `cycles` at `mhz`, rounded to the nearest picosecond.
inline std::int64_t cycles_to_ps(std::uint64_t cycles, std::uint32_t mhz) noexcept {
  return static_cast<std::int64_t>(
      std::llround(static_cast<double>(cycles) * 1e6 / static_cast<double>(mhz)));
}

/// Picoseconds one DMA queue takes to move `bytes`: fixed latency + bytes / queue bandwidth.
inline std::int64_t dma_ps(std::uint64_t bytes, const core_params& p) noexcept {
  return static_cast<std::int64_t>(std::llround(
      p.dma_fixed_latency_ns * 1e3 + static_cast<double>(bytes) * 1e12 / p.dma_queue_bytes_per_s));
}

}  // namespace sim
}  // namespace v1
}  // namespace strata
