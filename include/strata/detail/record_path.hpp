// strata/detail/record_path.hpp: the hot path, all of it: how a record is decided, timed and
// stored. Every scope, instant and counter, C++ or C, records through here:
//
//   open_mode(layer) ─ gate open ──▶ fast: rdtsc ... push_record(): compare the thread's cursor
//     │                                     with its limit, four 8-byte stores, publish
//     ├─ session captures the layer ─▶ cold: through the cold-path table (the thread's first
//     │                                record of a session takes its buffer; the portable clock)
//     └─ neither ─▶ off: one thread-local load, the state word, a branch
//
// The global *state word* says which layers the running session captures; each thread's
// *gate* says which layers it records straight into its buffer, and its *cursor* where the next
// record goes and up to where it may write without asking (the end of its current block). Only
// when the cursor reaches that limit does a push leave the hot path (`cold().push_slow`: the
// thread's buffer hands the block on and takes the next, strata/detail/thread_buffer.hpp).
//
// Part of the instrumentation header, which may read <cstdint> and <cstddef> only: the state
// is plain integers and pointers accessed through the compiler's __atomic builtins (what
// std::atomic compiles to), constant-initialised and trivially destructible so that a thread
// reads them with a plain TLS access and no init guard. Everything the hot path needs now and
// then goes through a table of function pointers that the implementation installs (as NVTX
// does): a program that instruments files but never compiles the implementation still links,
// and records nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "strata/config.hpp"
#include "strata/record.hpp"

#if defined(__x86_64__) || defined(__i386__)
#define STRATA_DETAIL_HAS_TSC 1
#else
#define STRATA_DETAIL_HAS_TSC 0
#endif

