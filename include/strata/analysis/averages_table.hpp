// strata/analysis/averages_table.hpp: the rows of key_averages() and their torch.profiler-style
// text table, CSV and JSON (rules: docs/key-averages.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/core/error.hpp"
#include "strata/core/ring_buffer.hpp"
#include "strata/export/json_escape.hpp"

namespace strata {
inline namespace v1 {

/// One row of `key_averages()`: every event with the same key, summed. Times are nanoseconds.
struct average_row {
  std::string name = {};
  std::string input_shapes = {};      ///< empty unless grouped by input shape
  bool is_device = false;        ///< a device-layer row (no CPU time of its own)
  bool top_level = true;         ///< the group's first event had no parent (device rows: always)
  std::uint64_t count = 0;
  std::int64_t self_cpu_ns = 0;
  std::int64_t cpu_total_ns = 0;
  std::int64_t self_device_ns = 0;
  std::int64_t device_total_ns = 0;

  double cpu_avg_ns() const noexcept { return avg(cpu_total_ns); }
  double device_avg_ns() const noexcept { return avg(device_total_ns); }

 private:
  double avg(std::int64_t total) const noexcept {
    return count == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(count);
  }
};

/// How `averages::table()` prints, with torch.profiler's names and defaults.
struct table_options {
  std::string_view sort_by = {};          ///< e.g. "self_cpu_time_total"; empty: first-seen order
  int row_limit = 100;                    ///< negative: no limit
  std::size_t max_name_column_width = 55; ///< 0: no limit, names never cut
  std::size_t max_shapes_column_width = 80;
  bool top_level_events_only = false;
  std::string_view time_unit = {};        ///< "s", "ms" or "us"; anything else: automatic
  std::string_view header = {};           ///< printed above the table between `=` lines
};

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

/// Rewrites torch's device aliases ("cuda", "xpu", "privateuse1") and "neuron" to "device",
/// then returns the row's value for that key; throws on an unknown key.
inline double sort_value(const average_row& r, std::string key) {
  for (std::string_view alias : {"cuda", "xpu", "privateuse1", "neuron"})
    for (auto at = key.find(alias); at != std::string::npos; at = key.find(alias))
      key.replace(at, alias.size(), "device");
  if (key == "self_cpu_time_total") return static_cast<double>(r.self_cpu_ns);
  if (key == "cpu_time_total") return static_cast<double>(r.cpu_total_ns);
  if (key == "cpu_time") return r.cpu_avg_ns();
  if (key == "self_device_time_total") return static_cast<double>(r.self_device_ns);
  if (key == "device_time_total") return static_cast<double>(r.device_total_ns);
  if (key == "device_time") return r.device_avg_ns();
  if (key == "count") return static_cast<double>(r.count);
  throw error("unknown sort_by key '" + key +
              "': use self_cpu_time_total, cpu_time_total, cpu_time, self_device_time_total, "
              "device_time_total, device_time or count");
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

/// What `key_averages()` returns: one row per key in first-seen order, with what is needed to
/// print it as torch.profiler does.
///
/// **Example**
/// ```
/// auto avg = strata::key_averages(prof.collect());
/// fmt::print("{}", avg.table({.sort_by = "self_cpu_time_total", .row_limit = 10}));
/// ```
struct averages {
  std::vector<average_row> rows = {};
  std::string device_name = "NEURON";  ///< the device column label, as torch's use_device
  std::uint64_t records_lost = 0;      ///< records dropped while capturing: times undercount
  overflow_policy overflow = overflow_policy::drop_newest;

  /// Sum of self CPU time over all rows (the CPU percentages' denominator).
  std::int64_t self_cpu_total_ns() const noexcept {
    std::int64_t n = 0;
    for (const auto& r : rows) n += r.self_cpu_ns;
    return n;
  }
  /// Sum of the device rows' time, as torch sums its kernel rows only: a host op's self device
  /// time is that same time seen from the op, so counting both would count it twice.
  std::int64_t self_device_total_ns() const noexcept {
    std::int64_t n = 0;
    for (const auto& r : rows)
      if (r.is_device) n += r.self_device_ns;
    return n;
  }
  bool has_device_time() const noexcept {
    return std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.self_device_ns > 0; });
  }
  bool has_input_shapes() const noexcept {
    return std::any_of(rows.begin(), rows.end(), [](const auto& r) { return !r.input_shapes.empty(); });
  }

  /// The rows stably sorted by a torch sort key, largest first; empty key: first-seen order.
  std::vector<average_row> sorted(std::string_view sort_by) const {
    std::vector<average_row> out = rows;
    if (sort_by.empty()) return out;
    const std::string key(sort_by);
    std::vector<std::pair<double, std::size_t>> keyed;
    for (std::size_t i = 0; i < out.size(); ++i) keyed.emplace_back(detail::sort_value(out[i], key), i);
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<average_row> result;
    result.reserve(out.size());
    for (const auto& k : keyed) result.push_back(std::move(out[k.second]));
    return result;
  }

  /// The torch.profiler text table: "" when there are no rows.
  std::string table(const table_options& opt = {}) const {
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
    headers.emplace_back("# of Calls");
    if (shapes) headers.emplace_back("Input Shapes");
    std::vector<std::size_t> widths(headers.size(), 12);
    widths.front() = name_width;
    if (shapes) widths.back() = shapes_width;

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
    for (const auto& r : sorted(opt.sort_by)) {
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
      cells.push_back(std::to_string(r.count));
      if (shapes) cells.push_back(r.input_shapes.substr(0, shapes_width));
      detail::append_row(out, cells, widths);
    }
    detail::append_separator(out, widths);
    out += "Self CPU time total: " + time(static_cast<double>(sum_cpu)) + '\n';
    if (device) out += "Self " + dev + " time total: " + time(static_cast<double>(sum_dev)) + '\n';
    if (records_lost != 0)
      out += fmt::format("Records lost: {} ({}); the times above undercount\n", records_lost,
                         overflow_policy_name(overflow));
    return out;
  }

  /// One header line, then one line per row in first-seen order; times are nanoseconds
  /// (averages may have decimals), percentages as in the table, names quoted (RFC 4180).
  std::string to_csv() const {
    const std::string& d = device_name;
    std::string out = fmt::format(
        "Name,Input Shapes,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,"
        "Self {0},Self {0} %,{0} total,{0} time avg,# of Calls,Is Device,Top Level\n", d);
    const std::int64_t sum_cpu = self_cpu_total_ns();
    const std::int64_t sum_dev = self_device_total_ns();
    for (const auto& r : rows) {
      detail::append_csv_string(out, r.name);
      out += ',';
      detail::append_csv_string(out, r.input_shapes);
      fmt::format_to(std::back_inserter(out), ",{},{},{},{},{},{},{},{},{},{},{},{}\n",
                     percent(r.self_cpu_ns, sum_cpu), r.self_cpu_ns,
                     percent(r.cpu_total_ns, sum_cpu), r.cpu_total_ns, r.cpu_avg_ns(),
                     r.self_device_ns, percent(r.self_device_ns, sum_dev), r.device_total_ns,
                     r.device_avg_ns(), r.count, r.is_device ? 1 : 0, r.top_level ? 1 : 0);
    }
    return out;
  }

  /// An object with the device name, the lost-record count and the rows (first-seen order),
  /// times in nanoseconds; valid JSON whatever bytes the names hold.
  std::string to_json() const {
    fmt::memory_buffer out;
    const auto app = [&](std::string_view s) { out.append(s.data(), s.data() + s.size()); };
    app("{\"device_name\":");
    detail::append_json_string(out, device_name);
    fmt::format_to(std::back_inserter(out), ",\"records_lost\":{},\"self_cpu_time_total_ns\":{},"
                   "\"self_device_time_total_ns\":{},\"rows\":[",
                   records_lost, self_cpu_total_ns(), self_device_total_ns());
    bool first = true;
    for (const auto& r : rows) {
      detail::open_json_row(out, first, r.name, r.input_shapes);
      first = false;
      fmt::format_to(std::back_inserter(out),
                     ",\"is_device\":{},\"top_level\":{},\"count\":{},\"self_cpu_time_total_ns\":{},"
                     "\"cpu_time_total_ns\":{},\"cpu_time_avg_ns\":{},"
                     "\"self_device_time_total_ns\":{},\"device_time_total_ns\":{},"
                     "\"device_time_avg_ns\":{}}}",
                     r.is_device, r.top_level, r.count, r.self_cpu_ns, r.cpu_total_ns,
                     r.cpu_avg_ns(), r.self_device_ns, r.device_total_ns, r.device_avg_ns());
    }
    app("]}\n");
    return fmt::to_string(out);
  }

 private:
  static std::string percent(std::int64_t part, std::int64_t total) {
    return total == 0 ? std::string("NaN")
                      : fmt::format("{:.2f}", static_cast<double>(part) * 100.0 / static_cast<double>(total));
  }
};

}  // namespace v1
}  // namespace strata
