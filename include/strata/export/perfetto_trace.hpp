// strata/export/perfetto_trace.hpp: a session in Perfetto's native protobuf trace format.
//
// The file is a `perfetto.protos.Trace` (a sequence of `TracePacket`s), which Perfetto UI,
// trace_processor (SQL) and `traceconv` read directly. About a sixth of the JSON's bytes (23.7
// against 145 per record in bench_export's mix), written faster, on every core for a large
// session; docs/trace-format.md has the layout.
//
//   track descriptors (written first; a counter track's by each writing thread before its
//   first sample there)
//     root (uuid 0): processes and threads ordered explicitly
//     host process ── one thread track per thread (named, ranked by registration order), and
//                     one per steps track (a thread's ProfilerStep#N: tid 2^24 + its tid)
//     NeuronCore k ── "engines" ── Kernel, Tensor, Vector, Scalar, GpSimd, DMA queue q, ...
//     each process ── one counter track per counter name
//   sequence 2 + c: the events of span c, oldest first: each track is one span, or a long
//     track several, cut where no slice is open (detail/track_spans.hpp); spans in track order
//     (the sequences of a file written by several threads interleave, a 1 MiB piece at a time)
//     first packet: incremental state cleared, defaults (this track, clock 64), a clock
//       snapshot making clock 64 an incremental clock on CLOCK_MONOTONIC (the trace clock),
//       with CLOCK_BOOTTIME and CLOCK_REALTIME at the same instant (when the session knows
//       them: every clock trace_processor meets must be related to the trace clock)
//     then one packet per event: a timestamp delta in ns and a TrackEvent whose name,
//       category and argument names are interned on the sequence the first time they occur;
//       a counter sampled at the instant of the event before it rides in that event's packet
//       (extra counter values), and flow ids are reused once their flow has ended
//
// The wire format, field numbers (cited from Perfetto's .proto files), interned strings and
// the packet stream are strata/export/perfetto_packets.hpp's.
#pragma once

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "strata/analysis/memory.hpp"
#include "strata/distributed.hpp"
#include "strata/export/perfetto_packets.hpp"
#include "strata/export/trace_format.hpp"
#include "strata/record.hpp"
#include "strata/detail/flow_marks.hpp"
#include "strata/detail/fork_join.hpp"
#include "strata/detail/id_index.hpp"
#include "strata/detail/json_escape.hpp"
#include "strata/detail/padded_bytes.hpp"
#include "strata/detail/record_order.hpp"
#include "strata/detail/session.hpp"
#include "strata/detail/trace_file.hpp"
#include "strata/detail/track_spans.hpp"

namespace strata {
inline namespace v1 {

namespace detail {
// The wire format and Perfetto's field numbers are strata/export/perfetto_packets.hpp's (public:
// strata-report writes Perfetto traces with them too); the session's writer names them as its own.
namespace proto = ::strata::v1::perfetto::proto;
namespace perfetto {
using namespace ::strata::v1::perfetto;

/// A process's name as the Perfetto trace shows it: `rank R: name` for a rank of a distributed
/// job. The JSON says who the rank is in its top-level `distributedInfo`, which the protobuf
/// format has no place for; Perfetto UI and trace_processor show the process name.
inline std::string with_rank(const std::string& name, const distributed_info& d) {
  if (!d.known()) return name;
  return "rank " + std::to_string(d.rank) + ": " + name;
}

/// Turns the JSON members a site carries (`"Input Dims":[[4,8]],"Input Names":["x"],"n":3`,
/// see args/op_args.hpp; `"cycles":12` on device instructions) into DebugAnnotations: numbers,
/// strings, booleans and nested arrays keep their types. Returns false on text it does not
/// understand; the caller then keeps the JSON whole.
class json_args_reader {
 public:
  json_args_reader(std::string_view text, interner& names) : s_(text), names_(names) {}

  /// Appends one `debug_annotations` field per member to `event`; the names' iids to `iids`.
  bool read(proto::message& event, std::vector<std::uint64_t>& iids) {
    skip_space();
    while (i_ < s_.size()) {
      std::string name;
      if (!string_value(name)) return false;
      skip_space();
      if (!eat(':')) return false;
      proto::message a;
      const std::uint64_t iid = names_.id(interner::annotation_name, name);
      iids.push_back(iid);
      a.varint(annotation_name_iid, iid);
      if (!value(a)) return false;
      event.nested(event_debug_annotations, a);
      skip_space();
      if (i_ < s_.size() && !eat(',')) return false;
      skip_space();
    }
    return true;
  }

 private:
  bool value(proto::message& a) {
    skip_space();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '"') {
      std::string v;
      if (!string_value(v)) return false;
      a.bytes(annotation_string, v);
      return true;
    }
    if (c == '[') {
      ++i_;
      skip_space();
      if (eat(']')) return true;  // an empty array: the name alone
      for (;;) {
        proto::message element;
        if (!value(element)) return false;
        a.nested(annotation_array_values, element);
        skip_space();
        if (eat(']')) return true;
        if (!eat(',')) return false;
      }
    }
    if (c == '{') {
      ++i_;
      skip_space();
      if (eat('}')) return true;
      for (;;) {
        std::string key;
        skip_space();
        if (!string_value(key)) return false;
        skip_space();
        if (!eat(':')) return false;
        proto::message entry;
        entry.bytes(annotation_name, key);
        if (!value(entry)) return false;
        a.nested(annotation_dict_entries, entry);
        skip_space();
        if (eat('}')) return true;
        if (!eat(',')) return false;
      }
    }
    if (literal("true")) {
      a.varint(annotation_bool, 1);
      return true;
    }
    if (literal("false")) {
      a.varint(annotation_bool, 0);
      return true;
    }
    if (literal("null")) {  // a non-finite number: DebugAnnotation has no null of its own
      a.bytes(annotation_legacy_json, "null");
      return true;
    }
    return number(a);
  }

  bool number(proto::message& a) {
    const std::size_t start = i_;
    bool integral = true;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '.' || c == 'e' || c == 'E') {
        integral = false;
      } else if (!(c == '-' || c == '+' || (c >= '0' && c <= '9'))) {
        break;
      }
      ++i_;
    }
    const char* first = s_.data() + start;
    const char* last = s_.data() + i_;
    if (first == last) return false;
    if (integral) {
      if (*first == '-') {
        std::int64_t v = 0;
        if (auto r = std::from_chars(first, last, v); r.ec == std::errc{} && r.ptr == last) {
          a.int64(annotation_int, v);
          return true;
        }
      } else {
        std::uint64_t v = 0;
        if (auto r = std::from_chars(first, last, v); r.ec == std::errc{} && r.ptr == last) {
          a.varint(annotation_uint, v);
          return true;
        }
      }
    }
    double d = 0;
    if (auto r = std::from_chars(first, last, d); r.ec != std::errc{} || r.ptr != last) return false;
    a.double_value(annotation_double, d);
    return true;
  }

  bool string_value(std::string& out) {
    if (!eat('"')) return false;
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      switch (e) {
        case '"': case '\\': case '/': out.push_back(e); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          std::uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xd800 && cp <= 0xdbff) {  // a surrogate pair
            std::uint32_t low = 0;
            if (!eat('\\') || !eat('u') || !hex4(low) || low < 0xdc00 || low > 0xdfff) return false;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(out, cp);
          break;
        }
        default: return false;
      }
    }
    return false;
  }

  bool hex4(std::uint32_t& v) {
    if (s_.size() - i_ < 4) return false;
    const char* first = s_.data() + i_;
    auto r = std::from_chars(first, first + 4, v, 16);
    if (r.ec != std::errc{} || r.ptr != first + 4) return false;
    i_ += 4;
    return true;
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }

  std::string_view s_;
  std::size_t i_ = 0;
  interner& names_;
};

