// strata/analysis/job_analysis.hpp: the analyses of a distributed job's traces that Holistic
// Trace Analysis (HTA) made known, over a neutral model of each rank: temporal breakdown, idle
// time per device queue, communication/computation overlap, kernel launch statistics (map: one
// rank at a time), and stragglers (reduce: the ranks' collectives against each other).
// The definitions are in docs/distributed.md; strata-report's `analyze` reads saved traces into
// the model (tools/report/job_trace.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace strata {
inline namespace v1 {

/// What a device kernel does, by HTA's rules on its name (and a collective's args).
enum class kernel_category : std::uint8_t { compute, communication, memory, other };

inline constexpr std::string_view kernel_category_name(kernel_category c) noexcept {
  switch (c) {
    case kernel_category::compute: return "compute";
    case kernel_category::communication: return "communication";
    case kernel_category::memory: return "memory";
    case kernel_category::other: return "other";
  }
  return "other";
}

namespace detail {
inline bool contains(std::string_view s, std::string_view part) noexcept {
  return s.find(part) != std::string_view::npos;
}
}  // namespace detail

/// A kernel's category from its name: communication (`nccl…`, `hccl…`, `hip…`, or containing
/// `ncclKernel`), else memory (`Memcpy…`, `Memset…`, `hipMemcpy…`, `hipMemset…`, `dma…`), else
/// compute unless the name is one HTA counts as neither (synchronisation, a launch, …: see
/// docs/distributed.md), then other. `collective`: the event says it is one (`Collective name`).
inline kernel_category kernel_category_of(std::string_view name, bool collective = false) noexcept {
  using detail::contains;
  if (collective || name.starts_with("nccl") || name.starts_with("hip") || name.starts_with("hccl") ||
      contains(name, "ncclKernel"))
    return kernel_category::communication;
  if (name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("hipMemcpy") ||
      name.starts_with("hipMemset") || name.starts_with("dma"))
    return kernel_category::memory;
  // HTA's compute pattern is the complement of these (each matched at the name's start; `.*X`
  // anywhere in it).
  const bool not_compute =
      contains(name, "Memcpy") || contains(name, "Memset") || contains(name, "dma") ||
      contains(name, "Sync") || name.starts_with("Stream Wait Event") || name.starts_with("runFunction") ||
      name.starts_with("job_exe") || name.starts_with("packet") || name.starts_with("pe_exe") ||
      name.starts_with("cpum_exe_subgraph") || name.starts_with("collective_subgraph_execution") ||
      [&] {  // cuda.*LaunchKernel
        if (!name.starts_with("cuda")) return false;
        return contains(name.substr(4), "LaunchKernel");
      }();
  return not_compute ? kernel_category::other : kernel_category::compute;
}

/// A collective a device kernel carries out (Kineto's args `Collective name`, `Process Group
/// Name`, `Seq`).
struct collective_info {
  std::string name = {};   ///< `Collective name` (allreduce, …), or the kernel's name
  std::string group = {};  ///< `Process Group Name`; empty: not named
  std::int64_t seq = -1;   ///< `Seq`; -1: none (then the group's collectives are matched in order)
  std::vector<std::int64_t> group_ranks = {};  ///< `Process Group Ranks`; empty: not given
};

/// One device kernel (or copy, memset, collective) on one of the rank's device queues.
struct device_kernel {
  std::uint32_t queue = 0;  ///< index into rank_model::queues
  kernel_category category = kernel_category::compute;
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
  std::uint64_t correlation_id = 0;   ///< 0: none
  std::int32_t collective = -1;       ///< index into rank_model::collectives; -1: not one
};

/// A host runtime call that carries a correlation id (the call that launched a kernel).
struct launch_call {
  std::uint64_t correlation_id = 0;
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
  /// One of the calls HTA's launch statistics count (cudaLaunchKernel, cudaLaunchKernelExC,
  /// cudaMemcpyAsync, cudaMemsetAsync, runFunction's submit; strata's submitting runtime call).
  bool counted_launch = false;
};

/// A `ProfilerStep#N` span on the host.
struct step_span {
  std::int64_t step = 0;
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
};

/// A device queue: a CUDA stream, or a NeuronCore track that carries kernel executions.
struct device_queue {
  std::string name = {};  ///< `stream 7`, `NeuronCore 0 / Kernel`, …
};

/// What the analyses need of one rank's trace.
struct rank_model {
  std::string source = {};        ///< the file, for messages
  std::string format = {};        ///< "strata", "kineto" or "chrome"
  std::optional<std::int64_t> rank = {};        ///< distributedInfo.rank
  std::optional<std::int64_t> world_size = {};  ///< distributedInfo.world_size
  std::optional<std::int64_t> base_time_ns = {};///< baseTimeNanoseconds: wall ns at ts 0
  std::vector<device_queue> queues = {};
  std::vector<device_kernel> kernels = {};
  std::vector<launch_call> launches = {};
  std::vector<collective_info> collectives = {};
  std::vector<step_span> steps = {};
};

/// HTA's thresholds (its defaults).
struct analysis_options {
  /// A gap between two kernels of a queue shorter than this is kernel wait (launch overhead).
  std::int64_t kernel_wait_ns = 30'000;
  /// A launch call longer than this is an outlier.
  std::int64_t launch_outlier_ns = 50'000;
  /// A launch delay longer than this is an outlier.
  std::int64_t delay_outlier_ns = 100'000;
  /// A rank whose collectives start later than the group's median by more than this (its
  /// median over a step's collectives) is that step's straggler.
  std::int64_t straggler_ns = 100'000;
  /// Keep the kernels launched in the last ProfilerStep (HTA drops them: the step the
  /// profiler stopped in may be cut short).
  bool include_last_step = false;
  /// Round every span inward to whole microseconds first, as HTA does when it reads a trace
  /// (round_to_whole_us), to compare with HTA's figures; strata otherwise keeps nanoseconds.
  bool hta_rounding = false;
};

/// Idle, compute and other device time of a rank, over its kernel span.
struct temporal_breakdown {
  std::int64_t span_ns = 0;         ///< the first kernel's begin to the last kernel's end
  std::int64_t idle_ns = 0;         ///< no kernel of any queue running
  std::int64_t compute_ns = 0;      ///< some compute kernel running
  std::int64_t non_compute_ns = 0;  ///< kernels running, none of them compute
  double pct(std::int64_t ns) const noexcept { return span_ns > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(span_ns) : 0.0; }
};

/// One queue's idle time between its kernels, by cause.
struct queue_idle {
  std::string queue = {};
  std::uint64_t kernels = 0;
  std::int64_t host_wait_ns = 0;    ///< the next kernel's launch call began after the previous kernel ended
  std::int64_t kernel_wait_ns = 0;  ///< else a gap shorter than kernel_wait_ns
  std::int64_t other_ns = 0;        ///< else
  std::int64_t idle_ns() const noexcept { return host_wait_ns + kernel_wait_ns + other_ns; }
};

/// Launch call, device and delay figures of the kernels whose launch call is known.
struct launch_statistics {
  std::uint64_t kernels = 0;
  std::int64_t launch_ns_total = 0;
  std::int64_t device_ns_total = 0;
  std::int64_t delay_ns_total = 0;
  std::int64_t launch_ns_max = 0;
  std::int64_t delay_ns_max = 0;
  std::int64_t launch_ns_median = 0;
  std::int64_t delay_ns_median = 0;
  std::uint64_t launch_outliers = 0;  ///< launch call longer than launch_outlier_ns
  std::uint64_t delay_outliers = 0;   ///< launch delay longer than delay_outlier_ns
  std::uint64_t short_kernels = 0;    ///< device time shorter than its (non-outlier) launch call
};

/// One collective as a rank saw it, for the stragglers reduce.
struct collective_start {
  std::string group = {};
  std::string name = {};
  std::int64_t seq = -1;      ///< Seq, or the collective's place among its group's on this rank
  std::int64_t step = -1;     ///< the ProfilerStep its launch call began in; -1: none
  std::int64_t start_ns = 0;  ///< wall-clock ns (baseTimeNanoseconds + ts) when known
  bool seq_given = false;     ///< seq is the trace's Seq, not a place
  std::vector<std::int64_t> group_ranks = {};  ///< the group's ranks, when the trace names them
};

/// The map's result for one rank: small, written as JSON by `strata-report analyze` so ranks
/// analysed separately can be combined.
struct rank_analysis {
  std::string source = {};
  std::string format = {};
  std::int64_t rank = 0;
  std::optional<std::int64_t> world_size = {};
  bool rank_assumed = false;  ///< no distributedInfo.rank: taken as 0 (HTA's rule)
  bool wall_clock = false;    ///< baseTimeNanoseconds known: collective starts are wall-clock ns
  std::uint64_t kernels = 0;  ///< device kernels analysed (after the last-step rule)
  temporal_breakdown temporal = {};
  /// Time both some compute and some communication kernel run, and time communication runs.
  std::int64_t overlap_ns = 0;
  std::int64_t communication_ns = 0;
  double overlap_pct() const noexcept {
    return communication_ns > 0 ? 100.0 * static_cast<double>(overlap_ns) / static_cast<double>(communication_ns) : 0.0;
  }
  std::vector<queue_idle> queues = {};
  launch_statistics launch = {};
  std::vector<collective_start> collectives = {};
};

/// One rank in one step against its collectives' groups.
struct straggler_row {
  std::int64_t step = -1;
  std::int64_t rank = 0;
  std::uint64_t collectives = 0;  ///< collectives matched on at least two ranks
  std::int64_t median_late_ns = 0;
  std::int64_t max_late_ns = 0;
  bool straggler = false;
};

namespace detail {

/// The union of [begin, end) intervals, merged in place (sorted by begin).
inline std::vector<std::pair<std::int64_t, std::int64_t>> merge_intervals(
    std::vector<std::pair<std::int64_t, std::int64_t>> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

inline std::int64_t covered_ns(const std::vector<std::pair<std::int64_t, std::int64_t>>& merged) {
  std::int64_t sum = 0;
  for (const auto& [b, e] : merged) sum += e - b;
  return sum;
}

/// The length of the intersection of two merged interval lists.
inline std::int64_t intersection_ns(const std::vector<std::pair<std::int64_t, std::int64_t>>& a,
                                    const std::vector<std::pair<std::int64_t, std::int64_t>>& b) {
  std::int64_t sum = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].first, b[j].first);
    const std::int64_t hi = std::min(a[i].second, b[j].second);
    if (lo < hi) sum += hi - lo;
    (a[i].second < b[j].second ? i : j)++;
  }
  return sum;
}

