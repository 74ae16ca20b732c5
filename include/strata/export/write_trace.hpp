// strata/export/write_trace.hpp: a session written in the format its file's name asks for
// (strata/export/trace_format.hpp): what snapshots, on-demand captures and strata-report use;
// and the file a trace is streamed into, for a program that writes trace text of its own.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "strata/export/chrome_trace.hpp"
#include "strata/export/perfetto_trace.hpp"
#include "strata/export/trace_format.hpp"
#include "strata/trace_data.hpp"
#include "strata/detail/trace_file.hpp"

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

/// The file a trace is streamed into, as strata's own writers stream theirs: written to
/// `<path>.tmp.<pid>` and renamed over `path` by `commit()`, gzip-compressed (zlib level 1,
/// loaded at run time) when `path` ends in `.gz`. Destroyed without `commit()` (an error half
/// way), it leaves no file behind. Raises `strata::error` naming the file when it cannot be
/// created or written, or when zlib cannot be loaded for a `.gz` path.
///
/// **Example**
/// ```cpp
/// strata::trace_output out("job.json.gz");
/// out.write(R"({"traceEvents":[]})");
/// out.commit();
/// ```
class trace_output {
 public:
  explicit trace_output(const std::filesystem::path& path) : file_(path) {}

  /// Appends `bytes` to the file.
  void write(std::string_view bytes) { file_.write(bytes); }
  /// Finishes the file and renames it into place.
  void commit() { file_.commit(); }
  /// Bytes in the file so far (compressed bytes for a `.gz` path).
  std::uint64_t bytes_written() const noexcept { return file_.bytes_written(); }

 private:
  detail::trace_file file_;
};

}  // namespace v1
}  // namespace strata
