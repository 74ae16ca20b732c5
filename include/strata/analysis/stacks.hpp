// strata/analysis/stacks.hpp: collapsed stacks for flame graphs (torch.profiler's
// export_stacks): one line `outer;inner;leaf <µs>` per distinct nesting path, host events
// nested as key_averages() nests them, device kernels under the call that launched them
// (rules and escaping: docs/key-averages.md, "Flame graphs").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
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

/// Builds collapsed stacks track by track, one top-level tree at a time (memory holds one
/// tree, the paths and the device events, never a whole session's events), with the rules
/// of docs/key-averages.md ("Flame graphs"): host events nest per track by containment with
/// key_averages()'s parent rule and recursion collapse; a device event goes under the deepest
/// host event of its correlation id inside that id's first host event.
class stack_builder {
 public:
  /// A host event of the track being read; `tie` orders events of equal interval (the
  /// position key_averages() would give them), over all tracks.
  struct host_event {
    std::int64_t begin, end;  // end >= begin
    std::uint32_t name;
    std::uint64_t correlation_id;
    std::uint64_t tie;
  };

  std::uint32_t name_id(std::string_view name) {
    const auto [it, fresh] = name_ids_.try_emplace(name, static_cast<std::uint32_t>(names_.size()));
    if (fresh) names_.push_back(name);
    return it->second;
  }

  /// Host events of one track come in (begin ascending, end descending, tie) order.
  void add(const host_event& e) {
    while (!open_.empty() && (e.begin >= tree_[open_.back()].e.end || e.end > tree_[open_.back()].e.end))
      open_.pop_back();
    if (open_.empty() && !tree_.empty()) finish_tree();
    const std::uint32_t parent = open_.empty() ? none : open_.back();
    if (parent != none) ++tree_[parent].children;
    open_.push_back(static_cast<std::uint32_t>(tree_.size()));
    tree_.push_back({e, parent, 0, none, 0, none});
  }

  /// The track's last tree; the next add() starts another track.
  void end_track() {
    if (!tree_.empty()) finish_tree();
    open_.clear();
  }

  void add_device(std::uint32_t name, std::uint64_t correlation_id, std::int64_t ns) {
    device_.push_back({name, correlation_id, ns});
  }

  collapsed_stacks finish(stack_metric metric) {
    end_track();
    const bool cpu = metric == stack_metric::self_cpu_time_total;
    if (!cpu) {
      for (const device_event& d : device_) {
        std::uint32_t parent = none;
        if (d.correlation_id != 0)
          if (const auto it = ids_.find(d.correlation_id); it != ids_.end()) parent = it->second.anchor_path;
        paths_[path_of(parent, d.name)].device_ns += d.ns;
      }
    }
    std::vector<std::string> frames(names_.size());
    std::vector<bool> framed(names_.size(), false);
    collapsed_stacks out;
    std::vector<std::uint32_t> chain;
    for (std::uint32_t p = 0; p < paths_.size(); ++p) {
      const std::int64_t ns = cpu ? paths_[p].cpu_ns : paths_[p].device_ns;
      if (ns < 1000) continue;  // zero microseconds (or less): no line
      chain.clear();
      for (std::uint32_t a = p; a != none; a = paths_[a].parent) chain.push_back(paths_[a].name);
      stack_line line;
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        if (!framed[*it]) {
          frames[*it] = escape_stack_frame(row_name(names_[*it]));
          framed[*it] = true;
        }
        if (!line.stack.empty()) line.stack += ';';
        line.stack += frames[*it];
      }
      line.value_us = static_cast<std::uint64_t>(ns / 1000);
      out.lines.push_back(std::move(line));
    }
    // Paths that print alike (`ProfilerStep#1` and `#2` both as `ProfilerStep*`; `x 1` and
    // `x_1`) are one line.
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

 private:
  static constexpr std::uint32_t none = static_cast<std::uint32_t>(-1);

