// strata/export/flows.hpp: the arrows that follow one correlation id through the layers.
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

#include "strata/core/layer.hpp"
#include "strata/core/record.hpp"
#include "strata/core/session.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// One end or step of a flow, bound to the record `records[record]` of `threads[thread]`.
struct flow_point {
  char phase = 's';  ///< 's' start, 't' step, 'f' end
  std::uint64_t id = 0;
  std::uint64_t correlation_id = 0;
  std::size_t thread = 0;
  std::size_t record = 0;
};

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

/// Sorts [first, last) stably by `less`. A path holds a handful of records, for which an
/// insertion sort beats std::stable_sort, which allocates a buffer on every call.
template <class It, class Less>
void small_stable_sort(It first, It last, Less less) {
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

/// The flow events of `data`, ordered by flow id; ids count from 1.
inline std::vector<flow_point> correlation_flows(const trace_data& data) {
  struct at {
    std::size_t thread, record;
  };
  const auto& threads = data.threads;
  const auto rec = [&](const at& a) -> const record& { return threads[a.thread].records[a.record]; };

  // The records on a path, in scan order (thread by thread, oldest first), each with the dense
  // index of its id; first-seen order of the ids keeps the output deterministic.
  // A member keeps what pass two reads of its record, so pass two does not go back to the
  // records (a trace's records rarely fit in cache).
  struct member {
    std::uint32_t path;
    layer where;
    at place;
    std::uint64_t begin, end;
  };
  std::vector<member> members;
  std::vector<std::uint64_t> order;
  id_index paths;
  for (std::size_t t = 0; t < threads.size(); ++t) {
    const auto& records = threads[t].records;
    for (std::size_t i = 0; i < records.size(); ++i) {
      const record& r = records[i];
      if (r.payload == 0 || r.kind() != record_kind::scope) continue;
      if (r.where->category != nullptr && r.layer_of() != layer::device) continue;
      const auto [path, fresh] = paths.find_or_add(r.payload);
      if (fresh) order.push_back(r.payload);
      members.push_back({path, r.layer_of(), {t, i}, r.begin, r.end});
    }
  }
  // Grouped by path, keeping scan order within a path (a counting sort).
  std::vector<std::size_t> start(order.size() + 1, 0);
  for (const member& m : members) ++start[m.path + 1];
  for (std::size_t p = 0; p < order.size(); ++p) start[p + 1] += start[p];
  std::vector<member> grouped(members.size());
  {
    std::vector<std::size_t> next(start.begin(), start.end() - 1);
    for (const member& m : members) grouped[next[m.path]++] = m;
  }
  members = {};

  std::vector<flow_point> out;
  out.reserve(members.size());
  std::vector<at> host, device;  // reused from path to path
  std::uint64_t next_id = 1;
  const auto earlier = [&](const at& a, const at& b) { return rec(a).begin < rec(b).begin; };
  for (std::size_t p = 0; p < order.size(); ++p) {
    const std::uint64_t c = order[p];
    host.assign(1, at{});  // slot 0: the op, if the path has one
    device.clear();
    const member* op = nullptr;
    for (std::size_t k = start[p]; k < start[p + 1]; ++k) {
      const member& m = grouped[k];
      const at& a = m.place;
      switch (m.where) {
        case layer::framework:
        case layer::user:
          // The outermost op of the id: the earliest, and the longer of two on one tick.
          if (op == nullptr || m.begin < op->begin || (m.begin == op->begin && m.end > op->end)) {
            op = &m;
            host[0] = a;
          }
          break;
        case layer::runtime:
          host.push_back(a);
          break;
        case layer::device:
          // Each device track's earliest record (a track's records are oldest first, and
          // scan order visits tracks in order, so this is also the order of the tracks).
          if (device.empty() || device.back().thread != a.thread) device.push_back(a);
          break;
      }
    }
    small_stable_sort(host.begin() + 1, host.end(), earlier);
    if (op == nullptr) host.erase(host.begin());
    if (host.size() >= 2) {
      const std::uint64_t id = next_id++;
      for (std::size_t k = 0; k < host.size(); ++k) {
        const char phase = k == 0 ? 's' : k + 1 == host.size() ? 'f' : 't';
        out.push_back({phase, id, c, host[k].thread, host[k].record});
      }
    }
    if (host.empty()) continue;
    small_stable_sort(device.begin(), device.end(), earlier);
    const auto ns = [&](const at& a) { return data.ns_of(threads[a.thread], rec(a).begin); };
    for (const at& d : device) {
      // The latest host record that began before the device work did launched it.
      std::size_t from = 0;
      for (std::size_t k = 1; k < host.size(); ++k)
        if (ns(host[k]) <= ns(d)) from = k;
      const std::uint64_t id = next_id++;
      out.push_back({'s', id, c, host[from].thread, host[from].record});
      out.push_back({'f', id, c, d.thread, d.record});
    }
  }
  return out;
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
