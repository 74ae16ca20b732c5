// strata/args/shape.hpp: a tensor's dimensions as a small value, for recording input shapes.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "strata/error.hpp"

namespace strata {
inline namespace v1 {

/// The dimensions of a tensor, stored inline (no allocation) so that an argument struct that
/// holds shapes stays trivially copyable. Up to `max_rank` dimensions.
///
/// **Example**
/// ```cpp
/// strata::shape s{4, 8};  // s.rank() == 2, s.numel() == 32
/// ```
class shape {
 public:
  static constexpr std::size_t max_rank = 8;

  constexpr shape() noexcept = default;
  /// Raises `strata::error` with more than `max_rank` dimensions.
  constexpr shape(std::initializer_list<std::int64_t> dims) { assign(dims.begin(), dims.size()); }
  constexpr explicit shape(std::span<const std::int64_t> dims) { assign(dims.data(), dims.size()); }

  constexpr std::size_t rank() const noexcept { return rank_; }
  constexpr std::int64_t operator[](std::size_t i) const noexcept { return dims_[i]; }
  constexpr const std::int64_t* begin() const noexcept { return dims_.data(); }
  constexpr const std::int64_t* end() const noexcept { return dims_.data() + rank_; }
  /// The number of elements (1 for rank 0).
  constexpr std::int64_t numel() const noexcept {
    std::int64_t n = 1;
    for (std::size_t i = 0; i < rank_; ++i) n *= dims_[i];
    return n;
  }

  friend constexpr bool operator==(const shape& a, const shape& b) noexcept {
    return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  constexpr void assign(const std::int64_t* dims, std::size_t n) {
    if (n > max_rank)
      throw error("shape: " + std::to_string(n) + " dimensions, at most " +
                  std::to_string(max_rank) + " are supported");
    std::copy_n(dims, n, dims_.begin());
    rank_ = static_cast<std::uint8_t>(n);
  }

  std::array<std::int64_t, max_rank> dims_{};
  std::uint8_t rank_ = 0;
};

}  // namespace v1
}  // namespace strata
