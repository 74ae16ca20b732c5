// strata/detail/flows.hpp: the arrows that follow one correlation id through the layers.
//
// A framework op, the runtime calls it caused and the device work they launched carry one
// correlation id. The trace draws that path as Chrome flow events (`s`, `t`, `f`), which
// Perfetto UI shows as arrows: op -> each runtime call in time order, and to the first record
// of each device track the id reached from the latest of those host records that began before
// it (the runtime call that launched it). Records with a category of their own that are not
// device records (queue waits) are not part of the path.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "strata/record.hpp"
#include "strata/detail/huge_page_allocator.hpp"
#include "strata/detail/id_index.hpp"
#include "strata/detail/record_order.hpp"
#include "strata/detail/session.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// One end or step of a flow, bound to the record `records[record]` of `threads[thread]`.
struct flow_point {
  char phase = 's';  ///< 's' start, 't' step, 'f' end
  std::uint64_t id = 0;
  std::uint64_t correlation_id = 0;
  std::size_t thread = 0;
  std::size_t record = 0;  ///< the record's place in its track, oldest first
  std::uint64_t begin = 0; ///< when the record began (its track's unit)
};

/// A session's flow points: as many as its records on correlation paths, in huge pages.
using flow_points = std::vector<flow_point, huge_page_allocator<flow_point>>;

/// Sorts [first, last) stably by `less`. A path holds a handful of records, for which an
/// insertion sort beats std::stable_sort, which allocates a buffer on every call.
template <class It, class Less>
[[gnu::always_inline]] inline void small_stable_sort(It first, It last, Less less) {
  if (last - first < 2) return;  // most paths: one runtime call, no device work
  if (last - first > 32) {
    std::stable_sort(first, last, less);
    return;
  }
  for (It i = first; i != last; ++i) {
    auto v = *i;
    It j = i;
    for (; j != first && less(v, *(j - 1)); --j) *j = *(j - 1);
    *j = v;
  }
}

/// Whether `r` may be on a correlation path: a scope with a correlation id that is not a
/// record with a category of its own outside the device (a queue wait).
inline bool on_flow_path(const record& r) noexcept {
  return r.payload != 0 && r.kind() == record_kind::scope && (r.site->category == nullptr || r.layer() == layer::device);
}

/// Collects the records on correlation paths as they are offered (the Chrome trace writer
/// offers each record it writes, so the records are read once), then builds the flows.
///
/// A path keeps its op (the outermost framework or user record) in place, and links only its
/// runtime and device records: an export's scratch memory is fresh pages, which the kernel
/// clears, so every byte kept per record costs twice.
class flow_builder {
 public:
  /// Room is reserved (address space, not memory) for every record of `data` to be on a path,
  /// so the arrays never move as they grow.
  explicit flow_builder(const trace_data& data) : data_(data) {
    const auto room = static_cast<std::size_t>(std::min<std::uint64_t>(data.recorded(), max_reserved));
    members_.reserve(room);
    paths_.reserve(room);
  }

  /// Offers the record `index` (oldest first, as `read_track` reads them) of
  /// `data.threads[thread]`; records must be offered thread by thread, oldest first.
  /// Records without a correlation id may be skipped.
  [[gnu::always_inline]] void offer(std::size_t thread, std::size_t index, const record& r) {
    if (!on_flow_path(r)) return;
    const ::strata::layer l = r.layer();
    const bool is_op = l == layer::framework || l == layer::user;
    // An op nested in the last op offered with its id (an aten::matmul inside its
    // aten::linear) cannot be the outermost: that one is, or an op earlier still.
    if (is_op && r.payload == last_op_.payload &&
        (last_op_.begin < r.begin || (last_op_.begin == r.begin && last_op_.end >= r.end)))
      return;
    // Plain variables, not a structured binding: g++ 12 at -O2 takes the binding for a
    // dangling pointer to the returned pair (-Wdangling-pointer).
    const std::pair<std::uint32_t, bool> found = ids_.find_or_add(r.payload);
    if (found.second) paths_.push_back({r.payload, 0, 0, 0, none, none, none});
    path& p = paths_[found.first];
    if (is_op) {
      last_op_ = {r.payload, r.begin, r.end};
      // The outermost op of the id: the earliest, and the longer of two on one tick.
      if (p.op_thread == none || r.begin < p.op_begin || (r.begin == p.op_begin && r.end > p.op_end)) {
        p.op_begin = r.begin;
        p.op_end = r.end;
        p.op_record = index;
        p.op_thread = static_cast<std::uint32_t>(thread);
      }
      return;
    }
    const auto m = static_cast<std::uint32_t>(members_.size());
    members_.push_back({r.begin, index, static_cast<std::uint32_t>(thread), l == layer::device, none});
    if (p.first == none) {
      p.first = m;
    } else {
      members_[p.last].next = m;
    }
    p.last = m;
  }

  /// Calls `flow(const flow_point* points, std::size_t n)` for each flow, in the order of their
  /// ids (counting from 1), with its points in order.
  template <class Flow>
  void build(Flow&& flow) const {
    std::uint64_t next_id = 1;
    build(0, paths(), next_id, flow);
  }

