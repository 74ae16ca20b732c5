// strata/core/drained_records.hpp: what drains have taken out of one thread's ring so far.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "strata/core/record.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// Records drained out of one ring, oldest first, kept in chunks that are never reallocated:
/// a drain running while threads record appends without copying what earlier drains took (a
/// single growing vector would copy everything at each doubling, and hold the drain up for as
/// long as that takes while the rings fill).
class drained_records {
 public:
  /// The vector the next drain appends to: it has room for `n` more records without
  /// reallocating (the last chunk, or a new one, each new chunk twice the previous up to 4 Mi
  /// records).
  std::vector<record>& room_for(std::size_t n) {
    if (chunks_.empty() || chunks_.back().capacity() - chunks_.back().size() < n) {
      const std::size_t grown =
          chunks_.empty() ? first_chunk : std::min(chunks_.back().capacity() * 2, largest_chunk);
      chunks_.emplace_back();
      chunks_.back().reserve(std::max(n, grown));
    }
    return chunks_.back();
  }

  /// Appends records made elsewhere (device tracks).
  void append(std::span<const record> records) {
    std::vector<record>& to = room_for(records.size());
    to.insert(to.end(), records.begin(), records.end());
  }

  std::size_t size() const noexcept {
    std::size_t n = 0;
    for (const auto& c : chunks_) n += c.size();
    return n;
  }

  /// Calls `f(const record*, std::size_t)` for each chunk, oldest first, without allocating
  /// (what a crash handler may do).
  template <class F>
  void for_each_chunk(F&& f) const noexcept {
    for (const auto& c : chunks_) f(c.data(), c.size());
  }

  /// Appends everything drained so far to `out`, oldest first; leaves this as it is.
  void copy_to(std::vector<record>& out) const {
    out.reserve(out.size() + size());
    for (const auto& c : chunks_) out.insert(out.end(), c.begin(), c.end());
  }

  /// Everything drained so far as one vector, oldest first; leaves this empty.
  std::vector<record> take() {
    std::vector<record> all;
    if (chunks_.size() == 1) {
      all = std::move(chunks_.front());
    } else {
      all.reserve(size());
      for (auto& c : chunks_) {
        all.insert(all.end(), c.begin(), c.end());
        std::vector<record>().swap(c);  // give each chunk back as soon as it is copied
      }
    }
    chunks_.clear();
    return all;
  }

 private:
  static constexpr std::size_t first_chunk = std::size_t{1} << 12;
  static constexpr std::size_t largest_chunk = std::size_t{1} << 22;
  std::vector<std::vector<record>> chunks_;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
