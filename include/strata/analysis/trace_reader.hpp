// strata/analysis/trace_reader.hpp: a saved Chrome trace JSON (strata's own, or torch.profiler's
// Kineto trace) read back into op_events for key_averages() (rules: docs/key-averages.md,
// "Reading a saved trace").
//
// Needs the Boost headers (Boost.PropertyTree's JSON parser), so the umbrella header
// strata/strata.hpp does not include it. The whole document is held in memory while it is read.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

// boost/property_tree/json_parser.hpp pulls in the deprecated boost/bind.hpp, whose #pragma
// message would print on every compile; keeping its old global placeholders silences it.
#ifndef BOOST_BIND_GLOBAL_PLACEHOLDERS
#define BOOST_BIND_GLOBAL_PLACEHOLDERS
#define STRATA_DETAIL_UNDEF_BIND_PLACEHOLDERS
#endif
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#ifdef STRATA_DETAIL_UNDEF_BIND_PLACEHOLDERS
#undef BOOST_BIND_GLOBAL_PLACEHOLDERS
#undef STRATA_DETAIL_UNDEF_BIND_PLACEHOLDERS
#endif

#include "strata/analysis/averages.hpp"
#include "strata/analysis/table_format.hpp"
#include "strata/analysis/key_averages.hpp"
#include "strata/core/error.hpp"
#include "strata/core/layer.hpp"
#include "strata/core/layer_name.hpp"
#include "strata/core/ring_buffer.hpp"

namespace strata {
inline namespace v1 {

/// What a saved trace holds for key_averages(): its complete events as op_events, and the
/// facts that print with the table.
struct saved_trace {
  std::vector<op_event> events = {};
  std::string format = {};        ///< "strata", "kineto" (torch.profiler) or "chrome" (neither)
  std::string device_name = {};   ///< the device column label: "NEURON", or "CUDA" for Kineto
  std::uint64_t records_lost = 0; ///< strata's otherData.dropped
  overflow_policy overflow = overflow_policy::drop_newest;
  std::size_t tracks = 0;         ///< distinct (pid, tid) pairs among the events
  std::uint64_t skipped = 0;      ///< trace events that are not ops (metadata, instants, ...)
};

namespace detail {

using json_tree = boost::property_tree::ptree;

/// The direct child `key` of `t`, or nullptr. (Not ptree's get_child: that splits keys at dots.)
inline const json_tree* json_child(const json_tree& t, std::string_view key) {
  const auto it = t.find(std::string(key));
  return it == t.not_found() ? nullptr : &it->second;
}

inline const std::string* json_value(const json_tree& t, std::string_view key) {
  const json_tree* c = json_child(t, key);
  return c != nullptr && c->empty() ? &c->data() : nullptr;
}

/// PropertyTree keeps arrays as children with empty keys; `[]` is a leaf with no data.
inline bool json_is_array(const json_tree& t) {
  if (t.empty()) return t.data().empty();
  for (const auto& kv : t)
    if (!kv.first.empty()) return false;
  return true;
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
  std::string digits;
  std::int64_t point = 0;  // digits before the decimal point
  bool any = false;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, any = true) digits += s[i];
  point = static_cast<std::int64_t>(digits.size());
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, any = true) digits += s[i];
  }
  if (!any) return std::nullopt;
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
  std::int64_t ns = 0;
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t limit = max / 10;
  for (std::int64_t d = 0; d < point; ++d) {
    const int digit = d < static_cast<std::int64_t>(digits.size()) ? digits[static_cast<std::size_t>(d)] - '0' : 0;
    if (ns > limit || (ns == limit && digit > 7)) return std::nullopt;
    ns = ns * 10 + digit;
  }
  if (point >= 0 && point < static_cast<std::int64_t>(digits.size()) &&
      digits[static_cast<std::size_t>(point)] >= '5') {
    if (ns == max) return std::nullopt;
    ++ns;
  }
  return negative ? -ns : ns;
}

/// `"Input Dims": [[4, 8], [8, 16], []]` as torch prints Input Shapes: `[[4, 8], [8, 16], []]`.
inline void append_dims(std::string& out, const json_tree& t) {
  if (t.empty()) {
    out += t.data().empty() ? "[]" : t.data();
    return;
  }
  out += '[';
  bool first = true;
  for (const auto& kv : t) {
    if (!first) out += ", ";
    first = false;
    append_dims(out, kv.second);
  }
  out += ']';
}

inline constexpr std::size_t max_json_depth = 256;

