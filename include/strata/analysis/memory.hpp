// strata/analysis/memory.hpp: a session's memory events read back: frees paired with their
// allocations, totals allocated and reserved per device in time order over all threads, the
// peak of each device and the op open at it, leaks; and the memory timeline file.
//
// Rules (docs/key-averages.md#memory, docs/trace-format.md#memory):
// - Events are read in time order over every thread (ties: track, then position), so memory
//   allocated on one thread and freed on another pairs.
// - A free pairs with the newest allocation of the same (device type, index, address) not yet
//   freed; its bytes are minus that allocation's. A free with no allocation in the session
//   (memory allocated before the session began, or never recorded) has no known size: it is
//   counted in `unpaired_frees` and left out of `events`, the totals, the tables and the trace.
// - An allocation at an address that is still allocated replaces it; the older one is a leak.
// - Reserve events change the device's reserved bytes by their (signed) bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "strata/error.hpp"
#include "strata/export/trace_format.hpp"
#include "strata/record.hpp"
#include "strata/trace_data.hpp"
#include "strata/detail/json_escape.hpp"
#include "strata/detail/record_order.hpp"
#include "strata/detail/trace_file.hpp"

namespace strata {
inline namespace v1 {

/// The label of a device in tables, counters and timelines: `CPU`, `NEURON:0`, or the torch
/// device type number for another (`device20:1`).
inline std::string device_label(memory_device d) {
  if (d.type == device_type::cpu) return d.index < 0 ? std::string("CPU") : fmt::format("CPU:{}", d.index);
  const std::string base = d.type == device_type::neuron ? std::string("NEURON")
                                                         : fmt::format("device{}", static_cast<int>(d.type));
  return d.index < 0 ? base : fmt::format("{}:{}", base, d.index);
}

/// Whether torch's table counts memory of this device type as host memory (its `CPU Mem`
/// columns): CPU, and the CPU-side MKLDNN (2) and IDEEP (5); any other type is device memory.
constexpr bool is_host_memory(device_type t) noexcept {
  const int n = static_cast<int>(t);
  return n == 0 || n == 2 || n == 5;
}

/// One memory event of a session, its free sized and its device's totals after it.
struct memory_sample {
  std::size_t track = 0;   ///< index in `trace_data::threads`
  std::size_t record = 0;  ///< position of its record in the track (in order)
  std::int64_t ns = 0;     ///< steady_clock ns
  memory_op op = memory_op::alloc;
  memory_device device = {};
  std::uint64_t address = 0;
  std::int64_t bytes = 0;  ///< alloc: its size; free: minus its allocation's; reserve: the change
  std::int64_t total_allocated = 0;  ///< the device's allocated bytes after this event
  std::int64_t total_reserved = 0;   ///< the device's reserved bytes after this event
};

/// Memory allocated in the session and never freed in it.
struct memory_leak {
  memory_device device = {};
  std::uint64_t address = 0;
  std::int64_t bytes = 0;
  std::int64_t ns = 0;     ///< when it was allocated
  std::size_t track = 0;
};

/// One device's figures over the session.
struct device_memory {
  memory_device device = {};
  std::int64_t peak_allocated = 0;
  std::int64_t peak_ns = 0;          ///< when the allocated bytes first reached the peak
  std::string op_at_peak;            ///< the innermost op open on the allocating thread then ("" if none)
  std::int64_t peak_reserved = 0;
  std::int64_t allocated_at_end = 0;
  std::int64_t reserved_at_end = 0;
};

/// A session's memory events read back (see the rules at the top of this header).
struct memory_profile {
  std::vector<memory_sample> events;  ///< in time order over all threads; unpaired frees left out
  std::vector<memory_leak> leaks;     ///< in order of allocation
  std::uint64_t unpaired_frees = 0;   ///< frees of memory with no allocation in the session
  std::vector<device_memory> devices; ///< ordered by device type, then index

  bool empty() const noexcept { return events.empty() && unpaired_frees == 0; }
  std::int64_t leaked_bytes() const noexcept {
    std::int64_t n = 0;
    for (const memory_leak& l : leaks) n += l.bytes;
    return n;
  }
};

namespace detail {

inline auto device_key(memory_device d) noexcept {
  return std::pair<int, int>{static_cast<int>(d.type), static_cast<int>(d.index)};
}

/// The innermost op (framework or user scope) of `track` open at `ns`: the latest to begin of
/// those whose interval holds it.
inline std::string op_open_at(const trace_data& data, std::size_t track, std::int64_t ns) {
  const thread_track& t = data.threads[track];
  std::string name;
  std::int64_t best_begin = 0, best_end = 0;
  bool found = false;
  read_track(data, t, [&](const record* first, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const record& r = first[i];
      if (r.kind() != record_kind::scope || r.site->category != nullptr) continue;
      if (r.layer() != layer::framework && r.layer() != layer::user) continue;
      const std::int64_t b = data.ns_of(t, r.begin), e = data.ns_of(t, r.end);
      if (b > ns || e < ns) continue;
      if (!found || b > best_begin || (b == best_begin && e <= best_end)) {
        found = true;
        best_begin = b;
        best_end = e;
        name = r.site->name != nullptr ? r.site->name : "";
      }
    }
  });
  return name;
}

}  // namespace detail

/// Reads the memory events of `data` (records of kind `record_kind::memory`): see the rules at
/// the top of this header. Raises `strata::error` if a spilled track cannot be read back.
inline memory_profile read_memory(const trace_data& data) {
  memory_profile out;
  std::vector<memory_sample> raw;
  for (std::size_t t = 0; t < data.threads.size(); ++t) {
    const thread_track& track = data.threads[t];
    std::size_t index = 0;
    detail::read_track(data, track, [&](const record* first, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i, ++index) {
        const record& r = first[i];
        if (r.kind() != record_kind::memory) continue;
        const memory_fields f = r.memory();
        memory_sample s;
        s.track = t;
        s.record = index;
        s.ns = data.ns_of(track, r.begin);
        s.op = f.op;
        s.device = f.device;
        s.address = r.end;
        s.bytes = f.bytes;
        raw.push_back(s);
      }
    });
  }
  std::stable_sort(raw.begin(), raw.end(), [](const memory_sample& a, const memory_sample& b) {
    return std::tie(a.ns, a.track, a.record) < std::tie(b.ns, b.track, b.record);
  });

