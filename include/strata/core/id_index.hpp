// strata/core/id_index.hpp: dense indices for 64-bit ids (correlation ids, descriptor
// addresses), for the passes over a session's records that group them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace strata {
inline namespace v1 {
namespace detail {

/// Dense indices 0, 1, 2, ... for nonzero 64-bit ids in first-seen order: an open-addressing
/// table, so a lookup is a multiply and usually one probe, with no allocation per id.
class id_index {
 public:
  /// The index of `id` (not 0), and whether it was seen for the first time.
  std::pair<std::uint32_t, bool> find_or_add(std::uint64_t id) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    std::size_t i = slot_of(id);
    while (slots_[i].id != 0) {
      if (slots_[i].id == id) return {slots_[i].index, false};
      i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i] = {id, size_};
    return {size_++, true};
  }

 private:
  struct slot {
    std::uint64_t id = 0;
    std::uint32_t index = 0;
  };

  // Correlation ids are handed out in sequence, so ids close in the trace are close in value.
  // Runs of 8 consecutive ids share two cache lines of slots, and the multiply scatters the
  // runs: scattering every id would miss the cache on nearly every lookup, and keeping long
  // runs together would let two runs overlap into one cluster that linear probing walks.
  std::size_t slot_of(std::uint64_t id) const noexcept {
    const std::uint64_t run = ((id >> 3) * 0x9e3779b97f4a7c15ull) >> 32;
    return static_cast<std::size_t>(run * 8 + (id & 7)) & (slots_.size() - 1);
  }

  void grow() {
    std::vector<slot> old(std::max<std::size_t>(64, slots_.size() * 2));
    old.swap(slots_);
    for (const slot& s : old) {
      if (s.id == 0) continue;
      std::size_t i = slot_of(s.id);
      while (slots_[i].id != 0) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = s;
    }
  }

  std::vector<slot> slots_;
  std::uint32_t size_ = 0;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