/// Encoded field runs copied into many packets, in 16-byte blocks (detail/padded_bytes.hpp).
using padded_bytes = ::strata::detail::padded_bytes<16>;

/// What every event of one site shares, encoded once for the whole file: the TrackEvent's
/// fields before the per-event ones (type, name, category, the site's arguments).
struct site_event {
  record_kind kind = record_kind::scope;
  std::string fields;                       ///< encoded TrackEvent fields
  /// What follows an event's timestamp delta when it carries nothing of its own (no
  /// correlation id, no flow) on sequence `tail_sequence`: the sequence id, the TrackEvent's
  /// key and length, then `fields`. Rebuilt for each sequence (tracks are written one by one).
  padded_bytes tail;
  std::uint32_t tail_sequence = 0;
  std::uint64_t name_iid = 0;
  std::uint64_t category_iid = 0;
  std::vector<std::uint64_t> annotation_iids;
  std::string counter_name;                 ///< counters: the name of their track
  std::uint64_t counter_pid = 0;            ///< counters: the process of `counter_track`
  std::uint64_t counter_track = 0;          ///< counters: the track uuid in `counter_pid`
};

/// The site events of a file, encoded once per site and found by its address.
class site_events {
 public:
  explicit site_events(interner& names) : names_(names) {}

  site_event& of(const site* s) {
    return events_.find_or_make(s, [&] { return encode(*s); });
  }

 private:
  site_event encode(const site& s) {
    site_event e;
    e.kind = s.kind;
    const std::string_view name = s.name != nullptr ? std::string_view(s.name) : std::string_view();
    const std::string_view category = s.category != nullptr ? std::string_view(s.category) : layer_name(s.layer);
    e.name_iid = names_.id(interner::event_name, name);
    e.category_iid = names_.id(interner::category, category);
    static constexpr std::uint64_t type_of[] = {type_slice_begin, type_instant, type_counter};
    proto::message m;
    m.varint(event_type, type_of[static_cast<int>(s.kind)]);
    if (s.kind == record_kind::counter) {
      // A counter's name is its track's, and trace_processor keeps no category for a counter
      // sample: the event carries only the value (and its track).
      e.counter_name = valid_utf8(name);
    } else {
      m.varint(event_name_iid, e.name_iid).varint(event_category_iids, e.category_iid);
      if (s.args_json != nullptr && *s.args_json != '\0') {
        proto::message args;
        std::vector<std::uint64_t> iids;
        if (json_args_reader(s.args_json, names_).read(args, iids)) {
          m.raw(args.view());
          e.annotation_iids = std::move(iids);
        } else {
          // Not the JSON strata writes: kept whole, trace_processor parses it as JSON.
          proto::message a;
          const std::uint64_t iid = names_.id(interner::annotation_name, "args");
          a.varint(annotation_name_iid, iid).bytes(annotation_legacy_json, "{" + std::string(s.args_json) + "}");
          m.nested(event_debug_annotations, a);
          e.annotation_iids = {iid};
        }
      }
    }
    e.fields = std::string(m.view());
    return e;
  }

  interner& names_;
  by_address<site_event> events_;  // callers keep references: they stay valid
};

/// Sessions of this many records or more are written on every core (perfetto_options), by
/// at most this many threads.
inline constexpr std::uint64_t parallel_records = std::uint64_t{1} << 17;
inline constexpr unsigned max_threads = 8;

/// The order in which the writers take the spans: the largest first (so that the last to be
/// taken are small and the threads finish together), in track order among equals.
inline std::vector<std::size_t> largest_first(const std::vector<track_span>& spans) {
  std::vector<std::size_t> order(spans.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return spans[a].last - spans[a].first > spans[b].last - spans[b].first;
  });
  return order;
}

/// Writes the events of one span of a track as one packet sequence.
class track_writer {
 public:
  track_writer(packet_buffer& out, interner& names, site_events& sites, const flow_marks& flows,
               const trace_data& data, const track_span& span, std::uint32_t sequence,
               std::uint64_t uuid, std::uint64_t correlation_iid,
               std::vector<std::int64_t>& open_ends)
      : out_(out), names_(names), sites_(sites),
        next_flow_(std::lower_bound(flows.begin(span.track), flows.end(span.track), span.first,
                                    [](const flow_marks::mark& m, std::size_t i) { return m.record < i; })),
        flows_end_(flows.end(span.track)), data_(data), span_(span),
        sequence_(sequence), uuid_(uuid), correlation_iid_(correlation_iid), open_(open_ends) {
    char* p = sequence_key_;
    p = proto::put_varint(p, proto::key(packet_sequence_id, proto::wire::varint));
    p = proto::put_varint(p, sequence);
    sequence_key_size_ = static_cast<std::size_t>(p - sequence_key_);
    std::string end(sequence_key_, sequence_key_size_);
    end += static_cast<char>(proto::key(packet_track_event, proto::wire::length_delimited));
    end += '\x02';
    end += static_cast<char>(proto::key(event_type, proto::wire::varint));
    end += static_cast<char>(type_slice_end);
    end_tail_ = padded_bytes(end);
  }

