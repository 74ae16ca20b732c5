// strata/core/layer_name.hpp: a layer's name, as the trace's `cat` and STRATA_LAYERS spell it.
#pragma once

#include <string_view>

#include "strata/core/layer.hpp"

namespace strata {
inline namespace v1 {

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

}  // namespace v1
}  // namespace strata
