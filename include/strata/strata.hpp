// strata/strata.hpp: the instrumentation header, what every instrumented file includes.
//
//  ┌──────────────────────────── strata ─────────────────────────────┐
//  │ strata/strata.hpp  STRATA_SCOPE / _LAYER / _DYNAMIC, INSTANT,   │  any file, any thread
//  │   COUNTER, STEP; set_thread_name, intern. <cstdint>/<cstddef>   │  (hot path; compiles
//  │   only: cold paths go through a table of function pointers      │   like <vector>)
//  ├─────────────────────────────────────────────────────────────────┤
//  │ strata/profiler.hpp  profiler, config, stats, key_averages      │  the file that runs a
//  │   tables: declarations only                                     │  session
//  ├─────────────────────────────────────────────────────────────────┤
//  │ STRATA_IMPLEMENTATION (one C++ file of the program):            │  compiled once
//  │   registry, buffers, exporters, key_averages, C API, {fmt}      │  (strata/implementation.hpp)
//  ├─────────────────────────────────────────────────────────────────┤
//  │ strata/strata.h   the C API      strata/args/op_args.hpp  scopes│  optional
//  │ with input shapes (Boost.Hana)   strata/sim.hpp  the simulator  │
//  └─────────────────────────────────────────────────────────────────┘
#pragma once

#include "strata/macros.hpp"

// The one file that defines STRATA_IMPLEMENTATION may include this header alone.
#if defined(STRATA_IMPLEMENTATION)
#include "strata/implementation.hpp"
#endif