  /// Writes every record; `counter_track(pid, site_event&)` gives a counter's track uuid, and
  /// `memory(index, f)` calls `f(const site*, double)` for each counter sample that the memory
  /// record at `index` of the track makes (its device's allocated or reserved bytes).
  template <class CounterTrack, class Memory>
  void write(CounterTrack&& counter_track, Memory&& memory) {
    const thread_track& t = data_.threads[span_.track];
    open_.clear();
    const clock_calibration clock = data_.clock;
    const bool in_ns = t.timestamps_in_ns;
    const auto ns_of = [clock, in_ns](std::uint64_t ticks) {
      return in_ns ? static_cast<std::int64_t>(ticks) : clock.to_ns(ticks);
    };
    std::size_t first = span_.first;  // the place in the track of a run's first record, for its flows
    read_span(t, [&](const record* const records, const std::size_t n) {
      write_run(records, n, first, t, ns_of, counter_track, memory);
      first += n;
    });
    while (!open_.empty()) close_top();
    if (t.lost != 0 && span_.ends_track) {
      const std::int64_t at = std::max(data_.clock.to_ns(data_.stop_ticks), started_ ? last_ : 0);
      if (!started_) start(at);
      lost(t.lost, at);
    }
  }

 private:
  // Calls f(records, n) for the span's records in order: in place for a track held in memory,
  // read back for a spilled one (whose span is the whole track).
  template <class F>
  void read_span(const thread_track& t, F&& f) const {
    if (!t.spilled.empty()) {
      read_track(data_, t, f);
    } else if (span_.last > span_.first) {
      f(t.records.data() + span_.first, span_.last - span_.first);
    }
  }

