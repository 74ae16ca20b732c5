// strata-report: key_averages() of saved traces (strata's or torch.profiler's, plain or
// gzip-compressed; files or directories of them), printed as torch.profiler's table, as CSV
// or as JSON: one table over all of them, or one per file; or two sets compared
// (docs/key-averages.md).
//
// Exit codes: 0 done, 1 a trace could not be read, 2 bad usage.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "strata/analysis/compare.hpp"
#include "strata/analysis/key_averages.hpp"
#include "strata/analysis/merge_averages.hpp"
#include "strata/analysis/stacks.hpp"
#include "strata/crash_dump.hpp"
#include "strata/error.hpp"
#include "strata/export/write_trace.hpp"
#include "strata/profiler.hpp"
#include "report/analyze_command.hpp"
#include "report/html_command.hpp"
#include "report/merge_command.hpp"
#include "report/trace_set.hpp"

namespace {

constexpr std::string_view usage =
    "usage: strata-report TRACE... [--sort-by KEY] [--row-limit N] [--group-by-input-shape]\n"
    "                              [--top-level-only] [--format table|csv|json] [--per-file]\n"
    "                              [--profile-memory] [--with-flops] [--compare OTHER] [--per-rank]\n"
    "                              [--utilization [--peak-tflops T] [--peak-hbm-gbps G]]\n"
    "                              [--jobs N]\n"
    "       strata-report convert DUMP -o TRACE.json\n"
    "       strata-report stacks TRACE... -o OUT.folded [--metric METRIC]\n"
    "       strata-report analyze TRACE... [--format table|json|csv] [--jobs N]\n"
    "       strata-report analyze --combine PART.json...\n"
    "       strata-report html TRACE... -o REPORT.html [--compare OTHER] [--title TITLE]\n"
    "       strata-report merge TRACE... -o JOB.json|JOB.pftrace [--no-align]\n"
    "       strata-report --help\n";

constexpr std::string_view convert_usage = "usage: strata-report convert DUMP -o TRACE.json\n";

constexpr std::string_view stacks_usage =
    "usage: strata-report stacks TRACE... -o OUT.folded [--metric METRIC]\n"
    "  writes collapsed stacks for flame graphs (flamegraph.pl, speedscope): one line\n"
    "  'outer;inner;leaf MICROSECONDS' per nesting path, summed over the TRACEs (strata's or\n"
    "  torch.profiler's traces, crash dumps); METRIC is self_cpu_time_total (default) or\n"
    "  self_device_time_total (device kernels under the calls that launched them; also\n"
    "  self_cuda_time_total)\n";

constexpr std::string_view help =
    "Prints torch.profiler's key_averages() table of saved Chrome trace JSON files: written by\n"
    "strata, or torch.profiler (Kineto) traces, plain or gzip-compressed (.json.gz). A TRACE\n"
    "that is a directory stands for its *.json and *.json.gz files. Several traces (ranks or\n"
    "runs) make one table over all of them.\n"
    "\n"
    "  --sort-by KEY           sort the table's rows, largest first: self_cpu_time_total,\n"
    "                          cpu_time_total, cpu_time, self_device_time_total,\n"
    "                          device_time_total, device_time, count, cpu_memory_usage,\n"
    "                          self_cpu_memory_usage, device_memory_usage,\n"
    "                          self_device_memory_usage, flops (torch's keys; cuda, xpu,\n"
    "                          privateuse1 and neuron mean device)\n"
    "  --row-limit N           print at most N rows (default 100; negative: all)\n"
    "  --group-by-input-shape  one row per name and input shapes (args \"Input Dims\")\n"
    "  --top-level-only        only the rows of ops that have no parent\n"
    "  --profile-memory        show the memory columns (CPU Mem, Self CPU Mem, ...) even when\n"
    "                          the trace has no [memory] events (shown by default when it has)\n"
    "  --with-flops            show the FLOPs column whenever an op has a count (args.flops),\n"
    "                          as it is by default; without any count torch shows none either\n"
    "  --utilization           add achieved TFLOP/s, MFU and MBU (% of the device core's peak\n"
    "                          FLOP/s and HBM bandwidth) over self device time; a strata\n"
    "                          trace of the simulator carries the peaks (otherData)\n"
    "  --peak-tflops T         the peak for MFU, in TFLOP/s (a torch trace has none)\n"
    "  --peak-hbm-gbps G       the HBM bandwidth for MBU, in GB/s\n"
    "  --format FORMAT         table (default), csv or json; csv and json hold every row in\n"
    "                          first-seen order, so they take no --sort-by, --row-limit or\n"
    "                          --top-level-only\n"
    "  --per-file              one table per trace file, under its name (--format table only)\n"
    "  --per-rank              one table per rank of a distributed job (distributedInfo.rank;\n"
    "                          a file without one is rank 0, as HTA reads it), over all of that\n"
    "                          rank's files (--format table only)\n"
    "  --compare OTHER         compare the TRACEs (A) with OTHER (B, a file or a directory)\n"
    "                          per op, with the ratio B/A; takes --row-limit,\n"
    "                          --group-by-input-shape and --format\n"
    "  --jobs N                read up to N files at once (default 2); each holds one trace's\n"
    "                          events in memory while it is read\n"
    "  --help                  print this text\n"
    "\n"
    "strata-report reads JSON: for a session written as Perfetto protobuf (.pftrace), write its\n"
    "Chrome trace JSON too (STRATA_FORMAT=json, or profiler::export_chrome_trace()).\n"
    "\n"
    "A TRACE may also be a crash dump (strata-crash-PID.dump, written by a profiler with\n"
    "crash_dump on when the process crashed): its records make the table.\n"
    "\n"
    "convert DUMP -o TRACE.json writes the crash dump's records as a Chrome trace.\n"
    "\n"
    "analyze TRACE... prints a distributed job's analyses (temporal breakdown, idle time per\n"
    "device queue, communication overlap, kernel launches, stragglers; strata-report analyze\n"
    "--help).\n"
    "\n"
    "stacks TRACE... -o OUT.folded [--metric METRIC] writes collapsed stacks for flame graphs\n"
    "(flamegraph.pl, speedscope) as torch.profiler's export_stacks; METRIC is\n"
    "self_cpu_time_total (default) or self_device_time_total.\n"
    "\n"
    "html TRACE... -o REPORT.html [--compare OTHER] [--title TITLE] writes one self-contained\n"
    "HTML page: summary and ranked recommendations, timeline, ops table, device, comparison.\n"
    "\n"
    "merge TRACE... -o JOB.json writes a distributed job's rank traces as one timeline for\n"
    "Perfetto UI: one process group per rank, clocks aligned on baseTimeNanoseconds\n"
    "(strata-report merge --help).\n"
    "\n"
    "Exit status: 0 done, 1 a trace could not be read, 2 bad usage.\n";

struct usage_error {
  std::string message;
  std::string_view usage_text = usage;  ///< the usage printed after the message
};

struct options {
  std::vector<std::filesystem::path> traces;
  std::optional<std::string> compare_with;
  std::optional<std::string> sort_by;
  std::optional<int> row_limit;
  bool group_by_input_shape = false;
  bool top_level_only = false;
  bool profile_memory = false;
  bool with_flops = false;
  bool utilization = false;
  double peak_tflops = 0;     // 0: the trace's
  double peak_hbm_gbps = 0;
  std::string format = "table";
  bool per_file = false;
  bool per_rank = false;
  unsigned jobs = 2;
  bool help = false;
};

int parse_int(std::string_view flag, std::string_view text) {
  int v = 0;
  const char* first = text.data();
  if (!text.empty() && text.front() == '+') ++first;  // from_chars takes no plus sign
  const auto [end, ec] = std::from_chars(first, text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw usage_error{fmt::format("{} needs a whole number, not '{}'", flag, text)};
  return v;
}

options parse(int argc, char** argv) {
  options o;
  std::vector<std::string_view> positional;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::optional<std::string_view> inline_value;
    if (arg.starts_with("--")) {
      if (const auto eq = arg.find('='); eq != std::string_view::npos) {
        inline_value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      }
    }
    const auto value = [&]() -> std::string_view {
      if (inline_value) return *inline_value;
      if (i + 1 >= argc) throw usage_error{fmt::format("{} needs a value", arg)};
      return argv[++i];
    };
    const auto no_value = [&] {
      if (inline_value) throw usage_error{fmt::format("{} takes no value", arg)};
    };
    if (arg == "--help" || arg == "-h") {
      no_value();
      o.help = true;
    } else if (arg == "--sort-by") {
      o.sort_by = std::string(value());
    } else if (arg == "--row-limit") {
      o.row_limit = parse_int(arg, value());
    } else if (arg == "--group-by-input-shape") {
      no_value();
      o.group_by_input_shape = true;
    } else if (arg == "--top-level-only") {
      no_value();
      o.top_level_only = true;
    } else if (arg == "--profile-memory") {
      no_value();
      o.profile_memory = true;
    } else if (arg == "--with-flops") {
      no_value();
      o.with_flops = true;
    } else if (arg == "--utilization") {
      no_value();
      o.utilization = true;
    } else if (arg == "--peak-tflops" || arg == "--peak-hbm-gbps") {
      const std::string text(value());
      double v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || end != text.data() + text.size() || !(v > 0) || !std::isfinite(v))
        throw usage_error{fmt::format("{} needs a positive number, not '{}'", arg, text)};
      (arg == "--peak-tflops" ? o.peak_tflops : o.peak_hbm_gbps) = v;
    } else if (arg == "--format") {
      o.format = std::string(value());
      if (o.format != "table" && o.format != "csv" && o.format != "json")
        throw usage_error{fmt::format("--format is table, csv or json, not '{}'", o.format)};
    } else if (arg == "--compare") {
      o.compare_with = std::string(value());
    } else if (arg == "--per-file") {
      no_value();
      o.per_file = true;
    } else if (arg == "--per-rank") {
      no_value();
      o.per_rank = true;
    } else if (arg == "--jobs") {
      const int n = parse_int(arg, value());
      if (n < 1) throw usage_error{fmt::format("--jobs needs at least 1, not {}", n)};
      o.jobs = static_cast<unsigned>(n);
    } else if (arg.size() > 1 && arg.front() == '-') {
      throw usage_error{fmt::format("unknown option '{}'", arg)};
    } else {
      positional.push_back(arg);
    }
  }
  if (o.help) return o;
  if (positional.empty()) throw usage_error{"no TRACE given"};
  for (std::string_view p : positional) o.traces.emplace_back(p);
  if (o.sort_by) {
    if (o.compare_with) throw usage_error{"--sort-by does not apply to --compare"};
    try {
      // The table's own key check, so a bad key fails before any trace is read.
      strata::check_sort_key(*o.sort_by);
    } catch (const strata::error& e) {
      std::string_view m = e.what();
      if (m.starts_with("strata: ")) m.remove_prefix(8);
      throw usage_error{std::string(m)};
    }
  }
  if ((o.peak_tflops > 0 || o.peak_hbm_gbps > 0) && !o.utilization && o.format == "table")
    throw usage_error{"--peak-tflops and --peak-hbm-gbps go with --utilization"};
  if (o.utilization && o.compare_with) throw usage_error{"--utilization does not apply to --compare"};
  if (o.top_level_only && o.compare_with) throw usage_error{"--top-level-only does not apply to --compare"};
  if (o.per_file && o.compare_with) throw usage_error{"--per-file does not apply to --compare"};
  if (o.per_file && o.format != "table") throw usage_error{"--per-file applies to --format table only"};
  if (o.per_rank && o.compare_with) throw usage_error{"--per-rank does not apply to --compare"};
  if (o.per_rank && o.per_file) throw usage_error{"--per-rank and --per-file are two ways to split: give one"};
  if (o.per_rank && o.format != "table") throw usage_error{"--per-rank applies to --format table only"};
  if (o.format != "table") {
    if (o.sort_by) throw usage_error{"--sort-by applies to --format table only"};
    if (o.top_level_only) throw usage_error{"--top-level-only applies to --format table only"};
    if (o.row_limit) throw usage_error{"--row-limit applies to --format table only"};
  }
  return o;
}

