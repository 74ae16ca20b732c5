// strata/analysis/key_averages.hpp: torch.profiler's key_averages(): events nested by interval
// containment per track, self and total times, device time attributed through correlation ids,
// summed per name (rules: docs/key-averages.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "strata/analysis/averages_table.hpp"
#include "strata/core/layer.hpp"
#include "strata/core/record.hpp"
#include "strata/core/session.hpp"
#include "strata/core/site.hpp"

namespace strata {
inline namespace v1 {

/// One interval, independent of where it came from (a session's records, a parsed trace.json).
struct op_event {
  std::string name = {};
  layer where = layer::framework;  ///< layer::device: a device event; any other: a host event
  std::uint64_t track = 0;         ///< events nest only within one track (a thread)
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;         ///< an end before begin counts as begin
  std::uint64_t correlation_id = 0;  ///< 0: none
  std::string input_shapes = {};        ///< empty: none recorded
};

struct key_averages_options {
  bool group_by_input_shape = false;
  bool correlate_device_time = true;  ///< attribute device time to host ops by correlation id
  std::string device_name = "NEURON";
};

namespace detail {

struct ka_node {
  std::size_t parent = npos;
  std::vector<std::size_t> children;
  std::int64_t own_device_ns = 0;  ///< correlated device time this event owns
  std::int64_t device_total_ns = 0;
  std::size_t depth = 0;
  bool alive = true;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
};

inline std::int64_t duration(const op_event& e) noexcept {
  return e.end_ns > e.begin_ns ? e.end_ns - e.begin_ns : 0;
}

}  // namespace detail

/// Sums `events` per key (name, plus input shapes when grouped), torch.profiler style.
///
/// **Example**
/// ```
/// std::vector<strata::op_event> ev = {{.name = "aten::mm", .begin_ns = 0, .end_ns = 500}};
/// fmt::print("{}", strata::key_averages(ev).table());
/// ```
inline averages key_averages(std::span<const op_event> events, const key_averages_options& opt = {}) {
  using detail::ka_node;
  const std::size_t n = events.size();
  const auto is_device = [&](std::size_t i) { return events[i].where == layer::device; };
  const auto end_of = [&](std::size_t i) { return std::max(events[i].begin_ns, events[i].end_ns); };

  // Begin ascending, end descending (a parent before its children), input order on ties.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (events[a].begin_ns != events[b].begin_ns) return events[a].begin_ns < events[b].begin_ns;
    return end_of(a) > end_of(b);
  });

  // Parents by containment among host events of one track (torch's _build_tree stack walk).
  std::vector<ka_node> nodes(n);
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> stacks;
  for (std::size_t i : order) {
    if (is_device(i)) continue;
    auto& stack = stacks[events[i].track];
    while (!stack.empty() && (events[i].begin_ns >= end_of(stack.back()) || end_of(i) > end_of(stack.back())))
      stack.pop_back();
    if (!stack.empty()) {
      nodes[i].parent = stack.back();
      nodes[stack.back()].children.push_back(i);
    }
    stack.push_back(i);
  }

  // Recursion collapse: an event that is the only child of a same-named parent merges into it
  // (the parent keeps its interval and adopts the grandchildren). Parents come first in
  // `order`, so one pass also collapses chains.
  std::vector<std::size_t> absorbed_by(n, ka_node::npos);
  for (std::size_t i : order) {
    const std::size_t p = nodes[i].parent;
    if (p == ka_node::npos || nodes[p].children.size() != 1 || events[p].name != events[i].name)
      continue;
    nodes[i].alive = false;
    absorbed_by[i] = p;
    nodes[p].children = std::move(nodes[i].children);
    for (std::size_t c : nodes[p].children) nodes[c].parent = p;
  }
  const auto survivor = [&](std::size_t i) {
    while (absorbed_by[i] != ka_node::npos) i = absorbed_by[i];
    return i;
  };
  for (std::size_t i : order)
    if (nodes[i].alive && nodes[i].parent != ka_node::npos)
      nodes[i].depth = nodes[nodes[i].parent].depth + 1;