  // Writes records[0, n), the records `first` to `first + n` of track `t`. A function of its
  // own, with the clock conversion taken by value: the lambda that calls it reaches its
  // variables by reference, and a write through `char*` may alias any of them, which would
  // have the compiler read them again after every byte.
  template <class NsOf, class CounterTrack, class Memory>
  void write_run(const record* const records, const std::size_t n, const std::size_t first, const thread_track& t,
                 const NsOf ns_of, CounterTrack& counter_track, Memory& memory) {
    // The buffer's cursor in locals for the common packets (slice ends, events with nothing
    // of their own); handed back to the buffer around everything else. The lambdas must be
    // inlined for the locals to stay in registers (GNU attribute: g++ and clang both take it).
    char* p = out_.cursor();
    char* room_end = out_.room_end();
    std::uint64_t packets = 0;
    const auto hand_back = [&]() __attribute__((always_inline)) {
      out_.commit(p, packets);
      packets = 0;
    };
    const auto take = [&]() __attribute__((always_inline)) {
      p = out_.cursor();
      room_end = out_.room_end();
    };
    const auto room = [&](std::size_t bytes) __attribute__((always_inline)) {
      if (static_cast<std::size_t>(room_end - p) < bytes) [[unlikely]] {
        hand_back();
        out_.reserve(bytes);  // hands on what the buffer holds
        take();
      }
    };
    const auto put_short = [&](std::uint64_t delta, const padded_bytes& tail) __attribute__((always_inline)) {
      room(short_packet_room(tail));
      p = short_packet(p, delta, tail);
      ++packets;
    };
    const auto close = [&]() __attribute__((always_inline)) {  // close_top()
      const std::uint64_t delta = advance(open_.back());
      open_.pop_back();
      put_short(delta, end_tail_);
    };
    const auto write_event = [&](site_event& e, std::int64_t at, std::uint64_t correlation_id, std::size_t index) __attribute__((always_inline)) {
      if (folded_count_ == 0 && e.tail_sequence == sequence_) [[likely]] {
        if (correlation_id == 0 && e.tail.size() <= max_short_tail) [[likely]] {
          put_short(advance(at), e.tail);
          return;
        }
        if (correlation_id != 0 && correlation_sent_) {  // an op or a runtime call: here too
          const flow_range flows = flows_of(index);
          const std::size_t most = short_event_bound(e, correlation_id, flows);
          if (most < 128) [[likely]] {
            room(2 + most + padded_bytes::copy_slack);
            p = short_event(p, e, advance(at), correlation_id, flows);
            ++packets;
            return;
          }
          hand_back();
          event_of_its_own(e, at, correlation_id, flows);
          take();
          return;
        }
      }
      hand_back();
      event(e, at, correlation_id, index);
      take();
    };
    // Counter samples at the instant of the event at records[k] (fold_counters), which may
    // describe their track in the buffer first.
    const auto fold = [&](std::size_t k, std::int64_t at) __attribute__((always_inline)) -> std::size_t {
      if (k + 1 >= n || records[k + 1].site->kind != record_kind::counter) [[likely]] {
        folded_count_ = 0;
        return 0;
      }
      hand_back();
      const std::size_t folded = fold_counters(records + k + 1, n - k - 1, at, t, ns_of, counter_track);
      take();
      return folded;
    };
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = first + k;  // the record's place in the track
      const record& r = records[k];
      const bool is_memory = r.site->kind == record_kind::memory;
      std::int64_t begin = ns_of(r.begin);
      if (!started_) [[unlikely]] {
        hand_back();
        start(begin);
        take();
      }
      if (begin < last_) begin = last_;  // records come oldest first; never step back in time
      if (is_memory) [[unlikely]] {
        while (!open_.empty() && open_.back() < begin) close();
        hand_back();
        memory(i, [&](const site* s, double value) {
          site_event& m = sites_.of(s);
          counter(m, begin, value, counter_track(data_.pid, m));
        });
        take();
        continue;
      }
      site_event& e = sites_.of(r.site);
      if (e.kind == record_kind::scope) {
        std::int64_t end = std::max(ns_of(r.end), begin);
        // Close the scopes that ended before this one began; of two scopes meeting at one
        // instant, the earlier ends first unless the new one lies within it (zero length).
        while (!open_.empty() && open_.back() <= begin && open_.back() < end) close();
        // A scope crossing its parent's end (a thread's RAII scopes never do) is cut there,
        // so the slices stay nested.
        if (!open_.empty() && end > open_.back()) end = open_.back();
        const std::size_t folded = fold(k, begin);
        write_event(e, begin, r.payload, i);
        open_.push_back(end);
        k += folded;
      } else {
        while (!open_.empty() && open_.back() < begin) close();
        if (e.kind == record_kind::counter) {
          hand_back();
          counter(e, begin, r.counter_value(), counter_track(t.pid != 0 ? t.pid : data_.pid, e));
          take();
        } else {
          const std::size_t folded = fold(k, begin);
          write_event(e, begin, r.payload, i);
          k += folded;
        }
      }
    }
    hand_back();
  }

  // A counter sample recorded at the instant of the event before it (a queue depth when a
  // kernel is launched) rides in that event's packet as an extra counter value: 5 bytes
  // instead of a packet of 14. At most this many to one event.
  static constexpr std::size_t max_folded = 8;
  struct folded_counter {
    std::uint64_t track;
    double value;
  };

  // Takes the counter records at the start of `next` (n of them at most) that fall at `t`, the
  // time of the event about to be written, into `folded_`; returns how many it took.
  // `ns_of` is taken by value: passed by reference it would make the caller keep its clock in
  // memory and read it again after every byte written.
  template <class NsOf, class CounterTrack>
  [[gnu::always_inline]] std::size_t fold_counters(const record* next, std::size_t n, std::int64_t t, const thread_track& track,
                            NsOf ns_of, CounterTrack& counter_track) {
    folded_count_ = 0;
    if (n == 0 || next->site->kind != record_kind::counter) [[likely]] return 0;  // the common case, inline
    while (folded_count_ < n && folded_count_ < max_folded) {
      const record& c = next[folded_count_];
      if (c.site->kind != record_kind::counter || ns_of(c.begin) > t) break;
      site_event& e = sites_.of(c.site);
      folded_[folded_count_++] = {counter_track(track.pid != 0 ? track.pid : data_.pid, e), c.counter_value()};
    }
    return folded_count_;
  }

  // Whole numbers as integers (a varint of a few bytes), the rest as doubles.
  static bool whole(double value) noexcept {
    return std::isfinite(value) && value == std::trunc(value) && std::fabs(value) < 9.0e18;
  }

  std::size_t folded_size() const noexcept {
    std::size_t n = 0;
    for (std::size_t k = 0; k < folded_count_; ++k) {
      const folded_counter& c = folded_[k];
      n += 2 + proto::varint_size(c.track);  // a 2-byte key either way
      n += whole(c.value) ? 1 + proto::varint_size(static_cast<std::uint64_t>(static_cast<std::int64_t>(c.value))) : 2 + 8;
    }
    return n;
  }

  char* put_folded(char* p) const noexcept {
    for (std::size_t k = 0; k < folded_count_; ++k) {
      const folded_counter& c = folded_[k];
      if (whole(c.value)) {
        p = proto::put_varint(p, proto::key(event_extra_counter_track_uuids, proto::wire::varint));
        p = proto::put_varint(p, c.track);
        p = proto::put_varint(p, proto::key(event_extra_counter_values, proto::wire::varint));
        p = proto::put_varint(p, static_cast<std::uint64_t>(static_cast<std::int64_t>(c.value)));
      } else {
        std::uint64_t bits;
        std::memcpy(&bits, &c.value, sizeof bits);
        p = proto::put_varint(p, proto::key(event_extra_double_counter_track_uuids, proto::wire::varint));
        p = proto::put_varint(p, c.track);
        p = proto::put_varint(p, proto::key(event_extra_double_counter_values, proto::wire::fixed64));
        p = proto::put_fixed64(p, bits);
      }
    }
    return p;
  }

  // The sequence's first packet: fresh incremental state, this track and clock 64 as defaults,
  // and a clock snapshot at `t0` relating clock 64 to the trace's clock.
  //
  // trace_processor (clock_tracker.cc) takes BOOTTIME as every proto file's own clock and, at
  // the first timestamp it converts, drops it with the error
  // `clock_sync_unrelatable_clock_domains` unless a snapshot relates BOOTTIME to the trace
  // clock or the trace clock is the file's own (TRACE_FILE). So: with the session's BOOTTIME
  // known, the snapshot holds 64, MONOTONIC (steady_clock, the trace clock, so times are the
  // JSON's), BOOTTIME and REALTIME; without it, TRACE_FILE is the trace clock instead of
  // MONOTONIC, which claims no relation to BOOTTIME that the session never measured.
  void start(std::int64_t t0) {
    started_ = true;
    last_ = std::max<std::int64_t>(t0, 0);
    const auto at = static_cast<std::uint64_t>(last_);
    proto::message defaults, event_defaults, snapshot, packet;
    event_defaults.varint(track_event_defaults_track_uuid, uuid_);
    defaults.varint(defaults_timestamp_clock_id, sequence_clock).nested(defaults_track_event, event_defaults);
    const auto clock = [&](std::uint64_t id, std::uint64_t value, bool incremental = false) {
      proto::message c;
      c.varint(clock_id, id).varint(clock_timestamp, value);
      if (incremental) c.varint(clock_is_incremental, 1);
      snapshot.nested(snapshot_clocks, c);
    };
    const std::uint64_t trace_clock = data_.boot_time_ns ? builtin_clock_monotonic : builtin_clock_trace_file;
    clock(sequence_clock, at, true);
    if (trace_clock == builtin_clock_trace_file) clock(builtin_clock_trace_file, at);
    clock(builtin_clock_monotonic, at);
    if (data_.boot_time_ns) clock(builtin_clock_boottime, static_cast<std::uint64_t>(last_ + *data_.boot_time_ns));
    // The wall clock at the same instant (JSON's baseTimeNanoseconds): what lines up the
    // traces of several ranks or hosts.
    if (data_.base_time_ns != 0) clock(builtin_clock_realtime, static_cast<std::uint64_t>(last_ + data_.base_time_ns));
    snapshot.varint(snapshot_primary_trace_clock, trace_clock);
    packet.varint(packet_sequence_id, sequence_)
        .varint(packet_sequence_flags, seq_incremental_state_cleared)
        .nested(packet_defaults, defaults)
        .nested(packet_clock_snapshot, snapshot);
    out_.packet(packet);
  }

  // The strings `e` needs that this sequence has not received yet, as InternedData.
  std::string_view intern(site_event& e, bool with_correlation) {
    interned_.clear();
    if (e.tail_sequence != sequence_) {
      e.tail_sequence = sequence_;
      std::string tail(sequence_key_, sequence_key_size_);
      char head[11];
      head[0] = static_cast<char>(proto::key(packet_track_event, proto::wire::length_delimited));
      tail.append(head, static_cast<std::size_t>(proto::put_varint(head + 1, e.fields.size()) - head));
      tail += e.fields;
      e.tail = padded_bytes(tail);
      if (e.kind != record_kind::counter) names_.send(interner::event_name, e.name_iid, sequence_, interned_);
      if (e.kind != record_kind::counter) names_.send(interner::category, e.category_iid, sequence_, interned_);
      for (std::uint64_t iid : e.annotation_iids) names_.send(interner::annotation_name, iid, sequence_, interned_);
    }
    if (with_correlation && !correlation_sent_) {
      correlation_sent_ = true;
      names_.send(interner::annotation_name, correlation_iid_, sequence_, interned_);
    }
    return interned_.view();
  }

  // Writes the packet framing of an event: key, length, timestamp delta, sequence id and any
  // interned data, then the TrackEvent's key and length. Returns where its fields go.
  char* frame(char* p, std::size_t packet_size, std::uint64_t delta, std::string_view interned,
              std::size_t event_size) {
    *p++ = static_cast<char>(proto::key(trace_packet, proto::wire::length_delimited));
    p = proto::put_varint(p, packet_size);
    *p++ = static_cast<char>(proto::key(packet_timestamp, proto::wire::varint));
    p = proto::put_varint(p, delta);
    std::memcpy(p, sequence_key_, sequence_key_size_);
    p += sequence_key_size_;
    if (!interned.empty()) {
      *p++ = static_cast<char>(proto::key(packet_interned_data, proto::wire::length_delimited));
      p = proto::put_varint(p, interned.size());
      std::memcpy(p, interned.data(), interned.size());
      p += interned.size();
    }
    *p++ = static_cast<char>(proto::key(packet_track_event, proto::wire::length_delimited));
    return proto::put_varint(p, event_size);
  }

  std::size_t packet_size(std::uint64_t delta, std::string_view interned, std::size_t event_size) const {
    std::size_t n = 1 + proto::varint_size(delta) + sequence_key_size_ + 1 + proto::varint_size(event_size) + event_size;
    if (!interned.empty()) n += 1 + proto::varint_size(interned.size()) + interned.size();
    return n;
  }

  std::uint64_t advance(std::int64_t t) noexcept {
    const auto delta = static_cast<std::uint64_t>(t - last_);
    last_ = t;
    return delta;
  }

  // The longest tail whose packet (key and delta before it) stays under 128 bytes.
  static constexpr std::size_t max_short_tail = 127 - 1 - 10;

  // A packet under 128 bytes has a one-byte length, written once the rest is: nothing is
  // measured twice. This writes its key, leaves the length's byte and writes the timestamp
  // delta; returns where the rest goes. `end_short_packet` writes the length.
  static char* begin_short_packet(char* packet, std::uint64_t delta) noexcept {
    packet[0] = static_cast<char>(proto::key(trace_packet, proto::wire::length_delimited));
    char* p = packet + 2;
    *p++ = static_cast<char>(proto::key(packet_timestamp, proto::wire::varint));
    return proto::put_varint(p, delta);
  }
  static void end_short_packet(char* packet, const char* end) noexcept {
    packet[1] = static_cast<char>(end - (packet + 2));
  }
  // A whole short packet: delta, then `tail` (at most max_short_tail bytes). Room: 13 bytes,
  // the tail and its copy slack.
  [[gnu::always_inline]] static char* short_packet(char* packet, std::uint64_t delta, const padded_bytes& tail) noexcept {
    char* const end = tail.copy_to(begin_short_packet(packet, delta));
    end_short_packet(packet, end);
    return end;
  }
  static std::size_t short_packet_room(const padded_bytes& tail) noexcept {
    return 2 + 1 + 10 + tail.size() + padded_bytes::copy_slack;
  }

  // A slice begin or an instant that write_run's short packets do not cover: the site's
  // fields, then a correlation id and flow ids.
  [[gnu::always_inline]] void event(site_event& e, std::int64_t t, std::uint64_t correlation_id, std::size_t index) {
    if (correlation_id == 0 && folded_count_ == 0 && e.tail_sequence == sequence_) {
      // Nothing of its own, but a tail over max_short_tail: key, length, delta, then the
      // sequence's tail of the site.
      const std::uint64_t delta = advance(t);
      const std::size_t size = 1 + proto::varint_size(delta) + e.tail.size();
      char* p = out_.reserve(1 + proto::varint_size(size) + size + padded_bytes::copy_slack);
      *p++ = static_cast<char>(proto::key(trace_packet, proto::wire::length_delimited));
      p = proto::put_varint(p, size);
      *p++ = static_cast<char>(proto::key(packet_timestamp, proto::wire::varint));
      p = proto::put_varint(p, delta);
      out_.commit(e.tail.copy_to(p));
      return;
    }
    event_of_its_own(e, t, correlation_id, flows_of(index));
  }

  // The flow marks bound to the record at `index` of the track (records are met in order):
  // flow_ids start or continue a flow, terminating_flow_ids end one.
  struct flow_range {
    const flow_marks::mark* first;
    const flow_marks::mark* last;
  };
  [[gnu::always_inline]] flow_range flows_of(std::size_t index) noexcept {
    while (next_flow_ != flows_end_ && next_flow_->record < index) ++next_flow_;
    const flow_marks::mark* const first = next_flow_;
    while (next_flow_ != flows_end_ && next_flow_->record == index) ++next_flow_;
    return {first, next_flow_};
  }

  // At most how many bytes follow the key and length of an event's packet with nothing to
  // intern; under 128, `short_event` writes it.
  std::size_t short_event_bound(const site_event& e, std::uint64_t correlation_id, flow_range flows) const noexcept {
    return 1 + 10 + e.tail.size() + (correlation_id != 0 ? 2 + 1 + 10 + 1 + 10 : 0) +
           static_cast<std::size_t>(flows.last - flows.first) * (2 + 5) + folded_count_ * (2 + 10 + 2 + 10);
  }

  // An event with nothing to intern whose bound is under 128 bytes, written at `packet` (room:
  // 2 + the bound + padded_bytes::copy_slack): the sequence's tail of the site (sequence id,
  // TrackEvent key, a one-byte length, the site's fields), then what is the event's own; the
  // two lengths, one byte each, are written last. Returns the packet's end.
  [[gnu::always_inline]] char* short_event(char* packet, const site_event& e, std::uint64_t delta, std::uint64_t correlation_id,
                                           flow_range flows) const noexcept {
    char* p = begin_short_packet(packet, delta);
    char* const event_length = p + sequence_key_size_ + 1;
    p = e.tail.copy_to(p);
    if (correlation_id != 0) {
      *p++ = static_cast<char>(proto::key(event_debug_annotations, proto::wire::length_delimited));
      char* const annotation_length = p++;
      *p++ = static_cast<char>(proto::key(annotation_name_iid, proto::wire::varint));
      p = proto::put_varint(p, correlation_iid_);
      *p++ = static_cast<char>(proto::key(annotation_uint, proto::wire::varint));
      p = proto::put_varint(p, correlation_id);
      *annotation_length = static_cast<char>(p - (annotation_length + 1));
    }
    for (const flow_marks::mark* f = flows.first; f != flows.last; ++f) {
      p = proto::put_varint(p, proto::key(f->ends ? event_terminating_flow_ids : event_flow_ids, proto::wire::varint));
      p = proto::put_varint(p, f->id);
    }
    if (folded_count_ != 0) p = put_folded(p);
    *event_length = static_cast<char>(p - (event_length + 1));
    end_short_packet(packet, p);
    return p;
  }

  // An event with a correlation id, flows, counter samples or strings to intern.
  [[gnu::noinline]] void event_of_its_own(site_event& e, std::int64_t t, std::uint64_t correlation_id, flow_range flows) {
    if (e.tail_sequence == sequence_ && (correlation_id == 0 || correlation_sent_)) {
      const std::size_t most = short_event_bound(e, correlation_id, flows);
      if (most < 128) {
        char* const packet = out_.reserve(2 + most + padded_bytes::copy_slack);
        out_.commit(short_event(packet, e, advance(t), correlation_id, flows));
        folded_count_ = 0;
        return;
      }
    }
    const std::string_view interned = intern(e, correlation_id != 0);
    std::size_t correlation_size = 0, annotation_size = 0;
    if (correlation_id != 0) {
      annotation_size = 1 + proto::varint_size(correlation_iid_) + 1 + proto::varint_size(correlation_id);
      correlation_size = 1 + proto::varint_size(annotation_size) + annotation_size;
    }
    std::size_t flow_size = 0;
    for (const flow_marks::mark* f = flows.first; f != flows.last; ++f) flow_size += 2 + proto::varint_size(f->id);  // 2-byte key
    const std::size_t event_size = e.fields.size() + correlation_size + flow_size + folded_size();
    const std::uint64_t delta = advance(t);
    const std::size_t size = packet_size(delta, interned, event_size);
    char* p = out_.reserve(1 + proto::varint_size(size) + size);
    p = frame(p, size, delta, interned, event_size);
    std::memcpy(p, e.fields.data(), e.fields.size());
    p += e.fields.size();
    if (correlation_id != 0) {
      *p++ = static_cast<char>(proto::key(event_debug_annotations, proto::wire::length_delimited));
      p = proto::put_varint(p, annotation_size);
      *p++ = static_cast<char>(proto::key(annotation_name_iid, proto::wire::varint));
      p = proto::put_varint(p, correlation_iid_);
      *p++ = static_cast<char>(proto::key(annotation_uint, proto::wire::varint));
      p = proto::put_varint(p, correlation_id);
    }
    for (const flow_marks::mark* f = flows.first; f != flows.last; ++f) {
      p = proto::put_varint(p, proto::key(f->ends ? event_terminating_flow_ids : event_flow_ids, proto::wire::varint));
      p = proto::put_varint(p, f->id);
    }
    out_.commit(put_folded(p));
    folded_count_ = 0;
  }

  // A slice end: its type alone (the track is the sequence's default), a short packet (its
  // tail is at most 10 bytes).
  void close_top() {
    const std::uint64_t delta = advance(open_.back());
    open_.pop_back();
    out_.commit(short_packet(out_.reserve(short_packet_room(end_tail_)), delta, end_tail_));
  }

  void counter(site_event& e, std::int64_t t, double value, std::uint64_t track) {
    const std::string_view interned = intern(e, false);
    const bool whole = track_writer::whole(value);
    const std::size_t value_size = whole ? 2 + proto::varint_size(static_cast<std::uint64_t>(static_cast<std::int64_t>(value))) : 2 + 8;
    const std::size_t event_size = e.fields.size() + 1 + proto::varint_size(track) + value_size;
    const std::uint64_t delta = advance(t);
    const std::size_t size = packet_size(delta, interned, event_size);
    char* p = out_.reserve(1 + proto::varint_size(size) + size);
    p = frame(p, size, delta, interned, event_size);
    std::memcpy(p, e.fields.data(), e.fields.size());
    p += e.fields.size();
    *p++ = static_cast<char>(proto::key(event_track_uuid, proto::wire::varint));
    p = proto::put_varint(p, track);
    if (whole) {
      p = proto::put_varint(p, proto::key(event_counter_value, proto::wire::varint));
      p = proto::put_varint(p, static_cast<std::uint64_t>(static_cast<std::int64_t>(value)));
    } else {
      std::uint64_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      p = proto::put_varint(p, proto::key(event_double_counter_value, proto::wire::fixed64));
      p = proto::put_fixed64(p, bits);
    }
    out_.commit(p);
  }

  // Lost records, where the user looks: an instant at the end of the track, as in the JSON.
  void lost(std::uint64_t count, std::int64_t t) {
    const std::string name = "strata: " + std::to_string(count) + " records lost (" +
                             std::string(overflow_policy_name(data_.overflow)) + ")";
    const std::uint64_t category = names_.id(interner::category, "strata");
    const std::uint64_t lost_name = names_.id(interner::annotation_name, "lost");
    interned_.clear();
    names_.send(interner::category, category, sequence_, interned_);
    names_.send(interner::annotation_name, lost_name, sequence_, interned_);
    proto::message event, annotation, packet;
    annotation.varint(annotation_name_iid, lost_name).varint(annotation_uint, count);
    event.varint(event_type, type_instant)
        .bytes(event_name, name)
        .varint(event_category_iids, category)
        .nested(event_debug_annotations, annotation);
    packet.varint(packet_timestamp, advance(t)).raw(std::string_view(sequence_key_, sequence_key_size_));
    if (!interned_.empty()) packet.nested(packet_interned_data, interned_);
    packet.nested(packet_track_event, event);
    out_.packet(packet);
  }

  packet_buffer& out_;
  interner& names_;
  site_events& sites_;
  const flow_marks::mark* next_flow_;  // the next flow mark of this track
  const flow_marks::mark* flows_end_;
  const trace_data& data_;
  track_span span_;
  std::uint32_t sequence_;
  std::uint64_t uuid_;
  std::uint64_t correlation_iid_;
  std::vector<std::int64_t>& open_;  // end times of the slices still open, innermost last
  char sequence_key_[11] = {};
  std::size_t sequence_key_size_ = 0;
  padded_bytes end_tail_;  // what follows a slice end's delta
  folded_counter folded_[max_folded] = {};  // the counters the next event carries
  std::size_t folded_count_ = 0;
  bool started_ = false;
  bool correlation_sent_ = false;
  std::int64_t last_ = 0;
  proto::message interned_;
};

