// strata/core/crash_dump_format.hpp: the layout of a crash dump (docs/trace-format.md,
// "Crash dump"), shared by the signal handler that writes it (core/crash_recorder.hpp) and the
// reader that turns it back into a session (analysis/crash_dump_reader.hpp).
//
// A dump is the header, the process name, then tagged sections: one per thread (its records,
// raw, oldest first), one per distinct site those records point to (its strings), and an end
// section whose presence says the dump is complete. Every integer is little-endian, as the
// process wrote it; nothing is aligned past the header.
#pragma once

#include <cstdint>

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
  std::uint8_t overflow = 0;          ///< 0 drop_newest (lossless), 1 overwrite_oldest
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
}  // namespace v1
}  // namespace strata
