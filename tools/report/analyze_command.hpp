// tools/report/analyze_command.hpp: `strata-report analyze`, the job analyses of
// strata/analysis/job_analysis.hpp over saved rank traces: each file read and analysed on its
// own (a map over up to --jobs files at once), then the ranks checked against each other and
// their collectives reduced into stragglers. Its JSON output holds each rank's whole result, so
// ranks analysed separately are combined with --combine into the same report.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "strata/analysis/job_analysis.hpp"
#include "strata/error.hpp"
#include "report/job_trace.hpp"
#include "report/trace_set.hpp"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((no_sanitize("pointer-overflow"))), apply_to = function)
#endif
#include <rapidjson/document.h>
#if defined(__clang__)
#pragma clang attribute pop
#endif

namespace strata {
inline namespace v1 {
namespace report {

inline constexpr std::string_view analyze_usage =
    "usage: strata-report analyze TRACE... [--format table|json|csv] [--jobs N]\n"
    "                             [--kernel-wait-us US] [--straggler-us US] [--include-last-step]\n"
    "                             [--hta-rounding]\n"
    "       strata-report analyze --combine PART.json... [--format table|json|csv] [--straggler-us US]\n"
    "  the analyses of a distributed job's rank traces (one file per rank; a directory stands\n"
    "  for its *.json and *.json.gz): temporal breakdown, idle time per device queue,\n"
    "  communication/computation overlap, kernel launch statistics and stragglers\n"
    "  (docs/distributed.md). --format json writes each rank's whole result: parts made\n"
    "  separately (one job per rank) are combined by --combine into the job's report.\n"
    "  --kernel-wait-us US     a gap between kernels shorter than this is kernel wait (default 30)\n"
    "  --straggler-us US       a rank whose collectives start later than their groups' median by\n"
    "                          more than this in a step is a straggler (default 100)\n"
    "  --include-last-step     keep the kernels launched in the last ProfilerStep (left out by\n"
    "                          default, as HTA does)\n"
    "  --hta-rounding          round every span inward to whole microseconds first, as HTA\n"
    "                          does when it reads a trace with nanosecond times\n"
    "  --jobs N                read up to N traces at once (default 2)\n";

/// A bad command line, said with analyze's usage.
struct analyze_usage_error {
  std::string message;
};

struct analyze_options {
  std::vector<std::filesystem::path> inputs;
  bool combine = false;
  std::string format = "table";
  unsigned jobs = 2;
  analysis_options analysis = {};
  bool straggler_given = false;
  bool help = false;
};

namespace detail {

inline double parse_microseconds(std::string_view flag, std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !(v >= 0) || v > 1e12)
    throw analyze_usage_error{fmt::format("{} needs a number of microseconds, not '{}'", flag, text)};
  return v;
}

inline std::int64_t us_to_ns(double us) { return static_cast<std::int64_t>(us * 1000.0 + 0.5); }

/// argv after "analyze".
inline analyze_options parse_analyze(int argc, char** argv) {
  analyze_options o;
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::optional<std::string_view> inline_value;
    if (arg.starts_with("--"))
      if (const auto eq = arg.find('='); eq != std::string_view::npos) inline_value = arg.substr(eq + 1), arg = arg.substr(0, eq);
    const auto value = [&]() -> std::string_view {
      if (inline_value) return *inline_value;
      if (i + 1 >= argc) throw analyze_usage_error{fmt::format("{} needs a value", arg)};
      return argv[++i];
    };
    const auto no_value = [&] {
      if (inline_value) throw analyze_usage_error{fmt::format("{} takes no value", arg)};
    };
    if (arg == "--help" || arg == "-h") {
      no_value();
      o.help = true;
    } else if (arg == "--combine") {
      no_value();
      o.combine = true;
    } else if (arg == "--format") {
      o.format = std::string(value());
      if (o.format != "table" && o.format != "csv" && o.format != "json")
        throw analyze_usage_error{fmt::format("--format is table, csv or json, not '{}'", o.format)};
    } else if (arg == "--jobs") {
      const std::string_view text = value();
      int n = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size() || n < 1)
        throw analyze_usage_error{fmt::format("--jobs needs a whole number of at least 1, not '{}'", text)};
      o.jobs = static_cast<unsigned>(n);
    } else if (arg == "--kernel-wait-us") {
      o.analysis.kernel_wait_ns = us_to_ns(parse_microseconds(arg, value()));
    } else if (arg == "--straggler-us") {
      o.analysis.straggler_ns = us_to_ns(parse_microseconds(arg, value()));
      o.straggler_given = true;
    } else if (arg == "--include-last-step") {
      no_value();
      o.analysis.include_last_step = true;
    } else if (arg == "--hta-rounding") {
      no_value();
      o.analysis.hta_rounding = true;
    } else if (arg.size() > 1 && arg.front() == '-') {
      throw analyze_usage_error{fmt::format("unknown option '{}' for analyze", arg)};
    } else {
      o.inputs.emplace_back(arg);
    }
  }
  if (o.help) return o;
  if (o.inputs.empty()) throw analyze_usage_error{o.combine ? "--combine needs a PART.json" : "analyze needs a TRACE"};
  return o;
}

// --- JSON out and back in --------------------------------------------------------------------

template <class... Args>
void add_to(fmt::memory_buffer& b, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(b), format, std::forward<Args>(args)...);
}