/// The uuids of a file's tracks, given out as their descriptors are written.
struct track_layout {
  struct device_process {
    std::uint64_t uuid, engines_uuid;
  };
  std::uint64_t host_uuid = 0;
  std::map<std::uint64_t, device_process> devices;  // by pid
  std::vector<std::uint64_t> track_uuids;            // by track
  std::uint64_t next_uuid = 1;                       // the next free one (counter tracks take theirs as met)
};

/// Writes the descriptors of the root, the host process and its threads, and each device
/// core's process with its engines, to `out`; returns their uuids.
inline track_layout describe_tracks(const trace_data& data, packet_buffer& out) {
  using proto::message;
  track_layout layout;
  // Root: processes and threads in the order given by their ranks (host first, then cores).
  {
    message root, packet;
    root.varint(track_uuid, 0)
        .varint(track_process_ordering, process_ordering_explicit)
        .varint(track_thread_ordering, thread_ordering_explicit);
    out.packet(packet.nested(packet_track_descriptor, root));
  }
  const auto descriptor = [&](const message& track) {
    message packet;
    out.packet(packet.nested(packet_track_descriptor, track));
  };
  layout.host_uuid = layout.next_uuid++;
  {
    message process, track;
    process.int64(process_pid, static_cast<std::int64_t>(data.pid))
        .bytes(process_name, valid_utf8(with_rank(data.process_name, data.distributed)));
    track.varint(track_uuid, layout.host_uuid).nested(track_process, process).varint(track_sibling_order_rank, 0);
    descriptor(track);
  }
  // Each device core: a process, and in it one "engines" track whose children keep their
  // order (Perfetto would sort a process's own tracks by name).
  auto& devices = layout.devices;
  auto& track_uuids = layout.track_uuids;
  track_uuids.resize(data.threads.size());
  for (std::size_t i = 0; i < data.threads.size(); ++i) {
    const thread_track& t = data.threads[i];
    message track;
    track_uuids[i] = layout.next_uuid++;
    track.varint(track_uuid, track_uuids[i]);
    if (t.pid == 0) {
      message thread;
      thread.int64(thread_pid, static_cast<std::int64_t>(data.pid))
          .int64(thread_tid, static_cast<std::int64_t>(t.tid))
          .bytes(thread_name, valid_utf8(t.name.empty() ? "thread " + std::to_string(t.tid) : t.name));
      track.nested(track_thread, thread).varint(track_sibling_order_rank, t.sort_index);
    } else {
      auto [it, inserted] = devices.try_emplace(t.pid, track_layout::device_process{0, 0});
      if (inserted) {
        it->second = {layout.next_uuid++, layout.next_uuid++};
        message process, process_track, engines;
        process.int64(process_pid, static_cast<std::int64_t>(t.pid)).bytes(process_name, valid_utf8(with_rank(t.process_name, data.distributed)));
        process_track.varint(track_uuid, it->second.uuid)
            .nested(track_process, process)
            .varint(track_sibling_order_rank, devices.size());
        descriptor(process_track);
        engines.varint(track_uuid, it->second.engines_uuid)
            .varint(track_parent_uuid, it->second.uuid)
            .bytes(track_name, "engines")
            .varint(track_child_ordering, child_ordering_explicit)
            .varint(track_sibling_merge_behavior, sibling_merge_none);
        descriptor(engines);
      }
      track.varint(track_parent_uuid, it->second.engines_uuid)
          .bytes(track_name, valid_utf8(t.name.empty() ? "track " + std::to_string(t.tid) : t.name))
          .varint(track_sibling_order_rank, t.sort_index)
          .varint(track_sibling_merge_behavior, sibling_merge_none);
    }
    descriptor(track);
  }
  return layout;
}

