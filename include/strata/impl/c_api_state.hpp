// strata/impl/c_api_state.hpp: what the C API (strata/strata.h) keeps per thread and per
// process. Inline: impl/c_api.hpp defines the C functions on it.
//
// strata_push/strata_pop keep a stack of open ranges per thread: the begin tick, the interned
// descriptor and how the range records (as a C++ scope decides when it opens). The stack is
// pushed even when nothing records, so that pops always match their pushes across a session's
// start and stop. A name is interned by its text; a per-thread cache keyed by the name's
// address makes a repeated name (a literal, a reused buffer) one compare of the text.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "strata/core/error.hpp"
#include "strata/core/names.hpp"
#include "strata/core/recording_state.hpp"
#include "strata/core/scope.hpp"
#include "strata/core/tick.hpp"
#include "strata/env_capture.hpp"
#include "strata/profiler.hpp"
#include "strata/strata.h"

namespace strata {
inline namespace v1 {
namespace detail {
namespace c_api {

inline constexpr int max_depth = 256;

struct open_range {
  std::uint64_t begin;
  const site* where;
  scope_mode mode;
};

// One thread's open ranges. Constant-initialised and trivially destructible: no TLS guard.
struct range_stack {
  int depth = 0;     // open ranges, including those past max_depth (not stored)
  open_range ranges[max_depth];
};
inline thread_local constinit range_stack tl_ranges{};

// The calling thread's name cache: per layer and kind, direct-mapped on the name's address.
struct name_cache {
  struct entry {
    const char* text;   // the caller's pointer last seen in this slot
    const site* where;  // what it named then
  };
  static constexpr std::size_t slots = 64;
  entry entries[layer_count][3][slots];
};
inline thread_local constinit name_cache tl_names{};

inline std::size_t name_slot(const char* name) noexcept {
  return (reinterpret_cast<std::uintptr_t>(name) >> 3) & (name_cache::slots - 1);
}

/// A name not in the cache (or whose buffer now holds other text): interned and cached.
STRATA_NOINLINE inline const site* site_of_slow(layer l, record_kind k, const char* name) noexcept {
  const site* s = cold().intern(l, k, name, std::strlen(name));
  tl_names.entries[static_cast<int>(l)][static_cast<int>(k)][name_slot(name)] = {name, s};
  return s;
}

/// The descriptor of `name`: a hit is the same address holding the same text (a buffer behind
/// a non-literal name may have changed since), one strcmp.
STRATA_FORCE_INLINE const site* site_of(layer l, record_kind k, const char* name) noexcept {
  if (name == nullptr) [[unlikely]]
    name = "";
  const name_cache::entry& e = tl_names.entries[static_cast<int>(l)][static_cast<int>(k)][name_slot(name)];
  if (e.text == name && std::strcmp(e.where->name, name) == 0) [[likely]]
    return e.where;
  return site_of_slow(l, k, name);
}

inline void report_unmatched_pop() noexcept {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fputs("strata: strata_pop() with no open range on this thread; ignored (said once)\n",
               stderr);
}

// The C API's session: one at a time, like a C++ profiler.
inline std::unique_ptr<profiler>& c_session() {
  static std::unique_ptr<profiler>* p = new std::unique_ptr<profiler>;  // used at exit too
  return *p;
}

// A C session has no configuration struct: STRATA_CRASH_DUMP=1 in the environment asks it for a
// crash dump. A bad value is named, and the session starts without one.
inline bool crash_dump_asked() noexcept {
  try {
    return crash_dump_from_env([](const char* n) { return std::getenv(n); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_start: %s; this session writes no crash dump\n", e.what());
    return false;
  }
}

inline int report(const char* call, const std::exception& e, int status) noexcept {
  std::fprintf(stderr, "%s: %s\n", call, e.what());
  return status;
}

}  // namespace c_api
}  // namespace detail
}  // namespace v1
}  // namespace strata

