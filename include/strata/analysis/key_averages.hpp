// strata/analysis/key_averages.hpp: torch.profiler's key_averages(): events nested by interval
// containment per track, self and total times, device time attributed through correlation ids,
// summed per name (rules: docs/key-averages.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "strata/analysis/averages.hpp"
#include "strata/analysis/memory.hpp"
#include "strata/record.hpp"
#include "strata/detail/id_index.hpp"
#include "strata/detail/record_order.hpp"
#include "strata/detail/session.hpp"
#include "strata/detail/table_format.hpp"

namespace strata {
inline namespace v1 {

/// One interval, independent of where it came from (a session's records, a parsed trace.json).
struct op_event {
  std::string name = {};
  ::strata::layer layer = layer::framework;  ///< layer::device: a device event; any other: a host event
  std::uint64_t track = 0;         ///< events nest only within one track (a thread)
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;         ///< an end before begin counts as begin
  std::uint64_t correlation_id = 0;  ///< 0: none
  std::string input_shapes = {};        ///< empty: none recorded
  /// A step (`ProfilerStep#N` of a profiler with a schedule), which lies on a track of its own:
  /// the track of the thread that marked it, else `not_a_step`. A step has no parent and no
  /// children. Its self CPU time is the part of it that no top-level event of that track
  /// covers (torch's time in the step outside any op), its device total the device time of
  /// the top-level events of that track that begin within it (docs/key-averages.md).
  std::uint64_t steps_of = not_a_step;
  std::uint64_t flops = 0;  ///< floating-point operations of the op (torch's with_flops), summed per row
  /// A device event: the HBM bytes it moved (a strata trace's `args.bytes`), for the
  /// utilisation columns; its flops and bytes also go to the op that owns its correlation id.
  std::uint64_t device_bytes = 0;

  static constexpr std::uint64_t not_a_step = static_cast<std::uint64_t>(-1);
};

/// One allocation (`bytes` > 0) or free (`bytes` < 0), as torch's `[memory]` records: it
/// counts in the memory of the host events of its `track` whose interval holds `ns`
/// (docs/key-averages.md#memory).
struct memory_event {
  std::uint64_t track = 0;
  std::int64_t ns = 0;
  std::int64_t bytes = 0;  ///< negative: a free
  bool on_device = false;  ///< device memory (torch's CUDA memory); else host (CPU) memory
};

namespace detail {

struct ka_node {
  std::size_t parent = npos;
  std::vector<std::size_t> children;
  std::int64_t own_device_ns = 0;  ///< correlated device time this event owns
  std::uint64_t own_device_flops = 0, own_device_bytes = 0;  ///< ... and that time's work
  std::int64_t device_total_ns = 0;
  std::size_t depth = 0;
  bool alive = true;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
};

/// The row name of an event: torch's `_rewrite_name` folds every `ProfilerStep#N` into one
/// `ProfilerStep*` row; any other name is its own.
inline std::string_view row_name(std::string_view name) noexcept {
  constexpr std::string_view step = "ProfilerStep#";
  return name.substr(0, step.size()) == step ? std::string_view("ProfilerStep*") : name;
}

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
inline averages key_averages(std::span<const op_event> events, std::span<const memory_event> memory,
                             const key_averages_options& opt);

inline averages key_averages(std::span<const op_event> events, const key_averages_options& opt = {}) {
  return key_averages(events, std::span<const memory_event>(), opt);
}

/// key_averages() with allocations and frees: each row also gets the memory of its events
/// (`cpu_memory_usage`, `device_memory_usage`: what was allocated less what was freed on the
/// event's track within it; the self figures less what its children account for), and
/// memory that no host event holds makes a `[memory]` row, as in torch's table.
///
/// **Example**
/// ```
/// std::vector<strata::op_event> ev = {{.name = "aten::empty", .begin_ns = 0, .end_ns = 500}};
/// std::vector<strata::memory_event> mem = {{.ns = 100, .bytes = 4096}};
/// fmt::print("{}", strata::key_averages(ev, mem, {.profile_memory = true}).table());
/// ```
inline averages key_averages(std::span<const op_event> events, std::span<const memory_event> memory,
                             const key_averages_options& opt) {
  using detail::ka_node;
  const std::size_t n = events.size();
  const auto is_device = [&](std::size_t i) { return events[i].layer == layer::device; };
  const auto is_step = [&](std::size_t i) {
    return events[i].steps_of != op_event::not_a_step && !is_device(i);
  };
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
    if (is_device(i) || is_step(i)) continue;
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
      return events[i].layer == layer::framework || events[i].layer == layer::user;
    };
    const auto better_owner = [&](std::size_t a, std::size_t b) {
      if (is_op(a) != is_op(b)) return is_op(a);
      return nodes[a].depth > nodes[b].depth;
    };
    std::unordered_map<std::uint64_t, std::size_t> earliest, owner;
    for (std::size_t i : order) {
      const std::uint64_t c = events[i].correlation_id;
      if (c == 0 || is_device(i) || is_step(i)) continue;
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
      if (it == owner.end()) continue;
      nodes[it->second].own_device_ns += detail::duration(events[i]);
      nodes[it->second].own_device_flops += events[i].flops;
      nodes[it->second].own_device_bytes += events[i].device_bytes;
    }
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t i = *it;
    if (!nodes[i].alive || is_device(i)) continue;
    nodes[i].device_total_ns += nodes[i].own_device_ns;
    if (nodes[i].parent != ka_node::npos) nodes[nodes[i].parent].device_total_ns += nodes[i].device_total_ns;
  }

  // Steps: what the top-level events of the marking thread's track leave of each step is its
  // self CPU time, and the device time of those that begin within it its device total.
  std::vector<std::int64_t> step_covered(n, 0), step_device(n, 0);
  {
    struct root {
      std::int64_t begin, end, device_total;
    };
    std::unordered_map<std::uint64_t, std::vector<root>> roots;  // by track, begin ascending
    std::unordered_map<std::uint64_t, std::vector<std::size_t>> steps;
    for (std::size_t i : order) {
      if (is_step(i))
        steps[events[i].steps_of].push_back(i);
      else if (!is_device(i) && nodes[i].parent == ka_node::npos)
        roots[events[i].track].push_back({events[i].begin_ns, end_of(i), nodes[i].device_total_ns});
    }
    for (const auto& [track, of_track] : steps) {
      const auto found = roots.find(track);
      if (found == roots.end()) continue;
      const std::vector<root>& r = found->second;
      // The union of the roots' intervals, as disjoint spans in order.
      std::vector<std::pair<std::int64_t, std::int64_t>> spans;
      for (const root& x : r) {
        if (!spans.empty() && x.begin <= spans.back().second)
          spans.back().second = std::max(spans.back().second, x.end);
        else
          spans.emplace_back(x.begin, x.end);
      }
      for (std::size_t s : of_track) {
        const std::int64_t b = events[s].begin_ns, e = end_of(s);
        auto span = std::lower_bound(spans.begin(), spans.end(), b,
                                     [](const auto& x, std::int64_t v) { return x.second <= v; });
        for (; span != spans.end() && span->first < e; ++span)
          step_covered[s] += std::min(e, span->second) - std::max(b, span->first);
        auto first = std::lower_bound(r.begin(), r.end(), b, [](const root& x, std::int64_t v) { return x.begin < v; });
        for (; first != r.end() && first->begin < e; ++first) step_device[s] += first->device_total;
      }
    }
  }

  // Memory: an allocation or free counts in the total of every host event of its track whose
  // interval holds its time, ends included (torch's in_interval); a step's, in that of every
  // step of the track. Prefix sums per track, in time order, give an interval's sum.
  struct memory_sums {
    std::vector<std::int64_t> ns;
    std::vector<std::size_t> index;          // into `memory`, in time order
    std::vector<std::int64_t> host, device;  // sums of the events before index i
  };
  std::unordered_map<std::uint64_t, memory_sums> memory_of;
  std::vector<std::int64_t> host_memory(n, 0), device_memory(n, 0);
  std::vector<std::int64_t> step_self_host(n, 0), step_self_device(n, 0);
  std::vector<std::size_t> loose;  // memory events that no host event of their track holds
  if (!memory.empty()) {
    std::vector<std::size_t> by_time(memory.size());
    std::iota(by_time.begin(), by_time.end(), std::size_t{0});
    std::stable_sort(by_time.begin(), by_time.end(), [&](std::size_t a, std::size_t b) {
      if (memory[a].track != memory[b].track) return memory[a].track < memory[b].track;
      return memory[a].ns < memory[b].ns;
    });
    for (std::size_t m : by_time) {
      memory_sums& t = memory_of[memory[m].track];
      if (t.ns.empty()) {
        t.host.push_back(0);
        t.device.push_back(0);
      }
      t.ns.push_back(memory[m].ns);
      t.index.push_back(m);
      t.host.push_back(t.host.back() + (memory[m].on_device ? 0 : memory[m].bytes));
      t.device.push_back(t.device.back() + (memory[m].on_device ? memory[m].bytes : 0));
    }
    const auto in_interval = [&](std::uint64_t track, std::int64_t b, std::int64_t e) {
      const auto found = memory_of.find(track);
      if (found == memory_of.end()) return std::pair<std::int64_t, std::int64_t>{0, 0};
      const memory_sums& t = found->second;
      const auto lo = static_cast<std::size_t>(std::lower_bound(t.ns.begin(), t.ns.end(), b) - t.ns.begin());
      const auto hi = static_cast<std::size_t>(std::upper_bound(t.ns.begin(), t.ns.end(), e) - t.ns.begin());
      return std::pair<std::int64_t, std::int64_t>{t.host[hi] - t.host[lo], t.device[hi] - t.device[lo]};
    };
    // The union of each track's host events (closed intervals, begin ascending), to find the
    // memory that none holds; steps hold their thread's memory.
    std::unordered_map<std::uint64_t, std::vector<std::pair<std::int64_t, std::int64_t>>> held, roots_of;
    for (std::size_t i : order) {
      if (is_device(i) || !nodes[i].alive) continue;
      const std::uint64_t track = is_step(i) ? events[i].steps_of : events[i].track;
      const auto [h, d] = in_interval(track, events[i].begin_ns, end_of(i));
      host_memory[i] = h;
      device_memory[i] = d;
      auto& spans = held[track];
      if (!spans.empty() && events[i].begin_ns <= spans.back().second)
        spans.back().second = std::max(spans.back().second, end_of(i));
      else
        spans.emplace_back(events[i].begin_ns, end_of(i));
      if (!is_step(i) && nodes[i].parent == ka_node::npos) {
        auto& r = roots_of[track];
        if (!r.empty() && events[i].begin_ns <= r.back().second)
          r.back().second = std::max(r.back().second, end_of(i));
        else
          r.emplace_back(events[i].begin_ns, end_of(i));
      }
    }
    const auto within = [](const std::vector<std::pair<std::int64_t, std::int64_t>>* spans, std::int64_t t) {
      if (spans == nullptr) return false;
      const auto it = std::lower_bound(spans->begin(), spans->end(), t,
                                       [](const auto& x, std::int64_t v) { return x.second < v; });
      return it != spans->end() && it->first <= t;
    };
    const auto spans_of = [](auto& map, std::uint64_t track) {
      const auto it = map.find(track);
      return it == map.end() ? nullptr : &it->second;
    };
    for (std::size_t m : by_time)
      if (!within(spans_of(held, memory[m].track), memory[m].ns)) loose.push_back(m);
    // A step's self memory: what it holds outside its thread's top-level events (torch's
    // step less its children, as for its self CPU time).
    for (std::size_t i = 0; i < n; ++i) {
      const auto found = is_step(i) ? memory_of.find(events[i].steps_of) : memory_of.end();
      if (found == memory_of.end()) continue;
      const memory_sums& t = found->second;
      const auto* roots = spans_of(roots_of, events[i].steps_of);
      auto k = static_cast<std::size_t>(std::lower_bound(t.ns.begin(), t.ns.end(), events[i].begin_ns) - t.ns.begin());
      for (; k < t.ns.size() && t.ns[k] <= end_of(i); ++k) {
        const memory_event& m = memory[t.index[k]];
        if (!within(roots, m.ns)) (m.on_device ? step_self_device : step_self_host)[i] += m.bytes;
      }
    }
    std::stable_sort(loose.begin(), loose.end(), [&](std::size_t a, std::size_t b) { return memory[a].ns < memory[b].ns; });
  }

  averages out;
  out.device_name = opt.device_name;
  out.profile_memory = opt.profile_memory;
  out.with_flops = opt.with_flops;
  // A row's key views the names of its events (they outlive this call): no string is built
  // per event. A device event never shares a row with a host op.
  struct row_key {
    std::string_view name, shapes;
    bool device;
    bool operator==(const row_key&) const = default;
  };
  struct row_key_hash {
    std::size_t operator()(const row_key& k) const noexcept {
      const std::hash<std::string_view> h;
      return h(k.name) ^ (h(k.shapes) * 31) ^ static_cast<std::size_t>(k.device);
    }
  };
  std::unordered_map<row_key, std::size_t, row_key_hash> row_of;
  std::vector<std::int64_t> first_begin;  // of each row's first event
  for (std::size_t i : order) {
    if (!nodes[i].alive) continue;
    const op_event& e = events[i];
    const row_key key{detail::row_name(e.name), opt.group_by_input_shape ? std::string_view(e.input_shapes) : std::string_view(),
                      is_device(i)};
    auto [it, fresh] = row_of.try_emplace(key, out.rows.size());
    if (fresh) {
      average_row r;
      r.name = detail::row_name(e.name);
      if (opt.group_by_input_shape) r.input_shapes = e.input_shapes;
      r.is_device = is_device(i);
      r.top_level = nodes[i].parent == ka_node::npos;
      out.rows.push_back(std::move(r));
      first_begin.push_back(e.begin_ns);
    }
    average_row& r = out.rows[it->second];
    ++r.count;
    r.flops += e.flops;
    const std::int64_t d = detail::duration(e);
    if (is_device(i)) {
      r.self_device_ns += d;
      r.device_total_ns += d;
      r.device_bytes += e.device_bytes;
      continue;
    }
    r.flops += nodes[i].own_device_flops;
    r.device_bytes += nodes[i].own_device_bytes;
    std::int64_t children = 0, children_host = 0, children_device = 0;
    for (std::size_t c : nodes[i].children) {
      children += detail::duration(events[c]);
      children_host += host_memory[c];
      children_device += device_memory[c];
    }
    r.cpu_total_ns += d;
    r.self_cpu_ns += d - children - step_covered[i];
    r.device_total_ns += nodes[i].device_total_ns + step_device[i];
    r.self_device_ns += nodes[i].own_device_ns;
    r.cpu_memory_usage += host_memory[i];
    r.device_memory_usage += device_memory[i];
    r.self_cpu_memory_usage += is_step(i) ? step_self_host[i] : host_memory[i] - children_host;
    r.self_device_memory_usage += is_step(i) ? step_self_device[i] : device_memory[i] - children_device;
  }

  // Memory outside every host event: one [memory] row (torch's top-level memory events, one
  // call each), placed where its first event falls in the processing order.
  if (!loose.empty()) {
    average_row r;
    r.name = "[memory]";
    for (std::size_t m : loose) {
      ++r.count;
      (memory[m].on_device ? r.device_memory_usage : r.cpu_memory_usage) += memory[m].bytes;
    }
    r.self_cpu_memory_usage = r.cpu_memory_usage;
    r.self_device_memory_usage = r.device_memory_usage;
    const std::int64_t t = memory[loose.front()].ns;
    const auto at = std::upper_bound(first_begin.begin(), first_begin.end(), t) - first_begin.begin();
    const auto existing = std::find_if(out.rows.begin(), out.rows.end(), [](const average_row& x) {
      return x.name == "[memory]" && !x.is_device;
    });
    if (existing != out.rows.end()) {  // an op of that name: torch would merge them
      existing->count += r.count;
      existing->cpu_memory_usage += r.cpu_memory_usage;
      existing->self_cpu_memory_usage += r.self_cpu_memory_usage;
      existing->device_memory_usage += r.device_memory_usage;
      existing->self_device_memory_usage += r.self_device_memory_usage;
    } else {
      out.rows.insert(out.rows.begin() + at, std::move(r));
    }
  }
  return out;
}

namespace detail {

/// key_averages() over a session's records, with the rules of the op_event version but
/// without building op_events: events are keyed on their site (the descriptor they point to)
/// and summed per site, and sites are merged into rows by name once at the end. Whatever the
/// op_event version orders globally (the first event of a correlation id, the first event of
/// a row) is settled by comparing (begin, end descending, track, position): the order of its
/// stable sort.
///
/// Why this gives the same sums: an event is absorbed by recursion collapse exactly when its
/// parent by containment has no other child and the same name, so whether an event is alive
/// needs only its parent's child count; an event's final parent is its nearest alive
/// ancestor, and its ancestors in the final tree are its alive ancestors. Self CPU time is an
/// event's duration less its final children's, so each alive event subtracts its duration
/// from its final parent's row; device total is the device time owned within a subtree, so
/// each owner adds its time to the rows of its alive ancestors. All of that is known once the
/// tree under a top-level event is complete, so a track is read one top-level event (with
/// what it contains) at a time, and the working set stays in cache.
class session_averages {
 public:
  session_averages(const trace_data& data, const key_averages_options& opt) : data_(data), opt_(opt) {}

