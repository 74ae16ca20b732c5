// strata/analysis/stacks.hpp: collapsed stacks for flame graphs (torch.profiler's
// export_stacks): one line `outer;inner;leaf <µs>` per distinct nesting path, host events
// nested as key_averages() nests them, device kernels under the call that launched them
// (rules and escaping: docs/key-averages.md#flame-graphs).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "strata/analysis/key_averages.hpp"
#include "strata/error.hpp"
#include "strata/export/trace_format.hpp"
#include "strata/record.hpp"
#include "strata/trace_data.hpp"
#include "strata/detail/record_order.hpp"
#include "strata/detail/trace_file.hpp"

namespace strata {
inline namespace v1 {

/// What a line's value measures: torch's `export_stacks` metrics.
enum class stack_metric : std::uint8_t {
  self_cpu_time_total,     ///< host time of the path's last frame outside its children
  self_device_time_total,  ///< device time of the kernels at the end of the path
};

/// The metric named `name`: `self_cpu_time_total`, or `self_device_time_total` (also spelt
/// `self_cuda_time_total`, `self_xpu_time_total`, `self_privateuse1_time_total` or
/// `self_neuron_time_total`). Raises `strata::error` listing these for any other name.
inline stack_metric stack_metric_named(std::string_view name) {
  if (name == "self_cpu_time_total") return stack_metric::self_cpu_time_total;
  for (std::string_view device : {"device", "cuda", "xpu", "privateuse1", "neuron"})
    if (name.size() == device.size() + 16 && name.starts_with("self_") && name.substr(5, device.size()) == device &&
        name.ends_with("_time_total"))
      return stack_metric::self_device_time_total;
  throw error("unknown stacks metric '" + std::string(name) +
              "': use self_cpu_time_total or self_device_time_total (also spelt self_cuda_time_total, "
              "self_xpu_time_total, self_privateuse1_time_total, self_neuron_time_total)");
}

/// One line of collapsed stacks: the frames from the outermost, joined by `;` (each escaped,
/// see `escape_stack_frame`), and the metric in whole microseconds.
struct stack_line {
  std::string stack;
  std::uint64_t value_us = 0;
  bool operator==(const stack_line&) const = default;
};

/// Collapsed stacks, lines sorted by their stack (bytewise), none with a zero value.
struct collapsed_stacks {
  std::vector<stack_line> lines;

  /// The text flamegraph.pl and speedscope read: `stack value\n` per line.
  std::string text() const {
    std::string out;
    for (const stack_line& l : lines) {
      out += l.stack;
      out += ' ';
      out += std::to_string(l.value_us);
      out += '\n';
    }
    return out;
  }
};

/// A frame name as a collapsed line can hold it: `;` (the frame separator), control bytes
/// (newline, tab, ...; DEL) and bytes that are not valid UTF-8 become `\xNN`; a whitespace
/// before a trailing number becomes `_` (flamegraph.pl would read `name 12` at a line's end as
/// a second count); an empty name becomes `[unnamed]`.
inline std::string escape_stack_frame(std::string_view name) {
  if (name.empty()) return "[unnamed]";
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(name.size());
  const auto escape = [&](unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  const auto* s = reinterpret_cast<const unsigned char*>(name.data());
  const std::size_t n = name.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f || c == ';')
        escape(c);
      else
        out += static_cast<char>(c);
      ++i;
      continue;
    }
    // The length of a well-formed UTF-8 sequence starting at i (RFC 3629), else 0.
    std::size_t len = 0;
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) len = 3;
    else if (c >= 0xf0 && c <= 0xf4) len = 4;
    bool ok = len != 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) ok = (s[i + k] & 0xc0) == 0x80;
    if (ok && len == 3) ok = !(c == 0xe0 && s[i + 1] < 0xa0) && !(c == 0xed && s[i + 1] > 0x9f);
    if (ok && len == 4) ok = !(c == 0xf0 && s[i + 1] < 0x90) && !(c == 0xf4 && s[i + 1] > 0x8f);
    if (!ok) {
      escape(c);
      ++i;
      continue;
    }
    out.append(name.data() + i, len);
    i += len;
  }
  // A trailing number after whitespace: digits, optionally `.digits`, as flamegraph.pl's
  // count pattern reads them.
  std::size_t end = out.size();
  std::size_t k = end;
  while (k > 0 && out[k - 1] >= '0' && out[k - 1] <= '9') --k;
  if (k > 0 && k < end && out[k - 1] == '.') {
    std::size_t j = k - 1;
    while (j > 0 && out[j - 1] >= '0' && out[j - 1] <= '9') --j;
    if (j < k - 1) k = j;
  }
  if (k > 0 && k < end && out[k - 1] == ' ') out[k - 1] = '_';
  return out;
}

