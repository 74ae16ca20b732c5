// tools/report/trace_events.hpp: the rules that turn a saved Chrome trace JSON (strata's,
// torch.profiler's Kineto trace, or a plain Chrome trace) into op_events, applied while the
// parser streams through the document: no document tree is built, only the events are kept.
// The rules are in docs/key-averages.md, "Reading a saved trace".
//
// detail::trace_builder is a RapidJSON SAX handler (rapidjson-dev, header only). The front end
// that runs the parser is report/trace_reader.hpp.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "strata/analysis/activity.hpp"
#include "strata/analysis/key_averages.hpp"
#include "strata/error.hpp"
#include "strata/profiler_config.hpp"
#include "strata/record.hpp"
#include "report/rapidjson_reader.hpp"

namespace strata {
inline namespace v1 {
namespace report {

/// What a saved trace holds for key_averages(): its complete events as op_events, and the
/// facts that print with the table.
struct saved_trace {
  std::vector<op_event> events = {};
  /// The `[memory]` instant events (torch's profile_memory; Kineto's args `Bytes`, `Device Type`)
  /// on the track of their (pid, tid).
  std::vector<memory_event> memory = {};
  std::string format = {};        ///< "strata", "kineto" (torch.profiler) or "chrome" (neither)
  std::string device_name = {};   ///< the device column label: "NEURON", or "CUDA" for Kineto
  std::uint64_t records_lost = 0; ///< strata's otherData.dropped
  overflow_policy overflow = overflow_policy::lossless;
  std::size_t tracks = 0;         ///< distinct (pid, tid) pairs among the events
  std::uint64_t skipped = 0;      ///< trace events that are not ops (metadata, instants, ...)
  /// The device core's peaks (strata's otherData.peak_tflops and peak_hbm_gbps, as FLOP/s and
  /// bytes/s); 0: the trace has none (a torch trace).
  double peak_flops_per_s = 0;
  double peak_hbm_bytes_per_s = 0;
  /// distributedInfo.rank: the rank of a distributed job that wrote the trace; none when absent
  /// (or not a count).
  std::optional<std::int64_t> rank = {};
  /// Who each track (`op_event::track`) is: its thread_name and process_name metadata (else
  /// "thread TID" and "process PID"), and its kind from its events' categories.
  std::vector<track_label> track_labels = {};
  /// With `read_options::activity`: the complete events that are parts of something else on a
  /// strata trace's device tracks (device.engine instructions, device.phase, runtime.queue
  /// waits), for the HTML report's timeline; never in the tables.
  std::vector<op_event> activity = {};

  /// Whether an op carries a FLOPs count (`args.flops`): strata-report then shows the column.
  bool has_flops() const noexcept {
    for (const op_event& e : events)
      if (e.flops > 0) return true;
    return false;
  }
};

/// What a saved trace is read for, beyond its tables.
struct read_options {
  bool activity = false;  ///< keep `saved_trace::activity` (the HTML report's timeline)
};

namespace detail {

inline std::optional<std::int64_t> parse_signed(std::string_view s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

/// Kineto's `Device Type` (c10::DeviceType) of a `[memory]` event: CPU (0), MKLDNN (2) and
/// IDEEP (5) are host memory, as torch's table counts them; any other type is device memory.
inline bool is_device_memory(std::string_view device_type) {
  const auto t = parse_signed(device_type);
  return t && *t != 0 && *t != 2 && *t != 5;
}

inline std::optional<std::uint64_t> parse_unsigned(std::string_view s) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

/// A JSON number of microseconds as exact integer nanoseconds, by moving the decimal point in
/// the digits (no double in between): "12.345" is 12345, "1.5e-3" is 2 (digits past the
/// nanosecond round half away from zero). Nothing for a non-number or an out-of-range value.
inline std::optional<std::int64_t> parse_us_as_ns(std::string_view s) {
  std::size_t i = 0;
  const bool negative = i < s.size() && s[i] == '-';
  if (negative) ++i;
  // The digits are only looked at, never copied: the integer part, then the fraction.
  const std::size_t int_begin = i;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {}
  const std::string_view int_digits = s.substr(int_begin, i - int_begin);
  std::string_view frac_digits;
  if (i < s.size() && s[i] == '.') {
    const std::size_t frac_begin = ++i;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {}
    frac_digits = s.substr(frac_begin, i - frac_begin);
  }
  if (int_digits.empty() && frac_digits.empty()) return std::nullopt;
  std::int64_t point = static_cast<std::int64_t>(int_digits.size());  // digits before the point
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) exp_negative = s[i++] == '-';
    std::int64_t exp = 0;
    bool exp_any = false;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, exp_any = true)
      if (exp < 100000) exp = exp * 10 + (s[i] - '0');
    if (!exp_any) return std::nullopt;
    point += exp_negative ? -exp : exp;
  }
  if (i != s.size()) return std::nullopt;
  point += 3;  // microseconds to nanoseconds
  const std::int64_t count = static_cast<std::int64_t>(int_digits.size() + frac_digits.size());
  const auto digit_at = [&](std::int64_t d) -> int {
    if (d >= count) return 0;
    const auto u = static_cast<std::size_t>(d);
    return (u < int_digits.size() ? int_digits[u] : frac_digits[u - int_digits.size()]) - '0';
  };
  std::int64_t ns = 0;
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t limit = max / 10;
  for (std::int64_t d = 0; d < point; ++d) {
    const int digit = digit_at(d);
    if (ns > limit || (ns == limit && digit > 7)) return std::nullopt;
    ns = ns * 10 + digit;
  }
  if (point >= 0 && point < count && digit_at(point) >= 5) {
    if (ns == max) return std::nullopt;
    ++ns;
  }
  return negative ? -ns : ns;
}

/// Whether `s` is the literal `lit`: with the length known at compile time the compiler compares
/// inline instead of calling memcmp, which the keys of every event made a twentieth of the time.
template <std::size_t N>
inline bool is(std::string_view s, const char (&lit)[N]) noexcept {
  return s.size() == N - 1 && std::memcmp(s.data(), lit, N - 1) == 0;
}

/// Arrays and objects may nest this deep; a trace nests about six levels.
inline constexpr std::size_t max_json_depth = 256;

/// How one trace event's category maps to an op, per format.
struct category_rule {
  bool is_op = false;
  ::strata::layer layer = layer::user;
  bool external_id = false;  ///< the correlation id is args["External id"], else args.correlation_id
  bool correlated = true;    ///< false: the event carries no correlation id
};

inline category_rule strata_category(std::string_view cat) {
  for (int l = 0; l < layer_count; ++l)
    if (cat == layer_name(static_cast<layer>(l))) return {true, static_cast<layer>(l)};
  if (is(cat, "strata")) return {};  // the writer's own "records lost" instants
  // Parts of something else (device.engine, device.phase: of a device execution, whose own
  // event carries their time; runtime.queue: time in a queue, not an op).
  if (cat.find('.') != std::string_view::npos) return {};
  return {true, layer::user};
}

/// torch.profiler (Kineto): host ops and runtime calls on the host, kernels, copies and memsets
/// on the device. Device time lands on the cpu_op through "External id", as torch does; runtime
/// calls carry no id here, so they do not take the kernels from their op. gpu_user_annotation
/// (a record_function's span on the GPU) is left out: it covers kernels already counted.
inline category_rule kineto_category(std::string_view cat) {
  if (is(cat, "cpu_op") || is(cat, "Operator")) return {true, layer::framework, true};
  if (is(cat, "user_annotation") || is(cat, "python_function")) return {true, layer::user, false, false};
  if (is(cat, "cuda_runtime") || is(cat, "cuda_driver") || is(cat, "Runtime"))
    return {true, layer::runtime, false, false};
  if (is(cat, "kernel") || is(cat, "gpu_memcpy") || is(cat, "gpu_memset") || is(cat, "Kernel") ||
      is(cat, "Memcpy") || is(cat, "Memset"))
    return {true, layer::device, true};
  return {};
}

inline bool kineto_only_category(std::string_view cat) {
  return is(cat, "cpu_op") || is(cat, "cuda_runtime") || is(cat, "cuda_driver") || is(cat, "kernel") ||
         is(cat, "gpu_memcpy") || is(cat, "gpu_memset") || is(cat, "python_function");
}

class trace_builder;

/// Called when the parser enters the traceEvents array (report/parallel_parse.hpp reads the
/// events itself, in pieces, and leaves the parser to go on after the array).
class events_hook {
 public:
  /// Returns false to stop the parser.
  virtual bool on_events(trace_builder& builder) = 0;

 protected:
  ~events_hook() = default;
};

/// The elements of a stretch of traceEvents as a chunk's own parser saw them, in order: each
/// event's fields as text, for the document's builder to turn into op_events. Per element: a
/// 32-bit mask of the fields seen (`not_an_event`: an element that is not an object), then per
/// field its 32-bit length and its text.
struct element_log {
  static constexpr std::uint32_t not_an_event = ~std::uint32_t{0};
  std::string bytes = {};
  std::size_t count = 0;

  void clear() noexcept {
    bytes.clear();
    count = 0;
  }
  void add_other() {
    put(not_an_event);
    ++count;
  }
  void put(std::uint32_t v) { bytes.append(reinterpret_cast<const char*>(&v), sizeof v); }
};

/// The SAX handler: it follows where the parser is in the document (the root, otherData,
/// traceEvents, one event, its args, its Input Dims) and turns each finished event into an
/// op_event. A handler call returns false to stop the parser; failure() then says why.
///
/// Which rules apply (Kineto's or strata's) depends on facts that may come anywhere in the
/// document. The handler assumes a format from what it has seen before the first event; if the
/// whole document then says otherwise (rare: strata and Kineto both write those facts first),
/// needs_second_pass() is true and the reader parses again with the format fixed.
class trace_builder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, trace_builder> {
 public:
  /// `kineto`: the format when it is already known (the second pass), else nothing.
  trace_builder(std::string source, std::optional<bool> kineto, read_options options = {})
      : source_(std::move(source)), options_(options), fixed_(kineto.has_value()), kineto_(kineto.value_or(false)) {}

  /// A builder for a chunk of traceEvents elements (each parsed as a document of its own) that
  /// writes each element to `log` as it finishes instead of making an op_event of it: the
  /// document's builder takes them in order (take_elements), so the result is the same as if
  /// it had parsed them itself. `events_depth` is the depth of the traceEvents array.
  trace_builder(std::size_t events_depth, element_log& log) : log_(&log), depth_(events_depth), events_depth_(events_depth) {
    events_found_ = true;
  }

  /// Calls `hook` when the parser enters the traceEvents array; nullptr: none.
  void set_events_hook(events_hook* hook) noexcept { hook_ = hook; }
  /// The depth of the traceEvents array while the parser is inside it (the root is 1).
  std::size_t events_depth() const noexcept { return events_depth_; }

  /// Takes the elements that a chunk's builder logged, as if they came next in the array.
  /// Returns false when an event is refused (failure() says why).
  bool take_elements(const element_log& log) {
    const char* p = log.bytes.data();
    const auto get = [&p] {
      std::uint32_t v;
      std::memcpy(&v, p, sizeof v);
      p += sizeof v;
      return v;
    };
    for (std::size_t i = 0; i < log.count; ++i) {
      ++index_;
      const std::uint32_t seen = get();
      if (seen == element_log::not_an_event) {
        ++out_.skipped;
        continue;
      }
      fields_.seen = seen;
      for (int f = 0; f < field_count; ++f) {
        if (((seen >> f) & 1u) == 0) continue;
        const std::uint32_t n = get();
        fields_.text[f].assign(p, n);
        p += n;
      }
      if (!finish_event()) return false;
    }
    return true;
  }

  // --- RapidJSON's handler interface (numbers arrive as their text) ---
  bool Null() { return scalar("null"); }
  bool Bool(bool b) { return scalar(b ? "true" : "false"); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) { return scalar({s, n}); }
  bool String(const char* s, rapidjson::SizeType n, bool) { return scalar({s, n}); }
  bool Key(const char* s, rapidjson::SizeType n, bool) { return key({s, n}); }
  bool StartObject() { return open(false); }
  bool StartArray() { return open(true); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool EndArray(rapidjson::SizeType) { return close(); }

  /// Why the handler stopped the parser; empty when it did not.
  const std::string& failure() const noexcept { return failure_; }
  bool too_deep() const noexcept { return too_deep_; }

  /// True when the document turned out to be of the other format than the one its events
  /// were read with.
  bool needs_second_pass() const noexcept { return decided_ && final_kineto() != kineto_; }
  bool final_kineto() const noexcept { return fixed_ ? kineto_ : !strata_seen_ && kineto_seen_; }

  /// The trace, once the parser has finished without an error. Raises strata::error for a
  /// document that holds no traceEvents array or a bad otherData.dropped.
  saved_trace finish() {
    if (!events_found_ || (root_is_array_ && index_ == 0))
      throw error("trace " + source_ + " has no traceEvents array: not a Chrome trace JSON");
    out_.format = strata_seen_ ? "strata" : final_kineto() ? "kineto" : "chrome";
    out_.device_name = final_kineto() ? "CUDA" : "NEURON";
    if (strata_seen_) {
      if (dropped_) {
        const auto n = parse_unsigned(*dropped_);
        if (!n) throw error("trace " + source_ + ": otherData.dropped is not a count: " + *dropped_);
        out_.records_lost = *n;
      }
      if (overflow_) overflow_policy_from_name(*overflow_, out_.overflow);
    }
    for (const auto& [track, stack] : open_) out_.skipped += stack.size();  // B without E
    if (!steps_tracks_.empty())
      for (op_event& ev : out_.events)
        if (const auto it = steps_tracks_.find(ev.track); it != steps_tracks_.end()) ev.steps_of = it->second;
    std::vector<bool> used(track_of_.size(), false);
    for (const op_event& ev : out_.events) used[ev.track] = true;
    out_.tracks = static_cast<std::size_t>(std::count(used.begin(), used.end(), true));
    out_.track_labels.resize(track_of_.size());
    for (const auto& [key, index] : track_of_) {
      const std::size_t cut = key.find('\0');
      const std::string pid = key.substr(0, cut), tid = key.substr(cut + 1);
      track_label& l = out_.track_labels[index];
      const auto name = thread_names_.find(index);
      l.name = name != thread_names_.end() ? name->second : "thread " + tid;
      const auto group = process_names_.find(pid);
      l.group = group != process_names_.end() ? group->second : "process " + pid;
      const auto kind = track_kinds_.find(index);
      if (kind != track_kinds_.end()) l.kind = kind->second;
    }
    return std::move(out_);
  }

 private:
  /// What the next value is, as named by the key before it.
  enum class slot : std::uint8_t {
    none, trace_events, other_data, dropped, overflow_policy,
    ph, cat, name, pid, tid, ts, dur, args, correlation_id, external_id, input_dims, steps_of,
    bytes, device_type, flops, device_bytes, arg_name, peak_tflops, peak_hbm_gbps, distributed_info,
    rank,
  };
  static constexpr int field_count = 16;  // ph .. arg_name: the values kept per event

  /// One event's values as text, the first of each key (a repeated key is ignored).
  struct event_fields {
    std::string text[field_count];
    unsigned seen = 0;
    bool has(slot s) const noexcept { return (seen >> index(s)) & 1u; }
    const std::string& get(slot s) const noexcept { return text[index(s)]; }
    static int index(slot s) noexcept { return static_cast<int>(s) - static_cast<int>(slot::ph) - (s > slot::args); }
  };

  static bool is_event_field(slot s) noexcept {
    return s >= slot::ph && s != slot::args && s <= slot::arg_name;
  }

  bool stop(std::string message) {
    failure_ = std::move(message);
    return false;
  }
  std::string where() const {
    return "trace " + source_ + ", traceEvents[" + std::to_string(index_ - 1) + "]";
  }

  bool key(std::string_view k) {
    next_ = slot::none;
    if (dims_depth_ != 0) return true;  // keys inside Input Dims are dropped
    if (depth_ == 1 && !root_is_array_) {
      if (is(k, "traceEvents")) next_ = events_found_ ? slot::none : slot::trace_events;
      else if (is(k, "otherData")) next_ = slot::other_data;
      else if (is(k, "distributedInfo")) next_ = slot::distributed_info;
      else if (is(k, "schemaVersion") || is(k, "deviceProperties")) kineto_seen_ = true;
    } else if (depth_ == info_depth_) {
      if (is(k, "rank")) next_ = slot::rank;
    } else if (depth_ == other_depth_) {
      if (is(k, "strata_version")) strata_seen_ = true;
      else if (is(k, "dropped")) next_ = slot::dropped;
      else if (is(k, "overflow_policy")) next_ = slot::overflow_policy;
      else if (is(k, "peak_tflops")) next_ = slot::peak_tflops;
      else if (is(k, "peak_hbm_gbps")) next_ = slot::peak_hbm_gbps;
    } else if (in_event_ && depth_ == events_depth_ + 1) {
      if (is(k, "ph")) next_ = slot::ph;
      else if (is(k, "cat")) next_ = slot::cat;
      else if (is(k, "name")) next_ = slot::name;
      else if (is(k, "pid")) next_ = slot::pid;
      else if (is(k, "tid")) next_ = slot::tid;
      else if (is(k, "ts")) next_ = slot::ts;
      else if (is(k, "dur")) next_ = slot::dur;
      else if (is(k, "args")) next_ = args_depth_ == 0 && !args_seen_ ? slot::args : slot::none;
    } else if (depth_ == args_depth_) {
      if (is(k, "correlation_id")) next_ = slot::correlation_id;
      else if (is(k, "External id")) next_ = slot::external_id;
      else if (is(k, "Input Dims")) next_ = slot::input_dims;
      else if (is(k, "steps_of")) next_ = slot::steps_of;
      else if (is(k, "Bytes")) next_ = slot::bytes;
      else if (is(k, "Device Type")) next_ = slot::device_type;
      else if (is(k, "flops")) next_ = slot::flops;
      else if (is(k, "bytes")) next_ = slot::device_bytes;  // a strata device execution's HBM bytes
      else if (is(k, "name")) next_ = slot::arg_name;       // metadata: a thread's or process's name
    }
    if (is_event_field(next_) && fields_.has(next_)) next_ = slot::none;
    return true;
  }

  bool scalar(std::string_view text) {
    const slot s = std::exchange(next_, slot::none);
    if (dims_depth_ != 0) {
      dims_item();
      dims_text(text);
      return true;
    }
    if (depth_ == 0) return true;  // a document that is one scalar: finish() refuses it
    if (events_depth_ != 0 && depth_ == events_depth_) {  // an event that is not an object
      ++index_;
      if (log_ != nullptr) log_->add_other();
      else ++out_.skipped;
      return true;
    }
    switch (s) {
      case slot::trace_events:
        return stop("trace " + source_ + ": traceEvents is not an array");
      case slot::dropped:
        if (!dropped_) dropped_ = std::string(text);
        return true;
      case slot::rank:
        // HTA reads a rank the same way (a whole number after "rank"); anything else is no rank.
        if (!out_.rank) out_.rank = parse_signed(text);
        if (out_.rank && *out_.rank < 0) out_.rank.reset();
        return true;
      case slot::overflow_policy:
        if (!overflow_) overflow_ = std::string(text);
        return true;
      case slot::peak_tflops:
      case slot::peak_hbm_gbps: {
        double v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size() || !(v > 0) || !std::isfinite(v))
          return stop("trace " + source_ + ": otherData." +
                      (s == slot::peak_tflops ? "peak_tflops" : "peak_hbm_gbps") +
                      " is not a positive number: " + std::string(text));
        (s == slot::peak_tflops ? out_.peak_flops_per_s : out_.peak_hbm_bytes_per_s) =
            v * (s == slot::peak_tflops ? 1e12 : 1e9);
        return true;
      }
      case slot::input_dims:
        fields_.text[event_fields::index(s)] = text.empty() ? std::string_view("[]") : text;
        fields_.seen |= 1u << event_fields::index(s);
        return true;
      default:
        if (is_event_field(s)) {
          fields_.text[event_fields::index(s)].assign(text);
          fields_.seen |= 1u << event_fields::index(s);
        }
        return true;
    }
  }

  bool open(bool array) {
    const slot s = std::exchange(next_, slot::none);
    if (++depth_ > max_json_depth) {
      too_deep_ = true;
      return false;
    }
    if (dims_depth_ != 0) {
      dims_item();
      dims_open();
      return true;
    }
    if (depth_ == 1) {
      root_is_array_ = array;
      if (!array) return true;
      events_depth_ = 1, events_found_ = true;  // Chrome's other form: a bare array
      return hook_ == nullptr || hook_->on_events(*this);
    }
    if (events_depth_ != 0 && depth_ == events_depth_ + 1) {  // an element of traceEvents
      ++index_;
      if (!array) {
        in_event_ = true;
        args_seen_ = false;
        fields_.seen = 0;
      } else if (log_ != nullptr) {
        log_->add_other();
      } else {
        ++out_.skipped;
      }
      return true;
    }
    switch (s) {
      case slot::trace_events:
        if (!array) return stop("trace " + source_ + ": traceEvents is not an array");
        events_depth_ = depth_;
        events_found_ = true;
        return hook_ == nullptr || hook_->on_events(*this);
      case slot::other_data:
        if (!array && other_depth_ == 0) other_depth_ = depth_;
        return true;
      case slot::distributed_info:
        if (!array && info_depth_ == 0) info_depth_ = depth_;
        return true;
      case slot::args:
        if (!array) args_depth_ = depth_, args_seen_ = true;
        return true;
      case slot::input_dims:
        dims_depth_ = depth_;
        fields_.text[event_fields::index(s)].clear();
        dims_open();
        return true;
      default:
        return true;
    }
  }

  bool close() {
    bool ok = true;
    if (dims_depth_ != 0) {
      fields_.text[event_fields::index(slot::input_dims)] += ']';
      dims_first_.pop_back();
      if (depth_ == dims_depth_) {
        dims_depth_ = 0;
        fields_.seen |= 1u << event_fields::index(slot::input_dims);
      }
    } else if (depth_ == args_depth_) {
      args_depth_ = 0;
    } else if (depth_ == other_depth_) {
      other_depth_ = 0;
    } else if (depth_ == info_depth_) {
      info_depth_ = 0;
    } else if (in_event_ && depth_ == events_depth_ + 1) {
      in_event_ = false;
      ok = finish_event();
    } else if (depth_ == events_depth_) {
      events_depth_ = 0;
    }
    --depth_;
    return ok;
  }

  // Input Dims are rendered as torch prints Input Shapes: `[[4, 8], [8, 16], []]`.
  void dims_item() {
    if (!dims_first_.back()) fields_.text[event_fields::index(slot::input_dims)] += ", ";
    dims_first_.back() = false;
  }
  void dims_open() {
    fields_.text[event_fields::index(slot::input_dims)] += '[';
    dims_first_.push_back(true);
  }
  void dims_text(std::string_view text) {
    fields_.text[event_fields::index(slot::input_dims)] += text.empty() ? std::string_view("[]") : text;
  }

  bool finish_event() {
    if (log_ != nullptr) {  // a chunk's builder: the document's builder makes the op_event
      log_->put(fields_.seen);
      for (int f = 0; f < field_count; ++f) {
        if (((fields_.seen >> f) & 1u) == 0) continue;
        log_->put(static_cast<std::uint32_t>(fields_.text[f].size()));
        log_->bytes += fields_.text[f];
      }
      ++log_->count;
      return true;
    }
    const std::string empty;
    const auto text = [&](slot s) -> const std::string& { return fields_.has(s) ? fields_.get(s) : empty; };
    const std::string& cat = text(slot::cat);
    if (fields_.has(slot::cat) && kineto_only_category(cat)) kineto_seen_ = true;
    const std::string& ph = text(slot::ph);
    const bool is_x = is(ph, "X"), is_b = is(ph, "B"), is_e = is(ph, "E");
    if ((is(ph, "i") || is(ph, "I")) && is(text(slot::name), "[memory]") && fields_.has(slot::bytes)) {
      const auto ts = fields_.has(slot::ts) ? parse_us_as_ns(fields_.get(slot::ts)) : std::nullopt;
      const auto bytes = parse_signed(fields_.get(slot::bytes));
      if (!ts || !bytes) return stop(where() + ": a [memory] event needs ts (microseconds) and Bytes (an integer)");
      out_.memory.push_back({track_index(text(slot::pid), text(slot::tid)), *ts, *bytes,
                             is_device_memory(text(slot::device_type))});
      return true;
    }
    if (!is_x && !is_b && !is_e) {
      // A steps track names the thread whose steps it holds (strata's thread_name metadata).
      if (is(ph, "M") && is(text(slot::name), "thread_name") && fields_.has(slot::steps_of))
        if (const auto of = parse_unsigned(fields_.get(slot::steps_of)))
          steps_tracks_.try_emplace(track_index(text(slot::pid), text(slot::tid)),
                                    track_index(text(slot::pid), std::to_string(*of)));
      if (is(ph, "M") && fields_.has(slot::arg_name)) {
        if (is(text(slot::name), "thread_name"))
          thread_names_.try_emplace(track_index(text(slot::pid), text(slot::tid)), fields_.get(slot::arg_name));
        else if (is(text(slot::name), "process_name"))
          process_names_.try_emplace(text(slot::pid), fields_.get(slot::arg_name));
      }
      ++out_.skipped;
      return true;
    }
    if (!decided_) {  // the first op decides the rules this pass reads with
      decided_ = true;
      if (!fixed_) kineto_ = final_kineto();
    }
    const category_rule rule = kineto_ ? kineto_category(cat) : strata_category(cat);
    if (!rule.is_op && !is_e) {
      if (is_x && !kineto_) keep_activity(cat);
      ++out_.skipped;
      return true;
    }
    const std::uint64_t track = track_index(text(slot::pid), text(slot::tid));
    if (rule.layer == layer::device) track_kinds_.try_emplace(track, track_kind::device);

    const auto ts = fields_.has(slot::ts) ? parse_us_as_ns(fields_.get(slot::ts)) : std::nullopt;
    if (!ts) return stop(where() + ": ts is missing or not a number of microseconds");

    if (is_e) {  // closes the latest open B of its track
      const auto it = open_.find(track);
      if (it == open_.end() || it->second.empty()) {
        ++out_.skipped;
        return true;
      }
      op_event ev = std::move(it->second.back());
      it->second.pop_back();
      ev.end_ns = *ts;
      out_.events.push_back(std::move(ev));
      return true;
    }

    op_event ev;
    ev.name = text(slot::name);
    ev.layer = rule.layer;
    ev.track = track;
    ev.begin_ns = *ts;
    if (rule.correlated) {
      const slot id = rule.external_id ? slot::external_id : slot::correlation_id;
      if (fields_.has(id)) ev.correlation_id = parse_unsigned(fields_.get(id)).value_or(0);
    }
    if (fields_.has(slot::input_dims)) ev.input_shapes = fields_.get(slot::input_dims);
    if (fields_.has(slot::flops)) ev.flops = parse_unsigned(fields_.get(slot::flops)).value_or(0);
    if (fields_.has(slot::device_bytes) && ev.layer == layer::device)
      ev.device_bytes = parse_unsigned(fields_.get(slot::device_bytes)).value_or(0);
    if (is_b) {
      open_[track].push_back(std::move(ev));
      return true;
    }
    const auto dur = fields_.has(slot::dur) ? parse_us_as_ns(fields_.get(slot::dur)) : std::nullopt;
    if (!dur || *dur < 0 || *ts > std::numeric_limits<std::int64_t>::max() - *dur)
      return stop(where() + ": dur is missing or not a non-negative number of microseconds");
    ev.end_ns = *ts + *dur;
    out_.events.push_back(std::move(ev));
    return true;
  }

  /// A strata trace's part of something else, kept for the timeline (read_options::activity):
  /// engine instructions, execution phases, queue waits. An event without a usable ts or dur
  /// is left out (it is in no table either).
  void keep_activity(const std::string& cat) {
    const bool engine = is(cat, "device.engine"), phase = is(cat, "device.phase"), queue = is(cat, "runtime.queue");
    if (!engine && !phase && !queue) return;
    const std::uint64_t track = track_index(fields_.has(slot::pid) ? fields_.get(slot::pid) : std::string(),
                                            fields_.has(slot::tid) ? fields_.get(slot::tid) : std::string());
    track_kinds_.try_emplace(track, engine ? track_kind::engine : queue ? track_kind::queue : track_kind::device);
    if (!options_.activity) return;
    if (!fields_.has(slot::ts) || !fields_.has(slot::dur)) return;
    const std::int64_t ts = parse_us_as_ns(fields_.get(slot::ts)).value_or(-1);
    const std::int64_t dur = parse_us_as_ns(fields_.get(slot::dur)).value_or(-1);
    if (ts < 0 || dur < 0 || ts > std::numeric_limits<std::int64_t>::max() - dur) return;
    op_event ev;
    ev.name = fields_.has(slot::name) ? fields_.get(slot::name) : std::string();
    ev.layer = layer::device;
    ev.track = track;
    ev.begin_ns = ts;
    ev.end_ns = ts + dur;
    out_.activity.push_back(std::move(ev));
  }

  /// The track of (pid, tid), numbered in order of first appearance.
  /// Events come in runs of one track, so the last one found is tried first.
  std::uint64_t track_index(const std::string& pid, const std::string& tid) {
    const std::size_t cut = pid.size();
    if (last_track_ != none_yet && track_key_.size() == cut + 1 + tid.size() && track_key_[cut] == '\0' &&
        track_key_.compare(0, cut, pid) == 0 && track_key_.compare(cut + 1, tid.size(), tid) == 0)
      return last_track_;
    track_key_ = pid;
    track_key_ += '\0';
    track_key_ += tid;
    const auto found = track_of_.find(track_key_);
    last_track_ = found != track_of_.end() ? found->second : track_of_.emplace(track_key_, track_of_.size()).first->second;
    return last_track_;
  }

  std::string source_;
  read_options options_;
  element_log* log_ = nullptr;
  events_hook* hook_ = nullptr;
  std::string failure_;
  saved_trace out_;
  std::unordered_map<std::uint64_t, std::string> thread_names_;  // track -> thread_name
  std::unordered_map<std::string, std::string> process_names_;   // pid -> process_name
  std::unordered_map<std::uint64_t, track_kind> track_kinds_;

  // Where the parser is. Depths count open arrays and objects (the root is 1); 0: not inside.
  std::size_t depth_ = 0;
  std::size_t events_depth_ = 0;  ///< the traceEvents array
  std::size_t other_depth_ = 0;   ///< the otherData object
  std::size_t info_depth_ = 0;    ///< the distributedInfo object
  std::size_t args_depth_ = 0;    ///< the current event's args object
  std::size_t dims_depth_ = 0;    ///< the current event's Input Dims value
  std::vector<bool> dims_first_;  ///< per open level of Input Dims: no item written yet
  slot next_ = slot::none;
  bool root_is_array_ = false;
  bool events_found_ = false;
  bool in_event_ = false;
  bool args_seen_ = false;
  bool too_deep_ = false;
  std::size_t index_ = 0;  ///< traceEvents entries begun so far

  event_fields fields_;
  static constexpr std::uint64_t none_yet = ~std::uint64_t{0};
  std::string track_key_;  ///< pid, NUL, tid of last_track_
  std::uint64_t last_track_ = none_yet;
  std::unordered_map<std::string, std::uint64_t> track_of_;
  std::unordered_map<std::uint64_t, std::vector<op_event>> open_;  // B events per track
  std::unordered_map<std::uint64_t, std::uint64_t> steps_tracks_;   // steps track -> its thread's

  // The format: what the document has said so far, and what this pass reads with.
  bool fixed_ = false;
  bool kineto_ = false;
  bool decided_ = false;
  bool strata_seen_ = false;
  bool kineto_seen_ = false;
  std::optional<std::string> dropped_;
  std::optional<std::string> overflow_;
};

}  // namespace detail
}  // namespace report
}  // namespace v1
}  // namespace strata