/// The lower middle of an even count, as HTA's medians are not needed to the half-ns.
inline std::int64_t median_of(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  const std::int64_t upper = v[mid];
  const std::int64_t lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return lower + (upper - lower) / 2;
}

}  // namespace detail

/// The launch call of each kernel: for each correlation id, the earliest host call carrying it.
/// Returns an index into model.launches per kernel, or -1.
inline std::vector<std::int64_t> launch_of_kernels(const rank_model& model) {
  std::vector<std::pair<std::uint64_t, std::size_t>> by_id;  // (correlation id, launch index)
  by_id.reserve(model.launches.size());
  for (std::size_t i = 0; i < model.launches.size(); ++i)
    if (model.launches[i].correlation_id != 0) by_id.emplace_back(model.launches[i].correlation_id, i);
  std::sort(by_id.begin(), by_id.end(), [&](const auto& a, const auto& b) {
    return std::tie(a.first, model.launches[a.second].begin_ns) < std::tie(b.first, model.launches[b.second].begin_ns);
  });
  std::vector<std::int64_t> out(model.kernels.size(), -1);
  for (std::size_t k = 0; k < model.kernels.size(); ++k) {
    const std::uint64_t id = model.kernels[k].correlation_id;
    if (id == 0) continue;
    const auto it = std::lower_bound(by_id.begin(), by_id.end(), id, [](const auto& p, std::uint64_t v) { return p.first < v; });
    if (it != by_id.end() && it->first == id) out[k] = static_cast<std::int64_t>(it->second);
  }
  return out;
}

