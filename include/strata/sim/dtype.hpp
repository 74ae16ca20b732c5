// strata/sim/dtype.hpp: the element type tag of simulated tensors. Values are always computed
// as float; the tag decides sizes (SBUF bytes, DMA bytes) and the Tensor engine's speed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata {
inline namespace v1 {
namespace sim {

enum class dtype : std::uint8_t { bf16, fp32 };

constexpr std::size_t size_of(dtype t) noexcept { return t == dtype::bf16 ? 2 : 4; }

constexpr std::string_view to_string(dtype t) noexcept {
  return t == dtype::bf16 ? "bf16" : "fp32";
}

}  // namespace sim
}  // namespace v1
}  // namespace strata
