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
  // Runs of at most a block, merged into `out`; `block` holds a block as read and split.
  std::vector<record> block(record_block::capacity);
  std::vector<record> out;
  out.reserve(2 * record_block::capacity);
  block_order order(data.start_ticks);
  for (const spill_extent& e : track.spilled.extents) {
    if (e.count > block.size()) block.resize(e.count);
    if (!data.spill->read(e.offset, e.count, block.data()))
      throw error("cannot read the spill file back (" + std::to_string(e.count) + " records at byte " +
                  std::to_string(e.offset) + ")");
    const std::size_t kept = order.split(block.data(), e.count, block.data(), nullptr);
    sort_records(block.data(), kept);
    out.clear();
    for (std::size_t i = 0; i < kept; ++i) {
      while (next_late < late.size() && record_order(late[next_late], block[i])) out.push_back(late[next_late++]);
      out.push_back(block[i]);
    }
    if (!out.empty()) f(out.data(), out.size());
  }
  // The records that stayed in memory are in order already; the late records go in between.
  const record* at = track.records.data();
  const record* const end = at + track.records.size();
  for (; next_late < late.size(); ++next_late) {
    const record& l = late[next_late];
    const record* upto = std::partition_point(at, end, [&](const record& r) { return !record_order(l, r); });
    if (upto != at) f(at, static_cast<std::size_t>(upto - at));
    f(&l, 1);
    at = upto;
  }
  if (at != end) f(at, static_cast<std::size_t>(end - at));
}

/// Reads the spilled records of every track of `data` back into its `records`, in order, and
/// lets the spill file go: for a reader that wants the records in memory (`profiler::data()`).
/// Raises `strata::error` if the spill file cannot be read (the tracks are then as they were).
inline void load_spilled(trace_data& data) {
  std::vector<std::vector<record>> loaded(data.threads.size());
  for (std::size_t i = 0; i < data.threads.size(); ++i) {
    const thread_track& t = data.threads[i];
    if (t.spilled.empty()) continue;
    loaded[i].reserve(static_cast<std::size_t>(t.record_count()));
    read_track(data, t, [&](const record* first, std::size_t n) { loaded[i].insert(loaded[i].end(), first, first + n); });
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
