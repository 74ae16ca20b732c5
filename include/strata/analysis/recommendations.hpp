// strata/analysis/recommendations.hpp: what to look at first in a run, ranked by the time it
// could save, each citing the figures and rows behind it: the run's own rules, and for a
// distributed job the rules over its ranks (strata/analysis/job_analysis.hpp). The rules and
// their thresholds are in docs/report.md ("Recommendations"); the constants below are the same
// numbers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "strata/analysis/activity.hpp"
#include "strata/analysis/averages.hpp"
#include "strata/analysis/job_analysis.hpp"
#include "strata/detail/table_format.hpp"

namespace strata {
inline namespace v1 {

/// A device's memory peak, as the report shows it.
struct memory_peak {
  std::string device = {};     ///< "CPU", "NEURON:0", ...
  std::int64_t bytes = 0;      ///< peak allocated bytes
  std::int64_t ns = 0;         ///< when it was first reached
  std::string op = {};         ///< the op open at it ("" unknown)
};

/// One recommendation.
struct recommendation {
  std::string rule = {};           ///< records_lost, dispatch_bound, engine_imbalance, low_utilization, stragglers,
                                   ///< communication_not_overlapped, memory_peak
  std::string title = {};          ///< one line
  std::string detail = {};         ///< the figures behind it
  std::int64_t saving_ns = -1;     ///< time it could save at most; -1: no time estimate
  std::vector<std::string> rows = {};  ///< the key_averages rows (or tracks, or ranks: "rank 2") it cites
};

/// The thresholds of the rules (docs/report.md, "Recommendations").
struct recommendation_thresholds {
  double device_busy_below = 0.5;       ///< dispatch-bound: device busy under this share of the wall time
  double engine_saturated = 0.6;        ///< imbalance: the busiest engine busy this share of device time...
  double engine_idle = 0.1;             ///< ...while the median engine is under this share
  double utilization_below = 0.5;       ///< low MFU/MBU: the better of the two under this share of peak
  std::size_t utilization_rows = 3;     ///< at most this many low-utilisation rows
  double overlap_below = 0.5;           ///< communication not overlapped: under this share of it runs beside compute...
  double communication_share = 0.2;     ///< ...while it runs this share of the rank's kernel span or more
  std::size_t overlap_ranks = 3;        ///< at most this many such ranks
};

namespace detail {

inline std::string report_time(std::int64_t ns) { return format_time_ns(static_cast<double>(ns), {}); }

inline std::string report_bytes(std::int64_t b) {
  const double v = static_cast<double>(b < 0 ? -b : b);
  const char* sign = b < 0 ? "-" : "";
  if (v >= 1073741824.0) return fmt::format("{}{:.2f} GiB", sign, v / 1073741824.0);
  if (v >= 1048576.0) return fmt::format("{}{:.2f} MiB", sign, v / 1048576.0);
  if (v >= 1024.0) return fmt::format("{}{:.2f} KiB", sign, v / 1024.0);
  return fmt::format("{}{} B", sign, b < 0 ? -b : b);
}

inline std::string report_share(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : std::string("--");
}

/// "3, 4 and 7", the first `shown` of them, then how many more.
inline std::string listed(const std::vector<std::string>& items, std::size_t shown = 8) {
  std::string out;
  const std::size_t n = std::min(items.size(), shown);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += i + 1 == n && items.size() <= shown ? " and " : ", ";
    out += items[i];
  }
  if (items.size() > shown) out += fmt::format(" and {} more", items.size() - shown);
  return out;
}

/// The rules over a job's ranks: stragglers, and communication that runs beside no compute.
inline void job_recommendations(const job_figures& job, const recommendation_thresholds& th,
                                std::vector<recommendation>& timed) {
  // Stragglers: what the other ranks wait in the collectives a late rank starts late, per step
  // its median lateness times the ranks beside it in that step.
  std::map<std::int64_t, std::int64_t> ranks_in_step;
  for (const straggler_row& s : job.stragglers) ++ranks_in_step[s.step];
  std::map<std::int64_t, std::vector<const straggler_row*>> late_steps;  // by rank
  for (const straggler_row& s : job.stragglers)
    if (s.straggler) late_steps[s.rank].push_back(&s);
  for (const auto& [rank, steps] : late_steps) {
    std::int64_t saving = 0, largest = 0;
    std::vector<std::int64_t> medians;
    std::vector<std::string> names;
    for (const straggler_row* s : steps) {
      saving += s->median_late_ns * (ranks_in_step[s->step] - 1);
      largest = std::max(largest, s->max_late_ns);
      medians.push_back(s->median_late_ns);
      names.push_back(s->step < 0 ? std::string("outside any step") : std::to_string(s->step));
    }
    const std::int64_t median = median_of(medians);
    const bool no_steps = steps.size() == 1 && steps.front()->step < 0;
    recommendation r{"stragglers",
                     fmt::format("Rank {} starts its collectives {} late: the other ranks wait for it", rank, report_time(median)),
                     "", saving, {fmt::format("rank {}", rank)}};
    r.detail = fmt::format(
        "{}, rank {}'s collectives started a median {} after their group's median start (at most {} late; a "
        "straggler is over {}), and the other ranks wait for it in them: {} of waiting (its lateness times the "
        "ranks beside it{}). Look at what delays rank {} before its collectives: its host (input, a slower op, a "
        "busier machine) or its device.",
        no_steps ? std::string("Over the run (no ProfilerStep marked)")
                 : fmt::format("In step{} {}", steps.size() == 1 ? "" : "s", listed(names)),
        rank, report_time(median), report_time(largest), report_time(job.options.straggler_ns), report_time(saving),
        steps.size() == 1 ? "" : ", step by step", rank);
    timed.push_back(std::move(r));
  }

  // Communication beside no compute: a rank whose collectives take a large share of its
  // kernel span and mostly run alone. Running them under compute hides at most the smaller of
  // its communication and its compute that run alone.
  std::vector<recommendation> exposed;
  for (const rank_analysis& a : job.ranks) {
    const temporal_breakdown& t = a.temporal;
    if (a.communication_ns <= 0 || t.span_ns <= 0) continue;
    const double share = static_cast<double>(a.communication_ns) / static_cast<double>(t.span_ns);
    const double overlap = static_cast<double>(a.overlap_ns) / static_cast<double>(a.communication_ns);
    if (share < th.communication_share || overlap >= th.overlap_below) continue;
    const std::int64_t alone = a.communication_ns - a.overlap_ns;
    const std::int64_t compute_alone = t.compute_ns - a.overlap_ns;
    const std::int64_t saving = std::min(alone, compute_alone);
    if (saving <= 0) continue;
    exposed.push_back(
        {"communication_not_overlapped",
         fmt::format("Rank {}'s communication runs beside no compute: {:.1f}% overlapped", a.rank, 100 * overlap),
         fmt::format("Communication kernels run {} on rank {}, {} of its kernel span ({}); only {} of that beside a "
                     "compute kernel, while its compute runs {} alone. Issuing collectives so that independent compute "
                     "runs while they do (the next layer's, bucketed gradients) could hide up to {}.",
                     report_time(a.communication_ns), a.rank, report_share(static_cast<double>(a.communication_ns), static_cast<double>(t.span_ns)),
                     report_time(t.span_ns), report_time(a.overlap_ns), report_time(compute_alone), report_time(saving)),
         saving, {fmt::format("rank {}", a.rank)}});
  }
  std::stable_sort(exposed.begin(), exposed.end(), [](const auto& a, const auto& b) { return a.saving_ns > b.saving_ns; });
  if (exposed.size() > th.overlap_ranks) exposed.resize(th.overlap_ranks);
  for (auto& r : exposed) timed.push_back(std::move(r));
}

}  // namespace detail

/// The recommendations for a run: records lost first (its figures undercount), then the rules
/// that estimate a saving, most first, then the ones that do not (memory peaks). `job`: the
/// analyses of a distributed job's ranks, for the rules over ranks (none: no such rule).
inline std::vector<recommendation> recommend(const averages& table, const activity& run,
                                             std::span<const memory_peak> memory = {},
                                             const recommendation_thresholds& th = {},
                                             const job_figures& job = {}) {
  using detail::report_share;
  using detail::report_time;
  std::vector<recommendation> timed, untimed, out;
  const double wall = static_cast<double>(run.wall_ns());

  if (table.records_lost > 0)
    out.push_back({"records_lost", fmt::format("{} records were lost while capturing", table.records_lost),
                   "Every time and count on this page undercounts: raise the memory limit or turn spilling on "
                   "(docs/production.md).",
                   -1, {}});

  // Dispatch-bound: the device waits for the host.
  if (run.has_device() && wall > 0 && static_cast<double>(run.device_busy_ns) < th.device_busy_below * wall) {
    recommendation r{"dispatch_bound", "The device is idle most of the run: the host cannot feed it", "",
                     run.wall_ns() - run.device_busy_ns, {}};
    std::vector<const average_row*> host;
    for (const average_row& row : table.rows)
      if (!row.is_device && row.self_cpu_ns > 0 && !row.name.starts_with("ProfilerStep")) host.push_back(&row);
    std::stable_sort(host.begin(), host.end(), [](auto* a, auto* b) { return a->self_cpu_ns > b->self_cpu_ns; });
    std::string top;
    for (std::size_t i = 0; i < host.size() && i < 3; ++i) {
      r.rows.push_back(host[i]->name);
      top += fmt::format("{}{} ({})", i == 0 ? "" : ", ", host[i]->name, report_time(host[i]->self_cpu_ns));
    }
    r.detail = fmt::format(
        "Device busy {} of the wall time ({} of {}); {} framework dispatches; host Self CPU {}. "
        "Fewer, larger dispatches (a compiled graph, a fused kernel) let the device run while the host "
        "works.{}",
        report_share(static_cast<double>(run.device_busy_ns), wall), report_time(run.device_busy_ns),
        report_time(run.wall_ns()), run.framework_ops, report_time(table.self_cpu_total_ns()),
        top.empty() ? std::string() : " Most host time: " + top + ".");
    timed.push_back(std::move(r));
  }

  // One engine saturated while the others idle.
  std::vector<const activity_track*> engines;
  for (const activity_track& t : run.tracks)
    if (t.label.kind == track_kind::engine) engines.push_back(&t);
  if (engines.size() >= 2 && run.device_busy_ns > 0) {
    std::stable_sort(engines.begin(), engines.end(), [](auto* a, auto* b) { return a->busy_ns > b->busy_ns; });
    const double device = static_cast<double>(run.device_busy_ns);
    const activity_track& busiest = *engines[0];
    const activity_track& median = *engines[engines.size() / 2];
    if (static_cast<double>(busiest.busy_ns) >= th.engine_saturated * device &&
        static_cast<double>(median.busy_ns) < th.engine_idle * device) {
      recommendation r{"engine_imbalance",
                       fmt::format("{} is saturated while most engines idle", busiest.label.name),
                       fmt::format("{} is busy {} of the device's busy time ({}); the median engine, {}, {}. "
                                   "Moving work to idle engines (or overlapping it with DMA) could bring the "
                                   "busiest down to the second busiest, {} ({}).",
                                   busiest.label.name, report_share(static_cast<double>(busiest.busy_ns), device),
                                   report_time(busiest.busy_ns), median.label.name,
                                   report_share(static_cast<double>(median.busy_ns), device), engines[1]->label.name,
                                   report_time(engines[1]->busy_ns)),
                       busiest.busy_ns - engines[1]->busy_ns,
                       {busiest.label.name, engines[1]->label.name}};
      timed.push_back(std::move(r));
    }
  }

  // Low MFU/MBU: device rows that reach neither peak.
  if (table.peak_flops_per_s > 0 || table.peak_hbm_bytes_per_s > 0) {
    std::vector<recommendation> low;
    for (const average_row& row : table.rows) {
      if (!row.is_device || row.self_device_ns <= 0) continue;
      // A row that counts neither FLOPs nor bytes (a collective, a wait, an unannotated
      // kernel) has no utilisation to judge: 0% would be a guess, not a figure.
      if (row.flops == 0 && row.device_bytes == 0) continue;
      const double mfu = table.peak_flops_per_s > 0 ? row.achieved_flops_per_s() / table.peak_flops_per_s : 0;
      const double mbu = table.peak_hbm_bytes_per_s > 0 ? row.achieved_bytes_per_s() / table.peak_hbm_bytes_per_s : 0;
      const double best = std::max(mfu, mbu);
      if (best >= th.utilization_below) continue;
      const auto saving = static_cast<std::int64_t>(static_cast<double>(row.self_device_ns) * (1.0 - best / th.utilization_below));
      if (saving <= 0) continue;
      low.push_back({"low_utilization", fmt::format("{} reaches neither peak: MFU {:.1f}%, MBU {:.1f}%", row.name, 100 * mfu, 100 * mbu),
                     fmt::format("{} calls, self device time {}; at {:.0f}% of the better peak it would take {}. "
                                 "A kernel this far from both peaks is bound by latency or overhead: larger tiles, "
                                 "fewer instructions, overlapped DMA.",
                                 row.count, report_time(row.self_device_ns), 100 * th.utilization_below,
                                 report_time(row.self_device_ns - saving)),
                     saving, {row.name}});
    }
    std::stable_sort(low.begin(), low.end(), [](const auto& a, const auto& b) { return a.saving_ns > b.saving_ns; });
    if (low.size() > th.utilization_rows) low.resize(th.utilization_rows);
    for (auto& r : low) timed.push_back(std::move(r));
  }

  detail::job_recommendations(job, th, timed);

  for (const memory_peak& m : memory) {
    if (m.bytes <= 0) continue;
    untimed.push_back({"memory_peak", fmt::format("{} memory peaks at {}", m.device, detail::report_bytes(m.bytes)),
                       fmt::format("Reached {} into the run{}.", report_time(m.ns - run.begin_ns),
                                   m.op.empty() ? std::string() : ", inside " + m.op),
                       -1, m.op.empty() ? std::vector<std::string>{} : std::vector<std::string>{m.op}});
  }

  std::stable_sort(timed.begin(), timed.end(), [](const auto& a, const auto& b) { return a.saving_ns > b.saving_ns; });
  for (auto& r : timed) out.push_back(std::move(r));
  for (auto& r : untimed) out.push_back(std::move(r));
  return out;
}

}  // namespace v1
}  // namespace strata
