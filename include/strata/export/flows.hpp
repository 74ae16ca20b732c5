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
#include <map>
#include <unordered_map>
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

/// The flow events of `data`, ordered by flow id; ids count from 1.
inline std::vector<flow_point> correlation_flows(const trace_data& data) {
  struct at {
    std::size_t thread, record;
  };
  struct path {
    bool has_op = false;
    at op{};
    std::vector<at> runtime;
    std::map<std::size_t, at> device_first;  // by thread: each device track's earliest record
  };
  const auto& threads = data.threads;
  const auto rec = [&](const at& a) -> const record& { return threads[a.thread].records[a.record]; };

  std::unordered_map<std::uint64_t, path> paths;
  std::vector<std::uint64_t> order;  // first-seen order keeps the output deterministic
  for (std::size_t t = 0; t < threads.size(); ++t) {
    const auto& records = threads[t].records;
    for (std::size_t i = 0; i < records.size(); ++i) {
      const record& r = records[i];
      if (r.payload == 0 || r.kind() != record_kind::scope) continue;
      if (r.where->category != nullptr && r.layer_of() != layer::device) continue;
      auto [it, fresh] = paths.try_emplace(r.payload);
      if (fresh) order.push_back(r.payload);
      path& p = it->second;
      switch (r.layer_of()) {
        case layer::framework:
        case layer::user:
          // The outermost op of the id: the earliest, and the longer of two on one tick.
          if (!p.has_op || r.begin < rec(p.op).begin ||
              (r.begin == rec(p.op).begin && r.end > rec(p.op).end)) {
            p.has_op = true;
            p.op = {t, i};
          }
          break;
        case layer::runtime:
          p.runtime.push_back({t, i});
          break;
        case layer::device:
          p.device_first.try_emplace(t, at{t, i});  // a track's records are oldest first
          break;
      }
    }
  }

  std::vector<flow_point> out;
  std::uint64_t next_id = 1;
  for (std::uint64_t c : order) {
    path& p = paths[c];
    std::stable_sort(p.runtime.begin(), p.runtime.end(),
                     [&](const at& a, const at& b) { return rec(a).begin < rec(b).begin; });
    std::vector<at> host;
    host.reserve(p.runtime.size() + 1);
    if (p.has_op) host.push_back(p.op);
    for (const at& r : p.runtime) host.push_back(r);
    if (host.size() >= 2) {
      const std::uint64_t id = next_id++;
      for (std::size_t k = 0; k < host.size(); ++k) {
        const char phase = k == 0 ? 's' : k + 1 == host.size() ? 'f' : 't';
        out.push_back({phase, id, c, host[k].thread, host[k].record});
      }
    }
    if (host.empty()) continue;
    std::vector<at> device;
    for (const auto& [thread, first] : p.device_first) device.push_back(first);
    std::stable_sort(device.begin(), device.end(),
                     [&](const at& a, const at& b) { return rec(a).begin < rec(b).begin; });
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
