// strata/detail/padded_bytes.hpp: bytes encoded once and copied into many events.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace strata {
inline namespace v1 {
namespace detail {

/// Bytes rendered once (a JSON fragment, an encoded protobuf field run) and copied into many
/// events. The storage is padded to whole `Block`-byte blocks so that a copy moves fixed-size
/// blocks instead of calling memcpy; a copy may write up to `Block - 1` bytes past the end, which
/// the caller's reservation covers (`copy_slack`).
template <std::size_t Block>
class padded_bytes {
 public:
  static constexpr std::size_t block = Block;
  static constexpr std::size_t copy_slack = Block;

  padded_bytes() = default;
  explicit padded_bytes(std::string_view b)
      : bytes_((b.size() + Block - 1) / Block * Block, '\0'), size_(b.size()) {
    bytes_.replace(0, b.size(), b);
  }

  std::size_t size() const noexcept { return size_; }
  /// Bytes a copy may touch.
  std::size_t padded_size() const noexcept { return bytes_.size(); }
  std::string_view view() const noexcept { return {bytes_.data(), size_}; }

  char* copy_to(char* p) const noexcept {
    // Locals: a store through a char* may alias anything, `this` included, and would make the
    // compiler reload both after every block.
    const char* const from = bytes_.data();
    const std::size_t n = size_;
    for (std::size_t i = 0; i < n; i += Block) std::memcpy(p + i, from + i, Block);
    return p + n;
  }

 private:
  std::string bytes_;
  std::size_t size_ = 0;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
