// strata/analysis/averages.hpp: what key_averages() returns: its rows, and how to print them
// (torch.profiler's text table, CSV, JSON; rules: docs/key-averages.md).
//
// Declarations only, so that the file that runs a session (strata/profiler.hpp) stays light: the
// printing is compiled with strata's implementation (detail/impl/averages_table.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/profiler_config.hpp"

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
  // Memory (bytes, allocations minus frees, so negative when more was freed) and FLOPs, with
  // torch's names: the table prints them with `profile_memory` / `with_flops`.
  std::int64_t cpu_memory_usage = 0;
  std::int64_t self_cpu_memory_usage = 0;
  std::int64_t device_memory_usage = 0;
  std::int64_t self_device_memory_usage = 0;
  std::uint64_t flops = 0;  ///< summed over the row's events
  /// HBM bytes the row's device executions moved (a device row's own; an op's, those of the
  /// executions its correlation id owns), for the utilisation columns.
  std::uint64_t device_bytes = 0;

  /// Achieved FLOP/s over the row's self device time (0 without either).
  double achieved_flops_per_s() const noexcept { return per_device_second(flops); }
  /// Achieved HBM bytes/s over the row's self device time (0 without either).
  double achieved_bytes_per_s() const noexcept { return per_device_second(device_bytes); }

  double cpu_avg_ns() const noexcept { return avg(cpu_total_ns); }
  double device_avg_ns() const noexcept { return avg(device_total_ns); }

 private:
  double avg(std::int64_t total) const noexcept {
    return count == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(count);
  }
  double per_device_second(std::uint64_t amount) const noexcept {
    return self_device_ns <= 0 ? 0.0 : static_cast<double>(amount) * 1e9 / static_cast<double>(self_device_ns);
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
  /// Beyond torch: adds, after its columns, the rows' achieved TFLOP/s, MFU (% of the device
  /// core's peak FLOP/s) and MBU (% of its HBM bandwidth), over self device time: `--` where a
  /// row has no device time (or no FLOPs, or bytes), MFU/MBU `--` without the peaks
  /// (`averages::peak_flops_per_s`, `peak_hbm_bytes_per_s`).
  bool utilization = false;
};

/// Throws `strata::error` naming the known keys unless `sort_by` is one `table_options::sort_by`
/// takes (torch's keys: self_cpu_time_total, cpu_time_total, cpu_time, self_device_time_total,
/// device_time_total, device_time, count, cpu_memory_usage, self_cpu_memory_usage,
/// device_memory_usage, self_device_memory_usage, flops; cuda, xpu, privateuse1 and neuron mean
/// device).
void check_sort_key(std::string_view sort_by);

/// Options of `key_averages()`.
struct key_averages_options {
  bool group_by_input_shape = false;
  bool correlate_device_time = true;  ///< attribute device time to host ops by correlation id
  std::string device_name = "NEURON";
  bool profile_memory = false;  ///< the table shows the memory columns (torch's profile_memory)
  bool with_flops = false;      ///< the table shows the FLOPs column (torch's with_flops)
};

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
  overflow_policy overflow = overflow_policy::lossless;
  bool profile_memory = false;  ///< copied from the options: print CPU Mem, Self CPU Mem, ...
  bool with_flops = false;      ///< copied from the options: print Total FLOPs
  /// The device core's peaks for the utilisation columns (the trace's, or given); 0: unknown.
  double peak_flops_per_s = 0;
  double peak_hbm_bytes_per_s = 0;

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
    for (const auto& r : rows)
      if (r.self_device_ns > 0) return true;
    return false;
  }
  /// torch shows the device memory columns only when some row's self device memory is > 0.
  bool has_device_memory() const noexcept {
    for (const auto& r : rows)
      if (r.self_device_memory_usage > 0) return true;
    return false;
  }
  /// The first row named `name` (a host row, or a device row when `device`), or nullptr: what
  /// `[e for e in prof.key_averages() if e.key == name]` gives in torch.
  const average_row* find(std::string_view name, bool device = false) const noexcept {
    for (const auto& r : rows)
      if (r.name == name && r.is_device == device) return &r;
    return nullptr;
  }
  bool has_input_shapes() const noexcept {
    for (const auto& r : rows)
      if (!r.input_shapes.empty()) return true;
    return false;
  }

  /// The rows stably sorted by a torch sort key, largest first; empty key: first-seen order.
  /// An unknown key throws `strata::error` naming the known ones, rows or none.
  std::vector<average_row> sorted(std::string_view sort_by) const;

  /// The torch.profiler text table: "" when there are no rows (a bad `sort_by` still throws).
  std::string table(const table_options& opt = {}) const;

  /// One header line, then one line per row in first-seen order; times are nanoseconds
  /// (averages may have decimals), percentages as in the table, names quoted (RFC 4180).
  std::string to_csv() const;

  /// An object with the device name, the lost-record count and the rows (first-seen order),
  /// times in nanoseconds; valid JSON whatever bytes the names hold.
  std::string to_json() const;

 private:
  static std::string percent(std::int64_t part, std::int64_t total);
};

}  // namespace v1
}  // namespace strata