/// HTA's window for Kineto traces: with ProfilerStep spans, the kernels (and launch calls) of
/// the last step are left out, as is what comes after it, since the profiler may have stopped
/// within it; a kernel stays when its launch call began before the last step began (a kernel
/// whose launch call is unknown, when it began before). A strata trace is unchanged: its
/// profiler ends a window's last step before it writes the window. Without steps, or with
/// include_last_step, the model is unchanged too.
inline void keep_complete_steps(rank_model& model, const analysis_options& opt = {}) {
  if (opt.include_last_step || model.steps.empty() || model.format == "strata") return;
  std::int64_t last_begin = std::numeric_limits<std::int64_t>::min();
  for (const step_span& s : model.steps) last_begin = std::max(last_begin, s.begin_ns);
  const std::vector<std::int64_t> launch = launch_of_kernels(model);
  std::vector<device_kernel> kept;
  kept.reserve(model.kernels.size());
  for (std::size_t k = 0; k < model.kernels.size(); ++k) {
    const std::int64_t t = launch[k] >= 0 ? model.launches[static_cast<std::size_t>(launch[k])].begin_ns : model.kernels[k].begin_ns;
    if (t < last_begin) kept.push_back(model.kernels[k]);
  }
  model.kernels = std::move(kept);
  std::erase_if(model.launches, [&](const launch_call& c) { return c.begin_ns >= last_begin; });
  std::erase_if(model.steps, [&](const step_span& s) { return s.begin_ns >= last_begin; });
}