  averages run() {
    if (opt_.profile_memory) read_track_memory();
    // Steps first: a thread's track is read against the steps it marked.
    for (std::size_t t = 0; t < data_.threads.size(); ++t)
      if (data_.threads[t].steps) add_steps(t);
    for (auto& [track, marks] : steps_of_track_)
      std::stable_sort(marks.begin(), marks.end(), [](const step_mark& a, const step_mark& b) { return a.begin < b.begin; });
    for (std::size_t t = 0; t < data_.threads.size(); ++t)
      if (!data_.threads[t].steps) add_track(t);
    if (opt_.correlate_device_time) attribute_device_time();
    return rows();
  }

 private:
  static constexpr std::uint32_t none = static_cast<std::uint32_t>(-1);

  /// Where an event comes in the op_event version's order.
  struct order_key {
    std::int64_t begin = 0, end = 0;  // end: max(begin, end)
    std::size_t track = 0, record = 0;
    bool operator<(const order_key& o) const noexcept {
      if (begin != o.begin) return begin < o.begin;
      if (end != o.end) return end > o.end;
      if (track != o.track) return track < o.track;
      return record < o.record;
    }
  };

  /// What is summed per site.
  struct site_sums {
    const ::strata::site* site = nullptr;
    std::uint32_t name = 0;  // sites with equal names have equal name ids
    bool is_device = false;
    bool is_op = false;      // framework or user
    bool seen = false;       // has an alive event
    std::size_t seen_in_track = static_cast<std::size_t>(-1);  // the last track it was seen in
    order_key first;         // its first alive event
    bool top_level = true;   // ... and whether that had no parent
    std::uint64_t count = 0;
    std::int64_t self_cpu = 0, cpu_total = 0, self_device = 0, device_total = 0;
    std::int64_t cpu_memory = 0, self_cpu_memory = 0, device_memory = 0, self_device_memory = 0;
    std::uint64_t flops = 0;  // the site's own events' (a row's flops are not its children's)
    std::uint64_t bytes = 0;  // HBM bytes of the site's device executions
    std::uint64_t bytes_per_event = 0;  // a device site's `"bytes":N` argument
  };

