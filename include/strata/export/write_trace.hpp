// strata/export/write_trace.hpp: a session written in the format its file's name asks for
// (strata/export/trace_format.hpp): what snapshots, on-demand captures and strata-report use.
#pragma once

#include <filesystem>

#include "strata/export/chrome_trace.hpp"
#include "strata/export/perfetto_trace.hpp"
#include "strata/export/trace_format.hpp"
#include "strata/trace_data.hpp"

namespace strata {
inline namespace v1 {

/// Writes `data` to `path` atomically, as Chrome trace JSON or Perfetto's protobuf as its name
/// says, gzip-compressed when it ends in `.gz`. Raises `strata::error` for a name of no trace
/// format, or a file that cannot be written.
///
/// **Example**
/// ```cpp
/// strata::write_trace(prof.data(), "out/trace.pftrace.gz");
/// ```
inline export_result write_trace(const trace_data& data, const std::filesystem::path& path) {
  return trace_format_of(path.string()) == trace_format::perfetto ? write_perfetto_trace(data, path)
                                                                  : write_chrome_trace(data, path);
}

}  // namespace v1
}  // namespace strata
