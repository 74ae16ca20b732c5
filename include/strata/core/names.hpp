// strata/core/names.hpp: run-time names (threads, interned descriptors) and step marks, from
// instrumented code. Part of the instrumentation header: each call goes out of line through
// the cold-path table, so this costs an including file nothing.
#pragma once

#include "strata/detail/record_path.hpp"
#include "strata/core/config.hpp"
#include "strata/core/layer.hpp"
#include "strata/core/scope.hpp"
#include "strata/core/site.hpp"

namespace strata {
inline namespace v1 {

/// Names the calling thread in traces (Perfetto's thread name). `name` is a `const char*` or
/// anything with `data()` and `size()`; it is copied. Call it before or during a session.
template <class Name>
inline void set_thread_name(const Name& name) noexcept {
  const detail::name_ref n = detail::to_name_ref(name);
  detail::cold().set_thread_name(n.data, n.size);
}

/// Interns a run-time name once and returns its descriptor (never null). Keep it when the same
/// dynamic name is used in a hot loop, and open scopes on it directly: `strata::scope s{site};`
/// costs what a static-name scope costs, with no per-call hash.
///
/// **Example**
/// ```cpp
/// const strata::site* layer_site = strata::intern(strata::layer::framework, "layer " + std::to_string(i));
/// { strata::scope s{layer_site}; run_layer(i); }
/// ```
template <class Name>
inline const site* intern(layer l, const Name& name, record_kind k = record_kind::scope) noexcept {
  return detail::intern_name(l, k, name);
}

namespace detail {

/// STRATA_STEP(): a branch, and a call only while a profiler is started.
STRATA_FORCE_INLINE void mark_step() noexcept {
  if (__atomic_load_n(&profiler_started, __ATOMIC_RELAXED) != 0) [[unlikely]]
    cold().step();
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