void out(std::string_view s) { std::fwrite(s.data(), 1, s.size(), stdout); }

std::string names(const std::vector<std::filesystem::path>& files) {
  std::string out;
  for (const auto& f : files) out += (out.empty() ? "" : ", ") + f.string();
  return out;
}

/// Perfetto protobuf traces (strata's .pftrace, or .pftrace.gz) are not read here: says so, and
/// how to get the JSON of a session, instead of a JSON parser's error on their first bytes.
void refuse_perfetto(const std::vector<std::filesystem::path>& files) {
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    if (name.ends_with(".pftrace") || name.ends_with(".pftrace.gz"))
      throw strata::error(fmt::format(
          "{} is a Perfetto protobuf trace; strata-report reads Chrome trace JSON "
          "(.json, .json.gz): write the session as JSON too (STRATA_FORMAT=json, or "
          "profiler::export_chrome_trace() / strata::write_chrome_trace(prof.data(), \"trace.json\"))",
          f.string()));
  }
}

strata::key_averages_options averages_options(const options& o) {
  return {.group_by_input_shape = o.group_by_input_shape, .profile_memory = o.profile_memory, .with_flops = o.with_flops};
}

/// The peaks given on the command line, over the trace's.
strata::averages with_peaks(strata::averages avg, const options& o) {
  if (o.peak_tflops > 0) avg.peak_flops_per_s = o.peak_tflops * 1e12;
  if (o.peak_hbm_gbps > 0) avg.peak_hbm_bytes_per_s = o.peak_hbm_gbps * 1e9;
  return avg;
}

