// strata-report: key_averages() of a saved trace.json (strata's or torch.profiler's), printed
// as torch.profiler's table, as CSV or as JSON; or two traces compared (docs/key-averages.md).
//
// Exit codes: 0 done, 1 a trace could not be read, 2 bad usage.
#include <charconv>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#define STRATA_IMPLEMENTATION  // strata-report is one file: strata's implementation goes here
#include "strata/profiler.hpp"
#include "strata/analysis/compare.hpp"
#include "strata/analysis/key_averages.hpp"
#include "strata/analysis/trace_reader.hpp"
#include "strata/core/error.hpp"

namespace {

constexpr std::string_view usage =
    "usage: strata-report TRACE [--sort-by KEY] [--row-limit N] [--group-by-input-shape]\n"
    "                           [--top-level-only] [--format table|csv|json] [--compare OTHER]\n"
    "       strata-report --help\n";

constexpr std::string_view help =
    "Prints torch.profiler's key_averages() table of a saved Chrome trace JSON: one written by\n"
    "strata, or a torch.profiler (Kineto) trace.\n"
    "\n"
    "  --sort-by KEY           sort the table's rows, largest first: self_cpu_time_total,\n"
    "                          cpu_time_total, cpu_time, self_device_time_total,\n"
    "                          device_time_total, device_time, count (torch's keys; cuda,\n"
    "                          xpu, privateuse1 and neuron mean device)\n"
    "  --row-limit N           print at most N rows (default 100; negative: all)\n"
    "  --group-by-input-shape  one row per name and input shapes (args \"Input Dims\")\n"
    "  --top-level-only        only the rows of ops that have no parent\n"
    "  --format FORMAT         table (default), csv or json; csv and json hold every row in\n"
    "                          first-seen order, so they take no --sort-by, --row-limit or\n"
    "                          --top-level-only\n"
    "  --compare OTHER         compare TRACE (A) with OTHER (B) per op, with the ratio B/A;\n"
    "                          takes --row-limit, --group-by-input-shape and --format\n"
    "  --help                  print this text\n"
    "\n"
    "Exit status: 0 done, 1 a trace could not be read, 2 bad usage.\n";

struct usage_error {
  std::string message;
};

struct options {
  std::string trace;
  std::optional<std::string> compare_with;
  std::optional<std::string> sort_by;
  std::optional<int> row_limit;
  bool group_by_input_shape = false;
  bool top_level_only = false;
  std::string format = "table";
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
    } else if (arg == "--format") {
      o.format = std::string(value());
      if (o.format != "table" && o.format != "csv" && o.format != "json")
        throw usage_error{fmt::format("--format is table, csv or json, not '{}'", o.format)};
    } else if (arg == "--compare") {
      o.compare_with = std::string(value());
    } else if (arg.size() > 1 && arg.front() == '-') {
      throw usage_error{fmt::format("unknown option '{}'", arg)};
    } else {
      positional.push_back(arg);
    }
  }
  if (o.help) return o;
  if (positional.empty()) throw usage_error{"no TRACE given"};
  if (positional.size() > 1)
    throw usage_error{fmt::format("one TRACE only, got '{}' too (use --compare OTHER for a pair)",
                                  positional[1])};
  o.trace = std::string(positional.front());
  if (o.sort_by) {
    if (o.compare_with) throw usage_error{"--sort-by does not apply to --compare"};
    try {
      // The table's own key check, so a bad key fails before any trace is read.
      static_cast<void>(strata::detail::sort_value(strata::average_row{}, *o.sort_by));
    } catch (const strata::error& e) {
      std::string_view m = e.what();
      if (m.starts_with("strata: ")) m.remove_prefix(8);
      throw usage_error{std::string(m)};
    }
  }
  if (o.top_level_only && o.compare_with) throw usage_error{"--top-level-only does not apply to --compare"};
  if (o.format != "table") {
    if (o.sort_by) throw usage_error{"--sort-by applies to --format table only"};
    if (o.top_level_only) throw usage_error{"--top-level-only applies to --format table only"};
    if (o.row_limit) throw usage_error{"--row-limit applies to --format table only"};
  }
  return o;
}

void out(std::string_view s) { std::fwrite(s.data(), 1, s.size(), stdout); }

int run(const options& o) {
  const strata::key_averages_options ka{.group_by_input_shape = o.group_by_input_shape};
  const strata::saved_trace a = strata::read_trace(std::filesystem::path(o.trace));
  const strata::averages avg_a = strata::key_averages(a, ka);

  if (o.compare_with) {
    const strata::saved_trace b = strata::read_trace(std::filesystem::path(*o.compare_with));
    const strata::comparison diff = strata::compare(avg_a, strata::key_averages(b, ka));
    if (o.format == "csv") {
      out(diff.to_csv());
    } else if (o.format == "json") {
      out(diff.to_json());
    } else {
      out(fmt::format("A: {}\nB: {}\n", o.trace, *o.compare_with));
      out(diff.table({.row_limit = o.row_limit.value_or(-1)}));
    }
    return 0;
  }

  if (o.format == "csv") {
    out(avg_a.to_csv());
  } else if (o.format == "json") {
    out(avg_a.to_json());
  } else if (avg_a.rows.empty()) {
    fmt::print(stderr, "strata-report: {} holds no op events ({} trace events skipped)\n", o.trace,
               a.skipped);
  } else {
    out(avg_a.table({.sort_by = o.sort_by ? std::string_view(*o.sort_by) : std::string_view(),
                     .row_limit = o.row_limit.value_or(100),
                     .top_level_events_only = o.top_level_only}));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    options o;
    try {
      o = parse(argc, argv);
    } catch (const usage_error& e) {
      fmt::print(stderr, "strata-report: {}\n{}", e.message, usage);
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
