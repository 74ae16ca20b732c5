// strata/export/chrome_trace.hpp: a session as Chrome trace JSON (Perfetto UI, chrome://tracing).
//
// Layout of the file (see docs/trace-format.md):
//   {"displayTimeUnit":"ns",
//    "otherData":{...flat string and number facts: version, clock, totals...},
//    "strataThreads":[{pid, tid, name, recorded, dropped, exited[, steps_of]}, ...],
//    "traceEvents":[metadata (M), then per thread: X, i and C events, oldest first,
//                   then flow events (s, t, f) along correlation ids]}
// Timestamps are microseconds on the steady clock with three decimals, so nanoseconds survive.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "strata/config.hpp"
#include "strata/analysis/memory.hpp"
#include "strata/export/trace_format.hpp"
#include "strata/record.hpp"
#include "strata/detail/flows.hpp"
#include "strata/detail/id_index.hpp"
#include "strata/detail/huge_page_allocator.hpp"
#include "strata/detail/json_escape.hpp"
#include "strata/detail/padded_bytes.hpp"
#include "strata/detail/record_order.hpp"
#include "strata/detail/session.hpp"
#include "strata/detail/trace_file.hpp"

namespace strata {
inline namespace v1 {

// ---- numbers as JSON text, written straight into a char buffer ---------------------------
//
// The Chrome trace writer spends most of its time on numbers (two timestamps, a pid, a tid and
// often a correlation id per event), so they are written here by hand: two digits per step
// from a table, no format string to parse, no buffer growth checks. Each function writes at
// `p`, which must have room for the stated maximum, and returns the end of what it wrote.
// The text is exactly what {fmt}'s "{}" (and "{}.{:03}" for microseconds) would produce.
namespace detail {

/// Most characters `write_decimal` writes: 18446744073709551615.
inline constexpr std::size_t max_decimal_chars = 20;
/// Most characters `write_us` writes: a sign, 16 digits, a point and three decimals.
inline constexpr std::size_t max_us_chars = 21;
/// Most characters `write_json_number` writes: -1.7976931348623157e+308, with room to spare.
inline constexpr std::size_t max_json_number_chars = 32;

inline constexpr char digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/// Writes the two digits of `v` < 100.
inline char* write_two_digits(char* p, std::uint64_t v) noexcept {
  p[0] = digit_pairs[v * 2];
  p[1] = digit_pairs[v * 2 + 1];
  return p + 2;
}

/// Writes `v` < 10^8 as exactly eight digits, zeros in front.
inline char* write_eight_digits(char* p, std::uint64_t v) noexcept {
  const std::uint64_t high = v / 10000, low = v % 10000;
  write_two_digits(p, high / 100);
  write_two_digits(p + 2, high % 100);
  write_two_digits(p + 4, low / 100);
  write_two_digits(p + 6, low % 100);
  return p + 8;
}

/// Writes `v` < 10^8 without zeros in front.
inline char* write_up_to_eight_digits(char* p, std::uint64_t v) noexcept {
  const int digits = v < 10000 ? (v < 100 ? (v < 10 ? 1 : 2) : (v < 1000 ? 3 : 4))
                               : (v < 1000000 ? (v < 100000 ? 5 : 6) : (v < 10000000 ? 7 : 8));
  char* const end = p + digits;
  char* q = end;
  while (v >= 100) {
    q -= 2;
    write_two_digits(q, v % 100);
    v /= 100;
  }
  if (v >= 10)
    write_two_digits(q - 2, v);
  else
    q[-1] = static_cast<char>('0' + v);
  return end;
}

/// Writes `v` in decimal, no sign, no zeros in front. Timestamps have 10 to 14 digits, so
/// the digits go in blocks of eight with no loop over the digit count.
inline char* write_decimal(char* p, std::uint64_t v) noexcept {
  constexpr std::uint64_t e8 = 100000000;
  if (v < e8) return write_up_to_eight_digits(p, v);
  if (v < e8 * e8) return write_eight_digits(write_up_to_eight_digits(p, v / e8), v % e8);
  p = write_up_to_eight_digits(p, v / (e8 * e8));  // at most 1844
  return write_eight_digits(write_eight_digits(p, v / e8 % e8), v % e8);
}

/// ".000" to ".999": the point and three decimals of a microsecond value in one 4-byte copy.
inline constexpr auto point_and_three_digits = [] {
  std::array<char, 4000> t{};
  for (std::size_t i = 0; i < 1000; ++i) {
    t[i * 4] = '.';
    t[i * 4 + 1] = static_cast<char>('0' + i / 100);
    t[i * 4 + 2] = static_cast<char>('0' + i / 10 % 10);
    t[i * 4 + 3] = static_cast<char>('0' + i % 10);
  }
  return t;
}();

/// Writes nanoseconds as microseconds with exactly three decimals (`-1.500` for -1500), so a
/// trace keeps nanosecond resolution.
inline char* write_us(char* p, std::int64_t ns) noexcept {
  // The magnitude in unsigned arithmetic: negating INT64_MIN would overflow.
  std::uint64_t magnitude = static_cast<std::uint64_t>(ns);
  if (ns < 0) {
    *p++ = '-';
    magnitude = 0 - magnitude;
  }
  p = write_decimal(p, magnitude / 1000);
  std::memcpy(p, &point_and_three_digits[magnitude % 1000 * 4], 4);
  return p + 4;
}

/// Writes the timestamps of one track, which share their leading digits: the digits above the
/// last four of the whole microseconds are rendered once per 10 ms and copied after that.
/// The text is `write_us`'s.
class us_writer {
 public:
  char* operator()(char* p, std::int64_t ns) noexcept {
    const auto magnitude = static_cast<std::uint64_t>(ns);
    const std::uint64_t us = magnitude / 1000;
    const std::uint64_t high = us / 10000;
    if (ns < 0 || high == 0) return write_us(p, ns);
    if (high != high_) {
      high_ = high;
      high_size_ = static_cast<std::size_t>(write_decimal(high_text_, high) - high_text_);
    }
    std::memcpy(p, high_text_, sizeof high_text_);  // one fixed-size copy; the caller has room
    p += high_size_;
    const std::uint64_t low = us % 10000;
    write_two_digits(p, low / 100);
    write_two_digits(p + 2, low % 100);
    std::memcpy(p + 4, &point_and_three_digits[magnitude % 1000 * 4], 4);
    return p + 8;
  }

  /// Bytes a call may touch.
  static constexpr std::size_t max_chars = 16 + 8;

 private:
  std::uint64_t high_ = 0;  // 0: nothing cached (a high part of 0 is never cached)
  std::size_t high_size_ = 0;
  char high_text_[16] = {};  // at most 15 digits: INT64_MAX / 10^7
};

/// Writes a finite double as {fmt}'s "{}" does: the shortest text that reads back as the same
/// value. Whole numbers (the usual counter sample: a depth, a byte count) take a fast path;
/// {fmt} writes those without a point or exponent below 1e16, and they are exact below 2^53.
inline char* write_json_number(char* p, double v) noexcept {
  constexpr double exact_whole_limit = 9007199254740992.0;  // 2^53
  if (v > -exact_whole_limit && v < exact_whole_limit && !(v == 0 && std::signbit(v))) {
    const auto whole = static_cast<std::int64_t>(v);
    if (static_cast<double>(whole) == v) {
      std::uint64_t magnitude = static_cast<std::uint64_t>(whole);
      if (whole < 0) {
        *p++ = '-';
        magnitude = 0 - magnitude;
      }
      return write_decimal(p, magnitude);
    }
  }
  return fmt::format_to(p, "{}", v);
}

}  // namespace detail

namespace detail {

/// Streams trace events into a file through a bounded buffer.
class chrome_trace_writer {
 public:
  explicit chrome_trace_writer(const std::filesystem::path& path) : file_(path) {
    buf_.reserve(flush_threshold + window_slack);
  }

  /// In huge pages: a buffer of 1 MiB, fresh in every export, is one fault rather than 256.
  using output_buffer = fmt::basic_memory_buffer<char, fmt::inline_buffer_size, huge_page_allocator<char>>;

  output_buffer& buffer() noexcept { return buf_; }

  /// Starts a new event in the traceEvents array.
  void next_event() {
    if (events_ != 0) buf_.push_back(',');
    buf_.push_back('\n');
    ++events_;
    if (buf_.size() >= flush_threshold) flush();
  }

  /// Room for `n` more bytes at the end of the buffer; `commit()` the end of what was written.
  /// The hot loop writes events this way, counting them itself (`add_events`).
  char* reserve(std::size_t n) {
    const std::size_t used = buf_.size();
    buf_.resize(used + n);  // grows the capacity when needed; leaves the bytes as they are
    return buf_.data() + used;
  }
  void commit(const char* end) {
    buf_.resize(static_cast<std::size_t>(end - buf_.data()));
    if (buf_.size() >= flush_threshold) flush();
  }
  /// All the free room left before the next flush, at least `n` bytes; `commit()` the end of
  /// what was written.
  std::span<char> window(std::size_t n) {
    if (buf_.size() >= flush_threshold) flush();
    const std::size_t used = buf_.size();
    const std::size_t room = std::max(n, flush_threshold + window_slack - used);
    buf_.resize(used + room);
    return {buf_.data() + used, room};
  }
  void add_events(std::uint64_t n) noexcept { events_ += n; }
  std::uint64_t events() const noexcept { return events_; }

  void flush() {
    file_.write(std::string_view(buf_.data(), buf_.size()));
    buf_.clear();
  }

  export_result finish(const std::filesystem::path& path) {
    flush();
    file_.commit();
    return {path.string(), events_, file_.bytes_written()};
  }

 private:
  // Large writes: a trace is hundreds of megabytes, and each write() costs a system call.
  static constexpr std::size_t flush_threshold = std::size_t{1} << 20;
  static constexpr std::size_t window_slack = std::size_t{1} << 16;
  trace_file file_;
  output_buffer buf_;
  std::uint64_t events_ = 0;
};

/// Appends nanoseconds as microseconds with exactly three decimals.
template <std::size_t N, class Allocator>
void append_us(fmt::basic_memory_buffer<char, N, Allocator>& out, std::int64_t ns) {
  char text[max_us_chars];
  out.append(text, write_us(text, ns));
}

/// A piece of JSON rendered once and copied into many events, in 32-byte blocks
/// (detail/padded_bytes.hpp).
using json_fragment = padded_bytes<32>;

/// What every event of one site on one track shares, rendered once: everything before the
/// timestamp, and what follows the numbers with and without a correlation id.
struct event_text {
  record_kind kind = record_kind::scope;
  json_fragment lead;        ///< `,\n{"ph":..,"cat":..,"name":..,"pid":..,"tid":..,"ts":`
  json_fragment tail;        ///< scope: after dur; instant: after ts (no correlation id)
  json_fragment tail_open;   ///< the same up to a correlation id's digits; `}}` follows them
  std::size_t max_bytes = 0; ///< most bytes one event writes, padding included
};

/// The event texts of one track's sites, rendered once per site and found by its address.
class event_texts {
 public:
  /// `where` is `"pid":..,"tid":..,"ts":` of the track.
  explicit event_texts(std::string where) : where_(std::move(where)) {}

  const event_text& of(const site* s) {
    return texts_.find_or_make(s, [&] { return render(*s); });
  }

 private:
  event_text render(const site& s) const {
    static constexpr std::string_view phase[] = {"X", "i", "C"};
    fmt::memory_buffer p;
    fmt::format_to(std::back_inserter(p), ",\n{{\"ph\":\"{}\",\"cat\":", phase[static_cast<int>(s.kind)]);
    append_json_string(p, s.category != nullptr ? std::string_view(s.category) : layer_name(s.layer));
    p.append(std::string_view(",\"name\":"));
    append_json_string(p, s.name != nullptr ? std::string_view(s.name) : std::string_view());
    p.push_back(',');
    p.append(where_);
    event_text t;
    t.kind = s.kind;
    t.lead = json_fragment(std::string_view(p.data(), p.size()));

    // Arguments (input shapes and small values) were rendered as JSON once per distinct set.
    const std::string_view before = s.kind == record_kind::instant ? ",\"s\":\"t\"" : "";
    std::string tail(before), tail_open(before);
    if (s.kind == record_kind::counter) {
      tail = ",\"args\":{\"value\":";  // the value and `}}` follow
    } else if (s.args_json == nullptr) {
      tail += "}";
      tail_open += ",\"args\":{\"correlation_id\":";
    } else {
      const std::string args = fmt::format(",\"args\":{{{}", s.args_json);
      tail += args + "}}";
      tail_open += args + ",\"correlation_id\":";
    }
    t.tail = json_fragment(tail);
    t.tail_open = json_fragment(tail_open);
    t.max_bytes = t.lead.padded_size() + std::max(t.tail.padded_size(), t.tail_open.padded_size()) +
                  us_writer::max_chars + max_us_chars + std::string_view(",\"dur\":").size() +
                  std::max(max_decimal_chars, std::string_view("null").size()) +
                  max_json_number_chars + std::string_view("}}").size() + json_fragment::block;
    return t;
  }

  std::string where_;
  by_address<event_text> texts_;
};

/// Writes the events of `data.threads[track]`'s records, offering each to `flows`; returns
/// how many it wrote.
inline std::uint64_t write_track_events(chrome_trace_writer& w, const trace_data& data,
                                        std::size_t track, std::string where, flow_builder& flows) {
  const thread_track& t = data.threads[track];
  event_texts texts(std::move(where));
  // Copies, not references: the loop stores through char pointers, which may alias anything
  // whose address is known, and the compiler would reload these after every store.
  const clock_calibration clock = data.clock;
  const bool in_ns = t.timestamps_in_ns;
  const auto ns_of = [clock, in_ns](std::uint64_t ticks) {
    return in_ns ? static_cast<std::int64_t>(ticks) : clock.to_ns(ticks);
  };
  us_writer ts;
  // The loop writes into a window of the buffer and asks the writer for a new one only when
  // an event might not fit.
  char* p = nullptr;
  char* end = nullptr;
  std::size_t index = 0;  // of the record in the track, for the flows
  std::uint64_t memory = 0;  // memory records: written with their sizes and totals afterwards
  read_track(data, t, [&](const record* const records, const std::size_t n) {
  for (std::size_t k = 0; k < n; ++k, ++index) {
    const record& r = records[k];
    if (r.site->kind == record_kind::memory) [[unlikely]] {
      ++memory;
      continue;
    }
    const event_text& e = texts.of(r.site);
    if (static_cast<std::size_t>(end - p) < e.max_bytes) {
      if (p != nullptr) w.commit(p);
      const auto window = w.window(e.max_bytes);
      p = window.data();
      end = p + window.size();
    }
    const std::int64_t begin_ns = ns_of(r.begin);
    const std::uint64_t payload = r.payload;
    if (payload != 0) flows.offer(track, index, r);
    const record_kind kind = e.kind;
    p = ts(e.lead.copy_to(p), begin_ns);
    if (kind == record_kind::scope) {
      std::memcpy(p, ",\"dur\":", 7);
      p = write_us(p + 7, ns_of(r.end) - begin_ns);
    } else if (kind == record_kind::counter) {
      const double v = r.counter_value();
      p = e.tail.copy_to(p);
      // JSON has no NaN or infinity: such a sample is written as null.
      if (std::isfinite(v)) {
        p = write_json_number(p, v);
      } else {
        std::memcpy(p, "null", 4);
        p += 4;
      }
      std::memcpy(p, "}}", 2);
      p += 2;
      continue;
    }
    // An instant's tail starts with `"s":"t"`.
    if (payload == 0) {
      p = e.tail.copy_to(p);
    } else {
      p = write_decimal(e.tail_open.copy_to(p), payload);
      std::memcpy(p, "}}", 2);
      p += 2;
    }
  }
  });
  if (p != nullptr) w.commit(p);
  return index - memory;
}

/// Writes Kineto's `[memory]` instants (as torch 1.13.1 writes them: an allocation's `Bytes`
/// is its size, a free's minus its allocation's) and a counter track of allocated and one of
/// reserved bytes per device (each through `next_event`, which counts it); returns how many.
inline std::uint64_t write_memory_events(chrome_trace_writer& w, const trace_data& data,
                                         const memory_profile& memory, std::uint64_t pid) {
  auto& out = w.buffer();
  auto it = std::back_inserter(out);
  std::uint64_t events = 0;
  const auto pid_of = [&](const thread_track& t) { return t.pid != 0 ? t.pid : pid; };
  for (const memory_sample& m : memory.events) {
    const thread_track& t = data.threads[m.track];
    const std::string label = device_label(m.device);
    if (m.op != memory_op::reserve) {
      w.next_event();
      fmt::format_to(it, "{{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\","
                     "\"pid\":{},\"tid\":{},\"ts\":", pid_of(t), t.tid);
      append_us(out, m.ns);
      fmt::format_to(it, ",\"args\":{{\"Device Type\":{},\"Device Id\":{},\"Addr\":{},\"Bytes\":{},"
                     "\"Total Allocated\":{},\"Total Reserved\":{}}}}}",
                     static_cast<int>(m.device.type), static_cast<int>(m.device.index), m.address, m.bytes,
                     m.total_allocated, m.total_reserved);
      ++events;
    }
    w.next_event();
    fmt::format_to(it, "{{\"ph\":\"C\",\"cat\":\"memory\",\"name\":\"{} {}\",\"pid\":{},\"tid\":0,\"ts\":",
                   m.op == memory_op::reserve ? "Reserved" : "Allocated", label, pid);
    append_us(out, m.ns);
    fmt::format_to(it, ",\"args\":{{\"value\":{}}}}}", m.op == memory_op::reserve ? m.total_reserved : m.total_allocated);
    ++events;
  }
  return events;
}

}  // namespace detail

namespace detail {

/// `,"distributedInfo":{...}` on one line, as Kineto writes it: backend, rank, world_size, pg_count and
/// pg_config (torch's default group of every rank when `d.groups` is empty), plus local_rank.
template <class Buffer>
void append_distributed_info(Buffer& out, const distributed_info& d) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, ",\n\"distributedInfo\":{{\"backend\":");
  append_json_string(out, d.backend);
  // `"rank": R` with the space Kineto writes: HTA finds a file's rank with the pattern
  // `"rank":\s+(\d+)` on the file's lines, and reads a file without a match as rank 0.
  fmt::format_to(it, ",\"rank\": {},\"world_size\":{}", d.rank, d.world_size);
  if (d.local_rank >= 0) fmt::format_to(it, ",\"local_rank\":{}", d.local_rank);
  const auto group = [&](std::string_view name, std::string_view desc, std::string_view config,
                         const auto& ranks, std::size_t size) {
    fmt::format_to(it, "{{\"pg_name\":");
    append_json_string(out, name);
    fmt::format_to(it, ",\"pg_desc\":");
    append_json_string(out, desc);
    fmt::format_to(it, ",\"backend_config\":");
    append_json_string(out, config);
    fmt::format_to(it, ",\"pg_size\":{},\"ranks\":[", size);
    ranks(it);
    fmt::format_to(it, "]}}");
  };
  if (d.groups.empty()) {
    fmt::format_to(it, ",\"pg_count\":1,\"pg_config\":[");
    group("0", "default_pg", d.backend, [&](auto o) {
      for (int r = 0; r < d.world_size; ++r) fmt::format_to(o, "{}{}", r == 0 ? "" : ",", r);
    }, static_cast<std::size_t>(d.world_size));
  } else {
    fmt::format_to(it, ",\"pg_count\":{},\"pg_config\":[", d.groups.size());
    for (std::size_t g = 0; g < d.groups.size(); ++g) {
      if (g != 0) out.push_back(',');
      const process_group& pg = d.groups[g];
      group(pg.name, pg.description, pg.backend_config, [&](auto o) {
        for (std::size_t k = 0; k < pg.ranks.size(); ++k) fmt::format_to(o, "{}{}", k == 0 ? "" : ",", pg.ranks[k]);
      }, pg.ranks.size());
    }
  }
  fmt::format_to(it, "]}}");
}

}  // namespace detail

