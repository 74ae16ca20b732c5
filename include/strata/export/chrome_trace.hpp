// strata/export/chrome_trace.hpp: a session as Chrome trace JSON (Perfetto UI, chrome://tracing).
//
// Layout of the file (see docs/trace-format.md):
//   {"displayTimeUnit":"ns",
//    "otherData":{...flat string and number facts: version, clock, totals...},
//    "strataThreads":[{pid, tid, name, recorded, dropped, exited}, ...],
//    "traceEvents":[metadata (M), then per thread: X, i and C events, oldest first,
//                   then flow events (s, t, f) along correlation ids]}
// Timestamps are microseconds on the steady clock with three decimals, so nanoseconds survive.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "strata/core/config.hpp"
#include "strata/core/layer.hpp"
#include "strata/core/record.hpp"
#include "strata/core/session.hpp"
#include "strata/export/atomic_file.hpp"
#include "strata/export/flows.hpp"
#include "strata/export/json_escape.hpp"

namespace strata {
inline namespace v1 {

/// What an export wrote.
struct export_result {
  std::filesystem::path path;
  std::uint64_t events = 0;  ///< trace events written, metadata included
  std::uint64_t bytes = 0;
};

namespace detail {

/// Streams trace events into a file through a bounded buffer.
class chrome_trace_writer {
 public:
  explicit chrome_trace_writer(const std::filesystem::path& path) : file_(path) {}

  fmt::memory_buffer& buffer() noexcept { return buf_; }

  /// Starts a new event in the traceEvents array.
  void next_event() {
    if (events_ != 0) buf_.push_back(',');
    buf_.push_back('\n');
    ++events_;
    if (buf_.size() >= flush_threshold) flush();
  }

  void flush() {
    file_.write(std::string_view(buf_.data(), buf_.size()));
    buf_.clear();
  }

  export_result finish(const std::filesystem::path& path) {
    flush();
    file_.commit();
    return {path, events_, file_.bytes_written()};
  }

 private:
  static constexpr std::size_t flush_threshold = 1 << 16;
  atomic_file file_;
  fmt::memory_buffer buf_;
  std::uint64_t events_ = 0;
};

/// Appends nanoseconds as microseconds with exactly three decimals.
inline void append_us(fmt::memory_buffer& out, std::int64_t ns) {
  if (ns < 0) {
    out.push_back('-');
    ns = -ns;
  }
  fmt::format_to(std::back_inserter(out), "{}.{:03}", ns / 1000, ns % 1000);
}

}  // namespace detail

/// Writes `data` to `path` as Chrome trace JSON, atomically. Raises `strata::error` when the
/// file cannot be written.
inline export_result write_chrome_trace(const trace_data& data, const std::filesystem::path& path) {
  detail::chrome_trace_writer w(path);
  auto& out = w.buffer();
  auto it = std::back_inserter(out);
  const std::uint64_t pid = data.pid;

  // Header and the session's facts. otherData stays flat (strings and numbers) because that is
  // what every viewer accepts; per-thread detail goes into its own top-level array.
  fmt::format_to(it, "{{\"displayTimeUnit\":\"ns\",\n\"otherData\":{{\"strata_version\":\"{}\","
                 "\"clock_source\":\"{}\",\"ns_per_tick\":{},\"overflow_policy\":\"{}\","
                 "\"buffer_capacity\":{},\"recorded\":{},\"dropped\":{},\"threads\":{},\"layers\":\"",
                 version, clock_source_name(data.clock.source()), data.clock.ns_per_tick(),
                 overflow_policy_name(data.overflow), data.buffer_capacity, data.recorded(),
                 data.lost(), data.threads.size());
  bool first_layer = true;
  for (int l = 0; l < layer_count; ++l) {
    if (!data.layers.contains(static_cast<layer>(l))) continue;
    if (!first_layer) out.push_back(',');
    first_layer = false;
    const std::string_view n = layer_name(static_cast<layer>(l));
    out.append(n.data(), n.data() + n.size());
  }
  fmt::format_to(it, "\",\"session_start_us\":");
  detail::append_us(out, data.clock.to_ns(data.start_ticks));
  fmt::format_to(it, ",\"session_stop_us\":");
  detail::append_us(out, data.clock.to_ns(data.stop_ticks));
  fmt::format_to(it, "}},\n\"strataThreads\":[");
  for (std::size_t i = 0; i < data.threads.size(); ++i) {
    const thread_track& t = data.threads[i];
    fmt::format_to(it, "{}{{\"pid\":{},\"tid\":{},\"name\":", i == 0 ? "" : ",",
                   t.pid != 0 ? t.pid : pid, t.tid);
    detail::append_json_string(out, t.name);
    fmt::format_to(it, ",\"recorded\":{},\"dropped\":{},\"exited\":{}}}", t.records.size(), t.lost,
                   t.exited);
  }
  fmt::format_to(it, "],\n\"traceEvents\":[");

  // Metadata: names and order of the process and its threads.
  w.next_event();
  fmt::format_to(it, "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":", pid);
  detail::append_json_string(out, data.process_name);
  out.append(std::string_view("}}"));
  // Device cores are processes of their own, after the host (tracks come grouped by pid).
  std::uint64_t last_device_pid = 0;
  std::uint32_t process_order = 0;
  for (const thread_track& t : data.threads) {
    if (t.pid == 0 || t.pid == last_device_pid) continue;
    last_device_pid = t.pid;
    w.next_event();
    fmt::format_to(it, "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":", t.pid);
    detail::append_json_string(out, t.process_name);
    out.append(std::string_view("}}"));
    w.next_event();
    fmt::format_to(it, "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"tid\":0,\"args\":{{\"sort_index\":{}}}}}",
                   t.pid, ++process_order);
  }
  const auto pid_of = [&](const thread_track& t) { return t.pid != 0 ? t.pid : pid; };
  for (const thread_track& t : data.threads) {
    w.next_event();
    fmt::format_to(it, "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":", pid_of(t), t.tid);
    detail::append_json_string(out, t.name.empty() ? fmt::format("thread {}", t.tid) : t.name);
    out.append(std::string_view("}}"));
    w.next_event();
    fmt::format_to(it, "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}",
                   pid_of(t), t.tid, t.sort_index);
  }

  // Each distinct descriptor's name and category are escaped once, not once per event.
  std::unordered_map<const site*, std::string> prefix;
  const auto prefix_of = [&](const site* s) -> const std::string& {
    auto found = prefix.find(s);
    if (found != prefix.end()) return found->second;
    fmt::memory_buffer p;
    static constexpr std::string_view phase[] = {"X", "i", "C"};
    fmt::format_to(std::back_inserter(p), "{{\"ph\":\"{}\",\"cat\":",
                   phase[static_cast<int>(s->kind)]);
    detail::append_json_string(p, s->category != nullptr ? std::string_view(s->category)
                                                         : layer_name(s->where));
    p.append(std::string_view(",\"name\":"));
    detail::append_json_string(p, s->name != nullptr ? std::string_view(s->name) : std::string_view());
    return prefix.emplace(s, fmt::to_string(p)).first->second;
  };

  for (const thread_track& t : data.threads) {
    for (const record& r : t.records) {
      w.next_event();
      const std::string& head = prefix_of(r.where);
      out.append(head.data(), head.data() + head.size());
      fmt::format_to(it, ",\"pid\":{},\"tid\":{},\"ts\":", pid_of(t), t.tid);
      const std::int64_t begin_ns = data.ns_of(t, r.begin);
      detail::append_us(out, begin_ns);
      switch (r.kind()) {
        case record_kind::scope:
          out.append(std::string_view(",\"dur\":"));
          detail::append_us(out, data.ns_of(t, r.end) - begin_ns);
          break;
        case record_kind::instant:
          out.append(std::string_view(",\"s\":\"t\""));
          break;
        case record_kind::counter: {
          const double v = r.counter_value();
          // JSON has no NaN or infinity: such a sample is written as null.
          if (std::isfinite(v))
            fmt::format_to(it, ",\"args\":{{\"value\":{}}}}}", v);
          else
            out.append(std::string_view(",\"args\":{\"value\":null}}"));
          continue;
        }
      }
      // Arguments (input shapes and small values) were rendered as JSON once per distinct set.
      const char* args = r.where->args_json;
      if (args == nullptr && r.payload == 0) {
        out.push_back('}');
        continue;
      }
      out.append(std::string_view(",\"args\":{"));
      if (args != nullptr) out.append(std::string_view(args));
      if (r.payload != 0)
        fmt::format_to(it, "{}\"correlation_id\":{}", args != nullptr ? "," : "", r.payload);
      out.append(std::string_view("}}"));
    }
    // Lost records are visible where the user looks: an instant at the end of the thread's track.
    if (t.lost != 0) {
      w.next_event();
      fmt::format_to(it, "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"strata\",\"name\":\"strata: {} records lost ({})\","
                     "\"pid\":{},\"tid\":{},\"ts\":", t.lost, overflow_policy_name(data.overflow), pid_of(t), t.tid);
      detail::append_us(out, data.clock.to_ns(data.stop_ticks));
      fmt::format_to(it, ",\"args\":{{\"lost\":{}}}}}", t.lost);
    }
  }
  // Flow arrows along each correlation id: bound to the enclosing slice at the slice's own
  // start (`bp: e` on the end), as Kineto writes them, so Perfetto UI draws them.
  for (const detail::flow_point& f : detail::correlation_flows(data)) {
    const thread_track& t = data.threads[f.thread];
    w.next_event();
    fmt::format_to(it, "{{\"ph\":\"{}\",\"id\":{},\"cat\":\"strata.flow\",\"name\":\"correlation\",{}"
                   "\"pid\":{},\"tid\":{},\"ts\":", f.phase, f.id, f.phase == 'f' ? "\"bp\":\"e\"," : "",
                   pid_of(t), t.tid);
    detail::append_us(out, data.ns_of(t, t.records[f.record].begin));
    fmt::format_to(it, ",\"args\":{{\"correlation_id\":{}}}}}", f.correlation_id);
  }
  out.append(std::string_view("\n]}\n"));
  return w.finish(path);
}

}  // namespace v1
}  // namespace strata
