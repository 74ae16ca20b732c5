// strata/analysis/merge_averages.hpp: the key_averages() of several traces (ranks of one job,
// or repeated runs) combined into one table.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>

#include "strata/analysis/averages.hpp"
#include "strata/detail/table_format.hpp"

namespace strata {
inline namespace v1 {

/// One table over several: rows with the same key (name, device or host, input shapes) are
/// summed (calls, every time, memory and FLOPs); rows keep the order in which they first
/// appear, part by part, and a row's top-level flag is that of its first appearance. The memory
/// and FLOPs columns are shown when any part shows them. Lost records add up; the
/// overflow policy is that of the first part that lost any. The device label is the parts'
/// common one, or `DEVICE` when they differ (a strata trace with a Kineto one).
///
/// **Example**
/// ```
/// strata::averages all = strata::merge_averages(std::vector{key_averages(rank0), key_averages(rank1)});
/// ```
inline averages merge_averages(std::span<const averages> parts) {
  averages out;
  if (parts.empty()) return out;
  out.device_name = parts.front().device_name;
  bool lost_seen = false;
  std::unordered_map<std::string, std::size_t> row_of;
  for (const averages& part : parts) {
    if (part.device_name != out.device_name) out.device_name = "DEVICE";
    out.profile_memory = out.profile_memory || part.profile_memory;
    out.with_flops = out.with_flops || part.with_flops;
    out.records_lost += part.records_lost;
    if (out.peak_flops_per_s == 0) out.peak_flops_per_s = part.peak_flops_per_s;
    if (out.peak_hbm_bytes_per_s == 0) out.peak_hbm_bytes_per_s = part.peak_hbm_bytes_per_s;
    if (part.records_lost > 0 && !lost_seen) {
      lost_seen = true;
      out.overflow = part.overflow;
    }
    for (const average_row& r : part.rows) {
      std::string key = r.name;
      key += '\0';
      key += r.is_device ? 'd' : 'h';
      key += '\0';
      key += r.input_shapes;
      const auto [it, fresh] = row_of.try_emplace(std::move(key), out.rows.size());
      if (fresh) {
        out.rows.push_back(r);
        continue;
      }
      average_row& sum = out.rows[it->second];
      sum.count += r.count;
      sum.self_cpu_ns += r.self_cpu_ns;
      sum.cpu_total_ns += r.cpu_total_ns;
      sum.self_device_ns += r.self_device_ns;
      sum.device_total_ns += r.device_total_ns;
      sum.cpu_memory_usage += r.cpu_memory_usage;
      sum.self_cpu_memory_usage += r.self_cpu_memory_usage;
      sum.device_memory_usage += r.device_memory_usage;
      sum.self_device_memory_usage += r.self_device_memory_usage;
      sum.flops += r.flops;
      sum.device_bytes += r.device_bytes;
    }
  }
  return out;
}

}  // namespace v1
}  // namespace strata