  // Device attribution: the host events of one correlation id that lie within the earliest of
  // them on its track; the deepest framework (or user) op among those owns the device time, as
  // torch gives a kernel's time to the op that launched it, not to the runtime call in
  // between. Only when no op carries the id does the deepest runtime call own it. Ancestors
  // see it in their device total.
  if (opt.correlate_device_time) {
    const auto is_op = [&](std::size_t i) {
      return events[i].where == layer::framework || events[i].where == layer::user;
    };
    const auto better_owner = [&](std::size_t a, std::size_t b) {
      if (is_op(a) != is_op(b)) return is_op(a);
      return nodes[a].depth > nodes[b].depth;
    };
    std::unordered_map<std::uint64_t, std::size_t> earliest, owner;
    for (std::size_t i : order) {
      const std::uint64_t c = events[i].correlation_id;
      if (c == 0 || is_device(i)) continue;
      const std::size_t s = survivor(i);
      if (earliest.try_emplace(c, s).second) {
        owner[c] = s;
        continue;
      }
      const std::size_t first = earliest[c];
      bool inside = false;
      for (std::size_t a = s; a != ka_node::npos && !inside; a = nodes[a].parent) inside = a == first;
      if (inside && better_owner(s, owner[c])) owner[c] = s;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!is_device(i) || events[i].correlation_id == 0) continue;
      const auto it = owner.find(events[i].correlation_id);
      if (it != owner.end()) nodes[it->second].own_device_ns += detail::duration(events[i]);
    }
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t i = *it;
    if (!nodes[i].alive || is_device(i)) continue;
    nodes[i].device_total_ns += nodes[i].own_device_ns;
    if (nodes[i].parent != ka_node::npos) nodes[nodes[i].parent].device_total_ns += nodes[i].device_total_ns;
  }

  averages out;
  out.device_name = opt.device_name;
  std::unordered_map<std::string, std::size_t> row_of;
  for (std::size_t i : order) {
    if (!nodes[i].alive) continue;
    const op_event& e = events[i];
    std::string key = e.name;
    key += '\0';
    key += is_device(i) ? 'd' : 'h';  // a device event never shares a row with a host op
    if (opt.group_by_input_shape) {
      key += '\0';
      key += e.input_shapes;
    }
    auto [it, fresh] = row_of.try_emplace(std::move(key), out.rows.size());
    if (fresh) {
      average_row r;
      r.name = e.name;
      if (opt.group_by_input_shape) r.input_shapes = e.input_shapes;
      r.is_device = is_device(i);
      r.top_level = nodes[i].parent == ka_node::npos;
      out.rows.push_back(std::move(r));
    }
    average_row& r = out.rows[it->second];
    ++r.count;
    const std::int64_t d = detail::duration(e);
    if (is_device(i)) {
      r.self_device_ns += d;
      r.device_total_ns += d;
      continue;
    }
    std::int64_t children = 0;
    for (std::size_t c : nodes[i].children) children += detail::duration(events[c]);
    r.cpu_total_ns += d;
    r.self_cpu_ns += d - children;
    r.device_total_ns += nodes[i].device_total_ns;
    r.self_device_ns += nodes[i].own_device_ns;
  }
  return out;
}

/// key_averages() of a stopped session: its scope records (instants, counters and parts of a
/// device execution, i.e. records whose site has a category of its own, are left out), ticks turned into nanoseconds, one track per thread, the payload as correlation id,
/// the input shapes of scopes that recorded their arguments.
///
/// **Example**
/// ```
/// strata::trace_data data = prof.collect();
/// fmt::print("{}", strata::key_averages(data).table({.sort_by = "cpu_time_total"}));
/// ```
inline averages key_averages(const trace_data& data, const key_averages_options& opt = {}) {
  std::vector<op_event> events;
  events.reserve(static_cast<std::size_t>(data.recorded()));
  for (std::size_t t = 0; t < data.threads.size(); ++t) {
    for (const record& r : data.threads[t].records) {
      // Records with a category of their own are not ops: parts of a device execution (engine
      // instructions, kernel phases; the execution's own record carries their time) or
      // queue waits.
      if (r.kind() != record_kind::scope || r.where->category != nullptr) continue;
      op_event e;
      e.name = r.where->name;
      e.where = r.layer_of();
      e.track = t;
      e.begin_ns = data.ns_of(data.threads[t], r.begin);
      e.end_ns = data.ns_of(data.threads[t], r.end);
      e.correlation_id = r.payload;
      if (r.where->input_shapes != nullptr) e.input_shapes = r.where->input_shapes;
      events.push_back(std::move(e));
    }
  }
  averages out = key_averages(std::span<const op_event>(events), opt);
  out.records_lost = data.lost();
  out.overflow = data.overflow;
  return out;
}

}  // namespace v1
}  // namespace strata
