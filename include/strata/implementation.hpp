// strata/implementation.hpp: strata's implementation: the registry of thread buffers, sessions,
// exporters, key_averages tables, the C API, and the cold paths the instrumentation header
// calls. Compile it into exactly one C++ file of a program, by defining STRATA_IMPLEMENTATION
// before including <strata/strata.hpp>, <strata/profiler.hpp> or <strata/strata.h> (or by
// including this header); the order of that define and those includes does not matter as long
// as one of them follows the define:
//
//   #define STRATA_IMPLEMENTATION
//   #include <strata/profiler.hpp>
//
// It needs no library beyond -pthread: {fmt} is compiled here in its header-only mode, unless
// the file has already included {fmt} itself (then {fmt} stays as that include made it, and a
// program using fmt as a library links -lfmt as it already must). Include strata first in that
// file, or in a file of its own, to keep it link-flag free. FMT_HEADER_ONLY is undefined again
// afterwards, so later includes of {fmt} in the file see the user's own setting.
//
// With STRATA_ENABLED=0 this compiles a profiler that records nothing (detail/impl/compiled_out.hpp).
#pragma once

#if !defined(__cplusplus)
#error "strata's implementation is C++20: define STRATA_IMPLEMENTATION in a C++ file"
#elif __cplusplus < 202002L
#error "strata's implementation needs C++20 (-std=c++20)"
#else  // the rest of the file: nothing more is compiled below C++20, so the error above is the only one

#include "strata/config.hpp"
#include "strata/detail/link_check.h"

// The one strong definition of the program (strata/detail/link_check.h): a second file that
// compiles the implementation makes the linker name this symbol first, and a program with none
// names it among its undefined references. Defined before anything else, so it comes first.
extern "C" void strata_link_error__define_STRATA_IMPLEMENTATION_in_one_cpp_file() {}

#if STRATA_ENABLED

#if !defined(FMT_VERSION) && !defined(FMT_HEADER_ONLY)
#define FMT_HEADER_ONLY
#define STRATA_DETAIL_FMT_HEADER_ONLY
#endif
// g++ 12 at -O3 takes fmt 9's fill_t copy for an overflow (-Wstringop-overflow, a false
// positive of its middle end): silenced for fmt's lines only, so that -Werror builds pass.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
#include <fmt/format.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#ifdef STRATA_DETAIL_FMT_HEADER_ONLY
#undef FMT_HEADER_ONLY
#undef STRATA_DETAIL_FMT_HEADER_ONLY
#endif

#include "strata/detail/impl/args.hpp"
#include "strata/detail/impl/averages_table.hpp"
#include "strata/detail/impl/c_api.hpp"
#include "strata/detail/impl/cold_path.hpp"
#include "strata/detail/impl/device.hpp"
#include "strata/detail/impl/ondemand.hpp"
#include "strata/detail/impl/profiler.hpp"

#else

#include "strata/detail/impl/compiled_out.hpp"

#endif

#include "strata/detail/impl/env_capture.hpp"  // last: reads the environment once the rest is set up
#endif  // C++20
