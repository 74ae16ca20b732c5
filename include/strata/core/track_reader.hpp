// strata/core/track_reader.hpp: a track's records in order, from memory or from the spill file.
//
// The trace writers and key_averages read every track through `read_track`, so a session that
// spilled most of its records to disk is exported a block at a time, in memory bounded by what
// the session held in memory plus a block, instead of being read back whole first.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "strata/core/error.hpp"
#include "strata/core/record.hpp"
#include "strata/core/record_block.hpp"
#include "strata/core/record_order.hpp"
#include "strata/core/spill_file.hpp"
#include "strata/core/trace_data.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

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