  struct node {
    host_event e;
    std::uint32_t parent;    // by containment
    std::uint32_t children;  // by containment
    std::uint32_t survivor;  // itself when alive, else the event it merged into
    std::uint32_t depth;     // among alive events
    std::uint32_t path;
  };
  struct path_node {
    std::uint32_t parent, name;
    std::int64_t cpu_ns = 0, device_ns = 0;
    std::uint32_t last_name = none, last_child = none;  // the last lookup under this path
  };
  struct device_event {
    std::uint32_t name;
    std::uint64_t correlation_id;
    std::int64_t ns;
  };
  /// Per correlation id: its first host event (over all tracks) and where its kernels go.
  struct correlation {
    std::int64_t begin = 0, end = 0;
    std::uint64_t tie = 0;
    std::uint64_t tree = 0;      // the tree of the first event
    std::uint32_t first = none;  // the first event's survivor, in that tree
    std::uint32_t anchor_path = none, anchor_depth = 0;
  };

  std::uint32_t path_of(std::uint32_t parent, std::uint32_t name) {
    std::uint32_t& last_name = parent == none ? root_last_name_ : paths_[parent].last_name;
    std::uint32_t& last_child = parent == none ? root_last_child_ : paths_[parent].last_child;
    if (last_name == name) return last_child;
    const std::uint64_t key = (std::uint64_t{parent + 1u} << 32) | name;
    const auto [it, fresh] = path_ids_.try_emplace(key, static_cast<std::uint32_t>(paths_.size()));
    if (fresh) paths_.push_back({parent, name});
    // paths_ may have moved: look the cache up again.
    (parent == none ? root_last_name_ : paths_[parent].last_name) = name;
    (parent == none ? root_last_child_ : paths_[parent].last_child) = it->second;
    return it->second;
  }

  void finish_tree() {
    for (std::uint32_t i = 0; i < tree_.size(); ++i) {
      node& n = tree_[i];
      const std::uint32_t p = n.parent;
      const bool alive = p == none || tree_[p].children != 1 || tree_[p].e.name != n.e.name;
      if (!alive) {
        n.survivor = tree_[p].survivor;
        continue;
      }
      n.survivor = i;
      const std::uint32_t fp = p == none ? none : tree_[p].survivor;  // the final parent
      n.depth = fp == none ? 0 : tree_[fp].depth + 1;
      n.path = path_of(fp == none ? none : tree_[fp].path, n.e.name);
      const std::int64_t d = n.e.end - n.e.begin;
      paths_[n.path].cpu_ns += d;
      if (fp != none) paths_[tree_[fp].path].cpu_ns -= d;
    }
    for (std::uint32_t i = 0; i < tree_.size(); ++i) {
      const host_event& e = tree_[i].e;
      if (e.correlation_id == 0) continue;
      const std::uint32_t s = tree_[i].survivor;
      auto [it, fresh] = ids_.try_emplace(e.correlation_id);
      correlation& k = it->second;
      const bool earlier = fresh || e.begin < k.begin || (e.begin == k.begin && (e.end > k.end || (e.end == k.end && e.tie < k.tie)));
      if (earlier) {
        k = {e.begin, e.end, e.tie, tree_number_, s, tree_[s].path, tree_[s].depth};
        continue;
      }
      if (k.tree != tree_number_) continue;
      bool inside = false;
      for (std::uint32_t a = s; a != none && !inside; a = tree_[a].parent) inside = a == k.first;
      if (inside && tree_[s].depth > k.anchor_depth) {
        k.anchor_path = tree_[s].path;
        k.anchor_depth = tree_[s].depth;
      }
    }
    tree_.clear();
    ++tree_number_;
  }