  struct live {
    std::int64_t bytes, ns;
    std::size_t track;
  };
  std::map<std::tuple<int, int, std::uint64_t>, live> allocated;
  std::map<std::pair<int, int>, device_memory> devices;
  std::map<std::pair<int, int>, std::size_t> peak_event;  // index in out.events
  const auto leak = [&](const std::tuple<int, int, std::uint64_t>& key, const live& l) {
    out.leaks.push_back({memory_device{static_cast<device_type>(std::get<0>(key)), static_cast<std::int8_t>(std::get<1>(key))},
                         std::get<2>(key), l.bytes, l.ns, l.track});
  };
  out.events.reserve(raw.size());
  for (memory_sample s : raw) {
    const auto dk = detail::device_key(s.device);
    const std::tuple<int, int, std::uint64_t> key{dk.first, dk.second, s.address};
    device_memory& d = devices.try_emplace(dk).first->second;
    d.device = s.device;
    if (s.op == memory_op::alloc) {
      const auto [it, fresh] = allocated.try_emplace(key, live{s.bytes, s.ns, s.track});
      if (!fresh) {
        leak(key, it->second);
        d.allocated_at_end -= it->second.bytes;  // the replaced allocation no longer counts
        it->second = live{s.bytes, s.ns, s.track};
      }
      d.allocated_at_end += s.bytes;
    } else if (s.op == memory_op::free) {
      const auto it = allocated.find(key);
      if (it == allocated.end()) {
        ++out.unpaired_frees;
        continue;
      }
      s.bytes = -it->second.bytes;
      d.allocated_at_end -= it->second.bytes;
      allocated.erase(it);
    } else {
      d.reserved_at_end += s.bytes;
    }
    s.total_allocated = d.allocated_at_end;
    s.total_reserved = d.reserved_at_end;
    if (d.allocated_at_end > d.peak_allocated) {
      d.peak_allocated = d.allocated_at_end;
      d.peak_ns = s.ns;
      peak_event[dk] = out.events.size();
    }
    d.peak_reserved = std::max(d.peak_reserved, d.reserved_at_end);
    out.events.push_back(s);
  }
  for (const auto& [key, l] : allocated) leak(key, l);
  std::stable_sort(out.leaks.begin(), out.leaks.end(),
                   [](const memory_leak& a, const memory_leak& b) { return a.ns < b.ns; });
  for (auto& [key, d] : devices) {
    const auto p = peak_event.find(key);
    if (p != peak_event.end()) d.op_at_peak = detail::op_open_at(data, out.events[p->second].track, d.peak_ns);
    out.devices.push_back(std::move(d));
  }
  return out;
}

