// examples/nki_kernels.hpp: hand-written NKI-style kernels the examples share.
//
// A kernel is a `strata::sim::kernel_fn`: it issues instructions on SBUF/PSUM tiles, reads its
// inputs and writes its outputs in HBM. Phases (`k.phase`) name the steps; they appear nested
// in the kernel's execution on the core's Kernel track.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "strata/sim.hpp"

namespace examples {

namespace sim = strata::sim;

/// Row softmax y = exp(x - max(x)) / sum(exp(x - max(x))) over [rows, cols], rows in blocks of
/// 128 partitions. Written for the engines: the subtraction of the row max is folded into the
/// exponential's bias (Scalar engine, one instruction), the division becomes a reciprocal of
/// the [128, 1] row sums and one multiply, and each block's load goes to its own DMA queue so
/// block i + 1 is loading while block i computes.
inline void softmax_kernel(sim::kernel& k, std::span<const sim::hbm_tensor> in,
                           std::span<const sim::hbm_tensor> out) {
  const sim::hbm_tensor& x = in[0];
  const sim::hbm_tensor& y = out[0];
  const std::size_t rows = x.rows(), cols = x.cols();
  const std::uint16_t queues = static_cast<std::uint16_t>(k.params().dma_queues);
  std::uint16_t block = 0;
  for (std::size_t r0 = 0; r0 < rows; r0 += 128, ++block) {
    const std::size_t p = std::min<std::size_t>(128, rows - r0);
    const auto q = static_cast<std::uint16_t>(block % queues);
    sim::tile t = [&] {
      auto ph = k.phase("load");
      return k.load(x, {r0, 0}, {p, cols}, q);
    }();
    sim::tile e, inv;
    {
      auto ph = k.phase("exp");
      sim::tile neg_max = k.tensor_scalar(k.reduce(t, sim::alu::max), sim::alu::multiply, -1.0f);
      e = k.activation(t, sim::act::exp, 1.0f, neg_max);  // exp(x - max) in one instruction
    }
    {
      auto ph = k.phase("normalise");
      inv = k.activation(k.reduce(e, sim::alu::add), sim::act::reciprocal);
      e = k.tensor_scalar(e, sim::alu::multiply, inv);
    }
    auto ph = k.phase("store");
    k.store(y, {r0, 0}, e, static_cast<std::uint16_t>((block + queues / 2) % queues));
  }
}

}  // namespace examples
