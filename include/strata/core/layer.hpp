// strata/core/layer.hpp: the layers of an inference stack and sets of them.
//
// Part of the instrumentation header: standard headers beyond <cstdint> are not allowed here
// (tests/check_light_header.py). Layer names as text are in strata/core/layer_name.hpp.
#pragma once

#include <cstdint>

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

/// A set of layers, stored as one bit per layer.
///
/// **Example**
/// ```cpp
/// strata::layer_set host{strata::layer::framework, strata::layer::user};
/// ```
class layer_set {
 public:
  constexpr layer_set() noexcept = default;
  /// The layers listed: `{strata::layer::framework, strata::layer::user}`. (A variadic
  /// constructor rather than std::initializer_list keeps <initializer_list> out of the
  /// instrumentation header; brace initialisation reads the same.)
  template <class... More>
    requires(__is_same(More, layer) && ...)
  constexpr layer_set(layer first, More... more) noexcept
      : bits_(bit(first) | (0u | ... | bit(more))) {}

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
