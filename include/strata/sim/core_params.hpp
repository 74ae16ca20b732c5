// strata/sim/core_params.hpp: the figures of one simulated NeuronCore generation (engine clocks,
// SBUF/PSUM geometry, DMA queues and bandwidths), one table for all generations. Every figure is
// cited in docs/simulator.md; the ones the documentation does not give are marked as assumptions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/error.hpp"
#include "strata/sim/dtype.hpp"

namespace strata {
inline namespace v1 {
namespace sim {

/// The NeuronCore generation to simulate: NeuronCore-v2 (Trn1) or NeuronCore-v3 (Trn2).
enum class core_generation : std::uint8_t { trn1, trn2 };

/// One generation's figures. Clocks are integer MHz so that cycle-to-time conversion stays exact
/// enough and deterministic; sizes are bytes.
struct core_params {
  core_generation generation = core_generation::trn1;
  std::string_view core_name = {};  ///< "NeuronCore-v2"

  // Engine clocks (MHz).
  std::uint32_t tensor_mhz = 0;
  std::uint32_t vector_mhz = 0;
  std::uint32_t scalar_mhz = 0;
  std::uint32_t gpsimd_mhz = 0;

  // Tensor engine: a systolic array of pe_rows x pe_columns processing elements.
  std::uint32_t pe_rows = 128;
  std::uint32_t pe_columns = 128;
  std::uint32_t lanes = 128;  ///< Vector, Scalar (and GpSimd) lanes, one per partition

  // On-chip memories: 128 partitions each.
  std::uint32_t partitions = 128;
  std::uint64_t sbuf_bytes_per_partition = 0;
  std::uint64_t psum_bytes_per_partition = 0;
  std::uint32_t psum_banks = 8;  ///< a matmul output fits one bank per partition

  // Free-size limits of Vector/Scalar operands (elements per partition).
  std::uint32_t max_free_sbuf = 65536;
  std::uint32_t max_free_psum = 4096;
  // Tensor-engine tile limits.
  std::uint32_t max_stationary_free = 128;
  std::uint32_t max_moving_free = 512;

  // Data movement.
  std::uint32_t dma_queues = 16;              ///< DMA engines serving one NeuronCore
  double dma_queue_bytes_per_s = 0;           ///< peak bandwidth of one DMA engine
  double dma_fixed_latency_ns = 0;            ///< per transfer (an assumption of the model)
  double hbm_bytes_per_s = 0;                 ///< device HBM bandwidth
  std::uint32_t cores_per_device = 0;         ///< NeuronCores sharing that HBM bandwidth
  std::uint64_t hbm_bytes = 0;                ///< device HBM capacity

  // Peaks of one NeuronCore, what MFU and MBU are measured against: the Tensor engine's dense
  // FLOP/s per operand class (AWS's figures; the cost model's perfectly tiled matmul reaches
  // 87-99% of them, docs/simulator.md) and the core's share of the device's HBM bandwidth.
  double peak_bf16_flops_per_s = 0;  ///< BF16/FP16/TF32 operands
  double peak_fp32_flops_per_s = 0;  ///< FP32 operands

  /// The Tensor engine's peak FLOP/s for matmuls on `operands`.
  constexpr double peak_flops_per_s(dtype operands) const noexcept {
    return operands == dtype::fp32 ? peak_fp32_flops_per_s : peak_bf16_flops_per_s;
  }
  /// The core's share of the device's HBM bandwidth (bytes/s).
  constexpr double hbm_bytes_per_s_per_core() const noexcept {
    return cores_per_device != 0 ? hbm_bytes_per_s / cores_per_device : hbm_bytes_per_s;
  }

  constexpr std::uint64_t sbuf_bytes() const noexcept {
    return sbuf_bytes_per_partition * partitions;
  }
  constexpr std::uint64_t psum_bytes() const noexcept {
    return psum_bytes_per_partition * partitions;
  }
  constexpr std::uint64_t psum_bank_bytes_per_partition() const noexcept {
    return psum_bytes_per_partition / psum_banks;
  }
};

namespace detail {
inline constexpr double gib = 1024.0 * 1024.0 * 1024.0;
inline constexpr std::uint64_t kib = 1024;
}  // namespace detail

/// The figures of `g` (docs/simulator.md has the table with its sources).
constexpr core_params params_for(core_generation g) noexcept {
  core_params p;
  p.generation = g;
  if (g == core_generation::trn1) {
    p.core_name = "NeuronCore-v2";
    p.tensor_mhz = 2800;
    p.vector_mhz = 1120;
    p.scalar_mhz = 1400;
    p.gpsimd_mhz = 1400;
    p.sbuf_bytes_per_partition = 192 * detail::kib;  // 24 MiB
    p.psum_bytes_per_partition = 16 * detail::kib;   // 2 MiB
    p.dma_queues = 16;
    p.dma_queue_bytes_per_s = 27.0 * detail::gib;
    p.dma_fixed_latency_ns = 2000.0;  // assumption: no public figure
    p.hbm_bytes_per_s = 820e9;
    p.cores_per_device = 2;
    p.hbm_bytes = 32ull * 1024 * 1024 * 1024;
    p.peak_bf16_flops_per_s = 95e12;   // 190 TFLOPS per Trainium chip of two cores
    p.peak_fp32_flops_per_s = 23.75e12;  // 47.5 TFLOPS per chip
  } else {
    p.core_name = "NeuronCore-v3";
    p.tensor_mhz = 2400;
    p.vector_mhz = 960;
    p.scalar_mhz = 1200;
    p.gpsimd_mhz = 1200;
    p.sbuf_bytes_per_partition = 224 * detail::kib;  // 28 MiB
    p.psum_bytes_per_partition = 16 * detail::kib;   // 2 MiB
    p.dma_queues = 16;
    p.dma_queue_bytes_per_s = 27.0 * detail::gib;  // assumption: v2's per-engine figure
    p.dma_fixed_latency_ns = 600.0;  // a hardware-DGE DMA instruction takes about 600 ns
    p.hbm_bytes_per_s = 2.9e12;
    p.cores_per_device = 8;
    p.hbm_bytes = 96ull * 1024 * 1024 * 1024;
    p.peak_bf16_flops_per_s = 79e12;      // a NeuronCore-v3 Tensor engine
    p.peak_fp32_flops_per_s = 22.625e12;  // 181 TFLOPS per Trainium2 chip of eight cores
  }
  return p;
}

/// "trn1" or "trn2".
constexpr std::string_view to_string(core_generation g) noexcept {
  return g == core_generation::trn1 ? "trn1" : "trn2";
}

/// Parses "trn1" or "trn2"; anything else raises strata::error.
inline core_generation parse_core_generation(std::string_view s) {
  if (s == "trn1") return core_generation::trn1;
  if (s == "trn2") return core_generation::trn2;
  throw error("sim: unknown core generation '" + std::string(s) +
              "': expected trn1 (NeuronCore-v2) or trn2 (NeuronCore-v3)");
}

}  // namespace sim
}  // namespace v1
}  // namespace strata
