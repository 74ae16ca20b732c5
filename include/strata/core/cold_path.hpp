// strata/core/cold_path.hpp: how the instrumentation header reaches the rest of strata.
//
// The instrumentation header (strata/strata.hpp) carries only the hot path: it must cost an
// instrumented file no more compile time than <vector>. Everything else a record may need now
// and then (a thread's first buffer, a full block, the portable clock, interning a run-time
// name, a step mark) is a call through this table of function pointers, as NVTX does. The
// table starts as a set of no-ops; the one translation unit that compiles strata's
// implementation (STRATA_IMPLEMENTATION, see strata/implementation.hpp) installs the real one
// at static initialisation, before any session can start. A program that instruments files
// but never compiles the implementation still links, and records nothing.
//
// Several shared libraries: the table pointer is a C++17 inline variable, unified across the
// executable and its shared libraries on ELF platforms with default visibility; compile the
// implementation into exactly one of them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "strata/core/layer.hpp"
#include "strata/core/site.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// The cold paths of the instrumentation header. Every function is noexcept: failures become
/// "not recorded" (and counted where a record was lost), never an exception in a user's scope.
struct cold_path_table {
  /// The calling thread may record `l` now: the running session captures it and the thread
  /// has its buffer for that session (taken here on its first record).
  bool (*prepare_to_record)(layer l) noexcept;
  /// Stores a record when the thread's cursor is at its limit (or counts it as lost).
  bool (*push_slow)(std::uint64_t begin, std::uint64_t end, const site* where,
                    std::uint64_t payload) noexcept;
  /// steady_clock nanoseconds: the ticks of a process without an invariant TSC.
  std::uint64_t (*portable_ticks)() noexcept;
  /// The descriptor of a run-time name (interned once per distinct value); never null.
  const site* (*intern)(layer l, record_kind k, const char* name, std::size_t size) noexcept;
  /// The descriptor of `base` carrying the arguments encoded in `words` (strata/args/op_args.hpp);
  /// `base` itself when they cannot be interned.
  const site* (*intern_args)(const site* base, const std::uint64_t* words,
                             std::size_t count) noexcept;
  /// Names the calling thread in traces.
  void (*set_thread_name)(const char* name, std::size_t size) noexcept;
  /// A step boundary for the running profiler (STRATA_STEP).
  void (*step)() noexcept;
};

/// What a descriptor request gets when it cannot be served: no implementation is compiled
/// into the program yet (a name interned during another file's static initialisation), or
/// memory ran out.
inline constexpr site unnamed_site{"(strata: name not interned)", "", 0, layer::user,
                                   record_kind::scope};

namespace no_implementation {
inline bool prepare_to_record(layer) noexcept { return false; }
inline bool push_slow(std::uint64_t, std::uint64_t, const site*, std::uint64_t) noexcept {
  return false;
}
inline std::uint64_t portable_ticks() noexcept { return 0; }
inline const site* intern(layer, record_kind, const char*, std::size_t) noexcept {
  return &unnamed_site;
}
inline const site* intern_args(const site* base, const std::uint64_t*, std::size_t) noexcept {
  return base;
}
inline void set_thread_name(const char*, std::size_t) noexcept {}
inline void step() noexcept {}
inline constexpr cold_path_table table{prepare_to_record, push_slow,      portable_ticks, intern,
                                       intern_args,       set_thread_name, step};
}  // namespace no_implementation

/// The installed cold paths; only the implementation writes it (strata/implementation.hpp).
inline constinit const cold_path_table* cold_path = &no_implementation::table;

inline const cold_path_table& cold() noexcept {
  return *__atomic_load_n(&cold_path, __ATOMIC_ACQUIRE);
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
