// strata/core/tick.hpp: the hot path's timestamp reads (raw ticks; nanoseconds only at export).
//
// Where the CPU reports an invariant TSC the process reads it with one `rdtsc`; elsewhere it
// reads steady_clock, whose ticks are nanoseconds. strata/core/clock.hpp makes that choice
// once per process and turns ticks into time; this part is in the instrumentation header.
#pragma once

#include <cstdint>

#include "strata/core/cold_path.hpp"
#include "strata/core/config.hpp"

#if defined(__x86_64__) || defined(__i386__)
#define STRATA_DETAIL_HAS_TSC 1
#else
#define STRATA_DETAIL_HAS_TSC 0
#endif

namespace strata {
inline namespace v1 {
namespace detail {

/// Non-zero once the process has chosen the TSC (clock::select_once); constant-initialised so
/// reads never race with dynamic initialisation.
inline constinit std::uint32_t use_tsc = 0;

STRATA_FORCE_INLINE bool tsc_selected() noexcept {
  return __atomic_load_n(&use_tsc, __ATOMIC_RELAXED) != 0;
}

/// What the hot path's fast branch reads: `rdtsc` on x86 (the builtin, not <x86intrin.h>,
/// which alone is about a third of what a scope's includes used to preprocess). A thread takes
/// the fast branch only while its gate is open, which the registry allows only when these are
/// the process's ticks. Elsewhere, the portable clock through the cold-path table.
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

}  // namespace detail
}  // namespace v1
}  // namespace strata