/// The length of the valid UTF-8 sequence at the start of `s`, or 0.
inline std::size_t utf8_length(std::string_view s) noexcept {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || n > s.size() || (n == 2 && c < 0xc2) || (n == 4 && c > 0xf4)) return 0;
  for (std::size_t i = 1; i < n; ++i)
    if ((b(i) & 0xc0) != 0x80) return 0;
  if (n == 3 && ((c == 0xe0 && b(1) < 0xa0) || (c == 0xed && b(1) >= 0xa0))) return 0;  // overlong, surrogate
  if (n == 4 && ((c == 0xf0 && b(1) < 0x90) || (c == 0xf4 && b(1) >= 0x90))) return 0;  // overlong, > U+10FFFF
  return n;
}

/// `s` as a quoted JSON string: quotes, backslashes and control bytes escaped, each byte that is
/// not part of valid UTF-8 (a file name's, say) written as U+FFFD, so the part is always JSON.
inline void json_string(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  while (!s.empty()) {
    const auto c = static_cast<unsigned char>(s.front());
    const std::size_t n = utf8_length(s);
    if (n == 0) {
      out.append(std::string_view("\xef\xbf\xbd"));  // U+FFFD, as its UTF-8 bytes: read back, it writes the same
      s.remove_prefix(1);
      continue;
    }
    if (c == '"' || c == '\\') fmt::format_to(std::back_inserter(out), "\\{}", static_cast<char>(c));
    else if (c < 0x20 || c == 0x7f) fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
    else out.append(s.data(), s.data() + n);
    s.remove_prefix(n);
  }
  out.push_back('"');
}