namespace strata {
inline namespace v1 {
namespace detail {

// ---- the state word -----------------------------------------------------------------------

/// Bits 0-4: the captured layers of the running session (0 when none runs); bit 5: it records
/// memory events (`profile_memory`); bit 6: it records the FLOP counts of scopes that carry one
/// (`with_flops`); bit 7: it records the arguments (input shapes) of scopes that carry them;
/// bits 8-31: the session's epoch.
inline constinit std::uint32_t state = 0;

inline constexpr std::uint32_t layer_mask_bits = 0x1fu;
inline constexpr std::uint32_t profile_memory_bit = 0x20u;
inline constexpr std::uint32_t record_flops_bit = 0x40u;
inline constexpr std::uint32_t record_args_bit = 0x80u;
inline constexpr unsigned epoch_shift = 8;
static_assert(layer_count <= 5, "the state word keeps the layers in bits 0-4");

constexpr bool records_args(std::uint32_t s) noexcept { return (s & record_args_bit) != 0; }
constexpr bool profiles_memory(std::uint32_t s) noexcept { return (s & profile_memory_bit) != 0; }
constexpr bool records_flops(std::uint32_t s) noexcept { return (s & record_flops_bit) != 0; }
constexpr std::uint32_t epoch_of(std::uint32_t s) noexcept { return s >> epoch_shift; }

/// The state word: one relaxed load.
STRATA_FORCE_INLINE std::uint32_t load_state() noexcept {
  return __atomic_load_n(&state, __ATOMIC_RELAXED);
}

/// Non-zero while a profiler is started (between start() and stop(), recording or not): what
/// STRATA_STEP tests before it calls out of line.
inline constinit std::uint32_t profiler_started = 0;

// ---- the calling thread's gate and cursor ---------------------------------------------------

/// Where a thread writes its next record. Only the producer writes it (and whoever binds it,
/// on the producer's thread); readers read `next`, so `next` is only accessed atomically.
struct cursor {
  record* next = nullptr;   ///< the slot the next record goes to (release-published)
  record* limit = nullptr;  ///< `next` below this needs no check: room is known

  STRATA_FORCE_INLINE record* load_next() const noexcept {
    return __atomic_load_n(&next, __ATOMIC_RELAXED);
  }
  /// What a reader reads: the records below it are complete.
  STRATA_FORCE_INLINE record* acquire_next() const noexcept {
    return __atomic_load_n(&next, __ATOMIC_ACQUIRE);
  }
  STRATA_FORCE_INLINE void store_next(record* p) noexcept {
    __atomic_store_n(&next, p, __ATOMIC_RELAXED);
  }
  /// Makes the records below `p` visible to readers.
  STRATA_FORCE_INLINE void publish_next(record* p) noexcept {
    __atomic_store_n(&next, p, __ATOMIC_RELEASE);
  }
};

// The gate: the layers (as in the state word) this thread records through the fast path: its
// buffer is the running session's and the session's clock is the one the fast path reads.
// Written by the thread when it takes a buffer, and cleared by the registry (from another
// thread) when the session ends. (A byte per layer would allow a compare with memory, but GCC
// 12 computes the address of a sub-word thread-local instead of folding it.)
inline thread_local constinit std::uint32_t tl_gate = 0;
// Where the thread's next record goes: bound to its current block.
inline thread_local constinit cursor tl_cursor;

/// The fast path's test: the calling thread records `l` straight into its buffer.
STRATA_FORCE_INLINE bool gate_open(layer l) noexcept {
  return (__atomic_load_n(&tl_gate, __ATOMIC_RELAXED) & layer_set::bit(l)) != 0;
}

/// With the gate closed: whether the running session captures `l` at all (then the cold path
/// decides: take a buffer, or record through the portable clock).
STRATA_FORCE_INLINE bool session_captures(layer l) noexcept {
  return (load_state() & layer_set::bit(l)) != 0;
}

// ---- the cold-path table --------------------------------------------------------------------

/// The cold paths of the instrumentation header. Every function is noexcept: failures become
/// "not recorded" (and counted where a record was lost), never an exception in a user's scope.
struct cold_path_table {
  /// The calling thread may record `l` now: the running session captures it and the thread
  /// has its buffer for that session (taken here on its first record).
  bool (*prepare_to_record)(layer l) noexcept;
  /// Stores a record when the thread's cursor is at its limit (or counts it as lost).
  bool (*push_slow)(std::uint64_t begin, std::uint64_t end, const site* where,
                    std::uint64_t payload) noexcept;
  /// steady_clock nanoseconds: the ticks of a process without an invariant TSC.
  std::uint64_t (*portable_ticks)() noexcept;
  /// The descriptor of a run-time name (interned once per distinct value); never null.
  const site* (*intern)(layer l, record_kind k, const char* name, std::size_t size) noexcept;
  /// The descriptor of `base` carrying the arguments encoded in `words` (strata/args/op_args.hpp);
  /// `base` itself when they cannot be interned.
  const site* (*intern_args)(const site* base, const std::uint64_t* words,
                             std::size_t count) noexcept;
  /// Names the calling thread in traces.
  void (*set_thread_name)(const char* name, std::size_t size) noexcept;
  /// A step boundary for the running profiler (STRATA_STEP).
  void (*step)() noexcept;
  /// The descriptor of `base` carrying the FLOP count `flops` (strata/scope.hpp's
  /// `site_with_flops`), remembered in the calling thread's `flops_cache`; `base` itself
  /// when it cannot be interned.
  const site* (*intern_flops)(const site* base, std::uint64_t flops) noexcept;
};

/// What a descriptor request gets when it cannot be served: no implementation is compiled
/// into the program yet (a name interned during another file's static initialisation), or
/// memory ran out.
inline constexpr site unnamed_site{"(strata: name not interned)", "", 0, layer::user,
                                   record_kind::scope};

namespace no_implementation {
inline bool prepare_to_record(layer) noexcept { return false; }
inline bool push_slow(std::uint64_t, std::uint64_t, const site*, std::uint64_t) noexcept {
  return false;
}
inline std::uint64_t portable_ticks() noexcept { return 0; }
inline const site* intern(layer, record_kind, const char*, std::size_t) noexcept {
  return &unnamed_site;
}
inline const site* intern_args(const site* base, const std::uint64_t*, std::size_t) noexcept {
  return base;
}
inline void set_thread_name(const char*, std::size_t) noexcept {}
inline void step() noexcept {}
inline const site* intern_flops(const site* base, std::uint64_t) noexcept { return base; }
inline constexpr cold_path_table table{prepare_to_record, push_slow,       portable_ticks, intern,
                                       intern_args,       set_thread_name, step,           intern_flops};
}  // namespace no_implementation

/// The installed cold paths: a C++17 inline variable, so one per process across the executable
/// and its shared libraries (ELF, default visibility); only the implementation writes it.
inline constinit const cold_path_table* cold_path = &no_implementation::table;

inline const cold_path_table& cold() noexcept {
  return *__atomic_load_n(&cold_path, __ATOMIC_ACQUIRE);
}

// ---- ticks ----------------------------------------------------------------------------------

/// Non-zero once the process has chosen the TSC (clock::select_once); constant-initialised so
/// reads never race with dynamic initialisation.
inline constinit std::uint32_t use_tsc = 0;

STRATA_FORCE_INLINE bool tsc_selected() noexcept {
  return __atomic_load_n(&use_tsc, __ATOMIC_RELAXED) != 0;
}

/// What the fast branch reads: `rdtsc` on x86 (the builtin, not <x86intrin.h>, which alone is
/// about a third of what a scope's includes used to preprocess). A thread takes the fast branch
/// only while its gate is open, which the registry allows only when these are the process's
/// ticks. Elsewhere, the portable clock through the cold-path table.
STRATA_FORCE_INLINE std::uint64_t fast_ticks() noexcept {
#if STRATA_DETAIL_HAS_TSC
  return __builtin_ia32_rdtsc();
#else
  return cold().portable_ticks();
#endif
}

/// The process's ticks: `rdtsc` when the TSC was chosen, steady_clock nanoseconds otherwise.
STRATA_FORCE_INLINE std::uint64_t now_ticks() noexcept {
#if STRATA_DETAIL_HAS_TSC
  if (tsc_selected()) [[likely]]
    return __builtin_ia32_rdtsc();
#endif
  return cold().portable_ticks();
}

// ---- the one push ---------------------------------------------------------------------------

/// Stores a record into slot `p` with relaxed atomic stores (plain moves on x86-64 and
/// AArch64), so that a reader copying a flight recorder's block while the thread reuses it has
/// no data race; it checks the block's generation afterwards.
STRATA_FORCE_INLINE void write_slot(record* p, std::uint64_t begin, std::uint64_t end,
                                    const site* where, std::uint64_t payload) noexcept {
  // Orders what came before (a reused block's new generation) before this slot's rewrite: a
  // reader that sees any byte of the new record also sees the generation that marks the old
  // contents stale.
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&p->begin, begin, __ATOMIC_RELAXED);
  __atomic_store_n(&p->end, end, __ATOMIC_RELAXED);
  __atomic_store_n(&p->site, where, __ATOMIC_RELAXED);
  __atomic_store_n(&p->payload, payload, __ATOMIC_RELAXED);
}

/// Cold: the cursor is at its limit (the block is full, or the thread has none: it exited, and
/// the record is not taken, as documented for records made after a thread's exit). Takes the
/// fields as scalars so that the hot path passes them in registers.
STRATA_NOINLINE inline bool push_record_slow(std::uint64_t begin, std::uint64_t end,
                                             const site* where, std::uint64_t payload) noexcept {
  return cold().push_slow(begin, end, where, payload);
}

/// Stores a record into the calling thread's buffer through its cursor: a compare, the slot's
/// four stores and the new position. The only way a record enters a thread's buffer.
STRATA_FORCE_INLINE bool push_record(std::uint64_t begin, std::uint64_t end, const site* where,
                                     std::uint64_t payload) noexcept {
  record* p = tl_cursor.load_next();
  if (p < tl_cursor.limit) [[likely]] {
    write_slot(p, begin, end, where, payload);
    tl_cursor.publish_next(p + 1);
    return true;
  }
  return push_record_slow(begin, end, where, payload);
}

// ---- the one decision -----------------------------------------------------------------------

/// How a record is taken: not at all, through the fast branch (the thread's gate was open), or
/// through the cold path (its first record in the session, or the portable clock).
enum class record_mode : std::uint8_t { off, fast, cold };

/// Cold: whether the calling thread can record `l` now, taking its buffer for the running
/// session if it has none yet. Out of line so that a call site carries one call.
STRATA_NOINLINE inline bool prepare_to_record(layer l) noexcept {
  return cold().prepare_to_record(l);
}

/// Record, take the cold path, or do nothing: the one place that decides, for C++ scopes,
/// instants and counters and for the C API alike.
STRATA_FORCE_INLINE record_mode open_mode(layer l) noexcept {
  if (gate_open(l)) [[likely]]
    return record_mode::fast;
  if (session_captures(l) && prepare_to_record(l)) [[unlikely]]
    return record_mode::cold;
  return record_mode::off;
}

/// The time a record of `mode` (not `off`) reads.
STRATA_FORCE_INLINE std::uint64_t ticks_for(record_mode mode) noexcept {
  return mode == record_mode::fast ? fast_ticks() : now_ticks();
}

/// Opens a record of `l` whose descriptor is made only when it records: `make_site()` (a name
/// look-up) runs once the mode is known and before the time is read, so its cost is not in the
/// record. Sets `mode`, and `where` and `begin` unless it is `off`. (Each mode reads its own
/// clock after its own `make_site()`, and the mode is stored where it is known, so that the fast
/// branch stays as short as a static descriptor's.)
template <class MakeSite>
STRATA_FORCE_INLINE void open_record(layer l, MakeSite&& make_site, record_mode& mode,
                                     const site*& where, std::uint64_t& begin) {
  const record_mode decided = open_mode(l);
  if (decided == record_mode::fast) [[likely]] {
    where = make_site();
    mode = record_mode::fast;
    begin = fast_ticks();
  } else if (decided == record_mode::cold) [[unlikely]] {
    where = make_site();
    mode = record_mode::cold;
    begin = now_ticks();
  } else {
    mode = record_mode::off;
  }
}

/// Cold: closes a record opened through the cold path.
STRATA_NOINLINE inline void close_cold(std::uint64_t begin, const site* where,
                                       std::uint64_t payload) noexcept {
  push_record(begin, now_ticks(), where, payload);
}

/// Closes a scope opened with `mode` at `begin`: stores its record.
STRATA_FORCE_INLINE void close_record(record_mode mode, std::uint64_t begin, const site* where,
                                      std::uint64_t payload) noexcept {
  if (mode == record_mode::fast) [[likely]]
    push_record(begin, fast_ticks(), where, payload);
  else if (mode == record_mode::cold) [[unlikely]]
    close_cold(begin, where, payload);
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
