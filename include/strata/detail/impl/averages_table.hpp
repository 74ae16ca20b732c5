// strata/detail/impl/averages_table.hpp: printing key_averages(): torch.profiler's text table, CSV and
// JSON. Part of strata's implementation (strata/implementation.hpp): non-inline definitions,
// compiled in the one file that defines STRATA_IMPLEMENTATION.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/analysis/averages.hpp"
#include "strata/detail/json_escape.hpp"
#include "strata/detail/table_format.hpp"

namespace strata {
inline namespace v1 {

std::vector<average_row> averages::sorted(std::string_view sort_by) const {
  if (sort_by.empty()) return rows;
  const detail::sort_column column = detail::sort_column_of(sort_by);  // throws on a bad key
  std::vector<average_row> out = rows;
  std::vector<std::pair<double, std::size_t>> keyed;
  for (std::size_t i = 0; i < out.size(); ++i) keyed.emplace_back(detail::sort_value(out[i], column), i);
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<average_row> result;
  result.reserve(out.size());
  for (const auto& k : keyed) result.push_back(std::move(out[k.second]));
  return result;
}

void check_sort_key(std::string_view sort_by) { static_cast<void>(detail::sort_column_of(sort_by)); }

std::string averages::table(const table_options& opt) const {
  // A bad key is an error even when there is nothing to sort, so it is never found late.
  const std::vector<average_row> in_order = sorted(opt.sort_by);
  if (rows.empty()) return {};
  const bool device = has_device_time();
  const bool shapes = has_input_shapes();
  const std::string dev = device_name;

  std::size_t name_width = 0;
  std::size_t shapes_width = 0;
  for (const auto& r : rows) {
    name_width = std::max(name_width, r.name.size() + 4);
    shapes_width = std::max(shapes_width, r.input_shapes.size() + 4);
  }
  if (opt.max_name_column_width != 0) name_width = std::min(name_width, opt.max_name_column_width);
  shapes_width = std::min(shapes_width, opt.max_shapes_column_width);

  std::vector<std::string> headers = {"Name", "Self CPU %", "Self CPU", "CPU total %",
                                      "CPU total", "CPU time avg"};
  if (device) {
    for (std::string h : {"Self " + dev, "Self " + dev + " %", dev + " total", dev + " time avg"})
      headers.push_back(std::move(h));
  }
  // torch's memory columns follow the time columns, its FLOPs column the input shapes, and it
  // drops the FLOPs column when no row has any.
  const bool device_memory = profile_memory && has_device_memory();
  if (profile_memory) {
    headers.emplace_back("CPU Mem");
    headers.emplace_back("Self CPU Mem");
    if (device_memory) {
      headers.push_back(dev + " Mem");
      headers.push_back("Self " + dev + " Mem");
    }
  }
  headers.emplace_back("# of Calls");
  std::uint64_t smallest_flops = 0;
  for (const auto& r : rows)
    if (r.flops > 0 && (smallest_flops == 0 || r.flops < smallest_flops)) smallest_flops = r.flops;
  const bool flops = with_flops && smallest_flops > 0;
  const detail::flops_unit unit = flops ? detail::flops_unit_of(smallest_flops) : detail::flops_unit{};
  std::vector<std::size_t> widths(headers.size(), 12);
  widths.front() = name_width;
  if (shapes) {
    headers.emplace_back("Input Shapes");
    widths.push_back(shapes_width);
  }
  if (flops) {
    headers.push_back("Total " + std::string(unit.header));
    widths.push_back(12);
  }
  if (opt.utilization) {
    for (const char* h : {"TFLOP/s", "MFU %", "MBU %"}) {
      headers.emplace_back(h);
      widths.push_back(12);
    }
  }

  const std::int64_t sum_cpu = self_cpu_total_ns();
  const std::int64_t sum_dev = self_device_total_ns();
  const auto time = [&](double ns) { return detail::format_time_ns(ns, opt.time_unit); };

  std::string out;
  std::size_t line_length = 2 * (widths.size() - 1);
  for (std::size_t w : widths) line_length += w;
  if (!opt.header.empty()) {
    out.append(line_length, '=');
    out += '\n';
    out += opt.header;
    out += '\n';
  }
  if (opt.top_level_events_only) {
    out.append(line_length, '=');
    out += "\nThis report only display top-level ops statistics\n";
  }
  detail::append_separator(out, widths);
  detail::append_row(out, headers, widths);
  detail::append_separator(out, widths);

  int printed = 0;
  for (const auto& r : in_order) {
    if (opt.row_limit >= 0 && printed == opt.row_limit) break;
    if (opt.top_level_events_only && !r.top_level) continue;
    ++printed;
    std::string name = r.name;
    const std::size_t max = opt.max_name_column_width;
    if (max != 0 && name.size() + 3 >= max) name = name.substr(0, max >= 3 ? max - 3 : 0) + "...";
    std::vector<std::string> cells = {
        std::move(name),
        detail::format_share(r.self_cpu_ns, sum_cpu),
        time(static_cast<double>(r.self_cpu_ns)),
        detail::format_share(r.cpu_total_ns, sum_cpu),
        time(static_cast<double>(r.cpu_total_ns)),
        time(r.cpu_avg_ns())};
    if (device) {
      cells.push_back(time(static_cast<double>(r.self_device_ns)));
      cells.push_back(detail::format_share(r.self_device_ns, sum_dev));
      cells.push_back(time(static_cast<double>(r.device_total_ns)));
      cells.push_back(time(r.device_avg_ns()));
    }
    if (profile_memory) {
      cells.push_back(detail::format_memory(r.cpu_memory_usage));
      cells.push_back(detail::format_memory(r.self_cpu_memory_usage));
      if (device_memory) {
        cells.push_back(detail::format_memory(r.device_memory_usage));
        cells.push_back(detail::format_memory(r.self_device_memory_usage));
      }
    }
    cells.push_back(std::to_string(r.count));
    if (shapes) cells.push_back(r.input_shapes.substr(0, shapes_width));
    if (flops)
      cells.push_back(r.flops == 0 ? std::string("--")
                                   : fmt::format("{:8.3f}", static_cast<double>(r.flops) * unit.scale));
    if (opt.utilization) {
      const double achieved = r.achieved_flops_per_s(), moved = r.achieved_bytes_per_s();
      cells.push_back(achieved > 0 ? fmt::format("{:.3f}", achieved / 1e12) : std::string("--"));
      cells.push_back(achieved > 0 && peak_flops_per_s > 0
                          ? fmt::format("{:.2f}", achieved * 100.0 / peak_flops_per_s)
                          : std::string("--"));
      cells.push_back(moved > 0 && peak_hbm_bytes_per_s > 0
                          ? fmt::format("{:.2f}", moved * 100.0 / peak_hbm_bytes_per_s)
                          : std::string("--"));
    }
    detail::append_row(out, cells, widths);
  }
  detail::append_separator(out, widths);
  out += "Self CPU time total: " + time(static_cast<double>(sum_cpu)) + '\n';
  if (device) out += "Self " + dev + " time total: " + time(static_cast<double>(sum_dev)) + '\n';
  if (opt.utilization) {
    if (peak_flops_per_s > 0 || peak_hbm_bytes_per_s > 0)
      out += fmt::format("Peaks (MFU, MBU): {:.3f} TFLOP/s, {:.3f} GB/s of HBM per core\n",
                         peak_flops_per_s / 1e12, peak_hbm_bytes_per_s / 1e9);
    else
      out += "Peaks (MFU, MBU): none in this trace, so MFU and MBU show -- (strata-report takes "
             "--peak-tflops and --peak-hbm-gbps)\n";
  }
  if (records_lost != 0)
    out += fmt::format("Records lost: {} ({}); the times above undercount\n", records_lost,
                       overflow_policy_name(overflow));
  return out;
}

namespace detail {
/// Empty (CSV) or `null` (JSON) where a utilisation figure is unknown.
inline std::string or_null(std::string s) { return s.empty() ? std::string("null") : s; }
/// A row's achieved TFLOP/s, "" without FLOPs or device time.
inline std::string tflops_text(const average_row& r) {
  const double a = r.achieved_flops_per_s();
  return a > 0 ? fmt::format("{}", a / 1e12) : std::string();
}
/// `achieved` as a percentage of `peak`, "" when either is unknown.
inline std::string share_text(double achieved, double peak) {
  return achieved > 0 && peak > 0 ? fmt::format("{}", achieved * 100.0 / peak) : std::string();
}
}  // namespace detail

std::string averages::to_csv() const {
  const std::string& d = device_name;
  std::string out = fmt::format(
      "Name,Input Shapes,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,"
      "Self {0},Self {0} %,{0} total,{0} time avg,# of Calls,Is Device,Top Level,"
      "CPU Mem,Self CPU Mem,{0} Mem,Self {0} Mem,Total FLOPs,Device Bytes,TFLOP/s,MFU %,MBU %\n", d);
  const std::int64_t sum_cpu = self_cpu_total_ns();
  const std::int64_t sum_dev = self_device_total_ns();
  for (const auto& r : rows) {
    detail::append_csv_string(out, r.name);
    out += ',';
    detail::append_csv_string(out, r.input_shapes);
    fmt::format_to(std::back_inserter(out), ",{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                   percent(r.self_cpu_ns, sum_cpu), r.self_cpu_ns,
                   percent(r.cpu_total_ns, sum_cpu), r.cpu_total_ns, r.cpu_avg_ns(),
                   r.self_device_ns, percent(r.self_device_ns, sum_dev), r.device_total_ns,
                   r.device_avg_ns(), r.count, r.is_device ? 1 : 0, r.top_level ? 1 : 0,
                   r.cpu_memory_usage, r.self_cpu_memory_usage, r.device_memory_usage,
                   r.self_device_memory_usage, r.flops, r.device_bytes, detail::tflops_text(r),
                   detail::share_text(r.achieved_flops_per_s(), peak_flops_per_s),
                   detail::share_text(r.achieved_bytes_per_s(), peak_hbm_bytes_per_s));
  }
  return out;
}

std::string averages::to_json() const {
  fmt::memory_buffer out;
  const auto app = [&](std::string_view s) { out.append(s.data(), s.data() + s.size()); };
  app("{\"device_name\":");
  detail::append_json_string(out, device_name);
  fmt::format_to(std::back_inserter(out), ",\"records_lost\":{},\"self_cpu_time_total_ns\":{},"
                 "\"self_device_time_total_ns\":{},\"profile_memory\":{},\"with_flops\":{},"
                 "\"peak_tflops\":{},\"peak_hbm_gbps\":{},\"rows\":[",
                 records_lost, self_cpu_total_ns(), self_device_total_ns(), profile_memory, with_flops,
                 peak_flops_per_s > 0 ? fmt::format("{}", peak_flops_per_s / 1e12) : "null",
                 peak_hbm_bytes_per_s > 0 ? fmt::format("{}", peak_hbm_bytes_per_s / 1e9) : "null");
  bool first = true;
  for (const auto& r : rows) {
    detail::open_json_row(out, first, r.name, r.input_shapes);
    first = false;
    fmt::format_to(std::back_inserter(out),
                   ",\"is_device\":{},\"top_level\":{},\"count\":{},\"self_cpu_time_total_ns\":{},"
                   "\"cpu_time_total_ns\":{},\"cpu_time_avg_ns\":{},"
                   "\"self_device_time_total_ns\":{},\"device_time_total_ns\":{},"
                   "\"device_time_avg_ns\":{},\"cpu_memory_usage\":{},\"self_cpu_memory_usage\":{},"
                   "\"device_memory_usage\":{},\"self_device_memory_usage\":{},\"flops\":{},"
                   "\"device_bytes\":{},\"tflops_per_s\":{},\"mfu\":{},\"mbu\":{}}}",
                   r.is_device, r.top_level, r.count, r.self_cpu_ns, r.cpu_total_ns,
                   r.cpu_avg_ns(), r.self_device_ns, r.device_total_ns, r.device_avg_ns(),
                   r.cpu_memory_usage, r.self_cpu_memory_usage, r.device_memory_usage,
                   r.self_device_memory_usage, r.flops, r.device_bytes, detail::or_null(detail::tflops_text(r)),
                   detail::or_null(detail::share_text(r.achieved_flops_per_s(), peak_flops_per_s)),
                   detail::or_null(detail::share_text(r.achieved_bytes_per_s(), peak_hbm_bytes_per_s)));
  }
  app("]}\n");
  return fmt::to_string(out);
}


std::string averages::percent(std::int64_t part, std::int64_t total) {
  return total == 0 ? std::string("NaN")
                    : fmt::format("{:.2f}", static_cast<double>(part) * 100.0 / static_cast<double>(total));
}

}  // namespace v1
}  // namespace strata
