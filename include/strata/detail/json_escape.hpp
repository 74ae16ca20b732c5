// strata/detail/json_escape.hpp: any bytes in, a valid JSON string out.
#pragma once

#include <cstdint>
#include <string_view>

#include <fmt/format.h>

namespace strata {
inline namespace v1 {
namespace detail {

/// Length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629: no overlong forms,
/// no surrogates, nothing above U+10FFFF), or 0 when the first byte does not start one.
inline std::size_t utf8_sequence_length(std::string_view s) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;  // overlong
    if (b0 == 0xed) hi = 0x9f;  // UTF-16 surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;  // overlong
    if (b0 == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  return n;
}

/// Appends `s` as a quoted JSON string. Valid UTF-8 is copied unchanged (so it round-trips);
/// quotes, backslashes and control bytes are escaped; each byte that is not part of valid
/// UTF-8 becomes U+FFFD, so the output is always valid JSON whatever the input.
template <std::size_t N, class Allocator>
void append_json_string(fmt::basic_memory_buffer<char, N, Allocator>& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      // Copy the longest run of plain ASCII at once.
      std::size_t j = i + 1;
      while (j < s.size()) {
        const auto d = static_cast<unsigned char>(s[j]);
        if (d < 0x20 || d >= 0x80 || d == '"' || d == '\\') break;
        ++j;
      }
      out.append(s.data() + i, s.data() + j);
      i = j;
      continue;
    }
    if (c == '"' || c == '\\') {
      const char esc[2] = {'\\', static_cast<char>(c)};
      out.append(esc, esc + 2);
    } else if (c < 0x20) {
      const char* short_form = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r"
                             : c == '\b' ? "\\b" : c == '\f' ? "\\f" : nullptr;
      if (short_form != nullptr) {
        out.append(short_form, short_form + 2);
      } else {
        const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};
        out.append(esc, esc + 6);
      }
    } else {
      const std::size_t n = utf8_sequence_length(s.substr(i));
      if (n == 0) {
        static constexpr char replacement[] = "\xef\xbf\xbd";
        out.append(replacement, replacement + 3);
        ++i;
        continue;
      }
      out.append(s.data() + i, s.data() + i + n);
      i += n;
      continue;
    }
    ++i;
  }
  out.push_back('"');
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