/// Memory records become samples of two counter tracks per device on the host process,
/// `Allocated <device>` and `Reserved <device>` (their sizes and totals come from pairing the
/// frees, strata/analysis/memory.hpp); an unpaired free makes none.
struct memory_counters {
  explicit memory_counters(const trace_data& data)
      : profile(data.profile_memory ? read_memory(data) : memory_profile{}), sample_of(data.threads.size()),
        site_of(profile.events.size()) {
    for (std::size_t k = 0; k < profile.events.size(); ++k) {
      const memory_sample& m = profile.events[k];
      sample_of[m.track].emplace(m.record, k);
      const std::string name = (m.op == memory_op::reserve ? "Reserved " : "Allocated ") + device_label(m.device);
      auto it = sites.find(name);
      if (it == sites.end()) {
        names.push_back(name);
        it = sites.emplace(name, site{names.back().c_str(), "", 0, layer::user, record_kind::counter, nullptr, nullptr,
                                      "memory"}).first;
      }
      site_of[k] = &it->second;
    }
  }

  memory_profile profile;
  std::vector<std::unordered_map<std::size_t, std::size_t>> sample_of;  // by track: record -> sample
  std::deque<std::string> names;
  std::map<std::string, site> sites;  // node-based: the sites' addresses stay put
  std::vector<const site*> site_of;   // by sample
};

}  // namespace perfetto
}  // namespace detail

