// strata/export/proto_wire.hpp: the protobuf wire format, enough to write a message by hand.
//
// A message is a sequence of fields, each a key (field number << 3 | wire type, as a varint)
// followed by its value: a varint, 8 little-endian bytes, or a length (varint) and that many
// bytes (strings and nested messages). Nothing here knows any schema; the Perfetto writer
// (export/perfetto_trace.hpp) names the fields. No libprotobuf: a program that uses strata
// still builds with nothing but the compiler and -pthread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace strata {
inline namespace v1 {
namespace detail {
namespace proto {

enum class wire : std::uint8_t { varint = 0, fixed64 = 1, length_delimited = 2 };

/// The key of field `field` with wire type `w`, as the varint that precedes the value.
constexpr std::uint64_t key(std::uint32_t field, wire w) noexcept {
  return (std::uint64_t{field} << 3) | static_cast<std::uint64_t>(w);
}

/// Bytes the varint encoding of `v` takes (1 to 10).
constexpr std::size_t varint_size(std::uint64_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

/// Writes `v` as a varint at `p`; returns the end. Room for varint_size(v) bytes is the caller's.
inline char* put_varint(char* p, std::uint64_t v) noexcept {
  while (v >= 0x80) {
    *p++ = static_cast<char>(static_cast<std::uint8_t>(v) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

/// Writes `v` as 8 little-endian bytes.
inline char* put_fixed64(char* p, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(static_cast<std::uint8_t>(v >> (8 * i)));
  return p + 8;
}

/// A message built field by field into a string: for the parts of a trace written once
/// (descriptors, interned names, argument annotations), where clarity beats speed. A nested
/// message is built as its own `message` and added whole, since its length comes first.
class message {
 public:
  message& varint(std::uint32_t field, std::uint64_t v) {
    raw_varint(key(field, wire::varint));
    raw_varint(v);
    return *this;
  }
  /// A signed value in a plain (not zigzag) varint: int32 and int64 fields.
  message& int64(std::uint32_t field, std::int64_t v) { return varint(field, static_cast<std::uint64_t>(v)); }
  message& fixed64(std::uint32_t field, std::uint64_t v) {
    raw_varint(key(field, wire::fixed64));
    char b[8];
    put_fixed64(b, v);
    bytes_.append(b, 8);
    return *this;
  }
  message& double_value(std::uint32_t field, double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return fixed64(field, bits);
  }
  /// A string or bytes field (strings must be valid UTF-8; the caller sees to it).
  message& bytes(std::uint32_t field, std::string_view v) {
    raw_varint(key(field, wire::length_delimited));
    raw_varint(v.size());
    bytes_.append(v);
    return *this;
  }
  message& nested(std::uint32_t field, const message& m) { return bytes(field, m.view()); }

  /// Appends encoded fields as they are (e.g. fields encoded once and reused).
  message& raw(std::string_view encoded) {
    bytes_.append(encoded);
    return *this;
  }

  std::string_view view() const noexcept { return bytes_; }
  std::size_t size() const noexcept { return bytes_.size(); }
  bool empty() const noexcept { return bytes_.empty(); }
  void clear() noexcept { bytes_.clear(); }

 private:
  void raw_varint(std::uint64_t v) {
    char b[10];
    bytes_.append(b, static_cast<std::size_t>(put_varint(b, v) - b));
  }

  std::string bytes_;
};

}  // namespace proto
}  // namespace detail
}  // namespace v1
}  // namespace strata
