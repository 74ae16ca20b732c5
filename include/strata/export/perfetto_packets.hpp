// strata/export/perfetto_packets.hpp: the pieces of Perfetto's native protobuf trace format
// that strata's writers share: the protobuf wire format (enough to write a message by hand),
// Perfetto's field numbers, interned strings, and a stream of packets into a trace file.
// strata/export/perfetto_trace.hpp writes a session with them; `strata-report merge -o
// JOB.pftrace` a distributed job's merged events. docs/trace-format.md has the layout.
//
// Field numbers are those of Perfetto's public definitions (github.com/google/perfetto):
// protos/perfetto/trace/trace.proto, trace_packet.proto, trace_packet_defaults.proto,
// clock_snapshot.proto, common/builtin_clock.proto, interned_data/interned_data.proto and
// track_event/{track_event,track_descriptor,process_descriptor,thread_descriptor,
// counter_descriptor,debug_annotation}.proto.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "strata/export/trace_format.hpp"
#include "strata/detail/huge_page_allocator.hpp"
#include "strata/detail/json_escape.hpp"
#include "strata/detail/trace_file.hpp"

namespace strata {
inline namespace v1 {
namespace perfetto {

// ---- the protobuf wire format, enough to write a message by hand ---------------------------
//
// A message is a sequence of fields, each a key (field number << 3 | wire type, as a varint)
// followed by its value: a varint, 8 little-endian bytes, or a length (varint) and that many
// bytes (strings and nested messages). Nothing here knows any schema; the writer below names
// the fields. No libprotobuf: a program that uses strata still builds with nothing but the
// compiler and -pthread.
namespace proto {

enum class wire : std::uint8_t { varint = 0, fixed64 = 1, length_delimited = 2 };

/// The key of field `field` with wire type `w`, as the varint that precedes the value.
constexpr std::uint64_t key(std::uint32_t field, wire w) noexcept {
  return (std::uint64_t{field} << 3) | static_cast<std::uint64_t>(w);
}

/// Bytes the varint encoding of `v` takes (1 to 10).
constexpr std::size_t varint_size(std::uint64_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

/// Writes `v` as a varint at `p`; returns the end. Room for varint_size(v) bytes is the caller's.
inline char* put_varint(char* p, std::uint64_t v) noexcept {
  while (v >= 0x80) {
    *p++ = static_cast<char>(static_cast<std::uint8_t>(v) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

/// Writes `v` as 8 little-endian bytes.
inline char* put_fixed64(char* p, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(static_cast<std::uint8_t>(v >> (8 * i)));
  return p + 8;
}

/// A message built field by field into a string: for the parts of a trace written once
/// (descriptors, interned names, argument annotations), where clarity beats speed. A nested
/// message is built as its own `message` and added whole, since its length comes first.
class message {
 public:
  message& varint(std::uint32_t field, std::uint64_t v) {
    raw_varint(key(field, wire::varint));
    raw_varint(v);
    return *this;
  }
  /// A signed value in a plain (not zigzag) varint: int32 and int64 fields.
  message& int64(std::uint32_t field, std::int64_t v) { return varint(field, static_cast<std::uint64_t>(v)); }
  message& fixed64(std::uint32_t field, std::uint64_t v) {
    raw_varint(key(field, wire::fixed64));
    char b[8];
    put_fixed64(b, v);
    bytes_.append(b, 8);
    return *this;
  }
  message& double_value(std::uint32_t field, double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return fixed64(field, bits);
  }
  /// A string or bytes field (strings must be valid UTF-8; the caller sees to it).
  message& bytes(std::uint32_t field, std::string_view v) {
    raw_varint(key(field, wire::length_delimited));
    raw_varint(v.size());
    bytes_.append(v);
    return *this;
  }
  message& nested(std::uint32_t field, const message& m) { return bytes(field, m.view()); }

  /// Appends encoded fields as they are (e.g. fields encoded once and reused).
  message& raw(std::string_view encoded) {
    bytes_.append(encoded);
    return *this;
  }

  std::string_view view() const noexcept { return bytes_; }
  std::size_t size() const noexcept { return bytes_.size(); }
  bool empty() const noexcept { return bytes_.empty(); }
  void clear() noexcept { bytes_.clear(); }

 private:
  void raw_varint(std::uint64_t v) {
    char b[10];
    bytes_.append(b, static_cast<std::size_t>(put_varint(b, v) - b));
  }

  std::string bytes_;
};

}  // namespace proto

// --- field numbers (cited from the .proto files named above) -----------------------------

// trace.proto: message Trace
inline constexpr std::uint32_t trace_packet = 1;
// trace_packet.proto: message TracePacket
inline constexpr std::uint32_t packet_timestamp = 8;
inline constexpr std::uint32_t packet_sequence_id = 10;  // trusted_packet_sequence_id
inline constexpr std::uint32_t packet_track_event = 11;
inline constexpr std::uint32_t packet_interned_data = 12;
inline constexpr std::uint32_t packet_sequence_flags = 13;
inline constexpr std::uint32_t packet_clock_snapshot = 6;
inline constexpr std::uint32_t packet_defaults = 59;  // trace_packet_defaults
inline constexpr std::uint32_t packet_track_descriptor = 60;
inline constexpr std::uint64_t seq_incremental_state_cleared = 1;  // enum SequenceFlags
// trace_packet_defaults.proto: message TracePacketDefaults, TrackEventDefaults
// (track_event/track_event.proto)
inline constexpr std::uint32_t defaults_timestamp_clock_id = 58;
inline constexpr std::uint32_t defaults_track_event = 11;
inline constexpr std::uint32_t track_event_defaults_track_uuid = 11;
// clock_snapshot.proto: message ClockSnapshot, ClockSnapshot.Clock
inline constexpr std::uint32_t snapshot_clocks = 1;
inline constexpr std::uint32_t snapshot_primary_trace_clock = 2;
inline constexpr std::uint32_t clock_id = 1;
inline constexpr std::uint32_t clock_timestamp = 2;
inline constexpr std::uint32_t clock_is_incremental = 3;
// common/builtin_clock.proto; clock ids 64-127 are the sequence's own.
inline constexpr std::uint64_t builtin_clock_realtime = 1;
inline constexpr std::uint64_t builtin_clock_monotonic = 3;
inline constexpr std::uint64_t builtin_clock_boottime = 6;
inline constexpr std::uint64_t builtin_clock_trace_file = 11;  // the file's own timeline
inline constexpr std::uint64_t sequence_clock = 64;
// track_event/track_descriptor.proto: message TrackDescriptor
inline constexpr std::uint32_t track_uuid = 1;
inline constexpr std::uint32_t track_name = 2;
inline constexpr std::uint32_t track_process = 3;
inline constexpr std::uint32_t track_thread = 4;
inline constexpr std::uint32_t track_parent_uuid = 5;
inline constexpr std::uint32_t track_counter = 8;
inline constexpr std::uint32_t track_child_ordering = 11;
inline constexpr std::uint32_t track_sibling_order_rank = 12;
inline constexpr std::uint32_t track_sibling_merge_behavior = 15;
inline constexpr std::uint32_t track_process_ordering = 19;
inline constexpr std::uint32_t track_thread_ordering = 20;
inline constexpr std::uint64_t child_ordering_explicit = 3;        // ChildTracksOrdering.EXPLICIT
inline constexpr std::uint64_t sibling_merge_none = 2;             // SIBLING_MERGE_BEHAVIOR_NONE
inline constexpr std::uint64_t process_ordering_explicit = 1;      // PROCESS_ORDERING_EXPLICIT
inline constexpr std::uint64_t thread_ordering_explicit = 1;       // THREAD_ORDERING_EXPLICIT
// track_event/process_descriptor.proto, thread_descriptor.proto
inline constexpr std::uint32_t process_pid = 1;
inline constexpr std::uint32_t process_name = 6;
inline constexpr std::uint32_t thread_pid = 1;
inline constexpr std::uint32_t thread_tid = 2;
inline constexpr std::uint32_t thread_name = 5;
// track_event/track_event.proto: message TrackEvent
inline constexpr std::uint32_t event_category_iids = 3;
inline constexpr std::uint32_t event_debug_annotations = 4;
inline constexpr std::uint32_t event_type = 9;
inline constexpr std::uint32_t event_name_iid = 10;
inline constexpr std::uint32_t event_track_uuid = 11;
inline constexpr std::uint32_t event_name = 23;
inline constexpr std::uint32_t event_counter_value = 30;
inline constexpr std::uint32_t event_double_counter_value = 44;
// Counter samples an event carries, at its time, the i-th value on the i-th track.
inline constexpr std::uint32_t event_extra_counter_values = 12;               // repeated int64
inline constexpr std::uint32_t event_extra_counter_track_uuids = 31;          // repeated uint64
inline constexpr std::uint32_t event_extra_double_counter_track_uuids = 45;   // repeated uint64
inline constexpr std::uint32_t event_extra_double_counter_values = 46;        // repeated double
// Flow ids as varints: `flow_ids_old` and `terminating_flow_ids_old`, which trace_processor
// reads when the fixed64 `flow_ids` (47) and `terminating_flow_ids` (48) are absent
// (track_event_event_importer.h); strata's ids count from 1, so a varint takes 1-3 bytes, not 8.
inline constexpr std::uint32_t event_flow_ids = 36;              // repeated uint64
inline constexpr std::uint32_t event_terminating_flow_ids = 42;  // repeated uint64
inline constexpr std::uint64_t type_slice_begin = 1;             // enum TrackEvent.Type
inline constexpr std::uint64_t type_slice_end = 2;
inline constexpr std::uint64_t type_instant = 3;
inline constexpr std::uint64_t type_counter = 4;
// interned_data/interned_data.proto: message InternedData; EventCategory, EventName and
// DebugAnnotationName (track_event.proto, debug_annotation.proto) are all {iid = 1, name = 2}.
inline constexpr std::uint32_t interned_event_categories = 1;
inline constexpr std::uint32_t interned_event_names = 2;
inline constexpr std::uint32_t interned_annotation_names = 3;
inline constexpr std::uint32_t interned_iid = 1;
inline constexpr std::uint32_t interned_name = 2;
// track_event/debug_annotation.proto: message DebugAnnotation
inline constexpr std::uint32_t annotation_name_iid = 1;
inline constexpr std::uint32_t annotation_bool = 2;
inline constexpr std::uint32_t annotation_uint = 3;
inline constexpr std::uint32_t annotation_int = 4;
inline constexpr std::uint32_t annotation_double = 5;
inline constexpr std::uint32_t annotation_string = 6;
inline constexpr std::uint32_t annotation_legacy_json = 9;
inline constexpr std::uint32_t annotation_name = 10;
inline constexpr std::uint32_t annotation_dict_entries = 11;
inline constexpr std::uint32_t annotation_array_values = 12;

/// `s` as valid UTF-8, the way the JSON writer shows names: each byte that is not part of a
/// well-formed sequence becomes U+FFFD; everything else (control bytes, NUL) stays as it is.
inline std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      out.push_back(s[i++]);
      continue;
    }
    const std::size_t n = detail::utf8_sequence_length(s.substr(i));
    if (n == 0) {
      out.append("\xef\xbf\xbd");
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

/// Interned strings (event names, categories, argument names): one iid per distinct string in
/// each table for the whole file, sent on a sequence the first time that sequence uses it.
class interner {
 public:
  enum table : std::uint8_t { category = 0, event_name = 1, annotation_name = 2 };

  std::uint64_t id(table t, std::string_view s) {
    auto& tab = tables_[t];
    auto [it, inserted] = tab.ids.try_emplace(std::string(s), tab.names.size() + 1);
    if (inserted) {
      tab.names.push_back(valid_utf8(s));
      tab.sent_on.push_back(0);
    }
    return it->second;
  }

  /// Adds `iid` of `t` to `out` (an InternedData) unless sequence `sequence` has it already.
  void send(table t, std::uint64_t iid, std::uint32_t sequence, proto::message& out) {
    auto& tab = tables_[t];
    std::uint32_t& sent = tab.sent_on[iid - 1];
    if (sent == sequence) return;
    sent = sequence;
    static constexpr std::uint32_t field[] = {interned_event_categories, interned_event_names,
                                              interned_annotation_names};
    proto::message entry;
    entry.varint(interned_iid, iid).bytes(interned_name, tab.names[iid - 1]);
    out.nested(field[t], entry);
  }

 private:
  struct strings {
    std::unordered_map<std::string, std::uint64_t> ids;
    std::vector<std::string> names;       // valid UTF-8, by iid - 1
    std::vector<std::uint32_t> sent_on;   // the last sequence that received it
  };
  strings tables_[3];
};

/// Whole packets gathered in a large buffer (each write() costs a system call) and handed on by
/// `flush()` when it fills: to a file (`packet_stream`), or from another thread to a
/// packet_stream (`packet_lane`).
class packet_buffer {
 public:
  packet_buffer(const packet_buffer&) = delete;
  packet_buffer& operator=(const packet_buffer&) = delete;

  /// Room for `n` bytes; `commit()` the end of what was written.
  char* reserve(std::size_t n) {
    if (used_ + n > buf_.size()) [[unlikely]] make_room(n);
    return buf_.data() + used_;
  }
  void commit(const char* end) noexcept {
    used_ = static_cast<std::size_t>(end - buf_.data());
    ++packets_;
  }

  /// Where the next packet goes, and the end of the buffer: a writer may keep both in locals,
  /// write several packets, and hand them over with `commit(end, packets)` (a store through
  /// `char*` may alias any member, so a writer that goes through the buffer for each packet
  /// reads them all again).
  char* cursor() noexcept { return buf_.data() + used_; }
  char* room_end() noexcept { return buf_.data() + buf_.size(); }
  void commit(const char* end, std::uint64_t packets) noexcept {
    used_ = static_cast<std::size_t>(end - buf_.data());
    packets_ += packets;
  }

  /// Appends one whole packet (a `Trace.packet` field) holding `fields`.
  void packet(const proto::message& fields) {
    const std::size_t n = fields.size();
    char* p = reserve(1 + proto::varint_size(n) + n);
    p = proto::put_varint(p, proto::key(trace_packet, proto::wire::length_delimited));
    p = proto::put_varint(p, n);
    std::memcpy(p, fields.view().data(), n);
    commit(p + n);
  }

  /// The packets written into this buffer so far.
  std::uint64_t packets() const noexcept { return packets_; }

  /// Hands on what the buffer holds, and empties it.
  virtual void flush() = 0;

 protected:
  packet_buffer() : buf_(capacity) {}
  virtual ~packet_buffer() = default;

  std::string_view gathered() const noexcept { return {buf_.data(), used_}; }
  void clear() noexcept { used_ = 0; }

 private:
  static constexpr std::size_t capacity = std::size_t{1} << 20;

  void make_room(std::size_t n) {
    flush();
    if (n > buf_.size()) buf_ = detail::scratch_bytes(n);  // one packet larger than the buffer (a very long name)
  }

  detail::scratch_bytes buf_;
  std::size_t used_ = 0;
  std::uint64_t packets_ = 0;
};

/// Streams packets into a trace file through a large buffer.
class packet_stream final : public packet_buffer {
 public:
  explicit packet_stream(const std::filesystem::path& path) : file_(path) {}

  void flush() override {
    file_.write(gathered());
    clear();
  }

  /// Appends `packets` whole packets gathered elsewhere (a packet_lane's buffer).
  void append(std::string_view bytes, std::uint64_t packets) {
    flush();
    file_.write(bytes);
    appended_ += packets;
  }

  export_result finish(const std::filesystem::path& path) {
    flush();
    file_.commit();
    return {path, packets() + appended_, file_.bytes_written()};
  }

 private:
  detail::trace_file file_;
  std::uint64_t appended_ = 0;
};

/// Packets written on another thread into a packet_stream's file: gathered in a buffer of their
/// own and appended to the stream under `lock`, a buffer at a time. A lane's packets stay in
/// the order written; the lanes' buffers interleave in the file as they fill, which a trace
/// may do (each packet names its sequence, and trace_processor sorts events by time).
class packet_lane final : public packet_buffer {
 public:
  packet_lane(packet_stream& out, std::mutex& lock) : out_(out), lock_(lock) {}

  void flush() override {
    const std::lock_guard<std::mutex> hold(lock_);
    out_.append(gathered(), packets() - handed_);
    handed_ = packets();
    clear();
  }

 private:
  packet_stream& out_;
  std::mutex& lock_;
  std::uint64_t handed_ = 0;
};

}  // namespace perfetto
}  // namespace v1
}  // namespace strata