namespace detail {

/// An interval as the stacks need it; names point into the caller's events or sites.
struct stack_event {
  std::string_view name;
  bool device = false;
  std::uint64_t track = 0;
  std::int64_t begin = 0, end = 0;  // end >= begin
  std::uint64_t correlation_id = 0;
};

/// The stacks of `events` (docs/key-averages.md#flame-graphs): host events nest per track by
/// containment with key_averages()'s parent rule and recursion collapse; a device event goes
/// under the deepest host event of its correlation id inside that id's first host event.
inline collapsed_stacks build_stacks(std::span<const stack_event> ev, stack_metric metric) {
  constexpr std::size_t npos = static_cast<std::size_t>(-1);
  constexpr std::uint32_t no_path = static_cast<std::uint32_t>(-1);
  const std::size_t n = ev.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (ev[a].begin != ev[b].begin) return ev[a].begin < ev[b].begin;
    return ev[a].end > ev[b].end;
  });

  struct node {
    std::size_t parent = static_cast<std::size_t>(-1);
    std::vector<std::size_t> children;
    std::size_t depth = 0;
    std::uint32_t path = static_cast<std::uint32_t>(-1);
    bool alive = true;
  };
  std::vector<node> nodes(n);
  {
    std::unordered_map<std::uint64_t, std::vector<std::size_t>> open;
    for (std::size_t i : order) {
      if (ev[i].device) continue;
      auto& stack = open[ev[i].track];
      while (!stack.empty() && (ev[i].begin >= ev[stack.back()].end || ev[i].end > ev[stack.back()].end))
        stack.pop_back();
      if (!stack.empty()) {
        nodes[i].parent = stack.back();
        nodes[stack.back()].children.push_back(i);
      }
      stack.push_back(i);
    }
  }
  // key_averages()'s recursion collapse: an only child of a same-named parent merges into it.
  std::vector<std::size_t> absorbed_by(n, npos);
  for (std::size_t i : order) {
    const std::size_t p = nodes[i].parent;
    if (p == npos || nodes[p].children.size() != 1 || ev[p].name != ev[i].name) continue;
    nodes[i].alive = false;
    absorbed_by[i] = p;
    nodes[p].children = std::move(nodes[i].children);
    for (std::size_t c : nodes[p].children) nodes[c].parent = p;
  }
  const auto survivor = [&](std::size_t i) {
    while (absorbed_by[i] != npos) i = absorbed_by[i];
    return i;
  };

  // Paths interned as (parent path, frame name), so a path's text is built once, at the end.
  std::unordered_map<std::string_view, std::uint32_t> name_ids;
  std::vector<std::string_view> names;
  struct path_node {
    std::uint32_t parent, name;
    std::int64_t ns;
  };
  std::vector<path_node> paths;
  std::unordered_map<std::uint64_t, std::uint32_t> path_ids;
  const auto path_of = [&](std::uint32_t parent, std::string_view name) {
    const auto [nit, new_name] = name_ids.try_emplace(name, static_cast<std::uint32_t>(names.size()));
    if (new_name) names.push_back(name);
    const std::uint64_t key = (std::uint64_t{parent + 1u} << 32) | nit->second;
    const auto [pit, fresh] = path_ids.try_emplace(key, static_cast<std::uint32_t>(paths.size()));
    if (fresh) paths.push_back({parent, nit->second, 0});
    return pit->second;
  };

  for (std::size_t i : order) {
    if (ev[i].device || !nodes[i].alive) continue;
    const std::size_t p = nodes[i].parent;
    nodes[i].depth = p == npos ? 0 : nodes[p].depth + 1;
    nodes[i].path = path_of(p == npos ? no_path : nodes[p].path, row_name(ev[i].name));
    if (metric != stack_metric::self_cpu_time_total) continue;
    std::int64_t self = ev[i].end - ev[i].begin;
    for (std::size_t c : nodes[i].children) self -= ev[c].end - ev[c].begin;
    paths[nodes[i].path].ns += self;
  }

  if (metric == stack_metric::self_device_time_total) {
    // Per correlation id: its first host event, and the deepest one inside it (first of equals).
    std::unordered_map<std::uint64_t, std::pair<std::size_t, std::size_t>> anchor;
    for (std::size_t i : order) {
      const std::uint64_t c = ev[i].correlation_id;
      if (c == 0 || ev[i].device) continue;
      const std::size_t s = survivor(i);
      const auto [it, fresh] = anchor.try_emplace(c, s, s);
      if (fresh) continue;
      bool inside = false;
      for (std::size_t a = s; a != npos && !inside; a = nodes[a].parent) inside = a == it->second.first;
      if (inside && nodes[s].depth > nodes[it->second.second].depth) it->second.second = s;
    }
    for (std::size_t i : order) {
      if (!ev[i].device) continue;
      std::uint32_t parent = no_path;
      if (ev[i].correlation_id != 0)
        if (const auto it = anchor.find(ev[i].correlation_id); it != anchor.end())
          parent = nodes[it->second.second].path;
      paths[path_of(parent, ev[i].name)].ns += ev[i].end - ev[i].begin;
    }
  }

  std::vector<std::string> escaped(names.size());
  std::vector<bool> escaped_done(names.size(), false);
  collapsed_stacks out;
  std::vector<std::uint32_t> chain;
  for (std::uint32_t p = 0; p < paths.size(); ++p) {
    if (paths[p].ns < 1000) continue;  // zero microseconds (or less): no line
    chain.clear();
    for (std::uint32_t a = p; a != no_path; a = paths[a].parent) chain.push_back(paths[a].name);
    stack_line line;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (!escaped_done[*it]) {
        escaped[*it] = escape_stack_frame(names[*it]);
        escaped_done[*it] = true;
      }
      if (!line.stack.empty()) line.stack += ';';
      line.stack += escaped[*it];
    }
    line.value_us = static_cast<std::uint64_t>(paths[p].ns / 1000);
    out.lines.push_back(std::move(line));
  }
  // Two paths can escape to the same text (`a;b` and `a\x3bb` never do; `x 1` and `x_1` do):
  // sorted, equal stacks are merged.
  std::sort(out.lines.begin(), out.lines.end(),
            [](const stack_line& a, const stack_line& b) { return a.stack < b.stack; });
  std::vector<stack_line> merged;
  for (stack_line& l : out.lines) {
    if (!merged.empty() && merged.back().stack == l.stack)
      merged.back().value_us += l.value_us;
    else
      merged.push_back(std::move(l));
  }
  out.lines = std::move(merged);
  return out;
}

}  // namespace detail

