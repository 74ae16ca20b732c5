// strata/detail/id_index.hpp: dense indices for 64-bit ids (correlation ids, descriptor
// addresses), for the passes over a session's records that group them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "strata/detail/huge_page_allocator.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// Dense indices 0, 1, 2, ... for nonzero 64-bit ids in first-seen order, with no allocation
/// per id. Ids from a counter (correlation ids are) fall in a window looked up by
/// subtraction, as long as the window stays at most 8 slots per id; any other id goes to an
/// open-addressing table, where a lookup is a multiply and usually one probe.
class id_index {
 public:
  /// The index of `id` (not 0), and whether it was seen for the first time.
  [[gnu::always_inline]] std::pair<std::uint32_t, bool> find_or_add(std::uint64_t id) {
    const std::uint64_t offset = id - window_base_;  // ids below the base wrap to huge offsets
    if (offset < window_.size()) [[likely]] {  // inline: an id in the window
      std::uint32_t& index = window_[offset];
      if (index != none) return {index, false};
      index = size_;
      return {size_++, true};
    }
    return find_or_add_outside(id);
  }

 private:
  static constexpr std::uint32_t none = static_cast<std::uint32_t>(-1);
  struct slot {
    std::uint64_t id = 0;
    std::uint32_t index = 0;
  };

  std::uint64_t max_window() const noexcept { return 8 * (std::uint64_t{size_} + 4096); }

  // An id beyond the window (or the first): the window grows over it while it stays at most 8
  // slots an id, else the id goes to the table.
  [[gnu::noinline]] std::pair<std::uint32_t, bool> find_or_add_outside(std::uint64_t id) {
    if (window_.empty()) window_base_ = id;
    const std::uint64_t offset = id - window_base_;
    if (offset < max_window() && extend_window(offset)) return find_or_add(id);  // now in the window
    return find_or_add_hashed(id);
  }

  /// Grows the window over `offset`; ids already in the table that it now covers keep their
  /// indices (their table entries are not consulted again).
  bool extend_window(std::uint64_t offset) {
    const std::size_t old_size = window_.size();
    const std::uint64_t grown = std::min<std::uint64_t>(max_window(), std::max<std::uint64_t>(offset + 1, 2 * old_size));
    window_.resize(static_cast<std::size_t>(grown), none);
    if (hashed_ != 0)
      for (const slot& s : slots_)
        if (s.id != 0 && s.id - window_base_ >= old_size && s.id - window_base_ < window_.size())
          window_[static_cast<std::size_t>(s.id - window_base_)] = s.index;
    return true;
  }

  std::pair<std::uint32_t, bool> find_or_add_hashed(std::uint64_t id) {
    if ((hashed_ + 1) * 2 > slots_.size()) grow();
    std::size_t i = slot_of(id);
    while (slots_[i].id != 0) {
      if (slots_[i].id == id) return {slots_[i].index, false};
      i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i] = {id, size_};
    ++hashed_;
    return {size_++, true};
  }

  std::size_t slot_of(std::uint64_t id) const noexcept {
    return static_cast<std::size_t>((id * 0x9e3779b97f4a7c15ull) >> 32) & (slots_.size() - 1);
  }

  void grow() {
    std::vector<slot, huge_page_allocator<slot>> old(std::max<std::size_t>(64, slots_.size() * 2));
    old.swap(slots_);
    for (const slot& s : old) {
      if (s.id == 0) continue;
      std::size_t i = slot_of(s.id);
      while (slots_[i].id != 0) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = s;
    }
  }

  // Scratch of one pass over a session, tens of MiB for a large one: in huge pages.
  std::vector<std::uint32_t, huge_page_allocator<std::uint32_t>> window_;
  std::uint64_t window_base_ = 0;
  std::vector<slot, huge_page_allocator<slot>> slots_;
  std::size_t hashed_ = 0;
  std::uint32_t size_ = 0;
};

/// A value made once per address (what an exporter renders once per descriptor), found through
/// an id_index. References stay valid as values are added. Used within one export: a `make`
/// that throws ends that export, and the table with it.
template <class T>
class by_address {
 public:
  /// The value of `key`, made by `make()` the first time `key` is seen.
  template <class Make>
  [[gnu::always_inline]] T& find_or_make(const void* key, Make&& make) {
    // Asked for every record an exporter writes: a small cache in front of the index (a
    // trace's records come from a few dozen sites), looked up inline.
    cached& c = cache_[static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(key) * 0x9e3779b97f4a7c15ull) >> 59)];
    if (c.key == key) [[likely]] return *c.value;
    return find_or_make_uncached(c, key, make);
  }

 private:
  struct cached {
    const void* key = nullptr;  // keys are never null (id_index's ids are not 0)
    T* value = nullptr;
  };

  template <class Make>
  [[gnu::noinline]] T& find_or_make_uncached(cached& c, const void* key, Make& make) {
    const auto [index, fresh] = ids_.find_or_add(reinterpret_cast<std::uintptr_t>(key));
    if (fresh) values_.push_back(make());
    c = {key, &values_[index]};
    return *c.value;
  }

  id_index ids_;
  std::deque<T> values_;
  cached cache_[32] = {};  // by a hash of the key (the top 5 bits)
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