/// Writes the memory timeline of `data` to `path`, atomically: the allocated and reserved
/// bytes of each device after every memory event, in time order (times in steady_clock
/// nanoseconds, torch's `start_time_ns`).
/// - `.json`: torch's `export_memory_timeline` shape, `[times, sizes]`, where `sizes[i]` lists
///   the allocated then reserved bytes of each device (in `profile.devices` order) at `times[i]`.
/// - `.csv`: a header `time_ns,<device> allocated,<device> reserved,...`, then one line per time.
/// Beside it, `<path>.peak.json`: each device's label, peak allocated bytes, its time, the op
/// open at the peak, peak reserved bytes and what was still allocated and reserved at the end,
/// with the session's leaks and unpaired frees. Raises `strata::error` for another extension
/// or when a file cannot be written (no file is left half-written).
inline export_result export_memory_timeline(const trace_data& data, const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  if (ext != ".json" && ext != ".csv")
    throw error("export_memory_timeline: '" + path.string() +
                "' names no timeline format; use a name ending in .json or .csv");
  const memory_profile profile = read_memory(data);
  const std::size_t n = profile.devices.size();
  std::map<std::pair<int, int>, std::size_t> column;
  for (std::size_t i = 0; i < n; ++i) column[detail::device_key(profile.devices[i].device)] = i;

  // One point per distinct time: the totals after the last event at that time.
  std::vector<std::int64_t> times;
  std::vector<std::vector<std::int64_t>> sizes;
  std::vector<std::int64_t> current(2 * n, 0);
  for (const memory_sample& s : profile.events) {
    const std::size_t c = column[detail::device_key(s.device)];
    current[2 * c] = s.total_allocated;
    current[2 * c + 1] = s.total_reserved;
    if (!times.empty() && times.back() == s.ns) {
      sizes.back() = current;
    } else {
      times.push_back(s.ns);
      sizes.push_back(current);
    }
  }

  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  if (ext == ".json") {
    out.push_back('[');
    out.push_back('[');
    for (std::size_t i = 0; i < times.size(); ++i) fmt::format_to(it, "{}{}", i == 0 ? "" : ", ", times[i]);
    out.append(std::string_view("], ["));
    for (std::size_t i = 0; i < sizes.size(); ++i) fmt::format_to(it, "{}[{}]", i == 0 ? "" : ", ", fmt::join(sizes[i], ", "));
    out.append(std::string_view("]]\n"));
  } else {
    out.append(std::string_view("time_ns"));
    for (const device_memory& d : profile.devices) {
      const std::string label = device_label(d.device);
      fmt::format_to(it, ",{} allocated,{} reserved", label, label);
    }
    out.push_back('\n');
    for (std::size_t i = 0; i < times.size(); ++i) fmt::format_to(it, "{},{}\n", times[i], fmt::join(sizes[i], ","));
  }

  fmt::memory_buffer peak;
  auto pit = std::back_inserter(peak);
  peak.append(std::string_view("{\"devices\":["));
  for (std::size_t i = 0; i < n; ++i) {
    const device_memory& d = profile.devices[i];
    fmt::format_to(pit, "{}{{\"device\":", i == 0 ? "" : ",");
    detail::append_json_string(peak, device_label(d.device));
    fmt::format_to(pit, ",\"device_type\":{},\"device_index\":{},\"peak_allocated\":{},\"peak_ns\":{},\"op_at_peak\":",
                   static_cast<int>(d.device.type), static_cast<int>(d.device.index), d.peak_allocated, d.peak_ns);
    detail::append_json_string(peak, d.op_at_peak);
    fmt::format_to(pit, ",\"peak_reserved\":{},\"allocated_at_end\":{},\"reserved_at_end\":{}}}", d.peak_reserved,
                   d.allocated_at_end, d.reserved_at_end);
  }
  fmt::format_to(pit, "],\"leaks\":[");
  for (std::size_t i = 0; i < profile.leaks.size(); ++i) {
    const memory_leak& l = profile.leaks[i];
    fmt::format_to(pit, "{}{{\"device\":", i == 0 ? "" : ",");
    detail::append_json_string(peak, device_label(l.device));
    fmt::format_to(pit, ",\"addr\":{},\"bytes\":{},\"ns\":{},\"tid\":{}}}", l.address, l.bytes, l.ns, data.threads[l.track].tid);
  }
  fmt::format_to(pit, "],\"unpaired_frees\":{}}}\n", profile.unpaired_frees);

  // Both files are written to temporaries first; the timeline is renamed into place last.
  std::filesystem::path companion = path;
  companion += ".peak.json";
  detail::atomic_file timeline(path);
  detail::atomic_file peaks(companion);
  timeline.write(std::string_view(out.data(), out.size()));
  peaks.write(std::string_view(peak.data(), peak.size()));
  peaks.commit();
  timeline.commit();
  return {path.string(), times.size(), timeline.bytes_written()};
}

}  // namespace v1
}  // namespace strata