/// Collapsed stacks of `events` for `metric` (see `stack_metric_named`): one line per distinct
/// path of nested host events, per track, and for the device metric one per device event's
/// path under the call that launched it. Steps (`steps_of` set) are no frames; a frame named
/// `ProfilerStep#N` (torch's steps, which its ops nest in) is `ProfilerStep*`, as in the table. Raises
/// `strata::error` for an unknown metric.
///
/// **Example**
/// ```
/// std::vector<strata::op_event> ev = {{.name = "forward", .begin_ns = 0, .end_ns = 5000},
///                                     {.name = "aten::mm", .begin_ns = 1000, .end_ns = 3000}};
/// std::fputs(strata::stacks(ev, "self_cpu_time_total").text().c_str(), stdout);
/// // forward 3
/// // forward;aten::mm 2
/// ```
inline collapsed_stacks stacks(std::span<const op_event> events, std::string_view metric) {
  const stack_metric m = stack_metric_named(metric);
  std::vector<detail::stack_event> ev;
  ev.reserve(events.size());
  for (const op_event& e : events) {
    const bool device = e.layer == layer::device;
    if (e.steps_of != op_event::not_a_step && !device) continue;
    ev.push_back({e.name, device, e.track, e.begin_ns, std::max(e.begin_ns, e.end_ns), e.correlation_id});
  }
  return detail::build_stacks(ev, m);
}

/// Collapsed stacks of a stopped session's scope records, as `key_averages(data)` reads them:
/// one track per thread, device tracks' records as device events, the payload as correlation
/// id; steps tracks are left out. Spilled tracks are read back one at a time.
inline collapsed_stacks stacks(const trace_data& data, std::string_view metric) {
  const stack_metric m = stack_metric_named(metric);
  std::vector<detail::stack_event> ev;
  std::size_t total = 0;
  for (const thread_track& t : data.threads) total += t.steps ? 0 : t.record_count();
  ev.reserve(total);
  std::vector<record> spilled;
  for (std::size_t t = 0; t < data.threads.size(); ++t) {
    const thread_track& track = data.threads[t];
    if (track.steps) continue;
    std::span<const record> records = track.records;
    if (!track.spilled.empty()) {
      std::vector<record>().swap(spilled);
      detail::read_track_into(data, track, spilled);
      records = spilled;
    }
    for (const record& r : records) {
      if (r.site->kind != record_kind::scope || r.site->category != nullptr) continue;
      const std::int64_t begin = data.ns_of(track, r.begin);
      ev.push_back({std::string_view(r.site->name), r.site->layer == layer::device, t, begin,
                    std::max(begin, data.ns_of(track, r.end)), r.payload});
    }
  }
  return detail::build_stacks(ev, m);
}

/// Writes `s.text()` to `path` atomically (a temporary file renamed into place: a failed
/// write leaves no file and the previous one whole). Returns the path, the lines written (as
/// `events`) and the bytes. Raises `strata::error` naming the path when it cannot be written.
inline export_result write_stacks(const collapsed_stacks& s, const std::filesystem::path& path) {
  if (path.empty()) throw error("write_stacks: no path given; name a file such as stacks.folded");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw error("cannot write stacks to '" + path.string() + "': it is a directory; name a file in it");
  detail::atomic_file f(path);
  const std::string text = s.text();
  f.write(text);
  f.commit();
  return {path.string(), s.lines.size(), f.bytes_written()};
}

}  // namespace v1
}  // namespace strata