  /// The memory events of one track, in time order, with prefix sums (host, device) so that an
  /// interval's memory is two binary searches.
  struct track_memory {
    std::vector<std::int64_t> ns;
    std::vector<std::int64_t> host{0}, device{0};  // sums of the events before index i
    std::vector<bool> on_device;

    std::pair<std::int64_t, std::int64_t> in_interval(std::int64_t b, std::int64_t e) const {
      const auto lo = static_cast<std::size_t>(std::lower_bound(ns.begin(), ns.end(), b) - ns.begin());
      const auto hi = static_cast<std::size_t>(std::upper_bound(ns.begin(), ns.end(), e) - ns.begin());
      return {host[hi] - host[lo], device[hi] - device[lo]};
    }
    std::int64_t bytes(std::size_t k) const { return host[k + 1] - host[k] + device[k + 1] - device[k]; }
  };

  /// A host event of the top-level tree being read, in order (parents before children).
  struct node {
    std::int64_t begin, duration;
    std::uint32_t parent;    // by containment, before recursion collapse
    std::uint32_t site;
    std::uint32_t children;  // by containment
    std::size_t record;      // index in the track's records
  };

  /// A step of a thread, from its steps track.
  struct step_mark {
    std::int64_t begin, end;
    std::uint32_t site;
  };

