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
/// get one interned site per distinct (layer, kind, name). A scope that carries arguments
/// (input shapes and a few small values, see strata/args/op_args.hpp) records an interned site
/// per distinct argument set, whose two extra strings the exporter and key_averages read.
struct site {
  const char* name;
  const char* file;
  std::uint32_t line;
  layer where;
  record_kind kind;
  /// torch's "Input Shapes" text, e.g. `[[4, 8], [8]]`; nullptr: none recorded.
  const char* input_shapes = nullptr;
  /// The arguments as the members of a JSON object (no braces), written into the trace
  /// event's `args`; nullptr: none.
  const char* args_json = nullptr;
  /// The trace's `cat` when it is not the layer's name (static storage). A record with a
  /// category of its own is drawn in the trace but is not an op, so key_averages leaves it
  /// out: a part of a device execution (`device.engine`: one engine's instruction;
  /// `device.phase`: a kernel phase), whose time the execution's own record carries, or time
  /// a submission spent queued (`runtime.queue`).
  const char* category = nullptr;
};

}  // namespace v1
}  // namespace strata