  std::unordered_map<std::string_view, std::uint32_t> name_ids_;
  std::vector<std::string_view> names_;
  std::vector<path_node> paths_;
  std::unordered_map<std::uint64_t, std::uint32_t> path_ids_;
  std::uint32_t root_last_name_ = none, root_last_child_ = none;
  std::vector<node> tree_;
  std::vector<std::uint32_t> open_;
  std::uint64_t tree_number_ = 0;
  std::unordered_map<std::uint64_t, correlation> ids_;
  std::vector<device_event> device_;
};

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
  detail::stack_builder b;
  std::vector<std::size_t> host;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const op_event& e = events[i];
    if (e.layer == layer::device)
      b.add_device(b.name_id(e.name), e.correlation_id, detail::duration(e));
    else if (e.steps_of == op_event::not_a_step)
      host.push_back(i);
  }
  const auto end_of = [&](std::size_t i) { return std::max(events[i].begin_ns, events[i].end_ns); };
  std::sort(host.begin(), host.end(), [&](std::size_t a, std::size_t b) {
    if (events[a].track != events[b].track) return events[a].track < events[b].track;
    if (events[a].begin_ns != events[b].begin_ns) return events[a].begin_ns < events[b].begin_ns;
    if (end_of(a) != end_of(b)) return end_of(a) > end_of(b);
    return a < b;
  });
  for (std::size_t k = 0; k < host.size(); ++k) {
    const op_event& e = events[host[k]];
    if (k > 0 && events[host[k - 1]].track != e.track) b.end_track();
    b.add({e.begin_ns, end_of(host[k]), b.name_id(e.name), e.correlation_id, host[k]});
  }
  return b.finish(m);
}

/// Collapsed stacks of a stopped session's scope records, as `key_averages(data)` reads them:
/// one track per thread, device tracks' records as device events, the payload as correlation
/// id; steps tracks are left out. Spilled tracks are read back one at a time.
inline collapsed_stacks stacks(const trace_data& data, std::string_view metric) {
  const stack_metric m = stack_metric_named(metric);
  detail::stack_builder b;
  std::unordered_map<const site*, std::uint32_t> site_names;
  const site* last_site = nullptr;
  std::uint32_t last_name = 0;
  const auto name_of = [&](const site* s) {
    if (s != last_site) {
      const auto [it, fresh] = site_names.try_emplace(s, 0);
      if (fresh) it->second = b.name_id(s->name);
      last_site = s;
      last_name = it->second;
    }
    return last_name;
  };
  std::vector<record> spilled;
  std::vector<detail::stack_builder::host_event> unsorted;
  for (std::size_t t = 0; t < data.threads.size(); ++t) {
    const thread_track& track = data.threads[t];
    if (track.steps) continue;
    std::span<const record> records = track.records;
    if (!track.spilled.empty()) {
      std::vector<record>().swap(spilled);  // the previous spilled track's memory goes first
      detail::read_track_into(data, track, spilled);
      records = spilled;
    }
    const auto is_scope = [](const record& r) { return r.site->kind == record_kind::scope && r.site->category == nullptr; };
    // Host records are in order on almost every track (a collected session sorts them); a
    // track that is not is sorted on its own.
    bool in_order = true;
    std::int64_t last_begin = 0, last_end = 0;
    bool first = true;
    for (const record& r : records) {
      if (!is_scope(r) || r.site->layer == layer::device) continue;
      const std::int64_t begin = data.ns_of(track, r.begin), end = std::max(begin, data.ns_of(track, r.end));
      if (!first && (begin < last_begin || (begin == last_begin && end > last_end))) {
        in_order = false;
        break;
      }
      first = false;
      last_begin = begin;
      last_end = end;
    }
    unsorted.clear();
    const std::uint64_t tie_base = static_cast<std::uint64_t>(t) << 40;
    for (std::size_t i = 0; i < records.size(); ++i) {
      const record& r = records[i];
      if (!is_scope(r)) continue;
      const std::int64_t begin = data.ns_of(track, r.begin), end = std::max(begin, data.ns_of(track, r.end));
      if (r.site->layer == layer::device) {
        b.add_device(name_of(r.site), r.payload, end - begin);
        continue;
      }
      const detail::stack_builder::host_event e{begin, end, name_of(r.site), r.payload, tie_base + i};
      if (in_order)
        b.add(e);
      else
        unsorted.push_back(e);
    }
    if (!in_order) {
      std::sort(unsorted.begin(), unsorted.end(), [](const auto& x, const auto& y) {
        if (x.begin != y.begin) return x.begin < y.begin;
        if (x.end != y.end) return x.end > y.end;
        return x.tie < y.tie;
      });
      for (const auto& e : unsorted) b.add(e);
    }
    b.end_track();
  }
  return b.finish(m);
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
