// strata/core/record_order.hpp: the order of a track's records in a trace, and how a thread's
// blocks are put in that order one block at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "strata/core/record.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// Oldest first; of two scopes opened on the same tick the longer (the parent) comes first.
inline bool record_order(const record& a, const record& b) noexcept {
  if (a.begin != b.begin) return a.begin < b.begin;
  const bool a_scope = a.kind() == record_kind::scope;
  const bool b_scope = b.kind() == record_kind::scope;
  if (a_scope && b_scope) return a.end > b.end;
  return a_scope && !b_scope;
}

/// Sorts `n` records by `record_order`, stably, doing nothing when they are in order already
/// (a block of scopes that do not nest is).
inline void sort_records(record* first, std::size_t n) {
  if (!std::is_sorted(first, first + n, record_order)) std::stable_sort(first, first + n, record_order);
}

/// A thread writes a scope's record when the scope ends, so its blocks hold records in order of
/// their end, and a trace lists them in order of their begin. Sorting each block is not enough:
/// a scope still open when a block filled (an ancestor of records in it) is written to a later
/// block but begins before them. `block_order` reads a thread's blocks in the order they were
/// written and sets such records apart as *late*: those that come, in `record_order`, before
/// the greatest record of the blocks before theirs, or that began before the session did. The
/// rest come in order once each block is sorted, and the late ones, sorted, merge into them.
/// The late records are scopes open at the end of an earlier block, so a thread nesting scopes
/// `d` deep sets apart at most `d` a block. The same blocks read again give the same split: the
/// spill writer splits each block it spills (keeping only the late records), and a reader of
/// the spill file splits them again to skip those.
class block_order {
 public:
  /// `floor`: the session's first tick; a record that began before it is late.
  explicit block_order(std::uint64_t floor = 0) noexcept : floor_(floor) {}

  /// Splits the next block's `n` records: those in order go to `kept` (if not null, which must
  /// have room for `n`; it may be `block` itself) and the late ones are appended to `late` (if not null). Returns how many
  /// were kept.
  std::size_t split(const record* block, std::size_t n, record* kept, std::vector<record>* late) {
    std::size_t k = 0;
    record greatest{};  // a copy: `kept` may be `block` itself
    bool any = false;
    for (std::size_t i = 0; i < n; ++i) {
      const record r = block[i];
      if (r.begin < floor_ || (has_greatest_ && record_order(r, greatest_))) {
        if (late != nullptr) late->push_back(r);
        continue;
      }
      if (kept != nullptr) kept[k] = r;
      ++k;
      if (!any || record_order(greatest, r)) greatest = r;
      any = true;
    }
    if (any) {  // no late record can be the greatest: it comes before an earlier one
      greatest_ = greatest;
      has_greatest_ = true;
    }
    return k;
  }

 private:
  std::uint64_t floor_;
  record greatest_{};
  bool has_greatest_ = false;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
