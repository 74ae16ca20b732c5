// strata/detail/track_spans.hpp: a session's tracks cut into spans that several threads write
// at once, for the Perfetto writer.
//
// A writer thread per track leaves a core idle once the shorter tracks are done, and on a
// machine whose cores run at different speeds (a shared virtual machine's often do) the
// slowest core sets the time. Spans of about the same size, handed out one at a time, keep
// every core busy to the end.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "strata/record.hpp"
#include "strata/detail/session.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// Records [first, last) of `data.threads[track]` in read order, written as one packet sequence.
struct track_span {
  std::size_t track = 0;
  std::size_t first = 0, last = 0;
  bool ends_track = true;  ///< the track's last span (which reports its lost records)
};

/// Cuts each track held in memory with at least twice `span_records` records (0: none) after
/// about every `span_records` records, at the first record that begins (in ns) after every
/// record before it has ended: no slice is open across a cut, and a span's events all come
/// after those of the span before it. A spilled track is one span (its records are read back
/// from the start), and so is a track with a scope open throughout (a `main` around
/// everything), which has no such record.
///
/// One pass over the records, which only keeps the latest end: about a millisecond per million
/// records, run while another thread builds the flows.
class track_spans {
 public:
  track_spans(const trace_data& data, std::size_t span_records) {
    for (std::size_t t = 0; t < data.threads.size(); ++t) {
      const thread_track& track = data.threads[t];
      const std::size_t n = static_cast<std::size_t>(track.record_count());
      if (!track.spilled.empty() || span_records == 0 || n / 2 < span_records) {
        spans_.push_back({t, 0, n, true});
        continue;
      }
      const record* const records = track.records.data();
      std::size_t from = 0;                // where the current span begins
      std::size_t next_cut = span_records;  // where the search for its end starts
      std::uint64_t latest = 0;            // the latest end of the records before k (track's unit)
      for (std::size_t k = 0; k < n; ++k) {
        const record& r = records[k];
        // Ticks first: a later tick may round to the same nanosecond, never to an earlier one.
        if (k >= next_cut && r.begin > latest && data.ns_of(track, r.begin) > data.ns_of(track, latest)) {
          spans_.push_back({t, from, k, false});
          from = k;
          next_cut = k + span_records;
        }
        latest = std::max(latest, latest_end(r));
      }
      spans_.push_back({t, from, n, true});
    }
  }

  /// The spans, track by track, each track's in record order.
  const std::vector<track_span>& spans() const noexcept { return spans_; }

 private:
  // When a record stops being open: a scope at its end (not before its begin), the rest at
  // their begin (a counter's `end` holds its value).
  static std::uint64_t latest_end(const record& r) noexcept {
    return r.site->kind == record_kind::scope ? std::max(r.begin, r.end) : r.begin;
  }

  std::vector<track_span> spans_;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
