// strata/crash_dump.hpp: the crash dump's file format (docs/trace-format.md#crash-dumps), and a
// dump read back into a session, which the exporters and key_averages take like any other.
//
// The dump holds raw records whose `site*` pointed into the crashed process; the reader builds a
// site per site section and points each record at it. A dump that is not one, is truncated (the
// handler was killed, the disk filled) or is malformed raises strata::error saying what is wrong
// and where; nothing in it is trusted (lengths and counts are checked against the bytes there).
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "strata/error.hpp"
#include "strata/record.hpp"
#include "strata/trace_data.hpp"
#include "strata/detail/session.hpp"


namespace strata {
inline namespace v1 {

namespace detail {

inline constexpr char crash_dump_magic[8] = {'S', 'T', 'R', 'C', 'R', 'A', 'S', 'H'};
inline constexpr std::uint32_t crash_dump_version = 1;

/// `crash_dump_header::flags`: what the dump had to leave out.
enum crash_dump_flags : std::uint32_t {
  /// The registry's lock could not be taken (the crashed thread held it): no thread is dumped.
  crash_dump_threads_missing = 1u << 0,
  /// The block store's lock could not be taken: lossless threads' records are not dumped.
  crash_dump_blocks_missing = 1u << 1,
  /// More distinct sites than the table prepared at session start: some records' names are
  /// unknown.
  crash_dump_sites_missing = 1u << 2,
  /// A flight recorder's position could not be read consistently (its thread crashed while
  /// moving to its next block).
  crash_dump_ring_missing = 1u << 3,
};

struct crash_dump_header {
  char magic[8] = {};
  std::uint32_t version = crash_dump_version;
  std::uint32_t header_bytes = 0;     ///< sizeof(crash_dump_header): what to skip
  std::uint32_t record_bytes = 32;
  std::uint32_t signal = 0;           ///< the signal that made the dump
  std::uint64_t pid = 0;
  std::uint32_t flags = 0;            ///< crash_dump_flags
  std::uint8_t clock_source = 0;      ///< 0 steady_clock (ticks are ns), 1 tsc
  std::uint8_t overflow = 0;          ///< 0 lossless, 1 flight recorder
  std::uint16_t reserved = 0;
  std::uint64_t anchor_ticks = 0;     ///< ticks read at `anchor_ns` on the steady clock
  std::int64_t anchor_ns = 0;
  double ns_per_tick = 1.0;           ///< measured between the window's start and the crash
  std::uint64_t start_ticks = 0;      ///< when the recorded window began
  std::uint64_t crash_ticks = 0;      ///< when the handler ran
  std::uint32_t layers = 0;           ///< layer_set bits the session captured
  std::uint32_t reserved2 = 0;
  std::uint64_t buffer_capacity = 0;  ///< a flight recorder's records per thread
};
static_assert(sizeof(crash_dump_header) == 96, "the crash dump header is part of the format");

/// Section tags (a little-endian u32 before each section).
enum crash_dump_tag : std::uint32_t {
  crash_dump_thread_tag = 0x44524854u,  // "THRD"
  crash_dump_site_tag = 0x45544953u,    // "SITE"
  crash_dump_end_tag = 0x2e444e45u,     // "END."
};

/// `crash_dump_thread::flags`.
enum crash_dump_thread_flags : std::uint32_t {
  crash_dump_thread_exited = 1u << 0,
  crash_dump_thread_ns = 1u << 1,     ///< timestamps are steady_clock ns (device tracks)
  crash_dump_thread_steps = 1u << 2,  ///< a steps track of thread `steps_of`
};

/// A thread section: this, then the name and process name (strings), then `records` records.
struct crash_dump_thread {
  std::uint64_t tid = 0;
  std::uint64_t pid = 0;           ///< 0: a thread of the process; else a device's process
  std::uint64_t steps_of = 0;
  std::uint64_t lost = 0;          ///< dropped or overwritten before the crash
  std::uint64_t records = 0;
  std::uint64_t not_dumped = 0;    ///< records only in the spill file, left out
  std::uint32_t order = 0;
  std::uint32_t flags = 0;         ///< crash_dump_thread_flags
};
static_assert(sizeof(crash_dump_thread) == 56);

/// A site section: this, then five strings: name, file, input shapes, args JSON, category.
struct crash_dump_site {
  std::uint64_t address = 0;  ///< the `site*` the records hold
  std::uint32_t line = 0;
  std::uint8_t layer = 0;
  std::uint8_t kind = 0;
  std::uint16_t reserved = 0;
};
static_assert(sizeof(crash_dump_site) == 16);

/// The end section: how many of each section came before it.
struct crash_dump_end {
  std::uint64_t threads = 0;
  std::uint64_t sites = 0;
};
static_assert(sizeof(crash_dump_end) == 16);

/// A string is a u32 length then its bytes; this length stands for a null pointer.
inline constexpr std::uint32_t crash_dump_null_string = 0xffffffffu;
/// The writer cuts strings longer than this (a corrupted pointer may point at no terminator).
inline constexpr std::uint32_t crash_dump_max_string = std::uint32_t{1} << 20;

}  // namespace detail

/// A crash dump read back: the session it holds, and what it says about the crash. Owns the
/// sites its records point to, so it is neither copied nor moved (held by a unique_ptr).
struct crash_dump {
  trace_data data;            ///< ordered like a stopped session's, clock finished
  int signal = 0;             ///< the signal that made the dump
  std::uint32_t flags = 0;    ///< detail::crash_dump_flags: what the dump had to leave out
  std::uint64_t unknown_sites = 0;  ///< records whose site was not in the dump (named "[unknown]")
  std::uint64_t not_dumped = 0;     ///< records that were only in the spill file

  crash_dump() = default;
  crash_dump(const crash_dump&) = delete;
  crash_dump& operator=(const crash_dump&) = delete;

  /// What the dump had to leave out, in words (empty: nothing).
  std::string missing() const {
    std::string out;
    const auto add = [&](std::string s) { out += (out.empty() ? "" : "; ") + s; };
    if (flags & detail::crash_dump_threads_missing)
      add("no thread's records (the crashed thread held the registry's lock)");
    if (flags & detail::crash_dump_blocks_missing)
      add("lossless threads' records (the crashed thread held the block store's lock)");
    if (flags & detail::crash_dump_ring_missing) add("a flight recorder whose thread was between two blocks");
    if (flags & detail::crash_dump_sites_missing || unknown_sites != 0)
      add(std::to_string(unknown_sites) + " records' names (more sites than the dump's table holds)");
    if (not_dumped != 0) add(std::to_string(not_dumped) + " records already in the spill file");
    return out;
  }

  std::deque<site> sites;          // stable addresses: records point here
  std::deque<std::string> strings; // the sites' strings
};

namespace detail {

class crash_dump_parser {
 public:
  crash_dump_parser(std::span<const char> bytes, std::string name) : bytes_(bytes), name_(std::move(name)) {}

  std::unique_ptr<crash_dump> parse() {
    auto dump = std::make_unique<crash_dump>();
    if (bytes_.size() < sizeof(crash_dump_magic) ||
        std::memcmp(bytes_.data(), crash_dump_magic, sizeof crash_dump_magic) != 0)
      fail(0, "not a strata crash dump (no STRCRASH magic)");
    crash_dump_header h;
    if (bytes_.size() < 16) fail(8, "truncated in its header");
    std::memcpy(&h.version, bytes_.data() + 8, 4);
    if (h.version == 0 || h.version > crash_dump_version)
      fail(8, "format version " + std::to_string(h.version) + ", which this strata reads not "
              "(it reads version " + std::to_string(crash_dump_version) + "); use the strata of the "
              "program that wrote it");
    take(&h, sizeof h, "its header");
    if (h.header_bytes < sizeof h || h.header_bytes > bytes_.size())
      fail(12, "header size " + std::to_string(h.header_bytes) + " is impossible");
    at_ = h.header_bytes;
    if (h.record_bytes != sizeof(record))
      fail(16, "records of " + std::to_string(h.record_bytes) + " bytes (expected 32)");
    if (h.clock_source > 1) fail(36, "unknown clock source " + std::to_string(h.clock_source));
    if (!(h.ns_per_tick > 0 && h.ns_per_tick < 1e6))
      fail(56, "impossible clock rate");

    trace_data& d = dump->data;
    d.pid = h.pid;
    d.process_name = string("the process name");
    d.layers = layer_set::from_bits(h.layers);
    d.overflow = h.overflow == 1 ? overflow_policy::flight_recorder : overflow_policy::lossless;
    d.buffer_capacity = static_cast<std::size_t>(h.buffer_capacity);
    d.clock = clock_calibration::from_parts(h.clock_source == 1 ? clock_source::tsc : clock_source::steady_clock,
                                            h.anchor_ticks, h.anchor_ns, h.ns_per_tick);
    d.start_ticks = h.start_ticks;
    d.stop_ticks = h.crash_ticks;
    dump->signal = static_cast<int>(h.signal);
    dump->flags = h.flags;

    std::unordered_map<std::uint64_t, const site*> by_address;
    std::uint64_t threads = 0, sites = 0;
    bool ended = false;
    while (!ended) {
      if (at_ == bytes_.size()) fail(at_, "truncated: it ends before its end section (the crashed process was "
                                          "killed while writing it, or the disk was full)");
      std::uint32_t tag = 0;
      take(&tag, sizeof tag, "a section's tag");
      if (tag == crash_dump_thread_tag) {
        crash_dump_thread t;
        take(&t, sizeof t, "a thread section");
        thread_track track;
        track.tid = t.tid;
        track.pid = t.pid;
        track.sort_index = t.order;
        track.exited = (t.flags & crash_dump_thread_exited) != 0;
        track.timestamps_in_ns = (t.flags & crash_dump_thread_ns) != 0;
        track.steps = (t.flags & crash_dump_thread_steps) != 0;
        track.steps_of = t.steps_of;
        track.lost = t.lost;
        track.name = string("a thread's name");
        track.process_name = string("a thread's process name");
        const std::size_t left = bytes_.size() - at_;
        if (t.records > left / sizeof(record))
          fail(at_, "truncated: a thread section announces " + std::to_string(t.records) +
                        " records and " + std::to_string(left / sizeof(record)) + " follow");
        track.records.resize(static_cast<std::size_t>(t.records));
        take(track.records.data(), track.records.size() * sizeof(record), "records");
        dump->not_dumped += t.not_dumped;
        d.threads.push_back(std::move(track));
        ++threads;
      } else if (tag == crash_dump_site_tag) {
        crash_dump_site s;
        const std::size_t section = at_;
        take(&s, sizeof s, "a site section");
        if (s.layer >= layer_count) fail(section, "a site of unknown layer " + std::to_string(s.layer));
        if (s.kind > 2) fail(section, "a site of unknown kind " + std::to_string(s.kind));
        site& made = dump->sites.emplace_back();
        made.line = s.line;
        made.layer = static_cast<layer>(s.layer);
        made.kind = static_cast<record_kind>(s.kind);
        made.name = kept(*dump, "a site's name");
        made.file = kept(*dump, "a site's file");
        made.input_shapes = kept(*dump, "a site's input shapes");
        made.args_json = kept(*dump, "a site's arguments");
        made.category = kept(*dump, "a site's category");
        if (made.name == nullptr) made.name = "";
        if (made.file == nullptr) made.file = "";
        by_address[s.address] = &made;
        ++sites;
      } else if (tag == crash_dump_end_tag) {
        crash_dump_end e;
        take(&e, sizeof e, "the end section");
        if (e.threads != threads || e.sites != sites)
          fail(at_, "the end section counts " + std::to_string(e.threads) + " threads and " +
                        std::to_string(e.sites) + " sites, but " + std::to_string(threads) +
                        " and " + std::to_string(sites) + " came before it");
        ended = true;
      } else {
        fail(at_ - 4, "an unknown section tag");
      }
    }
    if (at_ != bytes_.size())
      fail(at_, std::to_string(bytes_.size() - at_) + " bytes after its end section");

    // Point each record at its site; a record whose site the dump lacks becomes an instant
    // named "[unknown]", and the handler's padding (a null site) is dropped.
    site* unknown = nullptr;
    for (thread_track& t : d.threads) {
      std::erase_if(t.records, [](const record& r) { return r.site == nullptr; });
      for (record& r : t.records) {
        const auto address = reinterpret_cast<std::uintptr_t>(r.site);
        if (auto it = by_address.find(address); it != by_address.end()) {
          r.site = it->second;
          continue;
        }
        if (unknown == nullptr) {
          unknown = &dump->sites.emplace_back();
          unknown->name = "[unknown]";
          unknown->file = "";
          unknown->line = 0;
          unknown->layer = layer::user;
          unknown->kind = record_kind::instant;
          unknown->category = "strata.unknown";
        }
        r.site = unknown;
        ++dump->unknown_sites;
      }
    }
    // Steps tracks are named after their thread, as a collected session names them.
    for (thread_track& t : d.threads) {
      if (!t.steps) continue;
      std::string of_name;
      for (const thread_track& o : d.threads)
        if (!o.steps && o.tid == t.steps_of) of_name = o.name;
      t.name = (of_name.empty() ? "thread " + std::to_string(t.steps_of) : of_name) + " steps";
    }
    order_session(d);
    return dump;
  }

 private:
  [[noreturn]] void fail(std::size_t where, const std::string& what) const {
    throw error("crash dump '" + name_ + "' at byte " + std::to_string(where) + ": " + what);
  }

  void take(void* to, std::size_t n, const char* what) {
    if (n > bytes_.size() - at_) fail(at_, std::string("truncated in ") + what);
    if (n != 0) std::memcpy(to, bytes_.data() + at_, n);
    at_ += n;
  }

  // A string; `null` says whether it was the null marker.
  std::string string(const char* what, bool* null = nullptr) {
    std::uint32_t n = 0;
    take(&n, sizeof n, what);
    if (null != nullptr) *null = n == crash_dump_null_string;
    if (n == crash_dump_null_string) return {};
    if (n > bytes_.size() - at_) fail(at_, std::string("truncated in ") + what);
    std::string s(bytes_.data() + at_, n);
    at_ += n;
    return s;
  }

  const char* kept(crash_dump& dump, const char* what) {
    bool null = false;
    std::string s = string(what, &null);
    if (null) return nullptr;
    return dump.strings.emplace_back(std::move(s)).c_str();
  }

  std::span<const char> bytes_;
  std::string name_;
  std::size_t at_ = 0;
};

}  // namespace detail

/// Reads a crash dump held in memory; `name` is what error messages call it.
inline std::unique_ptr<crash_dump> read_crash_dump(std::span<const char> bytes, std::string name = "dump") {
  return detail::crash_dump_parser(bytes, std::move(name)).parse();
}

/// Whether the file at `path` starts like a crash dump (its magic).
inline bool is_crash_dump(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof detail::crash_dump_magic] = {};
  return in.read(magic, sizeof magic) && std::memcmp(magic, detail::crash_dump_magic, sizeof magic) == 0;
}

/// Reads the crash dump at `path`.
inline std::unique_ptr<crash_dump> read_crash_dump_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("cannot open the crash dump '" + path.string() + "'");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return read_crash_dump(bytes, path.string());
}

}  // namespace v1
}  // namespace strata
