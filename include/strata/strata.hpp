// strata/strata.hpp: everything; instrumented files that only record need strata/core/macros.hpp.
//
//  ┌──────────────────────────── strata ─────────────────────────────┐
//  │ macros.hpp  STRATA_SCOPE / _LAYER / _DYNAMIC, INSTANT, COUNTER  │  any thread, hot path
//  │ scope.hpp   RAII scope: 2 timestamps + one 32-byte record       │  (standard headers only)
//  │ ring_buffer / thread_registry / clock / record / site / layer   │
//  ├─────────────────────────────────────────────────────────────────┤
//  │ profiler.hpp  config, start/stop, collect (session.hpp)         │  cold path
//  │ export/chrome_trace.hpp  Chrome trace JSON for Perfetto UI      │  ({fmt})
//  │ analysis/key_averages.hpp  torch-style tables, compare.hpp      │
//  │ args/op_args.hpp  scopes with input shapes (Boost.Hana)          │
//  └─────────────────────────────────────────────────────────────────┘
#pragma once

#include "strata/analysis/averages_table.hpp"
#include "strata/analysis/compare.hpp"
#include "strata/analysis/key_averages.hpp"
#include "strata/args/op_args.hpp"
#include "strata/args/shape.hpp"
#include "strata/core/capture_cores.hpp"
#include "strata/core/clock.hpp"
#include "strata/core/config.hpp"
#include "strata/core/correlation.hpp"
#include "strata/core/device_track.hpp"
#include "strata/core/error.hpp"
#include "strata/core/intern.hpp"
#include "strata/core/layer.hpp"
#include "strata/core/macros.hpp"
#include "strata/core/profiler_config.hpp"
#include "strata/core/record.hpp"
#include "strata/core/ring_buffer.hpp"
#include "strata/core/schedule.hpp"
#include "strata/core/scope.hpp"
#include "strata/core/session.hpp"
#include "strata/core/site.hpp"
#include "strata/core/thread_registry.hpp"
#include "strata/export/atomic_file.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/export/flows.hpp"
#include "strata/export/json_escape.hpp"
#include "strata/profiler.hpp"