  /// The same for the paths [first, last) in the order they were first seen (`paths()` before
  /// and after offering a track bound the paths first seen on it), their flow ids counting
  /// from `next_id`, which is left after the last.
  template <class Flow>
  void build(std::size_t first, std::size_t last, std::uint64_t& next_id, Flow&& flow) const;

  /// How many paths have been seen so far.
  std::size_t paths() const noexcept { return paths_.size(); }

  /// The flow events, ordered by flow id; ids count from 1.
  flow_points build() const {
    flow_points out;
    out.reserve(max_points());  // address space: only what is made is touched
    build([&](const flow_point* points, std::size_t n) { out.insert(out.end(), points, points + n); });
    return out;
  }

  /// At most how many points `build` makes (an upper bound, to reserve for).
  std::size_t max_points() const noexcept { return paths_.size() + 2 * members_.size(); }

 private:
  // Beyond 2^26 members (1.5 GiB of them) the arrays grow as vectors do.
  static constexpr std::uint64_t max_reserved = std::uint64_t{1} << 26;
  static constexpr std::uint32_t none = static_cast<std::uint32_t>(-1);
  // A runtime or device record of a path; a path's members are linked in offer order.
  struct member {
    std::uint64_t begin;
    std::size_t record;
    std::uint32_t thread : 31;
    std::uint32_t on_device : 1;
    std::uint32_t next;
  };
  struct path {
    std::uint64_t correlation_id;
    std::uint64_t op_begin, op_end;
    std::size_t op_record;
    std::uint32_t op_thread;     // none: no op (yet)
    std::uint32_t first, last;   // the runtime and device members
  };

  struct last_op {
    std::uint64_t payload = 0, begin = 0, end = 0;
  };

  const trace_data& data_;
  last_op last_op_;  // the last op offered (its id is never 0 once one has been)
  id_index ids_;
  std::vector<path, huge_page_allocator<path>> paths_;  // first-seen order keeps the output deterministic
  std::vector<member, huge_page_allocator<member>> members_;
};

template <class Flow>
void flow_builder::build(std::size_t first, std::size_t last, std::uint64_t& next_id, Flow&& flow) const {
  // A path's host records (its op first) and each device track's first record, as points:
  // scratch written by index and reused from path to path, grown when a path needs more.
  std::vector<flow_point> host(16), device(16);
  const auto earlier = [](const flow_point& a, const flow_point& b) { return a.begin < b.begin; };
  const auto& threads = data_.threads;
  for (std::size_t i = first; i < last; ++i) {
    const path& p = paths_[i];
    const std::uint64_t c = p.correlation_id;
    std::size_t hosts = 0, devices = 0;
    const bool has_op = p.op_thread != none;
    if (has_op) host[hosts++] = {'t', 0, c, p.op_thread, p.op_record, p.op_begin};
    for (std::uint32_t k = p.first; k != none; k = members_[k].next) {
      const member& m = members_[k];
      if (!m.on_device) {
        if (hosts == host.size()) host.resize(2 * hosts);
        host[hosts++] = {'t', 0, c, m.thread, m.record, m.begin};
      } else if (devices == 0 || device[devices - 1].thread != m.thread) {
        // Each device track's earliest record (a track's records are oldest first, and
        // tracks are offered in order, so this is also the order of the tracks).
        if (devices == device.size()) device.resize(2 * devices);
        device[devices++] = {'f', 0, c, m.thread, m.record, m.begin};
      }
    }
    if (hosts == 0) continue;
    small_stable_sort(host.begin() + (has_op ? 1 : 0), host.begin() + static_cast<std::ptrdiff_t>(hosts), earlier);
    if (hosts >= 2) {
      const std::uint64_t id = next_id++;
      for (std::size_t k = 0; k < hosts; ++k) host[k].id = id;
      host[0].phase = 's';
      host[hosts - 1].phase = 'f';
      flow(host.data(), hosts);
    }
    if (devices == 0) continue;
    small_stable_sort(device.begin(), device.begin() + static_cast<std::ptrdiff_t>(devices), earlier);
    const auto ns = [&](const flow_point& a) { return data_.ns_of(threads[a.thread], a.begin); };
    for (std::size_t j = 0; j < devices; ++j) {
      // The latest host record that began before the device work did launched it.
      const std::int64_t at = ns(device[j]);
      std::size_t from = 0;
      for (std::size_t k = 1; k < hosts; ++k)
        if (ns(host[k]) <= at) from = k;
      const std::uint64_t id = next_id++;
      flow_point pair[2] = {host[from], device[j]};
      pair[0].phase = 's';
      pair[0].id = pair[1].id = id;
      flow(pair, 2);
    }
  }
}

/// The flow events of `data`, ordered by flow id; ids count from 1.
inline flow_points correlation_flows(const trace_data& data) {
  flow_builder flows(data);
  for (std::size_t t = 0; t < data.threads.size(); ++t) {
    std::size_t i = 0;
    read_track(data, data.threads[t], [&](const record* records, std::size_t n) {
      for (std::size_t k = 0; k < n; ++k, ++i) flows.offer(t, i, records[k]);
    });
  }
  return flows.build();
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
