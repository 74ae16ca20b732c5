// strata/export/trace_format.hpp: the formats strata writes, the one rule that picks one (the
// file's name), and what an export reports about the file it wrote.
//
// Every export, snapshot and window trace of the library, the C API and strata-report follows
// the rule: `.json` is Chrome trace JSON, `.pftrace` Perfetto's protobuf, either with `.gz` after
// it gzip-compressed; a name that ends otherwise is refused with a message saying so, and a
// writer of one format refuses a name of the other (docs/trace-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/error.hpp"
#include "strata/detail/link_check.h"

namespace strata {
inline namespace v1 {

/// What an export wrote.
struct export_result {
  std::string path;          ///< the file written
  std::uint64_t events = 0;  ///< trace events written, metadata included (Perfetto: packets)
  std::uint64_t bytes = 0;   ///< bytes of the file (compressed, for a `.gz` path)
};

/// A trace file's format.
enum class trace_format : std::uint8_t {
  chrome_json,  ///< `.json`, `.json.gz`: Chrome trace JSON (Perfetto UI, chrome://tracing)
  perfetto,     ///< `.pftrace`, `.pftrace.gz`: Perfetto's protobuf (Perfetto UI, trace_processor)
};

/// Whether the name of `path` is a trace file's, and if so its format in `format`.
constexpr bool trace_format_in_name(std::string_view path, trace_format& format) noexcept {
  std::string_view name = path.substr(path.find_last_of('/') + 1);
  if (name.ends_with(".gz")) name.remove_suffix(3);
  if (name.ends_with(".json") && name.size() > 5) {
    format = trace_format::chrome_json;
    return true;
  }
  if (name.ends_with(".pftrace") && name.size() > 8) {
    format = trace_format::perfetto;
    return true;
  }
  return false;
}

namespace detail {

// One message, built once: the rule's two refusals cost a file that compiles them little.
[[noreturn]] inline void refuse_trace_name(std::string_view path, const char* why) {
  std::string message(1, '\'');
  message.append(path).append("' ").append(why);
  throw error(message);
}

}  // namespace detail

/// The format the name of `path` asks for; a name that ends in neither raises `strata::error`
/// naming the endings strata writes.
///
/// **Example**
/// ```cpp
/// strata::trace_format_of("out/run.pftrace.gz");  // trace_format::perfetto, gzip-compressed
/// ```
inline trace_format trace_format_of(std::string_view path) {
  trace_format format{};
  if (trace_format_in_name(path, format)) return format;
  detail::refuse_trace_name(path,
                            "is not a trace file name: end it in .json or .json.gz (Chrome trace "
                            "JSON), or .pftrace or .pftrace.gz (Perfetto)");
}

/// Raises `strata::error` unless `path` names a file of `format`: a writer of one format never
/// writes a name that says the other.
inline void require_trace_format(std::string_view path, trace_format format) {
  if (trace_format_of(path) == format) return;
  detail::refuse_trace_name(path, format == trace_format::chrome_json
                                      ? "names a Perfetto (.pftrace) file, not Chrome trace JSON: "
                                        "export_perfetto_trace() writes it"
                                      : "names a Chrome trace JSON (.json) file, not Perfetto: "
                                        "export_chrome_trace() writes it");
}

}  // namespace v1
}  // namespace strata
