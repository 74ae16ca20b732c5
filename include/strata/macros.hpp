// strata/macros.hpp: the instrumentation macros.
//
// Each macro is one statement that needs its `;`. Static names become a per-call-site
// `static constexpr strata::site`, so a record stores one pointer and never copies a string.
// With STRATA_ENABLED=0 every macro is `static_cast<void>(0)` and its arguments are not
// evaluated.
#pragma once

#include "strata/config.hpp"
#include "strata/memory.hpp"
#include "strata/scope.hpp"

#if STRATA_ENABLED

// A pointer to this call site's static descriptor; `name` must be a string literal (use the
// _DYNAMIC forms for run-time names).
#define STRATA_DETAIL_SITE(layer_, kind_, name_)                                        \
  []() noexcept -> const ::strata::site* {                                             \
    static constexpr ::strata::site strata_site_{name_, __FILE__, __LINE__, layer_, kind_}; \
    return &strata_site_;                                                              \
  }()

/// Records the enclosing block as a scope of the user layer. `name` is a string literal.
#define STRATA_SCOPE(name) STRATA_SCOPE_LAYER(::strata::layer::user, name)

/// Records the enclosing block as a scope of `layer` (a `strata::layer`).
#define STRATA_SCOPE_LAYER(layer, name)                           \
  ::strata::scope STRATA_DETAIL_CAT(strata_scope_, __COUNTER__) { \
    STRATA_DETAIL_SITE(layer, ::strata::record_kind::scope, name) \
  }

/// Records the enclosing block under a run-time name (a `const char*`, or anything with
/// `data()` and `size()`, temporaries such as `"step " + std::to_string(i)` included). The name
/// is evaluated only when `layer` is captured, and interned once per distinct value.
#define STRATA_SCOPE_DYNAMIC(layer, name)                                                   \
  ::strata::scope STRATA_DETAIL_CAT(strata_scope_, __COUNTER__) {                           \
    ::strata::detail::dynamic_name, layer, [&]() -> decltype(auto) { return (name); } \
  }

/// Records the enclosing block as a scope of the user layer that carries a FLOP count: `flops`
/// (an integer expression) is evaluated only when the session records FLOPs
/// (`profiler_config::with_flops`); otherwise the scope costs what STRATA_SCOPE costs.
#define STRATA_SCOPE_FLOPS(name, flops) STRATA_SCOPE_FLOPS_LAYER(::strata::layer::user, name, flops)

/// Records the enclosing block as a scope of `layer` that carries a FLOP count.
#define STRATA_SCOPE_FLOPS_LAYER(layer, name, flops)                                        \
  ::strata::scope STRATA_DETAIL_CAT(strata_scope_, __COUNTER__) {                           \
    ::strata::detail::lazy_site, layer,                                                     \
        ::strata::detail::flops_site_maker(                                                 \
            STRATA_DETAIL_SITE(layer, ::strata::record_kind::scope, name),                  \
            [&]() -> ::std::uint64_t { return static_cast<::std::uint64_t>(flops); })       \
  }

/// Records a point in time on the user layer.
#define STRATA_INSTANT(name) STRATA_INSTANT_LAYER(::strata::layer::user, name)

/// Records a point in time on `layer`.
#define STRATA_INSTANT_LAYER(layer, name) \
  ::strata::detail::emit_instant(STRATA_DETAIL_SITE(layer, ::strata::record_kind::instant, name))

/// Records a point in time under a run-time name.
#define STRATA_INSTANT_DYNAMIC(layer, name) \
  ::strata::detail::emit_instant_dynamic(layer, [&]() -> decltype(auto) { return (name); })

/// Records a sample of a counter of the user layer (a Chrome `C` event). `value` is evaluated
/// only when the layer is captured.
#define STRATA_COUNTER(name, value) STRATA_COUNTER_LAYER(::strata::layer::user, name, value)

/// Records a counter sample on `layer`.
#define STRATA_COUNTER_LAYER(layer, name, value)                                            \
  ::strata::detail::emit_counter(STRATA_DETAIL_SITE(layer, ::strata::record_kind::counter, name), \
                                 [&]() noexcept { return static_cast<double>(value); })

/// Marks a step boundary (an iteration of the engine's loop) for the running profiler, as
/// `profiler::step()` does; a branch when no profiler is started.
#define STRATA_STEP() ::strata::detail::mark_step()

/// Records that `bytes` were allocated at `ptr` in host memory (torch's CPU memory), user layer,
/// when the running session profiles memory (`profiler_config::profile_memory`).
#define STRATA_ALLOC(ptr, bytes) ::strata::record_alloc((ptr), (bytes))

/// Records that the host memory at `ptr` was freed; the session knows its size.
#define STRATA_FREE(ptr) ::strata::record_free((ptr))

/// Records an allocation on a device: `device` a `strata::device_type` (`neuron`, `cpu`),
/// `index` its number (a core; -1 for the host).
#define STRATA_ALLOC_DEVICE(device, index, ptr, bytes) \
  ::strata::record_alloc((ptr), (bytes), ::strata::memory_device{(device), static_cast<std::int8_t>(index)})

/// Records a free on a device.
#define STRATA_FREE_DEVICE(device, index, ptr) \
  ::strata::record_free((ptr), ::strata::memory_device{(device), static_cast<std::int8_t>(index)})

/// Records that a device's reserved (pool) memory grew by `bytes` (Kineto's `Total Reserved`);
/// a negative `bytes` gives memory back.
#define STRATA_RESERVE(device, index, bytes)                           \
  ::strata::record_reserve(static_cast<std::int64_t>(bytes),            \
                           ::strata::memory_device{(device), static_cast<std::int8_t>(index)})

#else  // STRATA_ENABLED

#define STRATA_SCOPE(name) static_cast<void>(0)
#define STRATA_SCOPE_LAYER(layer, name) static_cast<void>(0)
#define STRATA_SCOPE_DYNAMIC(layer, name) static_cast<void>(0)
#define STRATA_SCOPE_FLOPS(name, flops) static_cast<void>(0)
#define STRATA_SCOPE_FLOPS_LAYER(layer, name, flops) static_cast<void>(0)
#define STRATA_INSTANT(name) static_cast<void>(0)
#define STRATA_INSTANT_LAYER(layer, name) static_cast<void>(0)
#define STRATA_INSTANT_DYNAMIC(layer, name) static_cast<void>(0)
#define STRATA_COUNTER(name, value) static_cast<void>(0)
#define STRATA_COUNTER_LAYER(layer, name, value) static_cast<void>(0)
#define STRATA_STEP() static_cast<void>(0)
#define STRATA_ALLOC(ptr, bytes) static_cast<void>(0)
#define STRATA_FREE(ptr) static_cast<void>(0)
#define STRATA_ALLOC_DEVICE(device, index, ptr, bytes) static_cast<void>(0)
#define STRATA_FREE_DEVICE(device, index, ptr) static_cast<void>(0)
#define STRATA_RESERVE(device, index, bytes) static_cast<void>(0)

#endif  // STRATA_ENABLED
