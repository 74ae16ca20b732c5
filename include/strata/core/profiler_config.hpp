// strata/core/profiler_config.hpp: what a profiler captures and where it writes.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "strata/core/layer.hpp"
#include "strata/core/ring_buffer.hpp"

namespace strata {
inline namespace v1 {

/// Configuration of a `strata::profiler`; checked by its constructor, which raises
/// `strata::error` naming the field to change.
///
/// **Example**
/// ```cpp
/// strata::profiler prof({.output_dir = "out", .layers = {strata::layer::framework},
///                        .buffer_capacity = 1 << 20});
/// ```
struct profiler_config {
  /// Where traces go; created if missing, and must be writable.
  std::filesystem::path output_dir = "strata-out";
  /// The captured layers (torch.profiler's activities). A scope of another layer costs one
  /// branch.
  layer_set layers = layer_set::all();
  /// Records per thread per session: a power of two. 32 bytes each.
  std::size_t buffer_capacity = std::size_t{1} << 16;
  /// What a full thread buffer does with the next record.
  overflow_policy overflow = overflow_policy::drop_newest;
  /// The process name shown in traces; empty: the program's name.
  std::string process_name = {};
};

/// The largest accepted `buffer_capacity`: 2^26 records, 2 GiB per thread.
inline constexpr std::size_t max_buffer_capacity = std::size_t{1} << 26;

}  // namespace v1
}  // namespace strata