  /// A host event of that tree that carries a correlation id.
  struct correlated {
    std::uint32_t node;
    std::uint64_t id;
  };

  /// Per correlation id: where its device time goes. There is one per id (a million in a
  /// 10M-record session), so it is kept small; what only the track being read needs is in
  /// `first_seen`.
  struct correlation {
    order_key first_key;          // the id's first host event over all tracks
    std::int64_t device_ns = 0;
    std::uint64_t device_flops = 0;  // of the device executions: the owner op's FLOPs
    std::uint64_t device_bytes = 0;  // ... and HBM bytes
    std::uint64_t local_tree = 0;  // the tree of the id's first event in its latest track
    std::uint32_t chain = 0;       // the owner's site, then its alive ancestors' sites, in chains_
    std::uint32_t chain_size = 0;
    std::uint32_t local_first = none, local_owner = none;  // in that tree
    bool has_host = false;
  };

  /// An id first seen in the track being read.
  struct first_seen {
    std::uint32_t id;  // index in correlations_
    order_key key;
    std::uint32_t chain = 0, chain_size = 0;
  };

  /// The `"bytes":N` member of a device site's arguments (a simulated execution's HBM bytes).
  static std::uint64_t bytes_argument(const char* args_json) noexcept {
    if (args_json == nullptr) return 0;
    const std::string_view args(args_json);
    constexpr std::string_view key = "\"bytes\":";
    for (std::size_t at = args.find(key); at != std::string_view::npos; at = args.find(key, at + 1)) {
      if (at != 0 && args[at - 1] != ',') continue;  // a member's name, not inside a string
      std::uint64_t v = 0;
      std::size_t i = at + key.size();
      if (i >= args.size() || args[i] < '0' || args[i] > '9') return 0;
      for (; i < args.size() && args[i] >= '0' && args[i] <= '9'; ++i) v = v * 10 + static_cast<std::uint64_t>(args[i] - '0');
      return v;
    }
    return 0;
  }

  std::uint32_t site_index(const site* s) {
    if (s == last_site_) return last_site_index_;
    const std::pair<std::uint32_t, bool> found = site_ids_.find_or_add(reinterpret_cast<std::uintptr_t>(s));
    const std::uint32_t i = found.first;
    if (found.second) {
      site_sums sums;
      sums.site = s;
      sums.name = name_ids_.try_emplace(std::string_view(s->name), static_cast<std::uint32_t>(name_ids_.size()))
                      .first->second;
      sums.is_device = s->layer == layer::device;
      sums.is_op = s->layer == layer::framework || s->layer == layer::user;
      if (sums.is_device) sums.bytes_per_event = bytes_argument(s->args_json);
      sites_.push_back(sums);
    }
    last_site_ = s;
    last_site_index_ = i;
    return i;
  }

