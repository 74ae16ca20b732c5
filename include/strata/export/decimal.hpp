// strata/export/decimal.hpp: numbers as JSON text, written straight into a char buffer.
//
// The Chrome trace writer spends most of its time on numbers (two timestamps, a pid, a tid and
// often a correlation id per event), so they are written here by hand: two digits per step
// from a table, no format string to parse, no buffer growth checks. Each function writes at
// `p`, which must have room for the stated maximum, and returns the end of what it wrote.
// The text is exactly what {fmt}'s "{}" (and "{}.{:03}" for microseconds) would produce.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

namespace strata {
inline namespace v1 {
namespace detail {

/// Most characters `write_decimal` writes: 18446744073709551615.
inline constexpr std::size_t max_decimal_chars = 20;
/// Most characters `write_us` writes: a sign, 16 digits, a point and three decimals.
inline constexpr std::size_t max_us_chars = 21;
/// Most characters `write_json_number` writes: -1.7976931348623157e+308, with room to spare.
inline constexpr std::size_t max_json_number_chars = 32;

inline constexpr char digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/// Writes the two digits of `v` < 100.
inline char* write_two_digits(char* p, std::uint64_t v) noexcept {
  p[0] = digit_pairs[v * 2];
  p[1] = digit_pairs[v * 2 + 1];
  return p + 2;
}

/// Writes `v` < 10^8 as exactly eight digits, zeros in front.
inline char* write_eight_digits(char* p, std::uint64_t v) noexcept {
  const std::uint64_t high = v / 10000, low = v % 10000;
  write_two_digits(p, high / 100);
  write_two_digits(p + 2, high % 100);
  write_two_digits(p + 4, low / 100);
  write_two_digits(p + 6, low % 100);
  return p + 8;
}

/// Writes `v` < 10^8 without zeros in front.
inline char* write_up_to_eight_digits(char* p, std::uint64_t v) noexcept {
  const int digits = v < 10000 ? (v < 100 ? (v < 10 ? 1 : 2) : (v < 1000 ? 3 : 4))
                               : (v < 1000000 ? (v < 100000 ? 5 : 6) : (v < 10000000 ? 7 : 8));
  char* const end = p + digits;
  char* q = end;
  while (v >= 100) {
    q -= 2;
    write_two_digits(q, v % 100);
    v /= 100;
  }
  if (v >= 10)
    write_two_digits(q - 2, v);
  else
    q[-1] = static_cast<char>('0' + v);
  return end;
}

/// Writes `v` in decimal, no sign, no zeros in front. Timestamps have 10 to 14 digits, so
/// the digits go in blocks of eight with no loop over the digit count.
inline char* write_decimal(char* p, std::uint64_t v) noexcept {
  constexpr std::uint64_t e8 = 100000000;
  if (v < e8) return write_up_to_eight_digits(p, v);
  if (v < e8 * e8) return write_eight_digits(write_up_to_eight_digits(p, v / e8), v % e8);
  p = write_up_to_eight_digits(p, v / (e8 * e8));  // at most 1844
  return write_eight_digits(write_eight_digits(p, v / e8 % e8), v % e8);
}

/// ".000" to ".999": the point and three decimals of a microsecond value in one 4-byte copy.
inline constexpr auto point_and_three_digits = [] {
  std::array<char, 4000> t{};
  for (std::size_t i = 0; i < 1000; ++i) {
    t[i * 4] = '.';
    t[i * 4 + 1] = static_cast<char>('0' + i / 100);
    t[i * 4 + 2] = static_cast<char>('0' + i / 10 % 10);
    t[i * 4 + 3] = static_cast<char>('0' + i % 10);
  }
  return t;
}();

/// Writes nanoseconds as microseconds with exactly three decimals (`-1.500` for -1500), so a
/// trace keeps nanosecond resolution.
inline char* write_us(char* p, std::int64_t ns) noexcept {
  // The magnitude in unsigned arithmetic: negating INT64_MIN would overflow.
  std::uint64_t magnitude = static_cast<std::uint64_t>(ns);
  if (ns < 0) {
    *p++ = '-';
    magnitude = 0 - magnitude;
  }
  p = write_decimal(p, magnitude / 1000);
  std::memcpy(p, &point_and_three_digits[magnitude % 1000 * 4], 4);
  return p + 4;
}

/// Writes the timestamps of one track, which share their leading digits: the digits above the
/// last four of the whole microseconds are rendered once per 10 ms and copied after that.
/// The text is `write_us`'s.
class us_writer {
 public:
  char* operator()(char* p, std::int64_t ns) noexcept {
    const auto magnitude = static_cast<std::uint64_t>(ns);
    const std::uint64_t us = magnitude / 1000;
    const std::uint64_t high = us / 10000;
    if (ns < 0 || high == 0) return write_us(p, ns);
    if (high != high_) {
      high_ = high;
      high_size_ = static_cast<std::size_t>(write_decimal(high_text_, high) - high_text_);
    }
    std::memcpy(p, high_text_, sizeof high_text_);  // one fixed-size copy; the caller has room
    p += high_size_;
    const std::uint64_t low = us % 10000;
    write_two_digits(p, low / 100);
    write_two_digits(p + 2, low % 100);
    std::memcpy(p + 4, &point_and_three_digits[magnitude % 1000 * 4], 4);
    return p + 8;
  }

  /// Bytes a call may touch.
  static constexpr std::size_t max_chars = 16 + 8;

 private:
  std::uint64_t high_ = 0;  // 0: nothing cached (a high part of 0 is never cached)
  std::size_t high_size_ = 0;
  char high_text_[16] = {};  // at most 15 digits: INT64_MAX / 10^7
};

/// Writes a finite double as {fmt}'s "{}" does: the shortest text that reads back as the same
/// value. Whole numbers (the usual counter sample: a depth, a byte count) take a fast path;
/// {fmt} writes those without a point or exponent below 1e16, and they are exact below 2^53.
inline char* write_json_number(char* p, double v) noexcept {
  constexpr double exact_whole_limit = 9007199254740992.0;  // 2^53
  if (v > -exact_whole_limit && v < exact_whole_limit && !(v == 0 && std::signbit(v))) {
    const auto whole = static_cast<std::int64_t>(v);
    if (static_cast<double>(whole) == v) {
      std::uint64_t magnitude = static_cast<std::uint64_t>(whole);
      if (whole < 0) {
        *p++ = '-';
        magnitude = 0 - magnitude;
      }
      return write_decimal(p, magnitude);
    }
  }
  return fmt::format_to(p, "{}", v);
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