/// One table over all the files `paths` name.
strata::averages averages_of(const std::vector<std::filesystem::path>& files, const options& o,
                             std::uint64_t* skipped = nullptr) {
  const strata::key_averages_options ka = averages_options(o);
  const auto parts = strata::report::key_averages_of_files(files, ka, o.jobs);
  std::vector<strata::averages> tables;
  for (const auto& p : parts) {
    tables.push_back(p.table);
    if (skipped != nullptr) *skipped += p.skipped;
  }
  return with_peaks(strata::merge_averages(tables), o);
}

void print_table(const strata::averages& avg, const options& o, std::string_view header) {
  out(avg.table({.sort_by = o.sort_by ? std::string_view(*o.sort_by) : std::string_view(),
                 .row_limit = o.row_limit.value_or(100),
                 .top_level_events_only = o.top_level_only,
                 .header = header,
                 .utilization = o.utilization}));
}

/// --per-rank: one table per distributedInfo.rank, over all of that rank's files (the windows of
/// a schedule among them), ranks in order; a file without a rank is rank 0, as HTA reads it.
int per_rank_tables(const std::vector<std::filesystem::path>& files, const options& o) {
  std::map<std::int64_t, std::vector<strata::report::trace_summary>> by_rank;
  for (auto& part : strata::report::key_averages_of_files(files, averages_options(o), o.jobs)) {
    if (!part.rank)
      fmt::print(stderr, "strata-report: {} has no distributedInfo.rank: taken as rank 0, as HTA does\n",
                 part.path.string());
    by_rank[part.rank.value_or(0)].push_back(std::move(part));
  }
  bool first = true;
  for (const auto& [rank, parts] : by_rank) {
    std::vector<strata::averages> tables;
    std::vector<std::filesystem::path> paths;
    std::uint64_t skipped = 0;
    for (const auto& p : parts) {
      tables.push_back(p.table);
      paths.push_back(p.path);
      skipped += p.skipped;
    }
    const strata::averages avg = with_peaks(strata::merge_averages(tables), o);
    if (avg.rows.empty()) {
      fmt::print(stderr, "strata-report: rank {} ({}) holds no op events ({} trace events skipped)\n", rank,
                 names(paths), skipped);
      continue;
    }
    if (!first) out("\n");
    first = false;
    print_table(avg, o, fmt::format("rank {}: {}", rank, names(paths)));
  }
  return 0;
}

