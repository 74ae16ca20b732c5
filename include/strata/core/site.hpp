// strata/core/site.hpp: the static descriptor that every record points to.
#pragma once

#include <cstdint>

#include "strata/core/layer.hpp"

namespace strata {
inline namespace v1 {

/// What a record describes.
enum class record_kind : std::uint8_t {
  scope = 0,    ///< an interval: begin and end ticks (Chrome `X`)
  instant = 1,  ///< a point in time (Chrome `i`)
  counter = 2,  ///< a sampled value (Chrome `C`); the value's bits travel in `record::end`
};

/// A per-call-site descriptor: the record stores only a pointer to it, so names are never
/// copied per event. Macros create one `static constexpr` site per call site; run-time names
/// get one interned site per distinct (layer, kind, name).
struct site {
  const char* name;
  const char* file;
  std::uint32_t line;
  layer where;
  record_kind kind;
};

}  // namespace v1
}  // namespace strata