namespace detail {
inline std::int64_t floor_us(std::int64_t ns) noexcept { return (ns >= 0 ? ns / 1000 : -((-ns + 999) / 1000)) * 1000; }
inline std::int64_t ceil_us(std::int64_t ns) noexcept { return -floor_us(-ns); }
}  // namespace detail

/// HTA's reading of a trace with sub-microsecond times: each begin rounded up and each end
/// down to a whole microsecond (a span within one microsecond then ends before it begins, and
/// counts negatively, as in HTA).
inline void round_to_whole_us(rank_model& model) {
  for (device_kernel& k : model.kernels) k.begin_ns = detail::ceil_us(k.begin_ns), k.end_ns = detail::floor_us(k.end_ns);
  for (launch_call& c : model.launches) c.begin_ns = detail::ceil_us(c.begin_ns), c.end_ns = detail::floor_us(c.end_ns);
  for (step_span& s : model.steps) s.begin_ns = detail::ceil_us(s.begin_ns), s.end_ns = detail::floor_us(s.end_ns);
}

/// The temporal breakdown of a rank's kernels (every queue together).
inline temporal_breakdown temporal_breakdown_of(const rank_model& model) {
  temporal_breakdown out;
  if (model.kernels.empty()) return out;
  std::vector<std::pair<std::int64_t, std::int64_t>> all, compute;
  all.reserve(model.kernels.size());
  for (const device_kernel& k : model.kernels) {
    all.emplace_back(k.begin_ns, k.end_ns);
    if (k.category == kernel_category::compute) compute.emplace_back(k.begin_ns, k.end_ns);
  }
  const auto merged = detail::merge_intervals(std::move(all));
  out.span_ns = merged.back().second - merged.front().first;
  out.idle_ns = out.span_ns - detail::covered_ns(merged);
  out.compute_ns = detail::covered_ns(detail::merge_intervals(std::move(compute)));
  out.non_compute_ns = out.span_ns - out.idle_ns - out.compute_ns;
  return out;
}

/// Time some compute and some communication kernel run at once, and communication time.
inline std::pair<std::int64_t, std::int64_t> communication_overlap_of(const rank_model& model) {
  std::vector<std::pair<std::int64_t, std::int64_t>> compute, comm;
  for (const device_kernel& k : model.kernels) {
    if (k.category == kernel_category::compute) compute.emplace_back(k.begin_ns, k.end_ns);
    if (k.category == kernel_category::communication) comm.emplace_back(k.begin_ns, k.end_ns);
  }
  const auto a = detail::merge_intervals(std::move(compute));
  const auto b = detail::merge_intervals(std::move(comm));
  return {detail::intersection_ns(a, b), detail::covered_ns(b)};
}

/// The idle time of each queue between consecutive kernels (by begin), by cause: host wait
/// when the later kernel's launch call began after the earlier kernel ended, else kernel wait
/// when the gap is shorter than opt.kernel_wait_ns, else other. Overlapping kernels leave no gap.
inline std::vector<queue_idle> idle_time_of(const rank_model& model, const analysis_options& opt = {}) {
  const std::vector<std::int64_t> launch = launch_of_kernels(model);
  std::vector<std::vector<std::size_t>> per_queue(model.queues.size());
  for (std::size_t k = 0; k < model.kernels.size(); ++k)
    if (model.kernels[k].queue < per_queue.size()) per_queue[model.kernels[k].queue].push_back(k);
  std::vector<queue_idle> out;
  for (std::size_t q = 0; q < per_queue.size(); ++q) {
    auto& ks = per_queue[q];
    if (ks.empty()) continue;
    std::stable_sort(ks.begin(), ks.end(), [&](std::size_t a, std::size_t b) { return model.kernels[a].begin_ns < model.kernels[b].begin_ns; });
    queue_idle row{.queue = model.queues[q].name, .kernels = ks.size()};
    for (std::size_t i = 1; i < ks.size(); ++i) {
      const device_kernel& prev = model.kernels[ks[i - 1]];
      const device_kernel& cur = model.kernels[ks[i]];
      const std::int64_t gap = std::max<std::int64_t>(0, cur.begin_ns - prev.end_ns);
      const bool host_wait = launch[ks[i]] >= 0 && model.launches[static_cast<std::size_t>(launch[ks[i]])].begin_ns > prev.end_ns;
      if (host_wait) row.host_wait_ns += gap;
      else if (gap < opt.kernel_wait_ns) row.kernel_wait_ns += gap;
      else row.other_ns += gap;
    }
    out.push_back(std::move(row));
  }
  return out;
}