  void saw(site_sums& s, const order_key& key, bool top_level) {
    if (!s.seen || key < s.first) {
      s.seen = true;
      s.first = key;
      s.top_level = top_level;
    }
  }

  std::uint32_t correlation_index(std::uint64_t id) {
    const std::pair<std::uint32_t, bool> found = correlation_ids_.find_or_add(id);
    if (found.second) correlations_.emplace_back();
    return found.first;
  }

  bool alive(std::uint32_t i) const noexcept {
    const std::uint32_t p = nodes_[i].parent;
    return p == none || nodes_[p].children != 1 || sites_[nodes_[p].site].name != sites_[nodes_[i].site].name;
  }
  std::uint32_t survivor(std::uint32_t i) const noexcept {
    while (!alive(i)) i = nodes_[i].parent;
    return i;
  }

  /// A steps track: each step counts its CPU time as self time until the top-level events of
  /// its thread's track take their part of it away (`cover_steps`). Device records on it, which
  /// strata never puts there, are read as on any track.
  void add_steps(std::size_t t) {
    const thread_track& track = data_.threads[t];
    std::size_t of = data_.threads.size();
    for (std::size_t k = 0; k < data_.threads.size() && of == data_.threads.size(); ++k)
      if (!data_.threads[k].steps && data_.threads[k].pid == track.pid && data_.threads[k].tid == track.steps_of) of = k;
    std::vector<step_mark>& marks = steps_of_track_[of];
    for_each_record(track, [&](const record& r, std::size_t i) {
      if (r.site->kind != record_kind::scope || r.site->category != nullptr) return;
      const std::uint32_t s = site_index(r.site);
      const std::int64_t begin = data_.ns_of(track, r.begin);
      const std::int64_t end = std::max(begin, data_.ns_of(track, r.end));
      site_sums& sums = sites_[s];
      ++sums.count;
      sums.flops += r.site->flops;
      if (sums.is_device) {
        sums.bytes += sums.bytes_per_event;
        sums.self_device += end - begin;
        sums.device_total += end - begin;
        if (r.payload != 0 && opt_.correlate_device_time) {
          correlation& k = correlations_[correlation_index(r.payload)];
          k.device_ns += end - begin;
          k.device_flops += r.site->flops;
          k.device_bytes += sums.bytes_per_event;
        }
      } else {
        sums.cpu_total += end - begin;
        sums.self_cpu += end - begin;
        marks.push_back({begin, end, s});
      }
      saw(sums, {begin, end, t, i}, true);
    });
  }

  /// The top-level event [begin, end] of the track being read against the steps its thread
  /// marked: the part no earlier top-level event covered is taken from the self time of the
  /// steps it overlaps, and `root_steps_` becomes the steps it begins in (whose device totals
  /// get the device time owned in its tree).
  void cover_steps(std::int64_t begin, std::int64_t end) {
    root_steps_.clear();
    if (track_steps_ == nullptr) return;
    const std::vector<step_mark>& marks = *track_steps_;
    // Top-level events come in order of their begin, so both positions only move forward.
    const std::int64_t from = std::max(begin, covered_end_);
    if (end > from) {
      while (step_uncovered_ < marks.size() && marks[step_uncovered_].end <= from) ++step_uncovered_;
      for (std::size_t k = step_uncovered_; k < marks.size() && marks[k].begin < end; ++k) {
        const std::int64_t overlap = std::min(end, marks[k].end) - std::max(from, marks[k].begin);
        if (overlap > 0) sites_[marks[k].site].self_cpu -= overlap;
      }
    }
    covered_end_ = std::max(covered_end_, end);
    while (step_open_ < marks.size() && marks[step_open_].end <= begin) ++step_open_;
    for (std::size_t k = step_open_; k < marks.size() && marks[k].begin <= begin; ++k)
      if (begin < marks[k].end) root_steps_.push_back(marks[k].site);
  }

  /// Calls `f(record, index)` for each record of `track` in order, the index counting from 0:
  /// from memory, or a spilled track's from its spill file a block at a time, so that reading
  /// a spilled session holds one block of each track in memory, not the track.
  template <class F>
  void for_each_record(const thread_track& track, F&& f) {
    std::size_t i = 0;
    read_track(data_, track, [&](const record* first, std::size_t n) {
      for (std::size_t k = 0; k < n; ++k) f(first[k], i++);
    });
  }

  void start_steps_of(std::size_t t) {
    const auto memory = memory_of_track_.find(t);
    track_memory_ = memory != memory_of_track_.end() ? &memory->second : nullptr;
    track_roots_.clear();
    const auto found = steps_of_track_.find(t);
    track_steps_ = found != steps_of_track_.end() ? &found->second : nullptr;
    covered_end_ = std::numeric_limits<std::int64_t>::min();
    step_uncovered_ = 0;
    step_open_ = 0;
  }