/// `strata-report convert DUMP -o TRACE`: argv after "convert".
int convert(int argc, char** argv) {
  std::optional<std::string> dump, output;
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      out(convert_usage);
      return 0;
    }
    if (arg == "-o" || arg == "--output") {
      if (i + 1 >= argc) throw usage_error{fmt::format("{} needs a file name", arg), convert_usage};
      output = argv[++i];
    } else if (arg.starts_with("--output=")) {
      output = std::string(arg.substr(9));
    } else if (arg.size() > 1 && arg.front() == '-') {
      throw usage_error{fmt::format("unknown option '{}' for convert", arg), convert_usage};
    } else if (dump) {
      throw usage_error{"convert takes one DUMP", convert_usage};
    } else {
      dump = std::string(arg);
    }
  }
  if (!dump) throw usage_error{"convert needs a DUMP", convert_usage};
  if (!output || output->empty()) throw usage_error{"convert needs -o TRACE.json", convert_usage};
  const auto d = strata::read_crash_dump_file(*dump);
  const strata::export_result r = strata::write_trace(d->data, *output);
  fmt::print(stderr, "strata-report: wrote {} ({} records from {} threads; signal {})\n", r.path,
             d->data.recorded(), d->data.host_threads(), d->signal);
  if (const std::string m = d->missing(); !m.empty())
    fmt::print(stderr, "strata-report: the dump leaves out {}\n", m);
  return 0;
}

