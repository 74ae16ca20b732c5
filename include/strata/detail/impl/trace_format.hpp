// strata/detail/impl/trace_format.hpp: the file-name rule's definitions (strata/export/
// trace_format.hpp), with messages that name the file and what to do.
#pragma once

#include <string>
#include <string_view>

#include "strata/error.hpp"
#include "strata/export/trace_format.hpp"

namespace strata {
inline namespace v1 {

namespace detail {

// One message, built once: the rule's two refusals cost the file that compiles them little.
[[noreturn]] inline void refuse_trace_name(std::string_view path, const char* why) {
  std::string message(1, '\'');
  message.append(path).append("' ").append(why);
  throw error(message);
}

}  // namespace detail

trace_format trace_format_of(std::string_view path) {
  trace_format format{};
  if (trace_format_in_name(path, format)) return format;
  detail::refuse_trace_name(path,
                            "is not a trace file name: end it in .json or .json.gz (Chrome trace "
                            "JSON), or .pftrace or .pftrace.gz (Perfetto)");
}

void require_trace_format(std::string_view path, trace_format format) {
  if (trace_format_of(path) == format) return;
  detail::refuse_trace_name(path, format == trace_format::chrome_json
                                      ? "names a Perfetto (.pftrace) file, not Chrome trace JSON: "
                                        "export_perfetto_trace() writes it"
                                      : "names a Chrome trace JSON (.json) file, not Perfetto: "
                                        "export_chrome_trace() writes it");
}

}  // namespace v1
}  // namespace strata
