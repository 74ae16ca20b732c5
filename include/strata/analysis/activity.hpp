// strata/analysis/activity.hpp: what every track of a run did over time, aggregated into a fixed
// number of time bins: how busy each track was in each bin and the ops that took the time there,
// the steps, and the device's busy time. It is the HTML report's timeline (never every event:
// its size depends on the tracks and bins, not on the number of records).
//
// Rules (docs/report.md, "Timeline"):
// - The run is the session from start to stop (a session), or from the first event's begin to
//   the last one's end (saved traces); anything outside it is cut off.
// - On each track, events nest by containment; every instant the track is inside some event is
//   busy, and it belongs to the innermost event open then (its self time). A bin's top ops are
//   the names with the most self time in it.
// - Steps (`ProfilerStep#N`, and a steps track's scopes) are marked, never busy time.
// - Device busy time is the union over all device tracks (executions, engines, queues).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "strata/analysis/key_averages.hpp"
#include "strata/record.hpp"
#include "strata/trace_data.hpp"
#include "strata/detail/record_order.hpp"

namespace strata {
inline namespace v1 {

/// What a track is, for the report's grouping and rules.
enum class track_kind : std::uint8_t {
  host,    ///< a thread of the traced process (framework, user, runtime scopes)
  device,  ///< a device's executions (kernels)
  engine,  ///< one engine or DMA queue of a device core (its instructions)
  queue,   ///< a device's submission queue (work waiting to run)
};

/// Who a track is: its name, the process (or device) it belongs to, and its kind.
struct track_label {
  std::string name = {};
  std::string group = {};
  track_kind kind = track_kind::host;
};

/// One track of a run's activity.
struct activity_track {
  track_label label = {};
  std::int64_t busy_ns = 0;    ///< time inside some event, within the run
  std::uint64_t events = 0;    ///< events seen (outside the run too)
  std::uint64_t flops = 0;     ///< FLOPs its events carry
  std::uint64_t bytes = 0;     ///< HBM bytes its device events moved
  std::vector<std::int64_t> busy = {};  ///< per bin: ns busy
  /// Per bin: up to `activity::top_per_bin` (name index, self ns), most first.
  std::vector<std::vector<std::pair<std::uint32_t, std::int64_t>>> top = {};
};

/// A step of the run (`ProfilerStep#N`).
struct activity_step {
  std::string name = {};
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
};

/// A run's activity over time (see the rules at the top of this header).
struct activity {
  static constexpr std::size_t top_per_bin = 8;
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
  std::size_t bins = 0;
  std::vector<activity_track> tracks = {};
  std::vector<activity_step> steps = {};
  std::vector<std::string> names = {};  ///< the names `activity_track::top` points to
  std::int64_t device_busy_ns = 0;      ///< union of every device track's busy time
  std::uint64_t framework_ops = 0;      ///< framework-layer events (dispatches)

  std::int64_t wall_ns() const noexcept { return end_ns > begin_ns ? end_ns - begin_ns : 0; }
  /// Where bin `i` begins; bin `bins` is the end of the run.
  std::int64_t bin_begin(std::size_t i) const noexcept {
    if (bins == 0) return begin_ns;
    const long double f = static_cast<long double>(wall_ns()) * static_cast<long double>(i) / static_cast<long double>(bins);
    return begin_ns + static_cast<std::int64_t>(f);
  }
  bool has_device() const noexcept {
    return std::any_of(tracks.begin(), tracks.end(), [](const activity_track& t) { return t.label.kind != track_kind::host; });
  }
};

namespace detail {

inline bool is_step_name(std::string_view name) noexcept { return name.starts_with("ProfilerStep#"); }

/// Builds an `activity` track by track; a track's events come in order of begin (ties: longer
/// first), as `add` expects.
class activity_builder {
 public:
  activity_builder(std::int64_t begin_ns, std::int64_t end_ns, std::size_t bins) {
    out_.begin_ns = begin_ns;
    out_.end_ns = std::max(begin_ns, end_ns);
    out_.bins = out_.wall_ns() > 0 ? std::max<std::size_t>(bins, 1) : 0;
  }

  std::uint32_t name_id(std::string_view name) {
    const auto [it, fresh] = ids_.try_emplace(std::string(name), static_cast<std::uint32_t>(out_.names.size()));
    if (fresh) out_.names.emplace_back(name);
    return it->second;
  }

  void begin_track(track_label label) {
    activity_track t;
    t.label = std::move(label);
    t.busy.assign(out_.bins, 0);
    out_.tracks.push_back(std::move(t));
    self_.assign(out_.bins, {});
    dense_.assign(out_.bins * dense_names, 0);
    stack_.clear();
    cursor_ = std::numeric_limits<std::int64_t>::min();
  }

  void add_step(std::string_view name, std::int64_t begin, std::int64_t end) {
    out_.steps.push_back({std::string(name), begin, std::max(begin, end)});
  }

  void count_framework_op() noexcept { ++out_.framework_ops; }

  /// One event of the current track.
  void add(std::uint32_t name, std::int64_t begin, std::int64_t end, std::uint64_t flops = 0, std::uint64_t bytes = 0) {
    activity_track& t = out_.tracks.back();
    ++t.events;
    t.flops += flops;
    t.bytes += bytes;
    end = std::max(begin, end);
    advance(begin);
    if (!stack_.empty()) end = std::min(end, stack_.back().second);  // a child ends with its parent
    if (stack_.empty()) cursor_ = begin;
    stack_.emplace_back(name, end);
  }

  void end_track() {
    advance(std::numeric_limits<std::int64_t>::max());
    activity_track& t = out_.tracks.back();
    t.top.resize(out_.bins);
    for (std::size_t b = 0; b < out_.bins; ++b) {
      auto& top = t.top[b];
      top.assign(self_[b].begin(), self_[b].end());
      for (std::uint32_t n = 0; n < dense_names; ++n)
        if (const std::int64_t ns = dense_[b * dense_names + n]; ns > 0) top.emplace_back(n, ns);
      std::sort(top.begin(), top.end(), [](const auto& x, const auto& y) {
        return x.second != y.second ? x.second > y.second : x.first < y.first;
      });
      if (top.size() > activity::top_per_bin) top.resize(activity::top_per_bin);
    }
    if (t.label.kind != track_kind::host) {
      device_.insert(device_.end(), segments_.begin(), segments_.end());
    }
    segments_.clear();
  }

  activity finish() {
    std::sort(device_.begin(), device_.end());
    std::int64_t total = 0, open_begin = 0, open_end = std::numeric_limits<std::int64_t>::min();
    for (const auto& [b, e] : device_) {
      if (b > open_end) {
        if (open_end > open_begin) total += open_end - open_begin;
        open_begin = b;
        open_end = e;
      } else {
        open_end = std::max(open_end, e);
      }
    }
    if (open_end > open_begin) total += open_end - open_begin;
    out_.device_busy_ns = total;
    std::sort(out_.steps.begin(), out_.steps.end(),
              [](const activity_step& a, const activity_step& b) { return a.begin_ns < b.begin_ns; });
    return std::move(out_);
  }

 private:
  /// Closes the events that end by `t`, giving each stretch to the innermost event open in it.
  void advance(std::int64_t t) {
    while (!stack_.empty()) {
      const auto [name, end] = stack_.back();
      const std::int64_t upto = std::min(end, t);
      if (upto > cursor_) {
        attribute(name, cursor_, upto);
        cursor_ = upto;
      }
      if (end > t) break;
      stack_.pop_back();
    }
  }

  void attribute(std::uint32_t name, std::int64_t a, std::int64_t b) {
    a = std::max(a, out_.begin_ns);
    b = std::min(b, out_.end_ns);
    if (b <= a || out_.bins == 0) return;
    activity_track& t = out_.tracks.back();
    t.busy_ns += b - a;
    if (t.label.kind != track_kind::host) {
      if (!segments_.empty() && segments_.back().second == a)
        segments_.back().second = b;
      else
        segments_.emplace_back(a, b);
    }
    std::size_t bin = bin_of(a);
    while (a < b && bin < out_.bins) {
      const std::int64_t bin_end = out_.bin_begin(bin + 1);
      const std::int64_t part_end = std::min(b, bin_end);
      if (part_end > a) {
        t.busy[bin] += part_end - a;
        if (name < dense_names) dense_[bin * dense_names + name] += part_end - a;
        else self_[bin][name] += part_end - a;
      }
      a = part_end;
      ++bin;
    }
  }

  std::size_t bin_of(std::int64_t ns) const noexcept {
    const long double f = static_cast<long double>(ns - out_.begin_ns) * static_cast<long double>(out_.bins) /
                          static_cast<long double>(out_.wall_ns());
    std::size_t bin = static_cast<std::size_t>(f);
    if (bin >= out_.bins) bin = out_.bins - 1;
    while (bin > 0 && out_.bin_begin(bin) > ns) --bin;  // rounding
    while (bin + 1 < out_.bins && out_.bin_begin(bin + 1) <= ns) ++bin;
    return bin;
  }

  activity out_;
  std::unordered_map<std::string, std::uint32_t> ids_;
  // Self time per bin and name: the first names (most runs have no more) in a flat array,
  // the others in a map per bin.
  static constexpr std::uint32_t dense_names = 64;
  std::vector<std::int64_t> dense_;
  std::vector<std::unordered_map<std::uint32_t, std::int64_t>> self_;
  std::vector<std::pair<std::uint32_t, std::int64_t>> stack_;  ///< open events: name, end
  std::int64_t cursor_ = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> segments_, device_;
};

/// One event as the builder takes it, for sorting a track.
struct activity_event {
  std::int64_t begin = 0, end = 0;
  std::uint32_t name = 0;
  std::uint64_t flops = 0, bytes = 0;
};

inline void sort_activity(std::vector<activity_event>& v) {
  const auto before = [](const activity_event& a, const activity_event& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
  };
  // A session's tracks are in this order already, almost always: checking is cheaper.
  if (!std::is_sorted(v.begin(), v.end(), before)) std::stable_sort(v.begin(), v.end(), before);
}

/// The `"bytes":N` member of a site's arguments (a simulated execution's HBM bytes), 0: none.
inline std::uint64_t bytes_in_args(const char* args_json) noexcept {
  if (args_json == nullptr) return 0;
  const std::string_view args(args_json);
  constexpr std::string_view key = "\"bytes\":";
  for (std::size_t at = args.find(key); at != std::string_view::npos; at = args.find(key, at + 1)) {
    if (at != 0 && args[at - 1] != ',' && args[at - 1] != '{') continue;
    std::uint64_t v = 0;
    std::size_t i = at + key.size();
    for (; i < args.size() && args[i] >= '0' && args[i] <= '9'; ++i) v = v * 10 + static_cast<std::uint64_t>(args[i] - '0');
    return v;
  }
  return 0;
}

}  // namespace detail

/// The activity of a stopped session over `bins` time bins: its threads (steps tracks as the
/// steps they mark) and device tracks, one at a time (a spilled track is read back on its own).
/// Raises `strata::error` if a spilled track cannot be read back.
inline activity activity_of(const trace_data& data, std::size_t bins = 400) {
  const std::int64_t begin = data.clock.to_ns(data.start_ticks), end = data.clock.to_ns(data.stop_ticks);
  detail::activity_builder b(begin, end, bins);
  std::vector<detail::activity_event> events;
  std::unordered_map<const site*, std::uint32_t> names;
  for (const thread_track& t : data.threads) {
    events.clear();
    track_kind kind = t.pid == 0 ? track_kind::host : track_kind::device;
    bool has_execution = false, has_engine = false, has_queue = false;
    detail::read_track(data, t, [&](const record* first, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i) {
        const record& r = first[i];
        if (r.kind() != record_kind::scope) continue;
        const std::int64_t rb = data.ns_of(t, r.begin), re = std::max(rb, data.ns_of(t, r.end));
        if (t.steps || detail::is_step_name(r.site->name)) {
          b.add_step(r.site->name, rb, re);
          continue;
        }
        const char* cat = r.site->category;
        if (t.pid == 0 && cat != nullptr) continue;  // parts of something else (flows, counters)
        if (cat != nullptr && std::string_view(cat) == "device.engine") has_engine = true;
        else if (cat != nullptr && std::string_view(cat) == "runtime.queue") has_queue = true;
        else if (r.layer() == layer::device) has_execution = true;
        if (t.pid == 0 && r.layer() == layer::framework) b.count_framework_op();
        const auto [it, fresh] = names.try_emplace(r.site, 0);
        if (fresh) it->second = b.name_id(r.site->name);
        events.push_back({rb, re, it->second, r.site->flops,
                          r.layer() == layer::device ? detail::bytes_in_args(r.site->args_json) : 0});
      }
    });
    if (t.steps) continue;
    if (events.empty() && t.record_count() == 0) continue;
    if (kind == track_kind::device)
      kind = has_execution ? track_kind::device : has_engine ? track_kind::engine : has_queue ? track_kind::queue : track_kind::device;
    detail::sort_activity(events);
    b.begin_track({t.name, t.pid == 0 ? data.process_name : t.process_name, kind});
    for (const auto& e : events) b.add(e.name, e.begin, e.end, e.flops, e.bytes);
    b.end_track();
  }
  return b.finish();
}

/// The activity of events read from saved traces over `bins` time bins: `labels[track]` says
/// who each `op_event::track` is (a track without a label is a host thread named by its
/// number). Steps (`steps_of` set, or named `ProfilerStep#N`) are marked, not busy.
inline activity activity_of(std::span<const op_event> events, std::span<const track_label> labels, std::size_t bins = 400) {
  std::int64_t begin = std::numeric_limits<std::int64_t>::max(), end = std::numeric_limits<std::int64_t>::min();
  std::uint64_t max_track = 0;
  for (const op_event& e : events) {
    begin = std::min(begin, e.begin_ns);
    end = std::max(end, std::max(e.begin_ns, e.end_ns));
    max_track = std::max(max_track, e.track);
  }
  if (events.empty()) begin = end = 0;
  detail::activity_builder b(begin, end, bins);
  std::vector<std::vector<detail::activity_event>> per_track(events.empty() ? 0 : max_track + 1);
  for (const op_event& e : events) {
    if (e.steps_of != op_event::not_a_step || detail::is_step_name(e.name)) {
      if (e.layer != layer::device) {
        b.add_step(e.name, e.begin_ns, e.end_ns);
        continue;
      }
    }
    if (e.layer == layer::framework && (e.track >= labels.size() || labels[e.track].kind == track_kind::host))
      b.count_framework_op();
    per_track[e.track].push_back({e.begin_ns, std::max(e.begin_ns, e.end_ns), b.name_id(e.name), e.flops, e.device_bytes});
  }
  for (std::size_t t = 0; t < per_track.size(); ++t) {
    if (per_track[t].empty()) continue;
    detail::sort_activity(per_track[t]);
    b.begin_track(t < labels.size() ? labels[t] : track_label{"track " + std::to_string(t), {}, track_kind::host});
    for (const auto& e : per_track[t]) b.add(e.name, e.begin, e.end, e.flops, e.bytes);
    b.end_track();
  }
  return b.finish();
}

}  // namespace v1
}  // namespace strata