/// Writes `data` to `path` as Chrome trace JSON, atomically; `path` ends in `.json`, or in
/// `.json.gz` to be written gzip-compressed (streamed, zlib loaded at run time). Raises
/// `strata::error` for another name (strata/export/trace_format.hpp), when the file cannot be
/// written or, for `.gz`, when zlib cannot be loaded.
inline export_result write_chrome_trace(const trace_data& data, const std::filesystem::path& path) {
  require_trace_format(path.string(), trace_format::chrome_json);
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
  if (const auto [flops, hbm] = data.device_peaks(); flops > 0 || hbm > 0) {
    // The device's peaks, for MFU and MBU when the trace is read again (strata-report
    // --utilization): TFLOP/s and GB/s, as Neuron's documentation states them.
    fmt::format_to(it, ",\"peak_tflops\":{},\"peak_hbm_gbps\":{}", flops / 1e12, hbm / 1e9);
  }
  if (data.memory.limit != 0) {
    // A lossless session's memory: its limit, what went through the spill file, its peak.
    fmt::format_to(it, ",\"memory_limit\":{},\"spilled\":{},\"spill_bytes\":{},\"peak_memory\":{}",
                   data.memory.limit, data.memory.spilled, data.memory.spill_bytes, data.memory.peak);
    if (!data.memory.spill_error.empty()) {
      fmt::format_to(it, ",\"spill_error\":");
      detail::append_json_string(out, data.memory.spill_error);
    }
  }
  // Memory: counts in otherData; the leaks themselves in strataMemoryLeaks below.
  const memory_profile memory = data.profile_memory ? read_memory(data) : memory_profile{};
  if (data.profile_memory)
    fmt::format_to(it, ",\"memory_events\":{},\"memory_unpaired_frees\":{},\"memory_leaks\":{},\"memory_leaked_bytes\":{}",
                   memory.events.size(), memory.unpaired_frees, memory.leaks.size(), memory.leaked_bytes());
  out.push_back('}');
  if (data.distributed.known()) detail::append_distributed_info(out, data.distributed);
  if (data.base_time_ns != 0) fmt::format_to(it, ",\n\"baseTimeNanoseconds\":{}", data.base_time_ns);
  fmt::format_to(it, ",\n\"strataThreads\":[");
  for (std::size_t i = 0; i < data.threads.size(); ++i) {
    const thread_track& t = data.threads[i];
    fmt::format_to(it, "{}{{\"pid\":{},\"tid\":{},\"name\":", i == 0 ? "" : ",",
                   t.pid != 0 ? t.pid : pid, t.tid);
    detail::append_json_string(out, t.name);
    fmt::format_to(it, ",\"recorded\":{},\"dropped\":{},\"exited\":{}", t.record_count(), t.lost,
                   t.exited);
    if (t.steps) fmt::format_to(it, ",\"steps_of\":{}", t.steps_of);
    out.push_back('}');
  }
  if (!memory.leaks.empty()) {
    fmt::format_to(it, "],\n\"strataMemoryLeaks\":[");
    for (std::size_t i = 0; i < memory.leaks.size(); ++i) {
      const memory_leak& l = memory.leaks[i];
      fmt::format_to(it, "{}{{\"Device Type\":{},\"Device Id\":{},\"Addr\":{},\"Bytes\":{},\"tid\":{},\"ts\":",
                     i == 0 ? "" : ",", static_cast<int>(l.device.type), static_cast<int>(l.device.index), l.address,
                     l.bytes, data.threads[l.track].tid);
      detail::append_us(out, l.ns);
      out.push_back('}');
    }
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
    // A steps track says whose steps it holds, so that a reader can tell them from a thread.
    if (t.steps) fmt::format_to(it, ",\"steps_of\":{}", t.steps_of);
    out.append(std::string_view("}}"));
    w.next_event();
    fmt::format_to(it, "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}",
                   pid_of(t), t.tid, t.sort_index);
  }

  // Where each track's events are, `"pid":..,"tid":..,"ts":`, rendered once per track.
  std::vector<std::string> where(data.threads.size());
  for (std::size_t i = 0; i < data.threads.size(); ++i)
    where[i] = fmt::format("\"pid\":{},\"tid\":{},\"ts\":", pid_of(data.threads[i]), data.threads[i].tid);

  // The metadata came first, so every record's event follows another and starts with a comma.
  detail::flow_builder flow_paths(data);
  for (std::size_t i = 0; i < data.threads.size(); ++i) {
    const thread_track& t = data.threads[i];
    w.add_events(detail::write_track_events(w, data, i, where[i], flow_paths));
    // Lost records are visible where the user looks: an instant at the end of the thread's track.
    if (t.lost != 0) {
      w.next_event();
      fmt::format_to(it, "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"strata\",\"name\":\"strata: {} records lost ({})\","
                     "\"pid\":{},\"tid\":{},\"ts\":", t.lost, overflow_policy_name(data.overflow), pid_of(t), t.tid);
      detail::append_us(out, data.clock.to_ns(data.stop_ticks));
      fmt::format_to(it, ",\"args\":{{\"lost\":{}}}}}", t.lost);
    }
  }
  if (!memory.events.empty()) detail::write_memory_events(w, data, memory, pid);  // counts its events
  // Flow arrows along each correlation id: bound to the enclosing slice at the slice's own
  // start (`bp: e` on the end), as Kineto writes them, so Perfetto UI draws them.
  const detail::flow_points flows = flow_paths.build();
  const detail::json_fragment flow_head(",\n{\"ph\":\"s\",\"id\":");  // the phase is patched in
  const detail::json_fragment flow_name(",\"cat\":\"strata.flow\",\"name\":\"correlation\",");
  const detail::json_fragment flow_bind("\"bp\":\"e\",");
  const detail::json_fragment flow_args(",\"args\":{\"correlation_id\":");
  std::vector<detail::json_fragment> flow_where;
  flow_where.reserve(where.size());
  for (const std::string& at : where) flow_where.emplace_back(at);
  for (const detail::flow_point& f : flows) {
    const thread_track& t = data.threads[f.thread];
    const detail::json_fragment& at = flow_where[f.thread];
    char* p = w.reserve(flow_head.padded_size() + flow_name.padded_size() + flow_bind.padded_size() +
                        at.padded_size() + flow_args.padded_size() + 2 * detail::max_decimal_chars +
                        detail::max_us_chars + 2);
    char* const start = p;
    p = flow_head.copy_to(p);
    start[9] = f.phase;
    p = flow_name.copy_to(detail::write_decimal(p, f.id));
    if (f.phase == 'f') p = flow_bind.copy_to(p);
    p = detail::write_us(at.copy_to(p), data.ns_of(t, f.begin));
    p = detail::write_decimal(flow_args.copy_to(p), f.correlation_id);
    std::memcpy(p, "}}", 2);
    w.commit(p + 2);
  }
  w.add_events(flows.size());
  out.append(std::string_view("\n]}\n"));
  return w.finish(path);
}

}  // namespace v1
}  // namespace strata