inline std::string analysis_json(std::span<const rank_analysis> ranks, std::span<const straggler_row> stragglers,
                                 const analysis_options& opt) {
  fmt::memory_buffer b;
  add_to(b, "{{\"strata_analyze\":1,\"options\":{{\"kernel_wait_ns\":{},\"launch_outlier_ns\":{},\"delay_outlier_ns\":{},"
      "\"straggler_ns\":{},\"include_last_step\":{},\"hta_rounding\":{}}},\n\"ranks\":[",
      opt.kernel_wait_ns, opt.launch_outlier_ns, opt.delay_outlier_ns, opt.straggler_ns, opt.include_last_step,
      opt.hta_rounding);
  bool first_rank = true;
  for (const rank_analysis& r : ranks) {
    add_to(b, "{}\n{{\"rank\":{},\"world_size\":", first_rank ? "" : ",", r.rank);
    first_rank = false;
    if (r.world_size) add_to(b, "{}", *r.world_size);
    else add_to(b, "null");
    add_to(b, ",\"rank_assumed\":{},\"wall_clock\":{},\"source\":", r.rank_assumed, r.wall_clock);
    json_string(b, r.source);
    add_to(b, ",\"format\":");
    json_string(b, r.format);
    const temporal_breakdown& t = r.temporal;
    add_to(b, ",\"kernels\":{},\n \"temporal\":{{\"span_ns\":{},\"idle_ns\":{},\"compute_ns\":{},\"non_compute_ns\":{},"
        "\"idle_pct\":{:.4f},\"compute_pct\":{:.4f},\"non_compute_pct\":{:.4f}}},\n",
        r.kernels, t.span_ns, t.idle_ns, t.compute_ns, t.non_compute_ns, t.pct(t.idle_ns), t.pct(t.compute_ns),
        t.pct(t.non_compute_ns));
    add_to(b, " \"overlap\":{{\"communication_ns\":{},\"overlap_ns\":{},\"overlap_pct\":{:.4f}}},\n \"queues\":[",
        r.communication_ns, r.overlap_ns, r.overlap_pct());
    for (std::size_t i = 0; i < r.queues.size(); ++i) {
      const queue_idle& q = r.queues[i];
      add_to(b, "{}{{\"queue\":", i == 0 ? "" : ",");
      json_string(b, q.queue);
      add_to(b, ",\"kernels\":{},\"idle_ns\":{},\"host_wait_ns\":{},\"kernel_wait_ns\":{},\"other_ns\":{}}}", q.kernels,
          q.idle_ns(), q.host_wait_ns, q.kernel_wait_ns, q.other_ns);
    }
    const launch_statistics& l = r.launch;
    add_to(b, "],\n \"launch\":{{\"kernels\":{},\"launch_ns_total\":{},\"device_ns_total\":{},\"delay_ns_total\":{},"
        "\"launch_ns_median\":{},\"launch_ns_max\":{},\"delay_ns_median\":{},\"delay_ns_max\":{},"
        "\"launch_outliers\":{},\"delay_outliers\":{},\"short_kernels\":{}}},\n \"collectives\":[",
        l.kernels, l.launch_ns_total, l.device_ns_total, l.delay_ns_total, l.launch_ns_median, l.launch_ns_max,
        l.delay_ns_median, l.delay_ns_max, l.launch_outliers, l.delay_outliers, l.short_kernels);
    for (std::size_t i = 0; i < r.collectives.size(); ++i) {
      const collective_start& c = r.collectives[i];
      add_to(b, "{}{{\"group\":", i == 0 ? "" : ",");
      json_string(b, c.group);
      add_to(b, ",\"name\":");
      json_string(b, c.name);
      add_to(b, ",\"seq\":{},\"seq_given\":{},\"step\":{},\"start_ns\":{},\"group_ranks\":[{}]}}", c.seq,
             c.seq_given, c.step, c.start_ns, fmt::join(c.group_ranks, ","));
    }
    add_to(b, "]}}");
  }
  add_to(b, "],\n\"stragglers\":[");
  for (std::size_t i = 0; i < stragglers.size(); ++i) {
    const straggler_row& s = stragglers[i];
    add_to(b, "{}\n{{\"step\":{},\"rank\":{},\"collectives\":{},\"median_late_ns\":{},\"max_late_ns\":{},\"straggler\":{}}}",
        i == 0 ? "" : ",", s.step, s.rank, s.collectives, s.median_late_ns, s.max_late_ns, s.straggler);
  }
  add_to(b, "]}}\n");
  return fmt::to_string(b);
}

/// A JSON member read back, or an error naming the part and the member.
class part_reader {
 public:
  explicit part_reader(std::string source) : source_(std::move(source)) {}

  const rapidjson::Value& member(const rapidjson::Value& obj, const char* name) const {
    if (!obj.IsObject() || !obj.HasMember(name)) fail(std::string("has no \"") + name + "\"");
    return obj[name];
  }
  std::int64_t integer(const rapidjson::Value& obj, const char* name) const {
    const rapidjson::Value& v = member(obj, name);
    if (!v.IsInt64()) fail(std::string("\"") + name + "\" is not a whole number");
    return v.GetInt64();
  }
  std::uint64_t count(const rapidjson::Value& obj, const char* name) const {
    const rapidjson::Value& v = member(obj, name);
    if (!v.IsUint64()) fail(std::string("\"") + name + "\" is not a count");
    return v.GetUint64();
  }
  std::string text(const rapidjson::Value& obj, const char* name) const {
    const rapidjson::Value& v = member(obj, name);
    if (!v.IsString()) fail(std::string("\"") + name + "\" is not a string");
    return std::string(v.GetString(), v.GetStringLength());
  }
  bool flag(const rapidjson::Value& obj, const char* name) const {
    const rapidjson::Value& v = member(obj, name);
    if (!v.IsBool()) fail(std::string("\"") + name + "\" is not true or false");
    return v.GetBool();
  }
  const rapidjson::Value& array(const rapidjson::Value& obj, const char* name) const {
    const rapidjson::Value& v = member(obj, name);
    if (!v.IsArray()) fail(std::string("\"") + name + "\" is not an array");
    return v;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw error(source_ + " is not a part written by strata-report analyze --format json: it " + what);
  }

