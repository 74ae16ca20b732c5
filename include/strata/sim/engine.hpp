// strata/sim/engine.hpp: the engines of a NeuronCore that instructions run on, one trace track
// each: Tensor, Vector, Scalar, GpSimd, Sync and the DMA queues.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace strata {
inline namespace v1 {
namespace sim {

enum class engine_kind : std::uint8_t { tensor, vector, scalar, gpsimd, sync, dma };

/// An engine: a compute engine, or DMA queue `queue` (queue is 0 for the others).
struct engine_id {
  engine_kind kind = engine_kind::tensor;
  std::uint16_t queue = 0;

  static constexpr engine_id dma_queue(std::uint16_t q) noexcept { return {engine_kind::dma, q}; }

  /// A stable order of tracks: Tensor 0, Vector 1, Scalar 2, GpSimd 3, Sync 4, DMA queue k 5+k.
  constexpr std::uint32_t track_index() const noexcept {
    return kind == engine_kind::dma ? 5u + queue : static_cast<std::uint32_t>(kind);
  }

  /// "Tensor", "Vector", "Scalar", "GpSimd", "Sync", "DMA queue 3".
  std::string track_name() const {
    switch (kind) {
      case engine_kind::tensor: return "Tensor";
      case engine_kind::vector: return "Vector";
      case engine_kind::scalar: return "Scalar";
      case engine_kind::gpsimd: return "GpSimd";
      case engine_kind::sync: return "Sync";
      case engine_kind::dma: break;
    }
    return "DMA queue " + std::to_string(queue);
  }

  friend constexpr bool operator==(engine_id, engine_id) noexcept = default;
};

}  // namespace sim
}  // namespace v1
}  // namespace strata