/// Launch statistics over the kernels launched by a counted launch call: the call's duration,
/// the kernel's, and the delay from the call's end to the kernel's begin (0 when it began first).
inline launch_statistics launch_statistics_of(const rank_model& model, const analysis_options& opt = {}) {
  const std::vector<std::int64_t> launch = launch_of_kernels(model);
  launch_statistics out;
  std::vector<std::int64_t> launches, delays;
  for (std::size_t k = 0; k < model.kernels.size(); ++k) {
    if (launch[k] < 0) continue;
    const launch_call& c = model.launches[static_cast<std::size_t>(launch[k])];
    if (!c.counted_launch) continue;
    const device_kernel& kern = model.kernels[k];
    const std::int64_t call = c.end_ns - c.begin_ns;
    const std::int64_t device = kern.end_ns - kern.begin_ns;
    const std::int64_t delay = std::max<std::int64_t>(0, kern.begin_ns - c.end_ns);
    ++out.kernels;
    out.launch_ns_total += call;
    out.device_ns_total += device;
    out.delay_ns_total += delay;
    out.launch_ns_max = std::max(out.launch_ns_max, call);
    out.delay_ns_max = std::max(out.delay_ns_max, delay);
    if (call > opt.launch_outlier_ns) ++out.launch_outliers;
    else if (device < call) ++out.short_kernels;
    if (delay > opt.delay_outlier_ns) ++out.delay_outliers;
    launches.push_back(call);
    delays.push_back(delay);
  }
  out.launch_ns_median = detail::median_of(std::move(launches));
  out.delay_ns_median = detail::median_of(std::move(delays));
  return out;
}

/// The collectives of a rank in start order, each with its step and its wall-clock start; a
/// collective without Seq gets its place among its group's collectives on this rank.
inline std::vector<collective_start> collective_starts_of(const rank_model& model) {
  const std::vector<std::int64_t> launch = launch_of_kernels(model);
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < model.kernels.size(); ++k)
    if (model.kernels[k].collective >= 0) order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return model.kernels[a].begin_ns < model.kernels[b].begin_ns; });
  std::map<std::string, std::int64_t> next_in_group;
  std::vector<collective_start> out;
  for (const std::size_t k : order) {
    const device_kernel& kern = model.kernels[k];
    const collective_info& info = model.collectives[static_cast<std::size_t>(kern.collective)];
    collective_start c{.group = info.group, .name = info.name, .seq = info.seq};
    c.seq_given = info.seq >= 0;
    c.group_ranks = info.group_ranks;
    std::int64_t& place = next_in_group[info.group];
    if (c.seq < 0) c.seq = place;
    ++place;
    const std::int64_t at = launch[k] >= 0 ? model.launches[static_cast<std::size_t>(launch[k])].begin_ns : kern.begin_ns;
    for (const step_span& s : model.steps)
      if (s.begin_ns <= at && at < s.end_ns) c.step = s.step;
    c.start_ns = kern.begin_ns + model.base_time_ns.value_or(0);
    out.push_back(std::move(c));
  }
  return out;
}

/// Every per-rank analysis of `model` (the map step). The model is first rounded as HTA does
/// when opt.hta_rounding is set, and cut to HTA's window (keep_complete_steps).
inline rank_analysis analyze_rank(rank_model model, const analysis_options& opt = {}) {
  if (opt.hta_rounding) round_to_whole_us(model);
  keep_complete_steps(model, opt);
  rank_analysis out;
  out.source = model.source;
  out.format = model.format;
  out.rank = model.rank.value_or(0);
  out.rank_assumed = !model.rank.has_value();
  out.wall_clock = model.base_time_ns.has_value();
  out.world_size = model.world_size;
  out.kernels = model.kernels.size();
  out.temporal = temporal_breakdown_of(model);
  std::tie(out.overlap_ns, out.communication_ns) = communication_overlap_of(model);
  out.queues = idle_time_of(model, opt);
  out.launch = launch_statistics_of(model, opt);
  out.collectives = collective_starts_of(model);
  return out;
}