 private:
  std::string source_;
};

/// The ranks and options of one part.
inline std::vector<rank_analysis> read_part(const std::filesystem::path& path, analysis_options& opt) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("cannot read part '" + path.string() + "'");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const part_reader p("'" + path.string() + "'");
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseValidateEncodingFlag>(text.data(), text.size());
  if (doc.HasParseError()) p.fail("is not valid JSON");
  if (!doc.IsObject() || !doc.HasMember("strata_analyze")) p.fail("has no \"strata_analyze\"");
  const rapidjson::Value& o = p.member(doc, "options");
  opt.kernel_wait_ns = p.integer(o, "kernel_wait_ns");
  opt.launch_outlier_ns = p.integer(o, "launch_outlier_ns");
  opt.delay_outlier_ns = p.integer(o, "delay_outlier_ns");
  opt.straggler_ns = p.integer(o, "straggler_ns");
  opt.include_last_step = p.flag(o, "include_last_step");
  opt.hta_rounding = p.flag(o, "hta_rounding");
  std::vector<rank_analysis> out;
  for (const rapidjson::Value& r : p.array(doc, "ranks").GetArray()) {
    rank_analysis a;
    a.rank = p.integer(r, "rank");
    if (!p.member(r, "world_size").IsNull()) a.world_size = p.integer(r, "world_size");
    a.rank_assumed = p.flag(r, "rank_assumed");
    a.wall_clock = p.flag(r, "wall_clock");
    a.source = p.text(r, "source");
    a.format = p.text(r, "format");
    a.kernels = p.count(r, "kernels");
    const rapidjson::Value& t = p.member(r, "temporal");
    a.temporal = {p.integer(t, "span_ns"), p.integer(t, "idle_ns"), p.integer(t, "compute_ns"), p.integer(t, "non_compute_ns")};
    const rapidjson::Value& ov = p.member(r, "overlap");
    a.communication_ns = p.integer(ov, "communication_ns");
    a.overlap_ns = p.integer(ov, "overlap_ns");
    for (const rapidjson::Value& q : p.array(r, "queues").GetArray())
      a.queues.push_back({p.text(q, "queue"), p.count(q, "kernels"), p.integer(q, "host_wait_ns"),
                          p.integer(q, "kernel_wait_ns"), p.integer(q, "other_ns")});
    const rapidjson::Value& l = p.member(r, "launch");
    a.launch = {p.count(l, "kernels"), p.integer(l, "launch_ns_total"), p.integer(l, "device_ns_total"),
                p.integer(l, "delay_ns_total"), p.integer(l, "launch_ns_max"), p.integer(l, "delay_ns_max"),
                p.integer(l, "launch_ns_median"), p.integer(l, "delay_ns_median"), p.count(l, "launch_outliers"),
                p.count(l, "delay_outliers"), p.count(l, "short_kernels")};
    for (const rapidjson::Value& c : p.array(r, "collectives").GetArray()) {
      collective_start one{p.text(c, "group"), p.text(c, "name"), p.integer(c, "seq"), p.integer(c, "step"),
                           p.integer(c, "start_ns"), p.flag(c, "seq_given")};
      for (const rapidjson::Value& g : p.array(c, "group_ranks").GetArray()) {
        if (!g.IsInt64()) p.fail("has a \"group_ranks\" entry that is not a whole number");
        one.group_ranks.push_back(g.GetInt64());
      }
      a.collectives.push_back(std::move(one));
    }
    out.push_back(std::move(a));
  }
  return out;
}

