// tools/report/html_command.hpp: `strata-report html TRACE... -o report.html [--compare OTHER]`,
// the saved traces' report page (strata/export/html_report.hpp; docs/report.md).
//
// Several TRACEs (the ranks of one job, or files of one run) make one run on the page, their
// tracks on one time axis; --compare adds OTHER as a second run beside it. When the TRACEs are
// ranks of one job (distributedInfo.rank differs), the run also carries the job's analyses, as
// `strata-report analyze` computes them (report/job_trace.hpp), for the Distributed section.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/analysis/activity.hpp"
#include "strata/analysis/job_analysis.hpp"
#include "strata/analysis/merge_averages.hpp"
#include "strata/crash_dump.hpp"
#include "strata/error.hpp"
#include "strata/export/html_report.hpp"
#include "report/job_trace.hpp"
#include "report/trace_reader.hpp"
#include "report/trace_set.hpp"

namespace strata {
inline namespace v1 {
namespace report {

inline constexpr std::string_view html_usage =
    "usage: strata-report html TRACE... -o REPORT.html [--compare OTHER] [--title TITLE]\n"
    "  writes one self-contained HTML page (no network request; open it from disk): a summary\n"
    "  with recommendations ranked by the time they could save, a timeline of every track, the\n"
    "  key_averages table, the device's engines and memory, and for the ranks of a distributed\n"
    "  job (distributedInfo.rank) each rank's breakdown and the stragglers; --compare OTHER (a\n"
    "  trace or a directory of them) puts a second run beside the TRACEs, op by op\n";

/// A bad command line of `html`: its message (the usage follows it).
struct html_usage_error {
  std::string message;
};

namespace detail {

/// The memory curves of saved `[memory]` events: one for host memory, one for device memory,
/// the running sum of their bytes in time order; the op at a peak is the innermost host event
/// of the allocating track open then.
inline std::vector<memory_curve> saved_memory_curves(std::span<const memory_event> memory, std::span<const op_event> events,
                                                     const activity& timeline) {
  std::vector<memory_curve> out;
  for (const bool device : {false, true}) {
    std::vector<memory_event> mine;
    for (const memory_event& m : memory)
      if (m.on_device == device) mine.push_back(m);
    if (mine.empty()) continue;
    std::stable_sort(mine.begin(), mine.end(), [](const memory_event& a, const memory_event& b) { return a.ns < b.ns; });
    std::vector<std::pair<std::int64_t, std::int64_t>> samples;
    std::int64_t total = 0;
    memory_curve c;
    c.peak.device = device ? "device" : "CPU";
    std::uint64_t peak_track = 0;
    for (const memory_event& m : mine) {
      total += m.bytes;
      samples.emplace_back(m.ns, total);
      if (total > c.peak.bytes) {
        c.peak.bytes = total;
        c.peak.ns = m.ns;
        peak_track = m.track;
      }
    }
    if (c.peak.bytes > 0) {
      std::int64_t best_begin = 0;
      bool found = false;
      for (const op_event& e : events) {
        if (e.track != peak_track || e.layer == layer::device || e.steps_of != op_event::not_a_step) continue;
        if (e.begin_ns <= c.peak.ns && c.peak.ns < std::max(e.begin_ns, e.end_ns) && (!found || e.begin_ns >= best_begin)) {
          best_begin = e.begin_ns;
          c.peak.op = e.name;
          found = true;
        }
      }
    }
    c.points = memory_curve_points(samples, timeline);
    out.push_back(std::move(c));
  }
  return out;
}

inline void refuse_perfetto_for_html(std::span<const std::filesystem::path> files) {
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    if (name.ends_with(".pftrace") || name.ends_with(".pftrace.gz"))
      throw error(fmt::format("{} is a Perfetto protobuf trace; strata-report html reads Chrome trace JSON "
                              "(.json, .json.gz): write the session as JSON too (STRATA_FORMAT=json)",
                              f.string()));
    std::error_code ec;
    if (std::filesystem::is_regular_file(f, ec) && is_crash_dump(f))
      throw error(fmt::format("{} is a crash dump; convert it first (strata-report convert DUMP -o trace.json)", f.string()));
  }
}

/// The job that `files` make when they are ranks of one (two distinct distributedInfo.rank or
/// more): each rank analysed as `strata-report analyze` does, checked as one job (a rank twice
/// or two world sizes is an error naming the files), and its stragglers. None otherwise: the
/// files of one rank, or traces without distributedInfo.
inline job_figures job_of_files(std::span<const std::filesystem::path> files) {
  job_figures job;
  if (files.size() < 2) return job;
  job.ranks = analyze_files(files, job.options, 2);
  std::vector<std::int64_t> ranks;
  for (const rank_analysis& r : job.ranks)
    if (!r.rank_assumed) ranks.push_back(r.rank);
  std::sort(ranks.begin(), ranks.end());
  if (std::unique(ranks.begin(), ranks.end()) - ranks.begin() < 2) return {};
  check_job(job.ranks, "html");
  report_unmatched(job.ranks);
  job.clocks_aligned = clocks_align(job.ranks, "html");
  if (job.clocks_aligned) job.stragglers = stragglers_of(job.ranks, job.options);
  return job;
}

}  // namespace detail

/// The run that the trace files `paths` (files or directories) make: one table over all of them,
/// their tracks on one time axis (a track's group names its file when there are several), and
/// when they are the ranks of one job, its analyses (detail::job_of_files). Raises
/// `strata::error` naming the file that cannot be read, or when they hold no op events.
inline html_run html_run_of_files(std::span<const std::filesystem::path> paths) {
  const std::vector<std::filesystem::path> files = trace_files(paths);
  detail::refuse_perfetto_for_html(files);
  html_run run;
  std::vector<op_event> events;
  std::vector<memory_event> memory;
  std::vector<track_label> labels;
  std::vector<averages> tables;
  for (const auto& f : files) {
    saved_trace t = read_trace(f, {.activity = true});
    tables.push_back(key_averages(t));
    const std::uint64_t offset = labels.size();
    for (track_label l : t.track_labels) {
      if (files.size() > 1) l.group = f.filename().string() + ": " + l.group;
      labels.push_back(std::move(l));
    }
    for (op_event& e : t.events) {
      e.track += offset;
      events.push_back(std::move(e));
    }
    for (op_event& e : t.activity) {
      e.track += offset;
      events.push_back(std::move(e));
    }
    for (memory_event m : t.memory) {
      m.track += offset;
      memory.push_back(m);
    }
    run.sources.push_back(f.string());
  }
  run.table = merge_averages(tables);
  if (run.table.rows.empty()) {
    std::string names;
    for (const auto& f : files) names += (names.empty() ? "" : ", ") + f.string();
    throw error(fmt::format("{} {} no op events: no report to write", names, files.size() == 1 ? "holds" : "hold"));
  }
  run.timeline = activity_of(std::span<const op_event>(events), std::span<const track_label>(labels));
  run.memory = detail::saved_memory_curves(memory, events, run.timeline);
  run.job = detail::job_of_files(files);
  run.label = files.size() == 1 ? files.front().filename().string() : fmt::format("{} traces", files.size());
  // Two runs read from files of the same name ("trace.json" in two directories) say where they are.
  if (files.size() == 1 && run.label == "trace.json" && files.front().has_parent_path())
    run.label = files.front().parent_path().filename().string() + "/" + run.label;
  return run;
}

/// `strata-report html ...`: `args` are the words after "html". Returns the exit status.
/// Raises `html_usage_error` for a bad command line and `strata::error` when a trace cannot be
/// read or the page cannot be written (no page is left then).
inline int html_command(std::span<const std::string_view> args) {
  std::vector<std::filesystem::path> traces;
  std::optional<std::string> output, compare_with, title;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::optional<std::string_view> inline_value;
    if (arg.starts_with("--")) {
      if (const auto eq = arg.find('='); eq != std::string_view::npos) {
        inline_value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      }
    }
    const auto value = [&]() -> std::string {
      if (inline_value) return std::string(*inline_value);
      if (i + 1 >= args.size()) throw html_usage_error{fmt::format("{} needs a value", arg)};
      return std::string(args[++i]);
    };
    if (arg == "-h" || arg == "--help") {
      std::fwrite(html_usage.data(), 1, html_usage.size(), stdout);
      return 0;
    }
    if (arg == "-o" || arg == "--output") output = value();
    else if (arg == "--compare") compare_with = value();
    else if (arg == "--title") title = value();
    else if (arg.size() > 1 && arg.front() == '-') throw html_usage_error{fmt::format("unknown option '{}' for html", arg)};
    else traces.emplace_back(arg);
  }
  if (traces.empty()) throw html_usage_error{"html needs a TRACE"};
  if (!output || output->empty()) throw html_usage_error{"html needs -o REPORT.html"};
  html_report rep;
  rep.runs.push_back(html_run_of_files(traces));
  if (compare_with) {
    const std::vector<std::filesystem::path> other{std::filesystem::path(*compare_with)};
    rep.runs.push_back(html_run_of_files(other));
    if (rep.runs[1].label == rep.runs[0].label) {
      rep.runs[0].label = "A: " + rep.runs[0].label;
      rep.runs[1].label = "B: " + rep.runs[1].label;
    }
  }
  rep.title = title ? *title : rep.runs.size() == 1 ? "strata report: " + rep.runs[0].label
                                                    : "strata report: " + rep.runs[0].label + " against " + rep.runs[1].label;
  const export_result r = write_html_report(rep, *output);
  fmt::print(stderr, "strata-report: wrote {} ({} bytes)\n", r.path, r.bytes);
  return 0;
}

}  // namespace report
}  // namespace v1
}  // namespace strata