/// The stragglers of a job (the reduce step): each collective (group, Seq) seen on at least two
/// ranks has the median of their starts; a rank is late on it by its start minus that median.
/// Per step and rank: the median and the largest of its lateness over the step's collectives;
/// a straggler when the median exceeds opt.straggler_ns. Rows ordered by step, then rank.
inline std::vector<straggler_row> stragglers_of(std::span<const rank_analysis> ranks, const analysis_options& opt = {}) {
  struct seen {
    std::int64_t rank;
    std::int64_t step;
    std::int64_t start_ns;
  };
  std::map<std::pair<std::string, std::int64_t>, std::vector<seen>> by_collective;
  for (const rank_analysis& r : ranks)
    for (const collective_start& c : r.collectives) by_collective[{c.group, c.seq}].push_back({r.rank, c.step, c.start_ns});
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int64_t>> late;  // (step, rank)
  for (const auto& [key, list] : by_collective) {
    if (list.size() < 2) continue;
    std::vector<std::int64_t> starts;
    for (const seen& s : list) starts.push_back(s.start_ns);
    const std::int64_t median = detail::median_of(std::move(starts));
    for (const seen& s : list) late[{s.step, s.rank}].push_back(s.start_ns - median);
  }
  std::vector<straggler_row> out;
  for (auto& [key, values] : late) {
    straggler_row row{.step = key.first, .rank = key.second, .collectives = values.size()};
    row.max_late_ns = *std::max_element(values.begin(), values.end());
    row.median_late_ns = detail::median_of(std::move(values));
    row.straggler = row.median_late_ns > opt.straggler_ns;
    out.push_back(row);
  }
  return out;
}

/// A job's analyses together, as a report shows them: each rank's result (the map) and the
/// stragglers among them (the reduce), with the options both were computed with.
struct job_figures {
  std::vector<rank_analysis> ranks = {};       ///< in rank order
  std::vector<straggler_row> stragglers = {};  ///< stragglers_of(ranks, options); none when clocks_aligned is false
  analysis_options options = {};
  bool clocks_aligned = true;  ///< false: some traces have baseTimeNanoseconds and others not
  /// The ranks that ran device kernels.
  std::size_t ranks_with_kernels() const noexcept {
    return static_cast<std::size_t>(std::count_if(ranks.begin(), ranks.end(), [](const rank_analysis& r) { return r.kernels > 0; }));
  }
};

/// A collective (by its group and Seq) that some ranks of its group ran and others did not,
/// though every rank of the group is among those analysed: it never ran there (the job hung,
/// or those ranks' traces end before it).
struct unmatched_collective {
  std::string group = {};
  std::string name = {};
  std::int64_t seq = -1;
  std::vector<std::int64_t> ran_on = {};
  std::vector<std::int64_t> missing_on = {};
};

/// The collectives seen on only some of their group's ranks, when the traces say the group's
/// ranks (`Process Group Ranks`) and each collective's `Seq`, in group and Seq order.
inline std::vector<unmatched_collective> unmatched_collectives_of(std::span<const rank_analysis> ranks) {
  std::vector<std::int64_t> analysed;
  for (const rank_analysis& r : ranks) analysed.push_back(r.rank);
  std::sort(analysed.begin(), analysed.end());
  std::map<std::pair<std::string, std::int64_t>, unmatched_collective> by_key;
  for (const rank_analysis& r : ranks)
    for (const collective_start& c : r.collectives) {
      if (!c.seq_given || c.group_ranks.empty()) continue;
      unmatched_collective& u = by_key[{c.group, c.seq}];
      if (u.ran_on.empty()) {
        u.group = c.group, u.name = c.name, u.seq = c.seq;
        u.missing_on = c.group_ranks;  // what is left once every rank that ran it is taken out
      }
      u.ran_on.push_back(r.rank);
      std::erase(u.missing_on, r.rank);
    }
  std::vector<unmatched_collective> out;
  for (auto& [key, u] : by_key) {
    const bool all_there = std::all_of(u.missing_on.begin(), u.missing_on.end(), [&](std::int64_t m) {
      return std::binary_search(analysed.begin(), analysed.end(), m);
    });
    if (u.missing_on.empty() || !all_there) continue;
    std::sort(u.ran_on.begin(), u.ran_on.end());
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace v1
}  // namespace strata
