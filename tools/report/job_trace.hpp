// tools/report/job_trace.hpp: a saved Chrome trace JSON (strata's or torch.profiler's Kineto
// trace, plain or gzip-compressed) read into the rank_model of strata/analysis/job_analysis.hpp,
// streamed through RapidJSON's SAX reader: only the device kernels, the host calls that carry a
// correlation id, the ProfilerStep spans and the track names are kept. Which events are which
// is in docs/distributed.md, "Reading a rank's trace". Then the rules that make several ranks'
// results one job (no rank twice, one world size, one clock), which `analyze` and `html` share.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "strata/analysis/job_analysis.hpp"
#include "strata/error.hpp"
#include "report/for_each_file.hpp"
#include "report/gzip_input.hpp"
#include "report/rapidjson_reader.hpp"
#include "report/trace_events.hpp"
#include "report/trace_input.hpp"
#include "report/trace_reader.hpp"

namespace strata {
inline namespace v1 {
namespace report {
namespace detail {

/// Kineto's device event categories (HTA's kernel categories); such an event needs args.stream.
inline bool kineto_device_category(std::string_view cat) noexcept {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "Memcpy" || cat == "gpu_memset" ||
         cat == "Memset" || cat == "mtia_ccp_events";
}

/// Host runtime calls that can carry a launch's correlation id.
inline bool runtime_category(std::string_view cat) noexcept {
  return cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime" || cat == "runtime";
}

/// The launch calls HTA's launch statistics count.
inline bool counted_launch_name(std::string_view name) noexcept {
  return name == "cudaLaunchKernel" || name == "cudaLaunchKernelExC" || name == "cudaMemcpyAsync" ||
         name == "cudaMemsetAsync" || name == "runFunction - job_prep_and_submit_for_execution";
}

/// strata's device cores are processes 2^24 + k (docs/trace-format.md).
inline constexpr std::int64_t device_pid_base = std::int64_t{1} << 24;

/// A trace's top-level `baseTimeNanoseconds` (its wall clock at `ts` 0) into `out`; the message
/// naming the trace (`source`) when it is not a whole number.
inline std::optional<std::string> read_base_time(std::string_view text, const std::string& source,
                                                 std::optional<std::int64_t>& out) {
  const auto v = parse_signed(text);
  if (!v) return "trace " + source + ": baseTimeNanoseconds is not a whole number: " + std::string(text);
  out = *v;
  return std::nullopt;
}

/// `distributedInfo.rank` or `.world_size` (`key`) into `out`; the message naming the trace when
/// it is not a count.
inline std::optional<std::string> read_rank_count(std::string_view key, std::string_view text, const std::string& source,
                                                  std::optional<std::int64_t>& out) {
  const auto v = parse_signed(text);
  if (!v || *v < 0)
    return "trace " + source + ": distributedInfo." + std::string(key) + " is not a count: " + std::string(text);
  out = *v;
  return std::nullopt;
}

/// The SAX handler: keeps what the job analyses need of each event as the parser passes it.
class job_trace_builder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, job_trace_builder> {
 public:
  explicit job_trace_builder(std::string source) { out_.source = std::move(source); }

  bool Null() { return scalar("", false); }
  bool Bool(bool b) { return scalar(b ? "true" : "false", false); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) { return scalar({s, n}, false); }
  bool String(const char* s, rapidjson::SizeType n, bool) { return scalar({s, n}, true); }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    key_.assign(s, n);
    return true;
  }
  bool StartObject() { return open(false); }
  bool StartArray() { return open(true); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool EndArray(rapidjson::SizeType) { return close(); }

  const std::string& failure() const noexcept { return failure_; }
  bool too_deep() const noexcept { return too_deep_; }

  /// The model, once the parser has finished without an error.
  rank_model finish() {
    if (!events_found_) throw error("trace " + out_.source + " has no traceEvents array: not a Chrome trace JSON");
    out_.format = strata_seen_ ? "strata" : kineto_seen_ ? "kineto" : "chrome";
    // Queue names: a CUDA stream by its number; a strata track by its core's and its own names.
    out_.queues.reserve(queue_keys_.size());
    for (const auto& [pid, tid, stream] : queue_keys_) {
      if (stream) {
        out_.queues.push_back({"stream " + tid});
        continue;
      }
      const auto p = process_names_.find(pid);
      const auto t = thread_names_.find(pid + '\0' + tid);
      out_.queues.push_back({(p != process_names_.end() ? p->second : "pid " + pid) + " / " +
                             (t != thread_names_.end() ? t->second : "tid " + tid)});
    }
    return std::move(out_);
  }

 private:
  bool stop(std::string message) {
    failure_ = std::move(message);
    return false;
  }
  std::string where() const { return "trace " + out_.source + ", traceEvents[" + std::to_string(index_ - 1) + "]"; }

  bool scalar(std::string_view text, bool is_string) {
    if (depth_ == 1 && !root_array_) {
      if (key_ == "baseTimeNanoseconds") {
        if (auto m = read_base_time(text, out_.source, out_.base_time_ns)) return stop(std::move(*m));
      } else if (key_ == "schemaVersion") {
        kineto_seen_ = true;
      }
    } else if (depth_ == info_depth_) {
      if (key_ == "rank" || key_ == "world_size")
        if (auto m = read_rank_count(key_, text, out_.source, key_ == "rank" ? out_.rank : out_.world_size))
          return stop(std::move(*m));
    } else if (depth_ == other_depth_) {
      if (key_ == "strata_version") strata_seen_ = true;
    } else if (in_event_ && depth_ == event_depth_) {
      if (key_ == "ph") ph_.assign(text);
      else if (key_ == "cat") cat_.assign(text);
      else if (key_ == "name") name_.assign(text);
      else if (key_ == "pid") pid_.assign(text);
      else if (key_ == "tid") tid_.assign(text);
      else if (key_ == "ts") ts_.assign(text);
      else if (key_ == "dur") dur_.assign(text);
    } else if (in_event_ && depth_ == args_depth_) {
      if (key_ == "stream") stream_.assign(text);
      else if (key_ == "correlation" || key_ == "correlation_id") correlation_.assign(text);
      else if (key_ == "Collective name") collective_name_.assign(text), has_collective_ = true;
      else if (key_ == "Process Group Name") group_.assign(text);
      else if (key_ == "Seq") seq_.assign(text);
      else if (key_ == "Process Group Ranks") group_ranks_.assign(text);
      else if (key_ == "name") arg_name_.assign(text);  // a metadata event's name
    } else if (events_depth_ != 0 && depth_ == events_depth_) {
      ++index_;  // an event that is not an object
    }
    (void)is_string;
    return true;
  }

  bool open(bool array) {
    if (++depth_ > max_json_depth) {
      too_deep_ = true;
      return false;
    }
    if (depth_ == 1) {
      root_array_ = array;
      if (array) events_depth_ = 1, events_found_ = true;
    } else if (depth_ == 2 && !root_array_) {
      if (key_ == "traceEvents" && array && !events_found_) events_depth_ = 2, events_found_ = true;
      else if (key_ == "traceEvents" && !array) return stop("trace " + out_.source + ": traceEvents is not an array");
      else if (key_ == "distributedInfo" && !array) info_depth_ = 2;
      else if (key_ == "otherData" && !array) other_depth_ = 2;
      else if (key_ == "deviceProperties") kineto_seen_ = true;
    } else if (events_depth_ != 0 && depth_ == events_depth_ + 1) {
      ++index_;
      if (!array) begin_event();
    } else if (in_event_ && depth_ == event_depth_ + 1 && key_ == "args" && !array && !args_seen_) {
      args_depth_ = depth_;
      args_seen_ = true;
    }
    key_.clear();
    return true;
  }

  bool close() {
    bool ok = true;
    if (depth_ == args_depth_) args_depth_ = 0;
    else if (depth_ == info_depth_) info_depth_ = 0;
    else if (depth_ == other_depth_) other_depth_ = 0;
    else if (in_event_ && depth_ == event_depth_) in_event_ = false, ok = finish_event();
    else if (depth_ == events_depth_) events_depth_ = 0;
    --depth_;
    return ok;
  }

  void begin_event() {
    in_event_ = true;
    args_seen_ = false;
    has_collective_ = false;
    event_depth_ = depth_;
    for (std::string* s : {&ph_, &cat_, &name_, &pid_, &tid_, &ts_, &dur_, &stream_, &correlation_, &collective_name_,
                           &group_, &seq_, &arg_name_, &group_ranks_})
      s->clear();
  }

  bool finish_event() {
    if (ph_ == "M") {
      if (name_ == "process_name") process_names_[pid_] = arg_name_;
      else if (name_ == "thread_name") thread_names_[pid_ + '\0' + tid_] = arg_name_;
      return true;
    }
    if (ph_ != "X") return true;
    const bool kineto_device = kineto_device_category(cat_) && !stream_.empty();
    const bool strata_device = cat_ == "device";
    const bool runtime = runtime_category(cat_) && !correlation_.empty() && stream_.empty();
    const bool step = name_.starts_with("ProfilerStep#");
    if (!kineto_device && !strata_device && !runtime && !step) return true;
    if (kineto_device || cat_ == "kernel") kineto_seen_ = true;
    const auto ts = parse_us_as_ns(ts_);
    const auto dur = parse_us_as_ns(dur_);
    if (!ts || !dur || *dur < 0 || *ts > std::numeric_limits<std::int64_t>::max() - *dur)
      return stop(where() + ": ts or dur is missing or not a number of microseconds");
    const std::int64_t begin = *ts, end = *ts + *dur;
    const std::uint64_t correlation = parse_unsigned(correlation_).value_or(0);
    if (kineto_device || strata_device) {
      device_kernel k{.begin_ns = begin, .end_ns = end, .correlation_id = correlation};
      k.queue = queue_index(pid_, kineto_device ? stream_ : tid_, kineto_device);
      k.category = kernel_category_of(name_, has_collective_);
      if (k.category == kernel_category::communication) {
        collective_info c{.name = has_collective_ ? collective_name_ : name_, .group = group_};
        if (!seq_.empty()) c.seq = parse_signed(seq_).value_or(-1);
        c.group_ranks = rank_list(group_ranks_);
        k.collective = static_cast<std::int32_t>(out_.collectives.size());
        out_.collectives.push_back(std::move(c));
      }
      out_.kernels.push_back(k);
      return true;
    }
    if (runtime) {
      // strata's runtime calls on the host (a device core's tracks are above 2^24) are its
      // submissions; Kineto's counted launches are HTA's list.
      const auto pid = parse_signed(pid_);
      if (cat_ == "runtime" && pid && *pid >= device_pid_base) return true;
      out_.launches.push_back({.correlation_id = correlation, .begin_ns = begin, .end_ns = end,
                               .counted_launch = cat_ == "runtime" || counted_launch_name(name_)});
      return true;
    }
    const std::string_view digits = std::string_view(name_).substr(13);
    out_.steps.push_back({.step = parse_signed(digits).value_or(-1), .begin_ns = begin, .end_ns = end});
    return true;
  }

  /// Kineto's `Process Group Ranks`, a string like "[0, 1]": its whole numbers; nothing for a
  /// text that is not such a list.
  static std::vector<std::int64_t> rank_list(std::string_view text) {
    std::vector<std::int64_t> out;
    if (!text.starts_with('[') || !text.ends_with(']')) return out;
    text = text.substr(1, text.size() - 2);
    while (!text.empty()) {
      const std::size_t comma = text.find(',');
      std::string_view item = text.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      const auto v = parse_signed(item);
      if (!v || *v < 0) return {};
      out.push_back(*v);
      if (comma == std::string_view::npos) break;
      text.remove_prefix(comma + 1);
    }
    return out;
  }

  std::uint32_t queue_index(const std::string& pid, const std::string& id, bool stream) {
    // HTA keys Kineto's queues by stream alone; strata's by track.
    const auto key = std::make_tuple(stream ? std::string() : pid, id, stream);
    const auto [it, fresh] = queue_of_.try_emplace(key, static_cast<std::uint32_t>(queue_keys_.size()));
    if (fresh) queue_keys_.push_back(key);
    return it->second;
  }

  rank_model out_;
  std::string failure_;
  std::string key_;
  std::size_t depth_ = 0, events_depth_ = 0, event_depth_ = 0, args_depth_ = 0, info_depth_ = 0, other_depth_ = 0;
  std::size_t index_ = 0;
  bool root_array_ = false, events_found_ = false, in_event_ = false, args_seen_ = false, too_deep_ = false;
  bool strata_seen_ = false, kineto_seen_ = false, has_collective_ = false;
  std::string ph_, cat_, name_, pid_, tid_, ts_, dur_, stream_, correlation_, collective_name_, group_, seq_, arg_name_, group_ranks_;
  std::map<std::tuple<std::string, std::string, bool>, std::uint32_t> queue_of_;
  std::vector<std::tuple<std::string, std::string, bool>> queue_keys_;
  std::map<std::string, std::string> process_names_, thread_names_;
};

template <class Source>
rank_model parse_rank_model(Source& source, const std::string& name) {
  json_input<Source> in(source);
  job_trace_builder builder(name);
  rapidjson::Reader reader;
  constexpr unsigned flags = rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseValidateEncodingFlag;
  const rapidjson::ParseResult result = reader.Parse<flags>(in, builder);
  if (!source.failure().empty()) throw error("cannot read trace " + name + ": " + source.failure());
  if (builder.too_deep())
    throw error("trace " + name + " is not a trace: values nest more than " + std::to_string(max_json_depth) +
                " levels deep (line " + std::to_string(in.line()) + ")");
  if (!builder.failure().empty()) throw error(builder.failure());
  if (result.IsError())
    throw error("trace " + name + " is not valid JSON: line " + std::to_string(in.line()) + ": " +
                std::string(json_error_text(result.Code())));
  return builder.finish();
}

}  // namespace detail

/// Reads a Chrome trace JSON document held in memory into a rank_model.
inline rank_model read_rank_model_bytes(std::string_view json, const std::string& source = "<memory>") {
  detail::memory_source in(json);
  return detail::parse_rank_model(in, source);
}

/// Reads the trace at `path` (plain or gzip-compressed) into a rank_model. Raises
/// `strata::error` naming the file when it cannot be read or is not a Chrome trace JSON.
inline rank_model read_rank_model(const std::filesystem::path& path) {
  const std::string source = "'" + path.string() + "'";
  return detail::parse_trace_file(path, source, [&](auto open) {
    auto in = open();
    return detail::parse_rank_model(in, source);
  });
}

/// The traces of one job, one per rank, as `command` (analyze, merge) takes them: no rank twice,
/// one world size, every rank below it. Sorts them by rank. A trace without distributedInfo is
/// rank 0 (HTA's rule), said on stderr. `Rank` has `source` (the file), `rank`, `world_size`
/// (optional) and `rank_assumed`; raises `strata::error` naming the files.
template <class Rank>
void check_one_job(std::vector<Rank>& ranks, std::string_view command) {
  for (const Rank& r : ranks)
    if (r.rank_assumed)
      fmt::print(stderr, "strata-report: {} has no distributedInfo.rank: taken as rank 0, as HTA does\n", r.source);
  std::stable_sort(ranks.begin(), ranks.end(), [](const Rank& a, const Rank& b) { return a.rank < b.rank; });
  // Mixed jobs first: two jobs' traces in one directory also repeat ranks.
  const Rank* sized = nullptr;
  for (const Rank& r : ranks) {
    if (!r.world_size) continue;
    if (r.rank >= *r.world_size)
      throw error(fmt::format("{} is rank {} of a world of {}: distributedInfo is inconsistent",
                              r.source, r.rank, *r.world_size));
    if (sized != nullptr && *sized->world_size != *r.world_size)
      throw error(fmt::format(
          "{} (world size {}) and {} (world size {}) are ranks of different jobs: give strata-report {} "
          "one job's traces at a time",
          sized->source, *sized->world_size, r.source, *r.world_size, command));
    if (sized == nullptr) sized = &r;
  }
  for (std::size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i].rank == ranks[i - 1].rank)
      throw error(fmt::format(
          "{} and {} are both rank {}{}: {} takes one trace per rank of one job (one window of a "
          "schedule at a time)",
          ranks[i - 1].source, ranks[i].source, ranks[i].rank,
          ranks[i].rank_assumed || ranks[i - 1].rank_assumed ? " (a file without distributedInfo is rank 0)" : "",
          command));
}

// --- the ranks of one job (strata-report analyze and html) --------------------------------

namespace detail {

/// Reads and analyses every file, up to `threads` at once; each thread holds one trace's model
/// at a time. The first failure in the order given is raised.
inline std::vector<rank_analysis> analyze_files(std::span<const std::filesystem::path> files,
                                                const analysis_options& opt, unsigned threads) {
  return for_each_file<rank_analysis>(files, threads, [&](const std::filesystem::path& file) {
    rank_analysis r = analyze_rank(read_rank_model(file), opt);
    r.source = file.string();
    return r;
  });
}

/// The ranks of one job (check_one_job), sorted by rank; a rank without device kernels is said
/// on stderr.
inline void check_job(std::vector<rank_analysis>& ranks, std::string_view command) {
  check_one_job(ranks, command);
  for (const rank_analysis& r : ranks)
    if (r.kernels == 0) fmt::print(stderr, "strata-report: {} holds no device kernels: its figures are 0\n", r.source);
}

/// Collectives that some ranks of a group ran and others did not, said on stderr (the first
/// few, then how many): never a straggler figure that silently leaves a rank out.
inline void report_unmatched(std::span<const rank_analysis> ranks) {
  const std::vector<unmatched_collective> u = unmatched_collectives_of(ranks);
  constexpr std::size_t shown = 5;
  for (std::size_t i = 0; i < u.size() && i < shown; ++i)
    fmt::print(stderr,
               "strata-report: collective {} (group '{}', Seq {}) ran on rank{} {} but not on rank{} {}: it never "
               "ran there (the job hung, or those traces end before it)\n",
               u[i].name, u[i].group, u[i].seq, u[i].ran_on.size() == 1 ? "" : "s", fmt::join(u[i].ran_on, ", "),
               u[i].missing_on.size() == 1 ? "" : "s", fmt::join(u[i].missing_on, ", "));
  if (u.size() > shown)
    fmt::print(stderr, "strata-report: {} more collectives ran on only some of their group's ranks\n", u.size() - shown);
}

/// Whether the ranks' collective starts are on one clock: all on the wall clock
/// (baseTimeNanoseconds), or none (each trace's own, as HTA compares them). When some traces
/// have it and others not, stragglers are left out and stderr says which.
inline bool clocks_align(std::span<const rank_analysis> ranks, std::string_view command) {
  const rank_analysis* with = nullptr;
  const rank_analysis* without = nullptr;
  for (const rank_analysis& r : ranks) (r.wall_clock ? with : without) = &r;
  if (with == nullptr || without == nullptr) return true;
  fmt::print(stderr,
             "strata-report: {} has baseTimeNanoseconds and {} has none: their clocks cannot be aligned, so "
             "stragglers are left out; give {} traces that all carry it (or none)\n",
             with->source, without->source, command);
  return false;
}

}  // namespace detail

}  // namespace report
}  // namespace v1
}  // namespace strata
