// strata/config.hpp: build switches, version and the few portability macros.
#pragma once

/// `STRATA_ENABLED=0` compiles every `STRATA_*` macro to nothing; arguments are not evaluated.
#ifndef STRATA_ENABLED
#define STRATA_ENABLED 1
#endif

#define STRATA_VERSION_MAJOR 0
#define STRATA_VERSION_MINOR 1
#define STRATA_VERSION_PATCH 0
#define STRATA_VERSION_STRING "0.1.0"

#if defined(__GNUC__) || defined(__clang__)
#define STRATA_FORCE_INLINE inline __attribute__((always_inline))
#define STRATA_NOINLINE __attribute__((noinline))
#else
#define STRATA_FORCE_INLINE inline
#define STRATA_NOINLINE
#endif

#define STRATA_DETAIL_CAT2(a, b) a##b
#define STRATA_DETAIL_CAT(a, b) STRATA_DETAIL_CAT2(a, b)

namespace strata {
inline namespace v1 {
/// The library version, as written into every trace's `otherData`.
inline constexpr const char* version = STRATA_VERSION_STRING;
}  // namespace v1
}  // namespace strata
