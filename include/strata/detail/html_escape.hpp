// strata/detail/html_escape.hpp: any bytes in, text that an HTML page shows as text out: in an
// element or attribute, and as a JSON string inside a <script> element.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "strata/detail/json_escape.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

inline constexpr std::string_view replacement_char = "\xef\xbf\xbd";  // U+FFFD

/// Appends `s` as HTML text, safe in an element and in a quoted attribute: `& < > " '` become
/// character references; NUL, other control bytes (tab and newline kept) and bytes that are
/// not valid UTF-8 become U+FFFD.
inline void append_html_text(std::string& out, std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence_length(s.substr(i));
      if (n == 0) {
        out += replacement_char;
        ++i;
      } else {
        out.append(s.data() + i, n);
        i += n;
      }
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\t': case '\n': out += static_cast<char>(c); break;
      default:
        if (c < 0x20 || c == 0x7f) out += replacement_char;
        else out += static_cast<char>(c);
    }
    ++i;
  }
}

inline std::string html_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_html_text(out, s);
  return out;
}

/// Appends `s` as a quoted JSON string that may stand inside a <script> element: besides
/// JSON's own escapes, `<`, `>` and `&` are written as `\u003c`, `\u003e`, `\u0026` (so no
/// `</script>` or `<!--` can appear), U+2028 and U+2029 as `\u2028`, `\u2029` (line ends to
/// older JavaScript), and NUL and bytes that are not valid UTF-8 become U+FFFD.
inline void append_script_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence_length(s.substr(i));
      if (n == 0) {
        out += replacement_char;
        ++i;
      } else if (n == 3 && c == 0xe2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
                 (static_cast<unsigned char>(s[i + 2]) == 0xa8 || static_cast<unsigned char>(s[i + 2]) == 0xa9)) {
        out += static_cast<unsigned char>(s[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
        i += 3;
      } else {
        out.append(s.data() + i, n);
        i += n;
      }
      continue;
    }
    if (c == 0) {
      out += replacement_char;
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
