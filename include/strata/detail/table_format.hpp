// strata/detail/table_format.hpp: the text, CSV and JSON pieces of torch.profiler's tables,
// shared by key_averages' table and the comparison of two runs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/analysis/averages.hpp"
#include "strata/error.hpp"
#include "strata/detail/json_escape.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// torch's `_format_time` on exact nanoseconds; `unit` forces s, ms or us.
inline void append_time(std::string& out, double us, std::string_view unit) {
  if (unit == "s" || (unit != "ms" && unit != "us" && us >= 1e6))
    fmt::format_to(std::back_inserter(out), "{:.3f}s", us / 1e6);
  else if (unit == "ms" || (unit != "us" && us >= 1000.0))
    fmt::format_to(std::back_inserter(out), "{:.3f}ms", us / 1000.0);
  else
    fmt::format_to(std::back_inserter(out), "{:.3f}us", us);
}

inline std::string format_time_ns(double ns, std::string_view unit) {
  std::string s;
  append_time(s, ns / 1000.0, unit);
  return s;
}

/// torch's `_format_time_share`: "NaN" when the total is 0.
inline std::string format_share(std::int64_t part, std::int64_t total) {
  if (total == 0) return "NaN";
  return fmt::format("{:.2f}%", static_cast<double>(part) * 100.0 / static_cast<double>(total));
}

/// A column `averages::sorted` can sort by.
enum class sort_column {
  self_cpu_total, cpu_total, cpu_avg, self_device_total, device_total, device_avg, count,
  cpu_memory, self_cpu_memory, device_memory, self_device_memory, flops
};

/// The column of a `sort_by` key: torch's keys, with its device aliases ("cuda", "xpu",
/// "privateuse1") and "neuron" read as "device"; throws on any other key, naming the known ones.
inline sort_column sort_column_of(std::string_view sort_by) {
  std::string key(sort_by);
  for (std::string_view alias : {"cuda", "xpu", "privateuse1", "neuron"})
    for (auto at = key.find(alias); at != std::string::npos; at = key.find(alias))
      key.replace(at, alias.size(), "device");
  if (key == "self_cpu_time_total") return sort_column::self_cpu_total;
  if (key == "cpu_time_total") return sort_column::cpu_total;
  if (key == "cpu_time") return sort_column::cpu_avg;
  if (key == "self_device_time_total") return sort_column::self_device_total;
  if (key == "device_time_total") return sort_column::device_total;
  if (key == "device_time") return sort_column::device_avg;
  if (key == "count") return sort_column::count;
  if (key == "cpu_memory_usage") return sort_column::cpu_memory;
  if (key == "self_cpu_memory_usage") return sort_column::self_cpu_memory;
  if (key == "device_memory_usage") return sort_column::device_memory;
  if (key == "self_device_memory_usage") return sort_column::self_device_memory;
  if (key == "flops") return sort_column::flops;
  throw error("unknown sort_by key '" + std::string(sort_by) +
              "': use self_cpu_time_total, cpu_time_total, cpu_time, self_device_time_total, "
              "device_time_total, device_time, count, cpu_memory_usage, self_cpu_memory_usage, "
              "device_memory_usage, self_device_memory_usage or flops");
}

inline double sort_value(const average_row& r, sort_column c) {
  switch (c) {
    case sort_column::self_cpu_total: return static_cast<double>(r.self_cpu_ns);
    case sort_column::cpu_total: return static_cast<double>(r.cpu_total_ns);
    case sort_column::cpu_avg: return r.cpu_avg_ns();
    case sort_column::self_device_total: return static_cast<double>(r.self_device_ns);
    case sort_column::device_total: return static_cast<double>(r.device_total_ns);
    case sort_column::device_avg: return r.device_avg_ns();
    case sort_column::count: return static_cast<double>(r.count);
    case sort_column::cpu_memory: return static_cast<double>(r.cpu_memory_usage);
    case sort_column::self_cpu_memory: return static_cast<double>(r.self_cpu_memory_usage);
    case sort_column::device_memory: return static_cast<double>(r.device_memory_usage);
    case sort_column::self_device_memory: return static_cast<double>(r.self_device_memory_usage);
    case sort_column::flops: return static_cast<double>(r.flops);
  }
  return 0.0;
}

/// torch's `_format_memory`: `%.2f Gb`, `Mb` or `Kb` (powers of 1024) from one such unit of
/// magnitude, plain bytes (`300 b`, `-4 b`) below a Kb.
inline std::string format_memory(std::int64_t bytes) {
  constexpr std::int64_t kb = 1024, mb = 1024 * kb, gb = 1024 * mb;
  const std::uint64_t magnitude = bytes < 0 ? 0 - static_cast<std::uint64_t>(bytes) : static_cast<std::uint64_t>(bytes);
  const double b = static_cast<double>(bytes);
  if (magnitude >= static_cast<std::uint64_t>(gb)) return fmt::format("{:.2f} Gb", b / static_cast<double>(gb));
  if (magnitude >= static_cast<std::uint64_t>(mb)) return fmt::format("{:.2f} Mb", b / static_cast<double>(mb));
  if (magnitude >= static_cast<std::uint64_t>(kb)) return fmt::format("{:.2f} Kb", b / static_cast<double>(kb));
  return fmt::format("{} b", bytes);
}

/// torch's FLOPs header scale: from the smallest non-zero count, the largest unit of FLOPs,
/// KFLOPs, ... PFLOPs it reaches (10^3 steps), and the factor that turns a count into it.
struct flops_unit {
  double scale = 1.0;
  std::string_view header = "FLOPs";
};
inline flops_unit flops_unit_of(std::uint64_t smallest) {
  static constexpr std::string_view names[] = {"FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"};
  const double steps = std::max(0.0, std::min(std::log10(static_cast<double>(smallest)) / 3.0, 5.0));
  const double whole = std::floor(steps);
  return {std::pow(10.0, whole * -3.0), names[static_cast<std::size_t>(whole)]};
}

/// Appends `cells`, each right-aligned in its width and followed by two spaces (torch's
/// row_format, trailing spaces included); a longer cell overflows instead of being cut.
inline void append_row(std::string& out, const std::vector<std::string>& cells,
                       const std::vector<std::size_t>& widths) {
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (cells[i].size() < widths[i]) out.append(widths[i] - cells[i].size(), ' ');
    out += cells[i];
    out += "  ";
  }
  out += '\n';
}

inline void append_separator(std::string& out, const std::vector<std::size_t>& widths) {
  for (std::size_t w : widths) {
    out.append(w, '-');
    out += "  ";
  }
  out += '\n';
}

/// RFC 4180: quoted, with inner quotes doubled.
inline void append_csv_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

/// Opens one row object of a JSON rows array: `{"name":…,"input_shapes":…` (the caller adds
/// the rest and the closing brace). Shared by the averages and comparison tables.
inline void open_json_row(fmt::memory_buffer& out, bool first, std::string_view name,
                          std::string_view input_shapes) {
  const std::string_view head = first ? "\n{\"name\":" : ",\n{\"name\":";
  out.append(head.data(), head.data() + head.size());
  append_json_string(out, name);
  const std::string_view shapes = ",\"input_shapes\":";
  out.append(shapes.data(), shapes.data() + shapes.size());
  append_json_string(out, input_shapes);
}

}  // namespace detail

}  // namespace v1
}  // namespace strata