// --- table and CSV ---------------------------------------------------------------------------

inline std::string us(std::int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1000.0); }
inline std::string pct(double v) { return fmt::format("{:.2f}%", v); }

/// A name as one table cell: control bytes (a newline among them) become '?', so a row stays one line.
inline std::string cell(std::string_view name) {
  std::string out(name);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

/// Rows of cells printed as aligned columns (the first left-aligned, the rest right-aligned).
inline void print_columns(fmt::memory_buffer& b, const std::vector<std::vector<std::string>>& rows) {
  if (rows.empty()) return;
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (i > 0) line += "  ";
      const std::string pad(width[i] - std::min(width[i], r[i].size()), ' ');
      line += i == 0 ? r[i] + pad : pad + r[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    fmt::format_to(std::back_inserter(b), "{}\n", line);
  }
}

inline std::string analysis_table(std::span<const rank_analysis> ranks, std::span<const straggler_row> stragglers,
                                  const analysis_options& opt, bool clocks_aligned = true) {
  fmt::memory_buffer b;
  std::optional<std::int64_t> world;
  for (const rank_analysis& r : ranks)
    if (r.world_size) world = r.world_size;
  add_to(b, "{} rank{}{}\n", ranks.size(), ranks.size() == 1 ? "" : "s",
      world ? fmt::format(" of a world of {}", *world) : std::string());
  for (const rank_analysis& r : ranks) add_to(b, "  rank {}: {} ({})\n", r.rank, cell(r.source), r.format);

  add_to(b, "\nTemporal breakdown (% of the kernel span)\n");
  std::vector<std::vector<std::string>> rows{{"rank", "kernels", "span (us)", "idle (us)", "idle", "compute (us)",
                                              "compute", "non-compute (us)", "non-compute"}};
  for (const rank_analysis& r : ranks) {
    const temporal_breakdown& t = r.temporal;
    rows.push_back({std::to_string(r.rank), std::to_string(r.kernels), us(t.span_ns), us(t.idle_ns), pct(t.pct(t.idle_ns)),
                    us(t.compute_ns), pct(t.pct(t.compute_ns)), us(t.non_compute_ns), pct(t.pct(t.non_compute_ns))});
  }
  print_columns(b, rows);

  add_to(b, "\nCommunication/computation overlap (% of communication time)\n");
  rows = {{"rank", "communication (us)", "overlapped (us)", "overlap"}};
  for (const rank_analysis& r : ranks)
    rows.push_back({std::to_string(r.rank), us(r.communication_ns), us(r.overlap_ns), pct(r.overlap_pct())});
  print_columns(b, rows);

  add_to(b, "\nIdle time per device queue (kernel wait: gaps under {} us)\n", us(opt.kernel_wait_ns));
  rows = {{"rank", "queue", "kernels", "idle (us)", "host wait (us)", "host wait", "kernel wait (us)", "kernel wait",
           "other (us)", "other"}};
  for (const rank_analysis& r : ranks)
    for (const queue_idle& q : r.queues) {
      const auto share = [&](std::int64_t ns) {
        return pct(q.idle_ns() > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(q.idle_ns()) : 0.0);
      };
      rows.push_back({std::to_string(r.rank), cell(q.queue), std::to_string(q.kernels), us(q.idle_ns()), us(q.host_wait_ns),
                      share(q.host_wait_ns), us(q.kernel_wait_ns), share(q.kernel_wait_ns), us(q.other_ns),
                      share(q.other_ns)});
    }
  print_columns(b, rows);

  add_to(b, "\nKernel launches (outliers: launch call over {} us, launch delay over {} us)\n", us(opt.launch_outlier_ns),
      us(opt.delay_outlier_ns));
  rows = {{"rank", "kernels", "launch mean (us)", "launch median", "launch max", "device mean (us)", "delay mean (us)",
           "delay median", "delay max", "launch outliers", "delay outliers", "short kernels"}};
  for (const rank_analysis& r : ranks) {
    const launch_statistics& l = r.launch;
    const auto mean = [&](std::int64_t total) { return l.kernels > 0 ? us(total / static_cast<std::int64_t>(l.kernels)) : us(0); };
    rows.push_back({std::to_string(r.rank), std::to_string(l.kernels), mean(l.launch_ns_total), us(l.launch_ns_median),
                    us(l.launch_ns_max), mean(l.device_ns_total), mean(l.delay_ns_total), us(l.delay_ns_median),
                    us(l.delay_ns_max), std::to_string(l.launch_outliers), std::to_string(l.delay_outliers),
                    std::to_string(l.short_kernels)});
  }
  print_columns(b, rows);

  add_to(b, "\nStragglers (collective starts against their group's median; straggler: median over {} us)\n",
      us(opt.straggler_ns));
  if (!clocks_aligned) {
    add_to(b, "not compared: the ranks' clocks cannot be aligned (some traces have no baseTimeNanoseconds)\n");
  } else if (stragglers.empty()) {
    add_to(b, "no collective seen on two ranks\n");
  } else {
    rows = {{"step", "rank", "collectives", "median late (us)", "max late (us)", "straggler"}};
    for (const straggler_row& s : stragglers)
      rows.push_back({s.step < 0 ? std::string("-") : std::to_string(s.step), std::to_string(s.rank),
                      std::to_string(s.collectives), us(s.median_late_ns), us(s.max_late_ns), s.straggler ? "yes" : "no"});
    print_columns(b, rows);
  }
  return fmt::to_string(b);
}

/// One line per figure: analysis, rank, queue or step, figure, value.
inline std::string analysis_csv(std::span<const rank_analysis> ranks, std::span<const straggler_row> stragglers) {
  fmt::memory_buffer b;
  fmt::format_to(std::back_inserter(b), "analysis,rank,queue,step,figure,value\n");
  const auto line = [&](std::string_view analysis, std::int64_t rank, std::string_view queue, std::string_view step,
                        std::string_view figure, const std::string& value) {
    fmt::format_to(std::back_inserter(b), "{},{},", analysis, rank);
    // A queue name is any text: quoted as CSV quotes (RFC 4180).
    std::string q(queue);
    if (q.find_first_of(",\"\n\r") != std::string::npos) {
      std::string quoted = "\"";
      for (char c : q) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
      q = quoted + "\"";
    }
    fmt::format_to(std::back_inserter(b), "{},{},{},{}\n", q, step, figure, value);
  };
  const auto n = [](auto v) { return fmt::format("{}", v); };
  const auto f = [](double v) { return fmt::format("{:.4f}", v); };
  for (const rank_analysis& r : ranks) {
    const temporal_breakdown& t = r.temporal;
    line("temporal", r.rank, "", "", "kernels", n(r.kernels));
    line("temporal", r.rank, "", "", "span_ns", n(t.span_ns));
    line("temporal", r.rank, "", "", "idle_ns", n(t.idle_ns));
    line("temporal", r.rank, "", "", "compute_ns", n(t.compute_ns));
    line("temporal", r.rank, "", "", "non_compute_ns", n(t.non_compute_ns));
    line("temporal", r.rank, "", "", "idle_pct", f(t.pct(t.idle_ns)));
    line("temporal", r.rank, "", "", "compute_pct", f(t.pct(t.compute_ns)));
    line("temporal", r.rank, "", "", "non_compute_pct", f(t.pct(t.non_compute_ns)));
    line("overlap", r.rank, "", "", "communication_ns", n(r.communication_ns));
    line("overlap", r.rank, "", "", "overlap_ns", n(r.overlap_ns));
    line("overlap", r.rank, "", "", "overlap_pct", f(r.overlap_pct()));
    for (const queue_idle& q : r.queues) {
      line("idle", r.rank, q.queue, "", "kernels", n(q.kernels));
      line("idle", r.rank, q.queue, "", "idle_ns", n(q.idle_ns()));
      line("idle", r.rank, q.queue, "", "host_wait_ns", n(q.host_wait_ns));
      line("idle", r.rank, q.queue, "", "kernel_wait_ns", n(q.kernel_wait_ns));
      line("idle", r.rank, q.queue, "", "other_ns", n(q.other_ns));
    }
    const launch_statistics& l = r.launch;
    line("launch", r.rank, "", "", "kernels", n(l.kernels));
    line("launch", r.rank, "", "", "launch_ns_total", n(l.launch_ns_total));
    line("launch", r.rank, "", "", "device_ns_total", n(l.device_ns_total));
    line("launch", r.rank, "", "", "delay_ns_total", n(l.delay_ns_total));
    line("launch", r.rank, "", "", "launch_ns_median", n(l.launch_ns_median));
    line("launch", r.rank, "", "", "launch_ns_max", n(l.launch_ns_max));
    line("launch", r.rank, "", "", "delay_ns_median", n(l.delay_ns_median));
    line("launch", r.rank, "", "", "delay_ns_max", n(l.delay_ns_max));
    line("launch", r.rank, "", "", "launch_outliers", n(l.launch_outliers));
    line("launch", r.rank, "", "", "delay_outliers", n(l.delay_outliers));
    line("launch", r.rank, "", "", "short_kernels", n(l.short_kernels));
  }
  for (const straggler_row& s : stragglers) {
    const std::string step = n(s.step);
    line("straggler", s.rank, "", step, "collectives", n(s.collectives));
    line("straggler", s.rank, "", step, "median_late_ns", n(s.median_late_ns));
    line("straggler", s.rank, "", step, "max_late_ns", n(s.max_late_ns));
    line("straggler", s.rank, "", step, "straggler", s.straggler ? "1" : "0");
  }
  return fmt::to_string(b);
}

}  // namespace detail

