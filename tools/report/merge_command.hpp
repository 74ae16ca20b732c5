// tools/report/merge_command.hpp: `strata-report merge`, a distributed job's rank traces written
// as one trace: one process group per rank, in rank order, the ranks' clocks aligned on
// baseTimeNanoseconds, their flow and correlation ids kept apart. Each file is read twice,
// streamed through RapidJSON's SAX reader: first for what it is (rank, clock, processes, largest
// id), then, once the ranks have been checked against each other, event by event into the
// output: Chrome trace JSON holding one event at a time, never a trace, or a Perfetto trace
// (job_perfetto.hpp) holding one rank's events (docs/distributed.md, "Merging the ranks into one
// timeline").
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/error.hpp"
#include "strata/export/trace_format.hpp"
#include "strata/export/write_trace.hpp"
#include "report/gzip_input.hpp"
#include "report/job_perfetto.hpp"
#include "report/job_trace.hpp"
#include "report/rapidjson_reader.hpp"
#include "report/trace_events.hpp"
#include "report/trace_input.hpp"
#include "report/trace_reader.hpp"
#include "report/trace_set.hpp"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((no_sanitize("pointer-overflow"))), apply_to = function)
#endif
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#if defined(__clang__)
#pragma clang attribute pop
#endif

namespace strata {
inline namespace v1 {
namespace report {

inline constexpr std::string_view merge_usage =
    "usage: strata-report merge TRACE... -o JOB.json|JOB.pftrace [--no-align]\n"
    "  one timeline of a distributed job's rank traces (one file per rank; a directory stands\n"
    "  for its *.json and *.json.gz), for Perfetto UI or chrome://tracing: each rank's\n"
    "  processes renumbered and named 'rank R: ...', ranks in order, their clocks aligned on\n"
    "  baseTimeNanoseconds, their flow and correlation ids kept apart (docs/distributed.md).\n"
    "  -o FILE     the merged trace: Chrome trace JSON (.json), or Perfetto's protobuf\n"
    "              (.pftrace, for Perfetto UI and trace_processor); .gz compresses either\n"
    "  --no-align  keep each trace's own clock (traces that lack baseTimeNanoseconds)\n";

/// A bad command line, said with merge's usage.
struct merge_usage_error {
  std::string message;
};

namespace detail {

/// One process (`pid`) of a rank's trace.
struct merge_process {
  std::string key;               ///< the pid as written: 'n' + a number's text, or 's' + a string
  std::uint64_t first_seen = 0;  ///< order of first appearance in the trace
  std::int64_t sort_index = 0;   ///< its process_sort_index (0 without one, as viewers take it)
  bool has_sort_index = false;
  bool named = false;            ///< a process_name event names it
  std::int64_t merged_pid = 0;   ///< its pid (and sort index) in the merged trace
};

/// One rank's trace, as the first pass found it, and how the second pass rewrites it.
struct merge_rank {
  std::filesystem::path path = {};
  std::string source = {};  ///< the file, in messages
  std::int64_t rank = 0;
  std::optional<std::int64_t> world_size = {};
  bool rank_assumed = false;  ///< no distributedInfo.rank: rank 0 (HTA's rule)
  std::optional<std::string> backend = {};
  std::optional<std::int64_t> base_time_ns = {};
  std::optional<std::string> display_time_unit = {};
  bool merged = false;  ///< distributedInfo.ranks: the output of a merge, not one rank's trace
  std::uint64_t events = 0;
  std::uint64_t largest_id = 0;
  std::vector<merge_process> processes = {};
  std::unordered_map<std::string, std::size_t> process_of = {};
  std::int64_t shift_ns = 0;      ///< added to every ts
  std::uint64_t id_offset = 0;    ///< added to every flow and correlation id
};

/// `ts`, a JSON number of microseconds, plus `shift_ns` nanoseconds as exact decimal text: no
/// double in between, so every digit of the trace survives. The result has the decimals `ts` had,
/// or as many as the shift needs if more ("5.000" + 1 ms is "1005.000", "10" + 500 ns "10.5").
/// Nothing for a text that is not a JSON number.
inline std::optional<std::string> shifted_us(std::string_view ts, std::int64_t shift_ns) {
  if (shift_ns == 0) return std::string(ts);
  constexpr std::int64_t most_decimals = 400;  // past a double's range: no trace writes more
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0;
  const bool negative = i < ts.size() && ts[i] == '-';
  if (negative) ++i;
  std::string digits;  // the value is ±digits × 10^-scale
  std::int64_t scale = 0;
  const std::size_t int_begin = i;
  for (; i < ts.size() && digit(ts[i]); ++i) digits += ts[i];
  if (i == int_begin) return std::nullopt;
  if (i < ts.size() && ts[i] == '.') {
    const std::size_t frac_begin = ++i;
    for (; i < ts.size() && digit(ts[i]); ++i) digits += ts[i];
    if (i == frac_begin) return std::nullopt;
    scale = static_cast<std::int64_t>(i - frac_begin);
  }
  if (i < ts.size() && (ts[i] == 'e' || ts[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < ts.size() && (ts[i] == '+' || ts[i] == '-')) exp_negative = ts[i++] == '-';
    const std::size_t exp_begin = i;
    std::int64_t exp = 0;
    for (; i < ts.size() && digit(ts[i]); ++i)
      if ((exp = exp * 10 + (ts[i] - '0')) > most_decimals) return std::nullopt;
    if (i == exp_begin) return std::nullopt;
    scale += exp_negative ? exp : -exp;
  }
  if (i != ts.size() || scale > most_decimals) return std::nullopt;
  if (scale < 0) {
    digits.append(static_cast<std::size_t>(-scale), '0');
    scale = 0;
  }
  // The shift in thousandths of a microsecond, less the zeros it does not need.
  const std::uint64_t magnitude = shift_ns < 0 ? 0 - static_cast<std::uint64_t>(shift_ns) : static_cast<std::uint64_t>(shift_ns);
  std::string shift = std::to_string(magnitude);
  std::int64_t shift_scale = 3;
  while (shift_scale > 0 && shift.back() == '0') shift.pop_back(), --shift_scale;
  const std::int64_t out_scale = std::max(scale, shift_scale);
  digits.append(static_cast<std::size_t>(out_scale - scale), '0');
  shift.append(static_cast<std::size_t>(out_scale - shift_scale), '0');

  const auto trim = [](std::string& s) {
    const std::size_t nz = s.find_first_not_of('0');
    s.erase(0, nz == std::string::npos ? s.size() - 1 : nz);
  };
  trim(digits);
  trim(shift);
  const auto less = [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  };
  const auto add = [](const std::string& a, const std::string& b) {
    std::string out;
    int carry = 0;
    for (std::size_t k = 0; k < std::max(a.size(), b.size()) || carry != 0; ++k) {
      const int s = carry + (k < a.size() ? a[a.size() - 1 - k] - '0' : 0) + (k < b.size() ? b[b.size() - 1 - k] - '0' : 0);
      out += static_cast<char>('0' + s % 10);
      carry = s / 10;
    }
    std::reverse(out.begin(), out.end());
    return out;
  };
  const auto subtract = [](const std::string& a, const std::string& b) {  // a >= b
    std::string out;
    int borrow = 0;
    for (std::size_t k = 0; k < a.size(); ++k) {
      int d = a[a.size() - 1 - k] - '0' - borrow - (k < b.size() ? b[b.size() - 1 - k] - '0' : 0);
      borrow = d < 0 ? 1 : 0;
      out += static_cast<char>('0' + d + 10 * borrow);
    }
    std::reverse(out.begin(), out.end());
    return out;
  };
  const bool shift_negative = shift_ns < 0;
  std::string sum;
  bool sum_negative = negative;
  if (negative == shift_negative) {
    sum = add(digits, shift);
  } else if (!less(digits, shift)) {
    sum = subtract(digits, shift);
  } else {
    sum = subtract(shift, digits);
    sum_negative = shift_negative;
  }
  trim(sum);
  if (sum == "0") sum_negative = false;
  const auto point = static_cast<std::size_t>(out_scale);
  if (sum.size() <= point) sum.insert(0, point + 1 - sum.size(), '0');
  std::string out = sum_negative ? "-" : "";
  out += sum.substr(0, sum.size() - point);
  if (point > 0) out += "." + sum.substr(sum.size() - point);
  return out;
}

/// A flow or correlation id's value when it is a whole number: a JSON integer, or a string of
/// decimal digits or of hex digits after `0x` (Chrome's form).
inline std::optional<std::uint64_t> id_value(std::string_view text, bool is_string) {
  if (is_string && (text.starts_with("0x") || text.starts_with("0X"))) {
    text.remove_prefix(2);
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return v;
  }
  return parse_unsigned(text);
}

/// The part a value of an event plays in the merge.
enum class merge_role : std::uint8_t { none, ph, name, pid, ts, id, arg_name, arg_sort_index };

/// One SAX token of the event being read; its text is in the reader's arena.
struct merge_token {
  enum kind_t : std::uint8_t { null, boolean, number, string, key, open_object, close_object, open_array, close_array };
  kind_t kind = null;
  merge_role role = merge_role::none;
  std::size_t begin = 0, size = 0;
};

/// The merged trace being written. Events go through RapidJSON's writer (which escapes
/// strings) into a buffer: for Chrome trace JSON written out a megabyte at a time, for a
/// Perfetto trace handed one by one to job_perfetto, which writes a rank at a time.
class merged_output {
 public:
  using json_writer = rapidjson::Writer<rapidjson::StringBuffer>;

  merged_output(const std::filesystem::path& path, trace_format format, std::optional<std::int64_t> base_time_ns)
      : writer_(buffer_) {
    if (format == trace_format::perfetto) perfetto_.emplace(path, base_time_ns);
    else file_.emplace(path);
  }

  /// Whether the output is JSON, which has a header (raw() and string() write it).
  bool json() const noexcept { return file_.has_value(); }
  void raw(std::string_view text) {
    char* p = buffer_.Push(text.size());
    std::copy(text.begin(), text.end(), p);
  }
  /// A JSON string on its own (the header's).
  void string(std::string_view s) {
    writer_.Reset(buffer_);
    writer_.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  }
  /// The rank whose events come next (its file, for messages).
  void begin_rank(const std::string& source) { source_ = source; }
  /// The writer, ready for the next element of traceEvents.
  json_writer& next_event() {
    if (perfetto_) hand_over();
    else raw(events_ == 0 ? "\n" : ",\n");
    ++events_;
    writer_.Reset(buffer_);
    return writer_;
  }
  /// A metadata event `{"ph":"M","name":NAME,"pid":PID,"tid":0,"args":{KEY:VALUE}}`; VALUE is a
  /// string, or a number when `number` is set.
  void metadata(std::string_view name, std::int64_t pid, std::string_view key, std::string_view value, bool number) {
    json_writer& w = next_event();
    const auto str = [&](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
    w.StartObject();
    str("ph");
    str("M");
    str("name");
    str(name);
    str("pid");
    w.Int64(pid);
    str("tid");
    w.Int(0);
    str("args");
    w.StartObject();
    str(key);
    if (number) w.RawValue(value.data(), value.size(), rapidjson::kNumberType);
    else str(value);
    w.EndObject();
    w.EndObject();
  }
  void flush_if_full() {
    if (file_ && buffer_.GetSize() >= flush_threshold) flush();
  }
  /// The rank's events are all written (a Perfetto trace then writes them out).
  void end_rank() {
    if (!perfetto_) return;
    hand_over();
    perfetto_->end_rank();
  }
  std::uint64_t events() const noexcept { return events_; }
  /// Writes what is left and renames the file into place.
  export_result commit() {
    if (perfetto_) {
      hand_over();
      return perfetto_->finish();
    }
    flush();
    file_->commit();
    return {};
  }

 private:
  static constexpr std::size_t flush_threshold = std::size_t{1} << 20;
  void flush() {
    file_->write(std::string_view(buffer_.GetString(), buffer_.GetSize()));
    buffer_.Clear();
  }
  void hand_over() {
    if (buffer_.GetSize() == 0) return;
    perfetto_->event(std::string_view(buffer_.GetString(), buffer_.GetSize()), source_);
    buffer_.Clear();
  }

  std::optional<trace_output> file_;
  std::optional<job_perfetto> perfetto_;
  rapidjson::StringBuffer buffer_;
  json_writer writer_;
  std::uint64_t events_ = 0;
  std::string source_;
};

/// The SAX handler of both passes. Without an output (the first pass) it learns the trace's
/// rank, clock, processes and largest id into `rank`; with one it writes each event rewritten
/// for the merged trace. Each element of traceEvents is held as its tokens until it ends.
class merge_reader : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, merge_reader> {
 public:
  merge_reader(merge_rank& rank, merged_output* out) : rank_(rank), out_(out) {}

  bool Null() { return value(merge_token::null, "null"); }
  bool Bool(bool b) { return value(merge_token::boolean, b ? "true" : "false"); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) { return value(merge_token::number, {s, n}); }
  bool String(const char* s, rapidjson::SizeType n, bool) { return value(merge_token::string, {s, n}); }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    if (capturing_) push(merge_token::key, {s, n});
    else key_.assign(s, n);
    return true;
  }
  bool StartObject() { return open(false); }
  bool StartArray() { return open(true); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool EndArray(rapidjson::SizeType) { return close(); }

  const std::string& failure() const noexcept { return failure_; }
  bool too_deep() const noexcept { return too_deep_; }
  bool events_found() const noexcept { return events_found_; }
  std::uint64_t events() const noexcept { return index_; }

 private:
  bool stop(std::string message) {
    failure_ = std::move(message);
    return false;
  }
  std::string quoted() const { return "'" + rank_.path.string() + "'"; }

  void push(merge_token::kind_t kind, std::string_view text) {
    tokens_.push_back({kind, merge_role::none, arena_.size(), text.size()});
    arena_.append(text);
  }
  std::string_view text_of(const merge_token& t) const { return std::string_view(arena_).substr(t.begin, t.size); }

  bool value(merge_token::kind_t kind, std::string_view text) {
    if (capturing_) {
      push(kind, text);
      return true;
    }
    if (events_depth_ != 0 && depth_ == events_depth_) {  // an element that is not an object
      push(kind, text);
      return finish_element();
    }
    if (depth_ == 1 && !root_array_) {
      if (key_ == "baseTimeNanoseconds") {
        if (auto m = read_base_time(text, quoted(), rank_.base_time_ns)) return stop(std::move(*m));
      } else if (key_ == "displayTimeUnit" && kind == merge_token::string) {
        rank_.display_time_unit = std::string(text);
      }
    } else if (depth_ == info_depth_) {
      if (key_ == "rank" || key_ == "world_size") {
        std::optional<std::int64_t> v;
        if (auto m = read_rank_count(key_, text, quoted(), v)) return stop(std::move(*m));
        if (key_ == "rank") rank_.rank = *v, rank_.rank_assumed = false;
        else rank_.world_size = v;
      } else if (key_ == "backend" && kind == merge_token::string) {
        rank_.backend = std::string(text);
      }
    }
    return true;
  }

  bool open(bool array) {
    if (++depth_ > max_json_depth) {
      too_deep_ = true;
      return false;
    }
    if (capturing_) {
      push(array ? merge_token::open_array : merge_token::open_object, {});
      return true;
    }
    if (events_depth_ != 0 && depth_ == events_depth_ + 1) {
      capturing_ = true;
      push(array ? merge_token::open_array : merge_token::open_object, {});
      return true;
    }
    if (depth_ == 1) {
      root_array_ = array;
      if (array) events_depth_ = 1, events_found_ = true;
    } else if (depth_ == 2 && !root_array_) {
      if (key_ == "traceEvents" && array && !events_found_) events_depth_ = 2, events_found_ = true;
      else if (key_ == "traceEvents" && !array) return stop("trace " + quoted() + ": traceEvents is not an array");
      else if (key_ == "distributedInfo" && !array) info_depth_ = 2;
    } else if (depth_ == 3 && info_depth_ == 2 && key_ == "ranks") {
      rank_.merged = true;
    }
    key_.clear();
    return true;
  }

  bool close() {
    if (capturing_) {
      push(merge_token::close_object, {});  // mark_roles gives it its opening token's kind
      --depth_;
      if (depth_ == events_depth_) return finish_element();
      return true;
    }
    if (depth_ == info_depth_) info_depth_ = 0;
    else if (depth_ == events_depth_) events_depth_ = 0;
    --depth_;
    return true;
  }

  /// Marks what each value of the element is, then learns from it or writes it.
  bool finish_element() {
    capturing_ = false;
    ++index_;
    mark_roles();
    const bool ok = out_ == nullptr ? learn() : write();
    tokens_.clear();
    arena_.clear();
    return ok;
  }

  /// Each value's role, from its key: the event's own ph, name, pid, ts, id, bind_id; in its
  /// args, name and sort_index (of metadata events) and the correlation ids. Closing tokens get
  /// the kind of their opening one.
  void mark_roles() {
    std::vector<std::size_t> open;
    std::string_view key1, key2;
    bool in_args = false;
    const bool object = tokens_[0].kind == merge_token::open_object;
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
      merge_token& t = tokens_[i];
      const std::size_t depth = open.size();
      switch (t.kind) {
        case merge_token::open_object:
        case merge_token::open_array:
          if (object && depth == 1 && key1 == "args" && t.kind == merge_token::open_object) in_args = true;
          open.push_back(i);
          break;
        case merge_token::close_object:
        case merge_token::close_array:
          if (!open.empty()) {
            t.kind = tokens_[open.back()].kind == merge_token::open_array ? merge_token::close_array
                                                                           : merge_token::close_object;
            open.pop_back();
          }
          if (open.size() == 1) in_args = false;
          break;
        case merge_token::key:
          if (depth == 1) key1 = text_of(t);
          else if (depth == 2 && in_args) key2 = text_of(t);
          break;
        default:
          if (!object) break;
          if (depth == 1) {
            if (key1 == "ph") t.role = merge_role::ph;
            else if (key1 == "name") t.role = merge_role::name;
            else if (key1 == "pid") t.role = merge_role::pid;
            else if (key1 == "ts") t.role = merge_role::ts;
            else if (key1 == "id" || key1 == "bind_id") t.role = merge_role::id;
          } else if (depth == 2 && in_args) {
            if (key2 == "name") t.role = merge_role::arg_name;
            else if (key2 == "sort_index") t.role = merge_role::arg_sort_index;
            else if (key2 == "correlation" || key2 == "correlation_id" || key2 == "External id") t.role = merge_role::id;
          }
      }
    }
  }

  const merge_token* with_role(merge_role r) const {
    const merge_token* found = nullptr;
    for (const merge_token& t : tokens_)
      if (t.role == r) found = &t;  // the last, as a JSON reader keeps a repeated key's last value
    return found;
  }
  std::string_view text_with_role(merge_role r) const {
    const merge_token* t = with_role(r);
    return t != nullptr && t->kind == merge_token::string ? text_of(*t) : std::string_view();
  }
  static std::string pid_key(const merge_token& t, std::string_view text) {
    return (t.kind == merge_token::string ? "s" : "n") + std::string(text);
  }

  bool learn() {
    const std::string_view ph = text_with_role(merge_role::ph), name = text_with_role(merge_role::name);
    merge_process* process = nullptr;
    for (const merge_token& t : tokens_) {
      if (t.role == merge_role::pid) {
        const std::string key = pid_key(t, text_of(t));
        const auto [it, fresh] = rank_.process_of.try_emplace(key, rank_.processes.size());
        if (fresh) rank_.processes.push_back({.key = key, .first_seen = rank_.processes.size()});
        process = &rank_.processes[it->second];
      } else if (t.role == merge_role::id) {
        if (const auto v = id_value(text_of(t), t.kind == merge_token::string))
          rank_.largest_id = std::max(rank_.largest_id, *v);
      }
    }
    if (process == nullptr || ph != "M") return true;
    if (name == "process_name" && with_role(merge_role::arg_name) != nullptr &&
        with_role(merge_role::arg_name)->kind == merge_token::string)
      process->named = true;
    if (name == "process_sort_index") {
      const merge_token* s = with_role(merge_role::arg_sort_index);
      if (s != nullptr && s->kind == merge_token::number)
        if (const auto v = parse_signed(text_of(*s))) process->sort_index = *v, process->has_sort_index = true;
    }
    return true;
  }

  bool write() {
    const std::string_view ph = text_with_role(merge_role::ph), name = text_with_role(merge_role::name);
    const bool process_name = ph == "M" && name == "process_name";
    const bool process_sort_index = ph == "M" && name == "process_sort_index";
    const merge_process* process = nullptr;
    if (const merge_token* p = with_role(merge_role::pid)) {
      const auto it = rank_.process_of.find(pid_key(*p, text_of(*p)));
      if (it == rank_.process_of.end()) return stop(changed());
      process = &rank_.processes[it->second];
    }
    merged_output::json_writer& w = out_->next_event();
    const auto raw = [&](std::string_view s, rapidjson::Type type) { w.RawValue(s.data(), s.size(), type); };
    const auto str = [&](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
    for (const merge_token& t : tokens_) {
      const std::string_view text = text_of(t);
      switch (t.kind) {
        case merge_token::open_object: w.StartObject(); continue;
        case merge_token::close_object: w.EndObject(); continue;
        case merge_token::open_array: w.StartArray(); continue;
        case merge_token::close_array: w.EndArray(); continue;
        case merge_token::key: str(text); continue;
        default: break;
      }
      if (t.role == merge_role::pid) {
        w.Int64(process->merged_pid);
      } else if (t.role == merge_role::ts && rank_.shift_ns != 0) {
        const auto ts = t.kind == merge_token::number ? shifted_us(text, rank_.shift_ns) : std::nullopt;
        if (!ts)
          return stop("trace " + quoted() + ", traceEvents[" + std::to_string(index_ - 1) +
                      "]: ts is not a number of microseconds, so it cannot be aligned: " + std::string(text));
        raw(*ts, rapidjson::kNumberType);
      } else if (t.role == merge_role::id) {
        write_id(w, t, text);
      } else if (t.role == merge_role::arg_name && process_name && t.kind == merge_token::string) {
        str(fmt::format("rank {}: {}", rank_.rank, text));
      } else if (t.role == merge_role::arg_sort_index && process_sort_index && process != nullptr) {
        w.Int64(process->merged_pid);
      } else if (t.kind == merge_token::string) {
        str(text);
      } else if (t.kind == merge_token::null) {
        w.Null();
      } else {
        raw(text, t.kind == merge_token::number ? rapidjson::kNumberType
                  : text == "true"              ? rapidjson::kTrueType
                                                : rapidjson::kFalseType);
      }
    }
    out_->flush_if_full();
    return true;
  }

  /// The id plus the rank's offset, in the form it had (a number, a decimal or 0x string); any
  /// other id becomes the string "rank R:ID", as unique.
  void write_id(merged_output::json_writer& w, const merge_token& t, std::string_view text) {
    const bool is_string = t.kind == merge_token::string;
    const auto v = id_value(text, is_string);
    std::string s;
    if (!v) {
      s = fmt::format("rank {}:{}", rank_.rank, text);
    } else if (!is_string) {
      w.Uint64(*v + rank_.id_offset);
      return;
    } else {
      s = text.starts_with("0x") || text.starts_with("0X") ? fmt::format("0x{:x}", *v + rank_.id_offset)
                                                             : std::to_string(*v + rank_.id_offset);
    }
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  }

 public:
  std::string changed() const {
    return "trace " + quoted() + " changed while it was being merged: merge it again once it is complete";
  }

 private:
  merge_rank& rank_;
  merged_output* out_;
  std::string failure_;
  std::string key_;
  std::size_t depth_ = 0, events_depth_ = 0, info_depth_ = 0;
  std::uint64_t index_ = 0;
  bool root_array_ = false, events_found_ = false, capturing_ = false, too_deep_ = false;
  std::vector<merge_token> tokens_;
  std::string arena_;
};

/// One pass over the trace of `rank`: the first without `out`, the second with.
inline void merge_pass(merge_rank& rank, merged_output* out) {
  const std::string source = "'" + rank.path.string() + "'";
  parse_trace_file(rank.path, source, [&](auto open) {
    auto in_source = open();
    json_input<decltype(in_source)> in(in_source);
    merge_reader reader(rank, out);
    rapidjson::Reader parser;
    constexpr unsigned flags = rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseValidateEncodingFlag;
    const rapidjson::ParseResult result = parser.Parse<flags>(in, reader);
    if (!in_source.failure().empty()) throw error("cannot read trace " + source + ": " + in_source.failure());
    if (reader.too_deep())
      throw error("trace " + source + " is not a trace: values nest more than " + std::to_string(max_json_depth) +
                  " levels deep (line " + std::to_string(in.line()) + ")");
    if (!reader.failure().empty()) throw error(reader.failure());
    if (result.IsError())
      throw error("trace " + source + " is not valid JSON: line " + std::to_string(in.line()) + ": " +
                  std::string(json_error_text(result.Code())));
    if (!reader.events_found()) throw error("trace " + source + " has no traceEvents array: not a Chrome trace JSON");
    if (out == nullptr) rank.events = reader.events();
    else if (reader.events() != rank.events) throw error(reader.changed());
    return 0;
  });
}

/// The smallest power of ten, 1000 or more, above `n`; nothing past 10^19.
inline std::optional<std::uint64_t> stride_above(std::uint64_t n) {
  std::uint64_t stride = 1000;
  while (stride <= n) {
    if (stride > std::numeric_limits<std::uint64_t>::max() / 10) return std::nullopt;
    stride *= 10;
  }
  return stride;
}

/// The checks across ranks (analyze's, and one backend), then each rank's processes numbered,
/// its clock shift and its id offset. Returns the earliest baseTimeNanoseconds when the clocks
/// are aligned.
inline std::optional<std::int64_t> plan_merge(std::vector<merge_rank>& ranks, bool align) {
  for (const merge_rank& r : ranks)
    if (r.merged)
      throw error(fmt::format("{} is a merged job trace (strata-report merge wrote it), not one rank's trace: "
                              "leave it out of the TRACEs (write merged traces outside the ranks' directory)",
                              r.source));
  check_one_job(ranks, "merge");
  const merge_rank* with_backend = nullptr;
  for (const merge_rank& r : ranks) {
    if (!r.backend) continue;
    if (with_backend != nullptr && *with_backend->backend != *r.backend)
      throw error(fmt::format("{} (backend '{}') and {} (backend '{}') are ranks of different jobs: merge one "
                              "job's traces at a time",
                              with_backend->source, *with_backend->backend, r.source, *r.backend));
    if (with_backend == nullptr) with_backend = &r;
  }

  // Clocks: every trace on the wall clock, or (said on stderr) each on its own.
  std::optional<std::int64_t> earliest;
  const merge_rank* with = nullptr;
  const merge_rank* without = nullptr;
  for (const merge_rank& r : ranks) {
    (r.base_time_ns ? with : without) = &r;
    if (r.base_time_ns) earliest = std::min(earliest.value_or(*r.base_time_ns), *r.base_time_ns);
  }
  if (align && with != nullptr && without != nullptr)
    throw error(fmt::format("{} has no baseTimeNanoseconds but {} has: their clocks cannot be aligned; merge "
                            "traces that all carry it, or give --no-align to keep each trace's own clock",
                            without->source, with->source));
  if (align && with == nullptr)
    fmt::print(stderr, "strata-report: no trace has baseTimeNanoseconds: each rank keeps its own clock, which "
                       "lines up with the others' only if the ranks shared one\n");
  if (!align || with == nullptr) earliest.reset();
  for (merge_rank& r : ranks)
    if (earliest && __builtin_sub_overflow(*r.base_time_ns, *earliest, &r.shift_ns))
      throw error(fmt::format("{}: baseTimeNanoseconds {} is too far from {}'s to align", r.source, *r.base_time_ns,
                              with->source));

  // Processes: rank R's, in the order its trace sorts them, become R * stride + 1, + 2, ...
  std::uint64_t most_processes = 0, largest_id = 0;
  for (const merge_rank& r : ranks) {
    most_processes = std::max<std::uint64_t>(most_processes, r.processes.size());
    largest_id = std::max(largest_id, r.largest_id);
  }
  const std::uint64_t pid_stride = *stride_above(most_processes);
  const std::optional<std::uint64_t> id_stride = stride_above(largest_id);
  constexpr auto most = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  for (merge_rank& r : ranks) {
    const auto rank = static_cast<std::uint64_t>(r.rank);
    if (rank > (most - pid_stride) / pid_stride)
      throw error(fmt::format("{}: rank {} is too large to number its processes", r.source, r.rank));
    if (!id_stride || rank > (std::numeric_limits<std::uint64_t>::max() - *id_stride) / *id_stride)
      throw error(fmt::format("{}: an id of {} is too large to keep the ranks' ids apart", r.source, largest_id));
    r.id_offset = rank * *id_stride;
    std::vector<std::size_t> order(r.processes.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return r.processes[a].sort_index < r.processes[b].sort_index;
    });
    for (std::size_t k = 0; k < order.size(); ++k)
      r.processes[order[k]].merged_pid = static_cast<std::int64_t>(rank * pid_stride + k + 1);
  }
  return earliest;
}

/// The merged JSON trace's top level before its events: the job's distributedInfo (backend,
/// world size, its ranks) and the clock they were aligned on.
inline void write_header(merged_output& out, const std::vector<merge_rank>& ranks, std::optional<std::int64_t> base) {
  out.raw("{\"displayTimeUnit\":");
  out.string(ranks.front().display_time_unit.value_or("ms"));
  out.raw(",\n\"distributedInfo\":{");
  std::optional<std::string> backend;
  std::optional<std::int64_t> world_size;
  for (const merge_rank& r : ranks) {
    if (r.backend) backend = r.backend;
    if (r.world_size) world_size = r.world_size;
  }
  if (backend) {
    out.raw("\"backend\":");
    out.string(*backend);
    out.raw(",");
  }
  if (world_size) out.raw(fmt::format("\"world_size\":{},", *world_size));
  out.raw("\"ranks\":[");
  for (std::size_t i = 0; i < ranks.size(); ++i) out.raw(fmt::format("{}{}", i == 0 ? "" : ",", ranks[i].rank));
  out.raw("]}");
  if (base) out.raw(fmt::format(",\n\"baseTimeNanoseconds\":{}", *base));
  out.raw(",\n\"traceEvents\":[");
}

}  // namespace detail

/// `strata-report merge ...`: `args` are the words after "merge". Returns the exit status.
/// Raises `merge_usage_error` for a bad command line and `strata::error` when a trace cannot be
/// read, the traces are not one job's ranks or the output cannot be written (no file is left).
inline int merge_command(std::span<const std::string_view> args) {
  std::vector<std::filesystem::path> traces;
  std::optional<std::string> output;
  bool align = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") {
      std::fwrite(merge_usage.data(), 1, merge_usage.size(), stdout);
      return 0;
    }
    if (arg == "-o" || arg == "--output" || arg.starts_with("--output=")) {
      if (output) throw merge_usage_error{"merge writes one file: give -o once"};
      if (arg.starts_with("--output=")) output = std::string(arg.substr(9));
      else if (i + 1 < args.size()) output = std::string(args[++i]);
      else throw merge_usage_error{fmt::format("{} needs a file name", arg)};
    } else if (arg == "--no-align") {
      align = false;
    } else if (arg.size() > 1 && arg.front() == '-') {
      throw merge_usage_error{fmt::format("unknown option '{}' for merge", arg)};
    } else {
      traces.emplace_back(arg);
    }
  }
  if (traces.empty()) throw merge_usage_error{"merge needs a TRACE (one per rank, or their directory)"};
  if (!output || output->empty()) throw merge_usage_error{"merge needs -o JOB.json (or JOB.pftrace)"};
  trace_format format{};
  if (!trace_format_in_name(*output, format))
    throw merge_usage_error{fmt::format("-o {}: name the merged trace .json (Chrome trace JSON) or .pftrace "
                                        "(Perfetto's protobuf), with .gz to have it gzip-compressed", *output)};

  const std::vector<std::filesystem::path> files = trace_files(traces);
  std::vector<detail::merge_rank> ranks;
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    if (name.ends_with(".pftrace") || name.ends_with(".pftrace.gz"))
      throw error(f.string() + " is a Perfetto protobuf trace; merge reads Chrome trace JSON "
                  "(write the session as JSON too: STRATA_FORMAT=json)");
    std::error_code ec;
    if (std::filesystem::equivalent(f, *output, ec))
      throw merge_usage_error{fmt::format("-o {} is one of the traces to merge: write the merged trace elsewhere", *output)};
    ranks.push_back({.path = f, .source = f.string(), .rank_assumed = true});
  }
  for (detail::merge_rank& r : ranks) detail::merge_pass(r, nullptr);
  const std::optional<std::int64_t> base = detail::plan_merge(ranks, align);

  detail::merged_output out(*output, format, base);
  if (out.json()) write_header(out, ranks, base);
  std::uint64_t added = 0;
  for (detail::merge_rank& r : ranks) {
    out.begin_rank(r.source);
    detail::merge_pass(r, &out);
    // Every process named after its rank and ordered by it, also those the trace left unnamed.
    for (const detail::merge_process& p : r.processes) {
      if (!p.named) {
        const std::string pid = p.key.front() == 's' ? fmt::format("\"{}\"", p.key.substr(1)) : p.key.substr(1);
        out.metadata("process_name", p.merged_pid, "name", fmt::format("rank {}: pid {}", r.rank, pid), false);
        ++added;
      }
      if (!p.has_sort_index) {
        out.metadata("process_sort_index", p.merged_pid, "sort_index", std::to_string(p.merged_pid), true);
        ++added;
      }
    }
    out.end_rank();
    out.flush_if_full();
  }
  if (out.json()) out.raw("\n]}\n");
  const export_result written = out.commit();
  std::int64_t largest_shift = 0;
  for (const detail::merge_rank& r : ranks) largest_shift = std::max(largest_shift, r.shift_ns);
  fmt::print(stderr, "strata-report: wrote {}: {} rank{}, {} events{} ({} added to name and order the ranks' "
             "processes); {}\n", *output, ranks.size(), ranks.size() == 1 ? "" : "s", out.events(),
             out.json() ? "" : fmt::format(" as {} Perfetto packets", written.events), added,
             base ? fmt::format("clocks aligned on baseTimeNanoseconds (ranks moved by up to {:.3f} us)",
                                static_cast<double>(largest_shift) / 1000.0)
                  : std::string("each trace on its own clock"));
  return 0;
}

}  // namespace report
}  // namespace v1
}  // namespace strata
