// strata/core/recording_state.hpp: what the hot path reads and writes, and nothing else.
//
// The global state word says which layers the running session captures; each thread's *gate*
// says which layers it records straight into its buffer, and its *cursor* where the next record
// goes. All are constant-initialised and trivially destructible, so the hot path reads them
// with a plain TLS access (no init guard).
//
// Part of the instrumentation header, which may include <cstdint> and <cstddef> only: these
// are plain integers and pointers accessed through the compiler's __atomic builtins (what
// std::atomic compiles to) rather than std::atomic, whose header alone costs an including file
// a quarter of a second.
#pragma once

#include <cstdint>

#include "strata/core/config.hpp"
#include "strata/core/layer.hpp"
#include "strata/core/record.hpp"
#include "strata/core/site.hpp"

namespace strata {
inline namespace v1 {

/// Where a producer writes next. Only the producer writes it (and whoever binds it, on the
/// producer's thread); the consumer reads `next`, so `next` is only accessed atomically.
struct producer_cursor {
  record* next = nullptr;   ///< the slot the next record goes to (release-published)
  record* limit = nullptr;  ///< `next` below this needs no check: room is known

  STRATA_FORCE_INLINE record* load_next() const noexcept {
    return __atomic_load_n(&next, __ATOMIC_RELAXED);
  }
  /// What a consumer reads: the records below it are complete.
  STRATA_FORCE_INLINE record* acquire_next() const noexcept {
    return __atomic_load_n(&next, __ATOMIC_ACQUIRE);
  }
  STRATA_FORCE_INLINE void store_next(record* p) noexcept {
    __atomic_store_n(&next, p, __ATOMIC_RELAXED);
  }
  /// Makes the records below `p` visible to the consumer.
  STRATA_FORCE_INLINE void publish_next(record* p) noexcept {
    __atomic_store_n(&next, p, __ATOMIC_RELEASE);
  }
};

namespace detail {

/// The global state word read by every hot-path call: bits 0-6 are the captured layers of the
/// running session (0 when none runs), bit 7 says whether it records the arguments (input
/// shapes) of scopes that carry them, bits 8-31 are the session's epoch.
inline constinit std::uint32_t state = 0;

inline constexpr std::uint32_t layer_mask_bits = 0x7fu;
inline constexpr std::uint32_t record_args_bit = 0x80u;
inline constexpr unsigned epoch_shift = 8;
static_assert(layer_count <= 7, "the state word keeps the layers in bits 0-6");

constexpr bool records_args(std::uint32_t s) noexcept { return (s & record_args_bit) != 0; }
constexpr std::uint32_t epoch_of(std::uint32_t s) noexcept { return s >> epoch_shift; }

/// The state word: one relaxed load.
STRATA_FORCE_INLINE std::uint32_t load_state() noexcept {
  return __atomic_load_n(&state, __ATOMIC_RELAXED);
}

/// Non-zero while a profiler is started (between start() and stop(), recording or not): what
/// STRATA_STEP tests before it calls out of line.
inline constinit std::uint32_t profiler_started = 0;

// The gate: the layers (as in the state word) this thread records through the fast path: its
// buffer is the running session's and the session's clock is the one the fast path reads.
// Written by the thread when it takes a buffer, and cleared by the registry (from another
// thread) when the session ends. (A byte per layer would allow a compare with memory, but GCC
// 12 computes the address of a sub-word thread-local instead of folding it.)
inline thread_local constinit std::uint32_t tl_gate = 0;
// Where the thread's next record goes: bound to the ring of its current buffer.
inline thread_local constinit producer_cursor tl_cursor;

/// The fast path's test: the calling thread records `l` straight into its buffer.
STRATA_FORCE_INLINE bool gate_open(layer l) noexcept {
  return (__atomic_load_n(&tl_gate, __ATOMIC_RELAXED) & layer_set::bit(l)) != 0;
}

/// With the gate closed: whether the running session captures `l` at all (then the cold path
/// decides: take a buffer, or record through the portable clock).
STRATA_FORCE_INLINE bool session_captures(layer l) noexcept {
  return (load_state() & layer_set::bit(l)) != 0;
}

/// Stores `r` into slot `p`: the producer's hot path, with the cursor it owns. Relaxed atomic
/// stores (plain moves on x86-64 and AArch64), so that a flight recorder's consumer may read a
/// slot being rewritten without a data race; it validates what it copied afterwards.
STRATA_FORCE_INLINE void write_slot(record* p, std::uint64_t begin, std::uint64_t end,
                                    const site* where, std::uint64_t payload) noexcept {
  // Orders the previous position's publication before this slot's rewrite: a consumer that
  // sees any byte of the new record will then also see the position that marks the old one
  // stale.
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&p->begin, begin, __ATOMIC_RELAXED);
  __atomic_store_n(&p->end, end, __ATOMIC_RELAXED);
  __atomic_store_n(&p->where, where, __ATOMIC_RELAXED);
  __atomic_store_n(&p->payload, payload, __ATOMIC_RELAXED);
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