/// `strata-report analyze ...`: argv after "analyze". Returns the exit status; raises
/// analyze_usage_error for a bad command line and strata::error for a bad input.
inline int analyze_command(int argc, char** argv) {
  analyze_options o = detail::parse_analyze(argc, argv);
  if (o.help) {
    std::fwrite(analyze_usage.data(), 1, analyze_usage.size(), stdout);
    return 0;
  }
  std::vector<rank_analysis> ranks;
  analysis_options opt = o.analysis;
  if (o.combine) {
    if (o.analysis.kernel_wait_ns != analysis_options{}.kernel_wait_ns || o.analysis.include_last_step ||
        o.analysis.hta_rounding)
      throw analyze_usage_error{
          "--kernel-wait-us, --include-last-step and --hta-rounding apply when the traces are read, not to --combine"};
    bool first = true;
    for (const auto& path : o.inputs) {
      analysis_options part_opt;
      std::vector<rank_analysis> part = detail::read_part(path, part_opt);
      if (first) {
        opt = part_opt;
        first = false;
      } else if (part_opt.kernel_wait_ns != opt.kernel_wait_ns || part_opt.include_last_step != opt.include_last_step ||
                 part_opt.hta_rounding != opt.hta_rounding ||
                 part_opt.launch_outlier_ns != opt.launch_outlier_ns || part_opt.delay_outlier_ns != opt.delay_outlier_ns) {
        throw error(path.string() + " was analysed with other options than " + o.inputs.front().string() +
                    " (--kernel-wait-us, --include-last-step, --hta-rounding): analyze every rank the same way");
      }
      for (rank_analysis& r : part) ranks.push_back(std::move(r));
    }
    if (o.straggler_given) opt.straggler_ns = o.analysis.straggler_ns;
  } else {
    const std::vector<std::filesystem::path> files = trace_files(o.inputs);
    for (const auto& f : files) {
      const std::string name = f.filename().string();
      if (name.ends_with(".pftrace") || name.ends_with(".pftrace.gz"))
        throw error(f.string() + " is a Perfetto protobuf trace; analyze reads Chrome trace JSON "
                    "(write the session as JSON too: STRATA_FORMAT=json)");
    }
    ranks = detail::analyze_files(files, opt, o.jobs);
  }
  detail::check_job(ranks, "analyze");
  detail::report_unmatched(ranks);
  const bool aligned = detail::clocks_align(ranks, "analyze");
  const std::vector<straggler_row> stragglers = aligned ? stragglers_of(ranks, opt) : std::vector<straggler_row>{};
  std::string text = o.format == "json"  ? detail::analysis_json(ranks, stragglers, opt)
                     : o.format == "csv" ? detail::analysis_csv(ranks, stragglers)
                                         : detail::analysis_table(ranks, stragglers, opt, aligned);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace report
}  // namespace v1
}  // namespace strata
