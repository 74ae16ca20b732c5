// benchmarks/overhead_cases.hpp: the functions whose cost bench_overhead and count_instructions
// measure, one per case.
//
// Every case is the same body, `benchmark::DoNotOptimize(x); return x + 1;`, wrapped in the
// instrumentation under test, and is defined out of line in its own translation unit
// (overhead_cases.cpp, or overhead_cases_off.cpp for the compiled-out case). So every case is
// reached the same way, by a direct call the optimiser cannot see through, and the benchmark
// loops differ only in the function they call: the compiled-out case measures the call and the
// body alone, and every other case adds its instrumentation to exactly that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace strata_bench {

/// The signature every case shares.
using case_fn = std::uint64_t (*)(std::uint64_t) noexcept;

// strata's macros (overhead_cases.cpp). Which session runs decides what scope_user costs:
// recording, disabled at run time (no session) or not captured (the user layer left out).
[[gnu::noinline]] std::uint64_t scope_user(std::uint64_t x) noexcept;     // STRATA_SCOPE
[[gnu::noinline]] std::uint64_t scope_dynamic(std::uint64_t x) noexcept;  // STRATA_SCOPE_DYNAMIC
[[gnu::noinline]] std::uint64_t instant_user(std::uint64_t x) noexcept;   // STRATA_INSTANT
[[gnu::noinline]] std::uint64_t counter_user(std::uint64_t x) noexcept;   // STRATA_COUNTER
// STRATA_ALLOC before the body and STRATA_FREE after it: two memory records when the session
// profiles memory, a branch each otherwise.
[[gnu::noinline]] std::uint64_t memory_pair(std::uint64_t x) noexcept;

// overhead_cases_extra.cpp: the C API's strata_push/strata_pop around the body; a framework
// scope with two shapes as arguments, the same every call (a cache hit once seen); the same
// framework scope without arguments, to compare with.
[[gnu::noinline]] std::uint64_t c_range(std::uint64_t x) noexcept;
// The C API on names that collided in its former direct-mapped cache: two adjacent literals
// ("rope", "attention") in turn, and 128 literals in turn (`x` picks the name).
[[gnu::noinline]] std::uint64_t c_range_adjacent(std::uint64_t x) noexcept;
[[gnu::noinline]] std::uint64_t c_range_engine(std::uint64_t x) noexcept;
inline constexpr std::uint64_t engine_name_count = 128;
[[gnu::noinline]] std::uint64_t scope_args_seen(std::uint64_t x) noexcept;
[[gnu::noinline]] std::uint64_t scope_framework(std::uint64_t x) noexcept;
// STRATA_SCOPE_FLOPS with a count computed per call (2·rows·inner·cols, the same every call:
// a cache hit once seen); without with_flops it must cost what scope_user costs.
[[gnu::noinline]] std::uint64_t scope_flops(std::uint64_t x) noexcept;
/// Records each extra case once (takes the buffer, interns the names, caches the arguments).
void warm_up_extra() noexcept;

// STRATA_SCOPE in a translation unit built with -DSTRATA_ENABLED=0 (overhead_cases_off.cpp).
[[gnu::noinline]] std::uint64_t scope_compiled_out(std::uint64_t x) noexcept;

/// Brings the calling thread to the steady state of every case before measuring: takes its
/// buffer for the running session (if any) and interns the dynamic scope's name in its cache.
void warm_up() noexcept;

// The limit baseline: what any scope must at least do. Two `rdtsc` reads and one 32-byte store
// into a thread-local ring of compile-time power-of-two size, the index advanced with a mask.
// No session check, no overflow check, no publication for a consumer.
struct limit_record {
  std::uint64_t begin;
  std::uint64_t end;
  const void* where;
  std::uint64_t payload;
};
static_assert(sizeof(limit_record) == 32 && std::is_trivially_copyable_v<limit_record>,
              "the baseline stores the same 32-byte POD as strata::record");

/// Ring sizes measured: 512 KiB stays in a 2 MiB L2, 32 MiB streams to memory. 128 MiB holds
/// 4 M records, so that a sustained run of up to 4 M calls never writes where it wrote before,
/// as a lossless session, which keeps every record, never does (a smaller ring's later laps
/// write lines the cache may still hold).
inline constexpr std::size_t small_ring = std::size_t{1} << 14;
inline constexpr std::size_t large_ring = std::size_t{1} << 20;
inline constexpr std::size_t whole_ring = std::size_t{1} << 22;

/// Gives the calling thread a fresh zeroed ring of `Capacity` records (pages touched now, not
/// in the measured loop).
template <std::size_t Capacity>
void limit_prepare();

/// A scope at the limit: two `rdtsc`, one 32-byte store.
template <std::size_t Capacity>
[[gnu::noinline]] std::uint64_t limit_scope(std::uint64_t x) noexcept;

/// An instant at the limit: one `rdtsc`, one 32-byte store.
template <std::size_t Capacity>
[[gnu::noinline]] std::uint64_t limit_instant(std::uint64_t x) noexcept;

/// An allocation and a free at the limit: two instants (one `rdtsc`, one 32-byte store each).
template <std::size_t Capacity>
[[gnu::noinline]] std::uint64_t limit_memory_pair(std::uint64_t x) noexcept;

/// Records the calling thread stored since limit_prepare(), so the harness can check that
/// every iteration stored one.
std::uint64_t limit_records_written() noexcept;

}  // namespace strata_bench