/// How `write_perfetto_trace` writes a file.
struct perfetto_options {
  /// Threads that encode the tracks, each track on one of them: 0 (the default) is one per core,
  /// at most 8, for a session of 2^17 records or more, and the calling thread alone for a
  /// smaller one; 1 is the calling thread alone. The file holds the same packets either way;
  /// with several threads, the packets of different tracks interleave in a different order.
  unsigned threads = 0;

  /// Written by several threads, a track held in memory with at least twice this many records
  /// is written as several packet sequences of about this many records each (cut where no slice
  /// is open), which the threads share out one at a time, so that they finish together even
  /// when the cores run at different speeds; 0 writes every track as one sequence, as one
  /// thread always does. trace_processor imports the same slices either way.
  std::size_t records_per_sequence = std::size_t{1} << 16;
};

/// Writes `data` to `path` in Perfetto's native protobuf format (`perfetto.protos.Trace`),
/// atomically (a temporary file renamed into place); a path ending in `.gz` is written
/// gzip-compressed, which trace_processor and Perfetto UI open as they are. Raises
/// `strata::error` when the file cannot be written.
///
/// Holds what the Chrome JSON trace holds, in about a sixth of the bytes: named process,
/// thread and device tracks (each NeuronCore a process whose engines are ordered tracks),
/// nested slices, instants, counter tracks, the correlation flows, arguments as debug
/// annotations and lost-record counts. `export_result::events` counts packets.
/// docs/trace-format.md describes the packets.
///
/// **Example**
/// ```cpp
/// prof.stop();
/// strata::write_perfetto_trace(prof.data(), "strata-out/trace.pftrace");
/// // trace_processor strata-out/trace.pftrace, or open it in ui.perfetto.dev
/// ```
inline export_result write_perfetto_trace(const trace_data& data, const std::filesystem::path& path,
                                          const perfetto_options& options = {}) {
  require_trace_format(path.string(), trace_format::perfetto);
  namespace pf = detail::perfetto;
  using detail::proto::message;
  // The tracks are written as packet sequences of their own, a long track as several (its
  // spans), so several threads can write them at once, each into a lane (its own buffer,
  // appended to the file a buffer at a time) with its own interned strings.
  unsigned threads = options.threads;
  if (threads == 0) threads = data.recorded() >= pf::parallel_records ? std::thread::hardware_concurrency() : 1u;
  threads = std::clamp(threads, 1u, pf::max_threads);
  // Flows are marked on the slices they bind to, so a track's events wait for its marks: one
  // thread reads the records on correlation paths and builds the flows, publishing each
  // track's marks as they become final, then writes. Meanwhile a second makes the rest of what
  // the writers need (the file with its track descriptors, the memory counters, the spans of
  // long tracks, found in a shorter pass) and starts on the first spans whose marks are final.
  // One thread makes the file first (an unwritable path fails at once) and does not cut.
  std::optional<pf::packet_stream> file;
  pf::track_layout layout;
  std::optional<pf::memory_counters> memory;
  std::optional<detail::track_spans> spans;
  std::vector<std::size_t> order;  // the spans, largest first
  detail::flow_marks flows(data, detail::flow_marks::deferred);
  // Counter tracks: one per process and name. Their uuids are the file's, given out under a
  // lock; each thread describes a counter track in its own lane before its first sample there
  // (the same descriptor twice is one track to trace_processor).
  std::mutex counters_lock;
  std::map<std::pair<std::uint64_t, std::string>, std::uint64_t> counter_uuids;
  // Each thread writes its lane's members (the buffer's fill, the open slices) for every
  // packet: lanes on cache lines of their own, or two threads would take turns on one line.
  struct alignas(64) lane_state {
    lane_state(pf::packet_stream& out, std::mutex& lock) : lane(out, lock), sites(names) {}
    pf::packet_lane lane;
    pf::interner names;
    pf::site_events sites;
    std::vector<std::int64_t> open_ends;
    std::vector<std::uint64_t> described;  // counter tracks described in this lane
  };
  std::mutex file_lock;
  std::deque<lane_state> lanes;
  // The file and the lanes: made by the first part to ask (the second thread, unless a part
  // runs on a thread of another); the others wait. An error fails the export.
  enum : int { unprepared, preparing, prepared, unpreparable };
  std::atomic<int> preparation{unprepared};
  const auto prepare = [&]() -> bool {
    for (int state; (state = preparation.load(std::memory_order_acquire)) != prepared;) {
      if (state == unpreparable) return false;  // the part that failed reports it
      if (state == unprepared && preparation.compare_exchange_strong(state, preparing, std::memory_order_acquire)) {
        try {
          file.emplace(path);
          layout = pf::describe_tracks(data, *file);
          memory.emplace(data);
          spans.emplace(data, threads > 1 ? options.records_per_sequence : 0);
          order = pf::largest_first(spans->spans());
          for (unsigned k = 0; k < threads; ++k) lanes.emplace_back(*file, file_lock);
          file->flush();  // the descriptors come first in the file
          preparation.store(prepared, std::memory_order_release);
        } catch (...) {
          preparation.store(unpreparable, std::memory_order_release);
          preparation.notify_all();
          throw;
        }
        preparation.notify_all();
        return true;
      }
      preparation.wait(state, std::memory_order_acquire);
    }
    return true;
  };

  std::atomic<std::size_t> next_span{0};
  detail::fork_join parallel;
  parallel.run(threads, [&](unsigned k) {
    if (threads == 1 && !prepare()) return;
    if (k == 0) flows.make();
    if (!prepare()) return;
    lane_state& w = lanes[k];
    const auto counter_track = [&](std::uint64_t pid, pf::site_event& e) -> std::uint64_t {
      if (e.counter_track != 0 && e.counter_pid == pid) return e.counter_track;
      std::uint64_t uuid;
      {
        const std::lock_guard<std::mutex> hold(counters_lock);
        auto [it, inserted] = counter_uuids.try_emplace({pid, e.counter_name}, 0);
        if (inserted) it->second = layout.next_uuid++;
        uuid = it->second;
      }
      if (std::find(w.described.begin(), w.described.end(), uuid) == w.described.end()) {
        w.described.push_back(uuid);
        const std::uint64_t parent = pid == data.pid ? layout.host_uuid : layout.devices.at(pid).uuid;
        message track, counter, packet;
        track.varint(pf::track_uuid, uuid)
            .varint(pf::track_parent_uuid, parent)
            .bytes(pf::track_name, e.counter_name)
            .nested(pf::track_counter, counter);
        w.lane.packet(packet.nested(pf::packet_track_descriptor, track));
      }
      e.counter_pid = pid;
      e.counter_track = uuid;
      return uuid;
    };
    const std::uint64_t correlation_iid = w.names.id(pf::interner::annotation_name, "correlation_id");
    const std::vector<detail::track_span>& span = spans->spans();
    for (std::size_t taken; (taken = next_span.fetch_add(1, std::memory_order_relaxed)) < order.size();) {
      // Span c (track by track) is sequence 2 + c: without cuts, track i is sequence 2 + i.
      const std::size_t c = order[taken];
      const std::size_t i = span[c].track;
      if (!flows.wait(i) || parallel.stop()) return;
      pf::track_writer tw(w.lane, w.names, w.sites, flows, data, span[c], static_cast<std::uint32_t>(c + 2),
                          layout.track_uuids[i], correlation_iid, w.open_ends);
      tw.write(counter_track, [&](std::size_t index, auto&& sample) {
        const auto found = memory->sample_of[i].find(index);
        if (found == memory->sample_of[i].end()) return;
        const memory_sample& m = memory->profile.events[found->second];
        sample(memory->site_of[found->second],
               static_cast<double>(m.op == memory_op::reserve ? m.total_reserved : m.total_allocated));
      });
    }
    w.lane.flush();
  });
  pf::packet_stream& out = *file;
  return out.finish(path);
}

}  // namespace v1
}  // namespace strata
