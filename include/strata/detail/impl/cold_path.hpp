// strata/detail/impl/cold_path.hpp: the real cold paths behind the instrumentation header
// (core/cold_path.hpp), installed when the implementation's file is initialised and again by
// every profiler's constructor. Part of strata's implementation (strata/implementation.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "strata/clock.hpp"
#include "strata/detail/intern.hpp"
#include "strata/detail/record_path.hpp"
#include "strata/detail/registry.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

void step_active_profiler() noexcept;  // impl/profiler.hpp
const site* intern_encoded_args(const site* base, const std::uint64_t* words,
                                std::size_t count) noexcept;  // impl/args.hpp
const site* intern_flops_site(const site* base, std::uint64_t flops) noexcept;  // impl/args.hpp

namespace implementation {

inline std::uint64_t portable_ticks() noexcept {
  return static_cast<std::uint64_t>(steady_now_ns());
}

inline const site* intern(layer l, record_kind k, const char* name, std::size_t size) noexcept {
  try {
    return intern_cached(l, k, std::string_view(name, size));
  } catch (...) {
    return &unnamed_site;  // out of memory: recorded under a fixed name rather than lost
  }
}

inline void set_thread_name(const char* name, std::size_t size) noexcept {
  try {
    registry::instance().set_current_thread_name(std::string(name, size));
  } catch (...) {
    // Out of memory: the thread keeps its OS name.
  }
}

inline constexpr cold_path_table table{prepare_to_record_cold, push_slow_cold, portable_ticks,
                                       intern,                 intern_encoded_args,
                                       set_thread_name,        step_active_profiler,
                                       intern_flops_site};

}  // namespace implementation

/// Points the instrumentation header at this implementation (idempotent).
inline void install_cold_path() noexcept {
  __atomic_store_n(&cold_path, &implementation::table, __ATOMIC_RELEASE);
}

// Installed at static initialisation of the implementation's file, so that names interned and
// threads named before the first profiler exists are kept.
inline const bool cold_path_installed = (install_cold_path(), true);

}  // namespace detail
}  // namespace v1
}  // namespace strata