/// The line where arrays and objects first nest deeper than max_json_depth, or 0.
inline std::size_t line_nested_too_deep(std::string_view text) noexcept {
  std::size_t depth = 0, line = 1;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (c == '\n') ++line;
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_json_depth) return line;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return 0;
}

/// How one trace event's category maps to an op, per format.
struct category_rule {
  bool is_op = false;
  layer where = layer::user;
  const char* correlation_key = nullptr;  ///< the args key holding the correlation id
};

inline category_rule strata_category(std::string_view cat) {
  for (int l = 0; l < layer_count; ++l)
    if (cat == layer_name(static_cast<layer>(l)))
      return {true, static_cast<layer>(l), "correlation_id"};
  if (cat == "strata") return {};  // the writer's own "records lost" instants
  // Parts of something else (device.engine, device.phase: of a device execution, whose own
  // event carries their time; runtime.queue: time in a queue, not an op).
  if (cat.find('.') != std::string_view::npos) return {};
  return {true, layer::user, "correlation_id"};
}

/// torch.profiler (Kineto): host ops and runtime calls on the host, kernels, copies and memsets
/// on the device. Device time lands on the cpu_op through "External id", as torch does; runtime
/// calls carry no id here, so they do not take the kernels from their op. gpu_user_annotation
/// (a record_function's span on the GPU) is left out: it covers kernels already counted.
inline category_rule kineto_category(std::string_view cat) {
  if (cat == "cpu_op" || cat == "Operator") return {true, layer::framework, "External id"};
  if (cat == "user_annotation" || cat == "python_function") return {true, layer::user, nullptr};
  if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime") return {true, layer::runtime, nullptr};
  if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Kernel" ||
      cat == "Memcpy" || cat == "Memset")
    return {true, layer::device, "External id"};
  return {};
}

inline bool kineto_only_category(std::string_view cat) {
  return cat == "cpu_op" || cat == "cuda_runtime" || cat == "cuda_driver" || cat == "kernel" ||
         cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "python_function";
}

/// Reads a parsed document; `source` names the file in error messages.
inline saved_trace read_trace_tree(const json_tree& root, const std::string& source) {
  const json_tree* events = json_child(root, "traceEvents");
  if (events == nullptr) {
    // Chrome's other form: the document is the array of events itself.
    if (root.empty() || !json_is_array(root))
      throw error("trace " + source + " has no traceEvents array: not a Chrome trace JSON");
    events = &root;
  }
  if (!json_is_array(*events)) throw error("trace " + source + ": traceEvents is not an array");

  saved_trace out;
  const json_tree* other = json_child(root, "otherData");
  const bool strata = other != nullptr && json_child(*other, "strata_version") != nullptr;
  bool kineto = !strata && (json_child(root, "schemaVersion") != nullptr ||
                            json_child(root, "deviceProperties") != nullptr);
  if (!strata && !kineto) {
    for (const auto& kv : *events) {
      const std::string* cat = json_value(kv.second, "cat");
      if (cat != nullptr && kineto_only_category(*cat)) {
        kineto = true;
        break;
      }
    }
  }
  out.format = strata ? "strata" : kineto ? "kineto" : "chrome";
  out.device_name = kineto ? "CUDA" : "NEURON";
  if (strata) {
    if (const std::string* d = json_value(*other, "dropped")) {
      const auto n = parse_unsigned(*d);
      if (!n) throw error("trace " + source + ": otherData.dropped is not a count: " + *d);
      out.records_lost = *n;
    }
    if (const std::string* p = json_value(*other, "overflow_policy"))
      if (*p == overflow_policy_name(overflow_policy::overwrite_oldest))
        out.overflow = overflow_policy::overwrite_oldest;
  }

  std::unordered_map<std::string, std::uint64_t> track_of;
  std::unordered_map<std::uint64_t, std::vector<op_event>> open;  // B events per track
  std::size_t index = 0;
  for (const auto& kv : *events) {
    const json_tree& e = kv.second;
    const std::size_t at = index++;
    const auto where = [&] { return "trace " + source + ", traceEvents[" + std::to_string(at) + "]"; };
    const std::string* ph = json_value(e, "ph");
    if (ph == nullptr || (*ph != "X" && *ph != "B" && *ph != "E")) {
      ++out.skipped;
      continue;
    }
    const std::string* cat_value = json_value(e, "cat");
    const std::string cat = cat_value != nullptr ? *cat_value : std::string();
    const category_rule rule = kineto ? kineto_category(cat) : strata_category(cat);
    if (!rule.is_op && *ph != "E") {
      ++out.skipped;
      continue;
    }
    const std::string* pid = json_value(e, "pid");
    const std::string* tid = json_value(e, "tid");
    std::string track_key = pid != nullptr ? *pid : std::string();
    track_key += '\0';
    if (tid != nullptr) track_key += *tid;
    const std::uint64_t track =
        track_of.try_emplace(std::move(track_key), track_of.size()).first->second;

    const std::string* ts_text = json_value(e, "ts");
    const auto ts = ts_text != nullptr ? parse_us_as_ns(*ts_text) : std::nullopt;
    if (!ts) throw error(where() + ": ts is missing or not a number of microseconds");

    if (*ph == "E") {  // closes the latest open B of its track
      auto& stack = open[track];
      if (stack.empty()) {
        ++out.skipped;
        continue;
      }
      op_event ev = std::move(stack.back());
      stack.pop_back();
      ev.end_ns = *ts;
      out.events.push_back(std::move(ev));
      continue;
    }

    op_event ev;
    const std::string* name = json_value(e, "name");
    if (name != nullptr) ev.name = *name;
    ev.where = rule.where;
    ev.track = track;
    ev.begin_ns = *ts;
    if (const json_tree* args = json_child(e, "args")) {
      if (rule.correlation_key != nullptr)
        if (const std::string* c = json_value(*args, rule.correlation_key))
          ev.correlation_id = parse_unsigned(*c).value_or(0);
      if (const json_tree* dims = json_child(*args, "Input Dims")) append_dims(ev.input_shapes, *dims);
    }
    if (*ph == "B") {
      open[track].push_back(std::move(ev));
      continue;
    }
    const std::string* dur_text = json_value(e, "dur");
    const auto dur = dur_text != nullptr ? parse_us_as_ns(*dur_text) : std::nullopt;
    if (!dur || *dur < 0 || *ts > std::numeric_limits<std::int64_t>::max() - *dur)
      throw error(where() + ": dur is missing or not a non-negative number of microseconds");
    ev.end_ns = *ts + *dur;
    out.events.push_back(std::move(ev));
  }
  std::vector<bool> used(track_of.size(), false);
  for (const auto& [track, stack] : open) out.skipped += stack.size();  // B without E
  for (const op_event& ev : out.events) used[ev.track] = true;
  out.tracks = static_cast<std::size_t>(std::count(used.begin(), used.end(), true));
  return out;
}

}  // namespace detail

