// strata/detail/record_order.hpp: the order of a track's records in a trace; how a thread's
// blocks are put in that order one block at a time; and a track read in that order, from memory
// or a block at a time from the spill file.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "strata/error.hpp"
#include "strata/record.hpp"
#include "strata/trace_data.hpp"
#include "strata/detail/record_block.hpp"
#include "strata/detail/spill_file.hpp"


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

/// Sorts one block's records (at most a block: 2048) by `record_order`, stably. A block holds
/// scopes in the order they ended, so each record is out of place only by the records it
/// encloses that share the block; an insertion sort moves each that far and no further, and
/// needs no buffer (std::stable_sort allocates one on every call).
inline void sort_block(record* first, std::size_t n) noexcept {
  for (std::size_t i = 1; i < n; ++i) {
    if (!record_order(first[i], first[i - 1])) continue;
    const record r = first[i];
    std::size_t j = i;
    for (; j > 0 && record_order(r, first[j - 1]); --j) first[j] = first[j - 1];
    first[j] = r;
  }
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
      if (kept != nullptr && (kept != block || k != i)) kept[k] = r;
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


/// Calls `f(const record* first, std::size_t n)` with the records of `track` (one of
/// `data.threads`) in order, oldest first, in one or more runs. A track that did not spill is
/// one run of `track.records`. A spilled track is read block by block from the spill file:
/// each block is split as the spill writer split it (record_order.hpp), sorted, and merged
/// with the track's late records, then the records that stayed in memory follow, merged with
/// the rest of the late ones. Raises `strata::error` if the spill file cannot be read.
template <class F>
void read_track(const trace_data& data, const thread_track& track, F&& f) {
  if (track.spilled.empty()) {
    if (!track.records.empty()) f(track.records.data(), track.records.size());
    return;
  }
  if (!data.spill) throw error("a spilled track without its spill file");
  const std::vector<record>& late = track.spilled.late;
  std::size_t next_late = 0;
  // `block` holds a block as read, then split and sorted in place.
  std::vector<record> block(record_block::capacity);
  // Passes [first, last), a run in order, with the late records that go before its records
  // merged in: runs between them go to `f` as they are, without a copy.
  const auto merge_late = [&](const record* first, const record* const last) {
    for (; next_late < late.size() && first != last; ++next_late) {
      const record& l = late[next_late];
      const record* upto = std::partition_point(first, last, [&](const record& r) { return !record_order(l, r); });
      if (upto == last) break;  // l goes after this run
      if (upto != first) f(first, static_cast<std::size_t>(upto - first));
      f(&l, 1);
      first = upto;
    }
    if (first != last) f(first, static_cast<std::size_t>(last - first));
  };
  block_order order(data.start_ticks);
  for (const spill_extent& e : track.spilled.extents) {
    if (e.count > block.size()) block.resize(e.count);
    if (!data.spill->read(e.offset, e.count, block.data()))
      throw error("cannot read the spill file back (" + std::to_string(e.count) + " records at byte " +
                  std::to_string(e.offset) + ")");
    const std::size_t kept = order.split(block.data(), e.count, block.data(), nullptr);
    sort_block(block.data(), kept);
    merge_late(block.data(), block.data() + kept);
  }
  // The records that stayed in memory are in order already; then what is left of the late ones.
  merge_late(track.records.data(), track.records.data() + track.records.size());
  for (; next_late < late.size(); ++next_late) f(&late[next_late], 1);
}

/// Replaces `out` with every record of `track`, in order (`read_track`).
inline void read_track_into(const trace_data& data, const thread_track& track, std::vector<record>& out) {
  out.clear();
  out.reserve(static_cast<std::size_t>(track.record_count()));
  read_track(data, track, [&](const record* first, std::size_t n) { out.insert(out.end(), first, first + n); });
}

/// Reads the spilled records of every track of `data` back into its `records`, in order, and
/// lets the spill file go: for a reader that wants the records in memory (`profiler::data()`).
/// Raises `strata::error` if the spill file cannot be read (the tracks are then as they were).
inline void load_spilled(trace_data& data) {
  std::vector<std::vector<record>> loaded(data.threads.size());
  for (std::size_t i = 0; i < data.threads.size(); ++i) {
    const thread_track& t = data.threads[i];
    if (!t.spilled.empty()) read_track_into(data, t, loaded[i]);
  }
  for (std::size_t i = 0; i < data.threads.size(); ++i) {
    thread_track& t = data.threads[i];
    if (t.spilled.empty()) continue;
    t.records = std::move(loaded[i]);
    t.spilled = {};
  }
  data.spill.reset();
}

}  // namespace detail

}  // namespace v1
}  // namespace strata