/// `strata-report stacks TRACE... -o OUT [--metric M]`: argv after "stacks". Each file's
/// stacks (its tracks nest only within it), summed per line.
int stacks(int argc, char** argv) {
  std::vector<std::filesystem::path> traces;
  std::optional<std::string> output;
  std::string metric = "self_cpu_time_total";
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      out(stacks_usage);
      return 0;
    }
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw usage_error{fmt::format("{} needs a value", arg), stacks_usage};
      return argv[++i];
    };
    if (arg == "-o" || arg == "--output") {
      output = value();
    } else if (arg.starts_with("--output=")) {
      output = std::string(arg.substr(9));
    } else if (arg == "--metric") {
      metric = value();
    } else if (arg.starts_with("--metric=")) {
      metric = std::string(arg.substr(9));
    } else if (arg.size() > 1 && arg.front() == '-') {
      throw usage_error{fmt::format("unknown option '{}' for stacks", arg), stacks_usage};
    } else {
      traces.emplace_back(arg);
    }
  }
  if (traces.empty()) throw usage_error{"stacks needs a TRACE", stacks_usage};
  if (!output || output->empty()) throw usage_error{"stacks needs -o OUT.folded", stacks_usage};
  try {
    strata::stack_metric_named(metric);  // a bad metric fails before any trace is read
  } catch (const strata::error& e) {
    std::string_view m = e.what();
    if (m.starts_with("strata: ")) m.remove_prefix(8);
    throw usage_error{std::string(m), stacks_usage};
  }
  std::vector<strata::stack_line> all;
  std::vector<std::filesystem::path> files;
  for (const auto& t : traces) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(t, ec) && strata::is_crash_dump(t)) {
      const auto d = strata::read_crash_dump_file(t);
      const strata::collapsed_stacks s = strata::stacks(d->data, metric);
      all.insert(all.end(), s.lines.begin(), s.lines.end());
    } else {
      files.push_back(t);
    }
  }
  if (!files.empty()) {
    files = strata::report::trace_files(files);
    refuse_perfetto(files);
  }
  for (const auto& f : files) {
    const strata::report::saved_trace t = strata::report::read_trace(f);
    const strata::collapsed_stacks s = strata::stacks(std::span<const strata::op_event>(t.events), metric);
    all.insert(all.end(), s.lines.begin(), s.lines.end());
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const strata::stack_line& a, const strata::stack_line& b) { return a.stack < b.stack; });
  strata::collapsed_stacks merged;
  for (strata::stack_line& l : all) {
    if (!merged.lines.empty() && merged.lines.back().stack == l.stack)
      merged.lines.back().value_us += l.value_us;
    else
      merged.lines.push_back(std::move(l));
  }
  const strata::export_result r = strata::write_stacks(merged, *output);
  if (merged.lines.empty())
    fmt::print(stderr, "strata-report: wrote {}, empty: no {} in {}\n", r.path, metric, names(traces));
  return 0;
}

