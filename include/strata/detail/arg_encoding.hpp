// strata/detail/arg_encoding.hpp: an argument set as a few machine words, the key under which it
// is looked up and the form in which it reaches strata's implementation to be rendered.
//
// Per member, in declaration order: a header word (kind in bits 0-7, a size from bit 8: a
// shape's rank or a string's length in bytes), the member's name (a pointer to static text),
// then the value: a shape's dimensions (one word each), one word for a number or bool (a
// float as the bits of the double it converts to), or a string's bytes packed eight to a word
// (the last one zero-padded).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "strata/config.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

enum class arg_kind : std::uint8_t {
  shape = 1,
  signed_int = 2,
  unsigned_int = 3,
  float32 = 4,
  float64 = 5,
  boolean = 6,
  string = 7,
};

constexpr std::uint64_t arg_header(arg_kind k, std::size_t size) noexcept {
  return static_cast<std::uint64_t>(k) | (static_cast<std::uint64_t>(size) << 8);
}
constexpr arg_kind arg_kind_of(std::uint64_t header) noexcept {
  return static_cast<arg_kind>(header & 0xff);
}
constexpr std::size_t arg_size_of(std::uint64_t header) noexcept {
  return static_cast<std::size_t>(header >> 8);
}
/// Words a string of `bytes` bytes takes.
constexpr std::size_t arg_string_words(std::size_t bytes) noexcept { return (bytes + 7) / 8; }

/// Where an argument set is encoded: a buffer of its own (enough for a dozen shapes), or one
/// the caller gives. Past its end the words are only counted and hashed, and `overflowed()`
/// tells the caller to encode again into a buffer of `size()` words.
class arg_words {
 public:
  static constexpr std::size_t inline_capacity = 64;

  arg_words() noexcept : words_(inline_), capacity_(inline_capacity) {}
  arg_words(std::uint64_t* words, std::size_t capacity) noexcept
      : words_(words), capacity_(capacity) {}
  arg_words(const arg_words&) = delete;
  arg_words& operator=(const arg_words&) = delete;

  STRATA_FORCE_INLINE void put(std::uint64_t w) noexcept {
    if (count_ < capacity_) [[likely]]
      words_[count_] = w;
    ++count_;
    hash_ = (((hash_ << 5) | (hash_ >> 59)) ^ w) * 0x9e3779b97f4a7c15ull;
  }

  void put_bytes(const char* bytes, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; i += 8) {
      std::uint64_t w = 0;
      std::memcpy(&w, bytes + i, n - i < 8 ? n - i : 8);
      put(w);
    }
  }

  const std::uint64_t* data() const noexcept { return words_; }
  std::size_t size() const noexcept { return count_; }
  bool overflowed() const noexcept { return count_ > capacity_; }
  std::uint64_t hash() const noexcept { return hash_ ^ count_; }

 private:
  std::uint64_t* words_;
  std::size_t capacity_;
  std::size_t count_ = 0;
  std::uint64_t hash_ = 0;
  std::uint64_t inline_[inline_capacity];
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