  void add_track(std::size_t t) {
    const thread_track& track = data_.threads[t];
    start_steps_of(t);
    const clock_calibration clock = data_.clock;  // a copy the compiler can keep in registers
    const bool in_ns = track.timestamps_in_ns;
    const auto ns_of = [clock, in_ns](std::uint64_t ticks) {
      return in_ns ? static_cast<std::int64_t>(ticks) : clock.to_ns(ticks);
    };
    // Device events have no parents and no CPU time; their time goes to an owner later.
    const auto add_device = [&](const record& r, std::size_t i, std::uint32_t s, std::int64_t begin,
                                std::int64_t end, bool count_correlated) {
      site_sums& sums = sites_[s];
      ++sums.count;
      sums.flops += r.site->flops;
      sums.bytes += sums.bytes_per_event;
      sums.self_device += end - begin;
      sums.device_total += end - begin;
      saw(sums, {begin, end, t, i}, true);
      if (count_correlated && r.payload != 0 && opt_.correlate_device_time) {
        correlation& k = correlations_[correlation_index(r.payload)];
        k.device_ns += end - begin;
        k.device_flops += r.site->flops;
        k.device_bytes += sums.bytes_per_event;
      }
    };

    // Records are usually in order already (a collected session sorts them by ticks), and the
    // trees are summed as they complete. A host event out of order in nanoseconds undoes what
    // the track added and reads its host events again, sorted.
    const std::vector<site_sums> before = sites_;
    const std::size_t chains_before = chains_.size();
    track_touched_.clear();
    track_first_tree_ = tree_;
    host_events_ = 0;
    bool in_order = true;
    std::int64_t last_begin = 0, last_end = 0;
    for_each_record(track, [&](const record& r, std::size_t i) {
      if (r.site->kind != record_kind::scope || r.site->category != nullptr) return;
      const std::uint32_t s = site_index(r.site);
      const std::int64_t begin = ns_of(r.begin);
      const std::int64_t end = std::max(begin, ns_of(r.end));
      if (sites_[s].is_device) {
        add_device(r, i, s, begin, end, true);
        return;
      }
      if (!in_order) return;
      if (host_events_ != 0 && (begin < last_begin || (begin == last_begin && end > last_end))) {
        in_order = false;
        return;
      }
      last_begin = begin;
      last_end = end;
      add_host(t, i, r.payload, s, begin, end);
    });
    if (in_order) {
      finish_tree(t);
      merge_correlations();
      finish_memory();
      return;
    }

    nodes_.clear();
    stack_.clear();
    with_id_.clear();
    for (std::size_t k = 0; k < sites_.size(); ++k) {
      site_sums fresh = k < before.size() ? before[k] : site_sums{};
      if (k >= before.size()) {
        fresh.site = sites_[k].site;
        fresh.name = sites_[k].name;
        fresh.is_device = sites_[k].is_device;
        fresh.is_op = sites_[k].is_op;
      }
      sites_[k] = fresh;
    }
    for (const first_seen& f : track_touched_) correlations_[f.id].local_tree = 0;
    track_touched_.clear();
    chains_.resize(chains_before);
    host_events_ = 0;
    start_steps_of(t);

    // The track's host events, sorted: what this keeps in memory is the host events alone
    // (a spilled track's too), which only a track out of order in nanoseconds needs.
    struct host_event {
      std::int64_t begin, end;
      std::size_t index;
      std::uint64_t payload;
      std::uint32_t site;
    };
    std::vector<host_event> order;
    for_each_record(track, [&](const record& r, std::size_t i) {
      if (r.site->kind != record_kind::scope || r.site->category != nullptr) return;
      const std::int64_t begin = ns_of(r.begin);
      const std::int64_t end = std::max(begin, ns_of(r.end));
      const std::uint32_t s = site_index(r.site);
      if (sites_[s].is_device)
        add_device(r, i, s, begin, end, false);  // their device time was counted already
      else
        order.push_back({begin, end, i, r.payload, s});
    });
    std::stable_sort(order.begin(), order.end(), [](const host_event& x, const host_event& y) {
      if (x.begin != y.begin) return x.begin < y.begin;
      return x.end > y.end;
    });
    for (const host_event& e : order)
      add_host(t, e.index, e.payload, e.site, e.begin, e.end);
    finish_tree(t);
    merge_correlations();
    finish_memory();
  }

  /// The session's memory events (strata/analysis/memory.hpp: frees sized by their
  /// allocations, unpaired frees left out), by track.
  void read_track_memory() {
    const memory_profile profile = read_memory(data_);
    for (const memory_sample& m : profile.events) {
      if (m.op == memory_op::reserve) continue;
      track_memory& tm = memory_of_track_[m.track];
      const bool device = !is_host_memory(m.device.type);
      tm.ns.push_back(m.ns);
      tm.on_device.push_back(device);
      tm.host.push_back(tm.host.back() + (device ? 0 : m.bytes));
      tm.device.push_back(tm.device.back() + (device ? m.bytes : 0));
    }
  }

  /// After a track's trees: the memory of the steps its thread marked (all of it in their
  /// total, what no top-level op holds in their self), and the memory neither holds, which goes
  /// to the [memory] row.
  void finish_memory() {
    if (track_memory_ == nullptr) return;
    const track_memory& tm = *track_memory_;
    const auto within = [](const std::vector<std::pair<std::int64_t, std::int64_t>>& spans, std::int64_t t) {
      const auto it = std::lower_bound(spans.begin(), spans.end(), t,
                                       [](const auto& x, std::int64_t v) { return x.second < v; });
      return it != spans.end() && it->first <= t;
    };
    std::vector<std::pair<std::int64_t, std::int64_t>> step_spans;
    if (track_steps_ != nullptr) {
      for (const step_mark& m : *track_steps_) {
        site_sums& sums = sites_[m.site];
        const auto [host, device] = tm.in_interval(m.begin, m.end);
        sums.cpu_memory += host;
        sums.device_memory += device;
        auto k = static_cast<std::size_t>(std::lower_bound(tm.ns.begin(), tm.ns.end(), m.begin) - tm.ns.begin());
        for (; k < tm.ns.size() && tm.ns[k] <= m.end; ++k)
          if (!within(track_roots_, tm.ns[k])) (tm.on_device[k] ? sums.self_device_memory : sums.self_cpu_memory) += tm.bytes(k);
        if (!step_spans.empty() && m.begin <= step_spans.back().second)
          step_spans.back().second = std::max(step_spans.back().second, m.end);
        else
          step_spans.emplace_back(m.begin, m.end);
      }
    }
    for (std::size_t k = 0; k < tm.ns.size(); ++k) {
      if (within(track_roots_, tm.ns[k]) || within(step_spans, tm.ns[k])) continue;
      if (loose_count_ == 0 || tm.ns[k] < loose_first_) loose_first_ = tm.ns[k];
      ++loose_count_;
      (tm.on_device[k] ? loose_device_ : loose_host_) += tm.bytes(k);
    }
  }