int run(const options& o) {
  // Crash dumps among the TRACEs: their sessions' tables, merged with the other files'.
  std::vector<std::filesystem::path> traces;
  std::vector<strata::averages> dump_tables;
  for (const auto& t : o.traces) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(t, ec) && strata::is_crash_dump(t)) {
      if (o.compare_with || o.per_file || o.per_rank || o.format != "table")
        throw strata::error("a crash dump takes neither --compare, --per-file, --per-rank nor --format; "
                          "convert it first (strata-report convert DUMP -o trace.json)");
      const auto d = strata::read_crash_dump_file(t);
      if (const std::string m = d->missing(); !m.empty())
        fmt::print(stderr, "strata-report: {} leaves out {}\n", t.string(), m);
      dump_tables.push_back(strata::key_averages(
          d->data, {.group_by_input_shape = o.group_by_input_shape}));
    } else {
      traces.push_back(t);
    }
  }
  if (!dump_tables.empty()) {
    if (!traces.empty()) {
      const std::vector<std::filesystem::path> files = strata::report::trace_files(traces);
      refuse_perfetto(files);
      dump_tables.push_back(averages_of(files, o));
    }
    const strata::averages avg = strata::merge_averages(dump_tables);
    if (avg.rows.empty())
      fmt::print(stderr, "strata-report: the crash dump holds no op events\n");
    else
      print_table(avg, o, "");
    return 0;
  }
  const std::vector<std::filesystem::path> files = strata::report::trace_files(o.traces);
  refuse_perfetto(files);

  if (o.compare_with) {
    const std::vector<std::filesystem::path> other = strata::report::trace_files(std::vector{std::filesystem::path(*o.compare_with)});
    refuse_perfetto(other);
    const strata::comparison diff = strata::compare(averages_of(files, o), averages_of(other, o));
    if (o.format == "csv") {
      out(diff.to_csv());
    } else if (o.format == "json") {
      out(diff.to_json());
    } else {
      out(fmt::format("A: {}\nB: {}\n", names(files), names(other)));
      out(diff.table({.row_limit = o.row_limit.value_or(-1)}));
    }
    return 0;
  }

  if (o.per_file) {
    const strata::key_averages_options ka = averages_options(o);
    bool first = true;
    for (const auto& part : strata::report::key_averages_of_files(files, ka, o.jobs)) {
      if (part.table.rows.empty()) {
        fmt::print(stderr, "strata-report: {} holds no op events ({} trace events skipped)\n",
                   part.path.string(), part.skipped);
        continue;
      }
      if (!first) out("\n");
      first = false;
      print_table(with_peaks(part.table, o), o, part.path.string());
    }
    return 0;
  }

  if (o.per_rank) return per_rank_tables(files, o);

  std::uint64_t skipped = 0;
  const strata::averages avg = averages_of(files, o, &skipped);
  if (o.format == "csv") {
    out(avg.to_csv());
  } else if (o.format == "json") {
    out(avg.to_json());
  } else if (avg.rows.empty()) {
    fmt::print(stderr, "strata-report: {} {} no op events ({} trace events skipped)\n", names(files),
               files.size() == 1 ? "holds" : "hold", skipped);
  } else {
    // Several files: say which, so a combined table is never mistaken for one trace's.
    const std::string header =
        files.size() == 1 ? std::string() : fmt::format("{} traces: {}", files.size(), names(files));
    print_table(avg, o, header);
  }
  return 0;
}

}  // namespace

// strata-report reads traces: STRATA_PROFILE=1 exported in a shell must not have it write its
// own trace over the one it is reading (strata's implementation is linked in for its tables).
extern "C" const bool strata_ignore_environment = true;

namespace {

// Reading a trace allocates and frees large buffers (a piece's parsed events, a thread's logs)
// again and again. glibc serves each of 128 KiB or more with a fresh mmap and unmaps it when it
// is freed, and gives the top of the heap back past 128 KiB free: every reuse faults its pages in
// anew, which on a virtual machine costs 10-15 us a 4 KiB page (an 80 MB trace: 26,000 faults,
// 0.2 s of system time in 0.52 s). Kept instead, freed memory is reused as it is (16,500 faults,
// 0.39 s). What the process holds at its peak is unchanged: the same buffers, only not returned
// between uses.
void keep_freed_memory() noexcept {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: buffers below it come from the heap
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  try {
    options o;
    try {
      if (argc > 1 && std::string_view(argv[1]) == "convert") return convert(argc, argv);
      if (argc > 1 && std::string_view(argv[1]) == "stacks") return stacks(argc, argv);
      if (argc > 1 && std::string_view(argv[1]) == "analyze") {
        try {
          return strata::report::analyze_command(argc, argv);
        } catch (const strata::report::analyze_usage_error& e) {
          throw usage_error{e.message, strata::report::analyze_usage};
        }
      }
      if (argc > 1 && std::string_view(argv[1]) == "html") {
        try {
          const std::vector<std::string_view> args(argv + 2, argv + argc);
          return strata::report::html_command(args);
        } catch (const strata::report::html_usage_error& e) {
          throw usage_error{e.message, strata::report::html_usage};
        }
      }
      if (argc > 1 && std::string_view(argv[1]) == "merge") {
        try {
          const std::vector<std::string_view> args(argv + 2, argv + argc);
          return strata::report::merge_command(args);
        } catch (const strata::report::merge_usage_error& e) {
          throw usage_error{e.message, strata::report::merge_usage};
        }
      }
      o = parse(argc, argv);
    } catch (const usage_error& e) {
      fmt::print(stderr, "strata-report: {}\n{}", e.message, e.usage_text);
      return 2;
    }
    if (o.help) {
      out(usage);
      out("\n");
      out(help);
      return 0;
    }
    return run(o);
  } catch (const strata::error& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "strata-report: {}\n", e.what());
    return 1;
  }
}