/// Reads a Chrome trace JSON document from `in`; `source` names it in error messages.
/// Raises `strata::error` when it is not valid JSON or holds no traceEvents array.
inline saved_trace read_trace(std::istream& in, const std::string& source = "<stream>") {
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  // PropertyTree parses (and frees) nested values recursively, so a hostile document of a
  // million '[' would overflow the stack; a trace nests a few levels deep.
  if (const std::size_t line = detail::line_nested_too_deep(text); line != 0)
    throw error("trace " + source + " is not a trace: values nest more than " +
                std::to_string(detail::max_json_depth) + " levels deep (line " +
                std::to_string(line) + ")");
  std::istringstream parsed(std::move(text));
  detail::json_tree root;
  try {
    boost::property_tree::read_json(parsed, root);
  } catch (const boost::property_tree::json_parser_error& e) {
    throw error("trace " + source + " is not valid JSON: line " + std::to_string(e.line()) + ": " +
                e.message());
  }
  return detail::read_trace_tree(root, source);
}

/// Reads the trace.json at `path` (strata's, or torch.profiler's Kineto trace): its complete
/// (`X`) events, and `B`/`E` pairs, as op_events. Raises `strata::error` naming the file when it
/// cannot be read, is not valid JSON or has no traceEvents array.
///
/// **Example**
/// ```
/// strata::saved_trace t = strata::read_trace("strata-out/trace.json");
/// fmt::print("{}", strata::key_averages(t).table({.sort_by = "self_cpu_time_total"}));
/// ```
inline saved_trace read_trace(const std::filesystem::path& path) {
  const std::string source = "'" + path.string() + "'";
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw error("cannot read trace " + source + ": no such file");
  if (std::filesystem::is_directory(status))
    throw error("cannot read trace " + source + ": it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("cannot read trace " + source + ": cannot open it (permissions?)");
  return read_trace(in, source);
}

/// key_averages() of a saved trace, labelled with its device name and lost-record count.
inline averages key_averages(const saved_trace& trace, key_averages_options opt = {}) {
  opt.device_name = trace.device_name;
  averages out = key_averages(std::span<const op_event>(trace.events), opt);
  out.records_lost = trace.records_lost;
  out.overflow = trace.overflow;
  return out;
}

}  // namespace v1
}  // namespace strata