  /// The first event over all tracks decides a correlation id's owner.
  void merge_correlations() {
    for (const first_seen& f : track_touched_) {
      correlation& k = correlations_[f.id];
      if (k.has_host && !(f.key < k.first_key)) continue;
      k.has_host = true;
      k.first_key = f.key;
      k.chain = f.chain;
      k.chain_size = f.chain_size;
    }
    track_touched_.clear();
  }

  /// Parents by containment (torch's _build_tree stack walk); a complete top-level tree is
  /// summed before the next one starts.
  void add_host(std::size_t t, std::size_t index, std::uint64_t payload, std::uint32_t s, std::int64_t begin,
                std::int64_t end) {
    ++host_events_;
    while (!stack_.empty() && (begin >= nodes_[stack_.back()].begin + nodes_[stack_.back()].duration ||
                               end > nodes_[stack_.back()].begin + nodes_[stack_.back()].duration))
      stack_.pop_back();
    if (stack_.empty() && !nodes_.empty()) finish_tree(t);
    const std::uint32_t parent = stack_.empty() ? none : stack_.back();
    if (parent != none) ++nodes_[parent].children;
    const auto i = static_cast<std::uint32_t>(nodes_.size());
    nodes_.push_back({begin, end - begin, parent, s, 0, index});
    if (payload != 0 && opt_.correlate_device_time) with_id_.push_back({i, payload});
    stack_.push_back(i);
  }

  /// Sums the complete tree in nodes_ (track `t`) into its sites and correlation ids.
  void finish_tree(std::size_t t) {
    if (!nodes_.empty()) cover_steps(nodes_[0].begin, nodes_[0].begin + nodes_[0].duration);
    if (track_memory_ != nullptr && !nodes_.empty()) {
      const std::int64_t b = nodes_[0].begin, e = nodes_[0].begin + nodes_[0].duration;
      if (!track_roots_.empty() && b <= track_roots_.back().second)
        track_roots_.back().second = std::max(track_roots_.back().second, e);
      else
        track_roots_.emplace_back(b, e);
    }
    // CPU times.
    for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
      if (!alive(i)) continue;
      const node& e = nodes_[i];
      site_sums& sums = sites_[e.site];
      ++sums.count;
      sums.flops += sums.site->flops;
      sums.cpu_total += e.duration;
      sums.self_cpu += e.duration;
      if (e.parent != none) sites_[nodes_[survivor(e.parent)].site].self_cpu -= e.duration;
      if (track_memory_ != nullptr) {
        // torch's rule: an allocation counts in every op of its thread open at its time, and
        // in the self memory of the innermost one.
        const auto [host, device] = track_memory_->in_interval(e.begin, e.begin + e.duration);
        sums.cpu_memory += host;
        sums.self_cpu_memory += host;
        sums.device_memory += device;
        sums.self_device_memory += device;
        if (e.parent != none) {
          site_sums& parent = sites_[nodes_[survivor(e.parent)].site];
          parent.self_cpu_memory -= host;
          parent.self_device_memory -= device;
        }
      }
      // Within a track, events come in order: only a site's first one can be earlier than
      // the first one of another track.
      if (sums.seen_in_track != t) {
        sums.seen_in_track = t;
        saw(sums, {e.begin, e.begin + e.duration, t, e.record}, e.parent == none);
      }
    }

    // Owners of correlation ids: the deepest op (else runtime call) among the id's events
    // inside its first one in this track, the first of equals winning. Later trees of the
    // track are never inside it.
    const auto depth = [&](std::uint32_t i) {
      std::size_t d = 0;
      for (std::uint32_t a = nodes_[i].parent; a != none; a = nodes_[a].parent)
        if (alive(a)) ++d;
      return d;
    };
    touched_.clear();
    for (const correlated& c : with_id_) {
      const std::uint32_t ci = correlation_index(c.id);
      correlation& k = correlations_[ci];
      const std::uint32_t s = survivor(c.node);
      if (k.local_tree < track_first_tree_) {  // the id's first event in this track
        const node& e = nodes_[c.node];
        k.local_tree = tree_;
        k.local_first = s;
        k.local_owner = s;
        touched_.push_back({ci, {e.begin, e.begin + e.duration, t, e.record}});
        continue;
      }
      if (k.local_tree != tree_) continue;
      bool inside = false;
      for (std::uint32_t a = s; a != none && !inside; a = nodes_[a].parent) inside = a == k.local_first;
      if (!inside) continue;
      const bool op = sites_[nodes_[s].site].is_op, owner_op = sites_[nodes_[k.local_owner].site].is_op;
      if (op != owner_op ? op : depth(s) > depth(k.local_owner)) k.local_owner = s;
    }
    // The owners are settled for this track: kept as the sites of the owner and its alive
    // ancestors, for when the device time is known.
    for (first_seen& f : touched_) {
      f.chain = static_cast<std::uint32_t>(chains_.size());
      for (std::uint32_t a = correlations_[f.id].local_owner; a != none; a = nodes_[a].parent)
        if (alive(a)) chains_.push_back(nodes_[a].site);
      chains_.insert(chains_.end(), root_steps_.begin(), root_steps_.end());
      f.chain_size = static_cast<std::uint32_t>(chains_.size()) - f.chain;
      track_touched_.push_back(f);
    }
    with_id_.clear();
    nodes_.clear();
    stack_.clear();
    ++tree_;
  }

