// strata/core/layer.hpp: the layers of an inference stack and sets of them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace strata {
inline namespace v1 {

/// Where in the stack a record comes from. A profiler captures a chosen set of layers, like
/// torch.profiler's activities and NeuronConfig's modes.
enum class layer : std::uint8_t {
  framework = 0,  ///< op dispatch (`aten::…`), record_function, ProfilerStep#N
  runtime = 1,    ///< submit, load, execute, queue wait, host-device copies
  device = 2,     ///< instructions on a (simulated) NeuronCore's engines
  user = 3,       ///< the application's own scopes
};

inline constexpr int layer_count = 4;

/// The name used as the Chrome trace `cat` of a layer's events.
constexpr std::string_view layer_name(layer l) noexcept {
  switch (l) {
    case layer::framework: return "framework";
    case layer::runtime: return "runtime";
    case layer::device: return "device";
    case layer::user: return "user";
  }
  return "unknown";
}

/// A set of layers, stored as one bit per layer.
class layer_set {
 public:
  constexpr layer_set() noexcept = default;
  constexpr layer_set(std::initializer_list<layer> layers) noexcept {
    for (layer l : layers) bits_ |= bit(l);
  }
  static constexpr layer_set all() noexcept { return from_bits((1u << layer_count) - 1u); }
  static constexpr layer_set none() noexcept { return {}; }
  static constexpr layer_set from_bits(std::uint32_t bits) noexcept {
    layer_set s;
    s.bits_ = bits & ((1u << layer_count) - 1u);
    return s;
  }
  static constexpr std::uint32_t bit(layer l) noexcept {
    return 1u << static_cast<std::uint32_t>(l);
  }

  constexpr bool contains(layer l) const noexcept { return (bits_ & bit(l)) != 0; }
  constexpr bool empty() const noexcept { return bits_ == 0; }
  constexpr std::uint32_t bits() const noexcept { return bits_; }
  constexpr layer_set& add(layer l) noexcept {
    bits_ |= bit(l);
    return *this;
  }
  friend constexpr bool operator==(layer_set, layer_set) noexcept = default;

 private:
  std::uint32_t bits_ = 0;
};

}  // namespace v1
}  // namespace strata