  /// Each owner's device time: its own row's self device time, and the device total of the
  /// rows of its alive ancestors (itself included).
  void attribute_device_time() {
    for (const correlation& k : correlations_) {
      if (!k.has_host || (k.device_ns == 0 && k.device_flops == 0 && k.device_bytes == 0)) continue;
      sites_[chains_[k.chain]].self_device += k.device_ns;
      sites_[chains_[k.chain]].flops += k.device_flops;
      sites_[chains_[k.chain]].bytes += k.device_bytes;
      for (std::uint32_t i = 0; i < k.chain_size; ++i) sites_[chains_[k.chain + i]].device_total += k.device_ns;
    }
  }

  /// Sites merged into rows by name (and device or host, and input shapes when grouped), in
  /// the order of their first events.
  averages rows() {
    struct pending {
      average_row row;
      order_key first;
    };
    std::vector<pending> merged;
    std::unordered_map<std::string, std::size_t> row_of;
    for (const site_sums& s : sites_) {
      if (!s.seen) continue;
      std::string key(row_name(s.site->name));
      key += '\0';
      key += s.is_device ? 'd' : 'h';  // a device event never shares a row with a host op
      const char* shapes = s.site->input_shapes != nullptr ? s.site->input_shapes : "";
      if (opt_.group_by_input_shape) {
        key += '\0';
        key += shapes;
      }
      auto [it, fresh] = row_of.try_emplace(std::move(key), merged.size());
      if (fresh) {
        pending p;
        p.row.name = row_name(s.site->name);
        if (opt_.group_by_input_shape) p.row.input_shapes = shapes;
        p.row.is_device = s.is_device;
        p.row.top_level = s.top_level;
        p.first = s.first;
        merged.push_back(std::move(p));
      }
      pending& p = merged[it->second];
      if (s.first < p.first) {
        p.first = s.first;
        p.row.top_level = s.top_level;
      }
      p.row.count += s.count;
      p.row.self_cpu_ns += s.self_cpu;
      p.row.cpu_total_ns += s.cpu_total;
      p.row.self_device_ns += s.self_device;
      p.row.device_total_ns += s.device_total;
      p.row.flops += s.flops;
      p.row.device_bytes += s.bytes;
      p.row.cpu_memory_usage += s.cpu_memory;
      p.row.self_cpu_memory_usage += s.self_cpu_memory;
      p.row.device_memory_usage += s.device_memory;
      p.row.self_device_memory_usage += s.self_device_memory;
    }
    // Memory outside every op and step: one [memory] row (torch's top-level memory events, one
    // call each), placed where its first event falls; merged into an op of that name.
    if (loose_count_ != 0) {
      std::string key("[memory]");
      key += '\0';
      key += 'h';
      if (opt_.group_by_input_shape) key += '\0';
      auto [it, fresh] = row_of.try_emplace(std::move(key), merged.size());
      if (fresh) {
        pending p;
        p.row.name = "[memory]";
        p.row.top_level = true;
        p.first = {loose_first_, std::numeric_limits<std::int64_t>::min(), static_cast<std::size_t>(-1),
                   static_cast<std::size_t>(-1)};
        merged.push_back(std::move(p));
      }
      average_row& r = merged[it->second].row;
      r.count += loose_count_;
      r.cpu_memory_usage += loose_host_;
      r.self_cpu_memory_usage += loose_host_;
      r.device_memory_usage += loose_device_;
      r.self_device_memory_usage += loose_device_;
    }
    std::sort(merged.begin(), merged.end(), [](const pending& a, const pending& b) { return a.first < b.first; });
    averages out;
    out.device_name = opt_.device_name;
    out.profile_memory = opt_.profile_memory;
    out.with_flops = opt_.with_flops;
    std::tie(out.peak_flops_per_s, out.peak_hbm_bytes_per_s) = data_.device_peaks();
    out.rows.reserve(merged.size());
    for (pending& p : merged) out.rows.push_back(std::move(p.row));
    return out;
  }

  const trace_data& data_;
  const key_averages_options& opt_;
  id_index site_ids_;
  std::vector<site_sums> sites_;
  const site* last_site_ = nullptr;
  std::uint32_t last_site_index_ = 0;
  std::unordered_map<std::string_view, std::uint32_t> name_ids_;
  id_index correlation_ids_;
  std::vector<correlation> correlations_;
  std::vector<std::uint32_t> chains_;
  // The tree being read, reused from tree to tree.
  std::vector<node> nodes_;
  std::vector<std::uint32_t> stack_;
  std::vector<correlated> with_id_;
  std::vector<first_seen> touched_;        // ids first seen in the tree being read
  std::vector<first_seen> track_touched_;  // ... and in the track being read
  std::uint64_t tree_ = 1;                 // trees are numbered over all tracks
  std::uint64_t track_first_tree_ = 1;
  std::size_t host_events_ = 0;  // host events of the track read so far
  // Steps, by the track of the thread that marked them; those of the track being read, and
  // where cover_steps() has got to in them.
  std::unordered_map<std::size_t, std::vector<step_mark>> steps_of_track_;
  const std::vector<step_mark>* track_steps_ = nullptr;
  std::int64_t covered_end_ = 0;      // the end of the top-level events read so far
  std::size_t step_uncovered_ = 0;    // steps before it end before covered_end_
  std::size_t step_open_ = 0;         // steps before it end before the last top-level begin
  std::vector<std::uint32_t> root_steps_;  // the steps the tree being read begins in
  // Memory (with profile_memory): each track's events, the one being read and the spans of its
  // top-level events so far; what no op or step holds.
  std::unordered_map<std::size_t, track_memory> memory_of_track_;
  const track_memory* track_memory_ = nullptr;
  std::vector<std::pair<std::int64_t, std::int64_t>> track_roots_;
  std::uint64_t loose_count_ = 0;
  std::int64_t loose_first_ = 0, loose_host_ = 0, loose_device_ = 0;
};

}  // namespace detail

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
  averages out = detail::session_averages(data, opt).run();
  out.records_lost = data.lost();
  out.overflow = data.overflow;
  return out;
}

}  // namespace v1
}  // namespace strata
