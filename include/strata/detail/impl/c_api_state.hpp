// strata/detail/impl/c_api_state.hpp: what the C API (strata/strata.h) keeps per thread and per
// process. Inline: impl/c_api.hpp defines the C functions on it.
//
// strata_push/strata_pop keep a stack of open ranges per thread: the begin tick, the interned
// descriptor and how the range records (as a C++ scope decides when it opens). The stack is
// pushed even when nothing records, so that pops always match their pushes across a session's
// start and stop.
//
// A name is interned by its text; a per-thread cache keyed by the name's address (with the
// layer and kind) makes a repeated name one look-up. The cache has 128 sets of 4 ways; a name
// may sit in either of two sets, both chosen by a multiplicative hash of the whole key, so
// names at neighbouring addresses (adjacent string literals, which the old direct-mapped cache
// on address bits put in one slot) spread over the sets. A new name takes a free way of its
// first set, else of its second, else moves a neighbour to the neighbour's other set: with
// two choices and that one move, a few hundred names fit (only past that does a name evict
// another). A name in read-only memory (a string
// literal: found once per address in the loaded objects' read-only segments) is a hit on its
// address alone; any other must still hold the text it held when cached (a buffer may be
// reused for another name): one strcmp.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#if defined(__linux__)
#include <link.h>
#endif

#include "strata/error.hpp"
#include "strata/profiler.hpp"
#include "strata/scope.hpp"
#include "strata/strata.h"
#include "strata/detail/env_capture.hpp"
#include "strata/detail/record_path.hpp"

namespace strata {
inline namespace v1 {
namespace detail {
namespace c_api {

inline constexpr int max_depth = 256;

struct open_range {
  std::uint64_t begin;
  const ::strata::site* site;
  record_mode mode;
};

// One thread's open ranges. Constant-initialised and trivially destructible: no TLS guard.
struct range_stack {
  int depth = 0;     // open ranges, including those past max_depth (not stored)
  open_range ranges[max_depth];
};
inline thread_local constinit range_stack tl_ranges{};

// The calling thread's name cache (see the top of this file). 8 KiB per thread, constant-
// initialised like the range stack.
struct name_cache {
  struct entry {
    // The name's address shifted left by 5, the layer and kind in bits 1-4, and bit 0 set when
    // the text is in read-only memory; 0: empty (no name has address 0).
    std::uintptr_t key;
    const ::strata::site* site;
  };
  static constexpr std::size_t ways = 4;
  static constexpr int set_bits = 7;
  static constexpr std::size_t sets = std::size_t{1} << set_bits;  // 512 names per thread
  static constexpr std::uintptr_t read_only = 1;
  struct alignas(64) set {  // one cache line
    entry ways[name_cache::ways];
  };
  set sets_[sets];
  // Look-ups that went out of line (a name or address not cached, or a buffer whose text
  // changed): what the tests watch to see that repeated names hit.
  std::uint64_t slow_lookups;
};
inline thread_local constinit name_cache tl_names{};

// Names whose address has any of the top five bits set are never cached (the key has no room
// for them); no user-space address on a supported platform does.
inline constexpr std::uintptr_t uncacheable_bits = ~(~std::uintptr_t{0} >> 5);

STRATA_FORCE_INLINE std::uintptr_t cache_key(layer l, record_kind k, const char* name) noexcept {
  const auto lk = static_cast<std::uintptr_t>(static_cast<unsigned>(l) * 3u + static_cast<unsigned>(k));
  return reinterpret_cast<std::uintptr_t>(name) << 5 | lk << 1;
}

// The key's two sets: Fibonacci hashing, whose top bits depend on every bit of the key; the
// first set from the top 7 bits of the product, the second from the 7 below them.
STRATA_FORCE_INLINE std::uint64_t cache_hash(std::uintptr_t key) noexcept {
  return static_cast<std::uint64_t>(key) * 0x9e3779b97f4a7c15ull;
}
STRATA_FORCE_INLINE name_cache::entry* first_set(std::uint64_t h) noexcept {
  return tl_names.sets_[h >> (64 - name_cache::set_bits)].ways;
}
STRATA_FORCE_INLINE name_cache::entry* second_set(std::uint64_t h) noexcept {
  return tl_names.sets_[(h >> (64 - 2 * name_cache::set_bits)) & (name_cache::sets - 1)].ways;
}

/// Whether `p` lies in a read-only segment of a loaded object (where string literals live), so
/// that its text can never change. A literal of a shared library that is unloaded (dlclose)
/// and replaced by another library at the same address keeps its old name in the caches of
/// threads that pushed it.
inline bool in_read_only_segment(const void* p) noexcept {
#if defined(__linux__)
  struct query {
    std::uintptr_t address;
    bool found;
  } q{reinterpret_cast<std::uintptr_t>(p), false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto* q = static_cast<query*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) != 0) continue;
          const std::uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
          if (q->address >= begin && q->address - begin < ph.p_memsz) {
            q->found = true;
            return 1;
          }
        }
        return 0;
      },
      &q);
  return q.found;
#else
  static_cast<void>(p);
  return false;
#endif
}

/// The way of `set` holding `key` (either read-only bit), or `ways`.
STRATA_FORCE_INLINE std::size_t find_way(const name_cache::entry* set, std::uintptr_t key) noexcept {
  std::size_t way = 0;
  while (way < name_cache::ways && (set[way].key ^ key) > name_cache::read_only) ++way;
  return way;
}

/// The other of the two sets of the entry `e`, which sits in `set`.
inline name_cache::entry* other_set(const name_cache::entry& e, const name_cache::entry* set) noexcept {
  const std::uint64_t h = cache_hash(e.key & ~name_cache::read_only);
  return first_set(h) == set ? second_set(h) : first_set(h);
}

/// Puts `fresh` in one of the sets `a` and `b`: a free way of `a`, else of `b`; else moves an
/// entry of either set to a free way of its other set and takes its place (one cuckoo step);
/// else drops the last way of `a` (the others move down one).
inline void insert(name_cache::entry* a, name_cache::entry* b, const name_cache::entry& fresh) noexcept {
  for (name_cache::entry* set : {a, b}) {
    if (const std::size_t way = find_way(set, 0); way < name_cache::ways) {
      set[way] = fresh;
      return;
    }
  }
  for (name_cache::entry* set : {a, b}) {
    for (std::size_t way = 0; way < name_cache::ways; ++way) {
      name_cache::entry* other = other_set(set[way], set);
      if (const std::size_t free = find_way(other, 0); free < name_cache::ways) {
        other[free] = set[way];
        set[way] = fresh;
        return;
      }
    }
  }
  for (std::size_t way = name_cache::ways - 1; way > 0; --way) a[way] = a[way - 1];
  a[0] = fresh;
}

/// A name not in the cache (or whose buffer now holds other text): interned and cached, in
/// place of the entry of the same address if there is one.
STRATA_NOINLINE inline const site* site_of_slow(layer l, record_kind k, const char* name) noexcept {
  ++tl_names.slow_lookups;
  const site* s = cold().intern(l, k, name, std::strlen(name));
  if ((reinterpret_cast<std::uintptr_t>(name) & uncacheable_bits) != 0) return s;
  const std::uintptr_t key = cache_key(l, k, name);
  const std::uint64_t h = cache_hash(key);
  for (name_cache::entry* set : {first_set(h), second_set(h)}) {
    if (const std::size_t way = find_way(set, key); way < name_cache::ways) {
      set[way].site = s;  // the same buffer, new text (so not read-only)
      return s;
    }
  }
  // Only a name interned under its own text may skip the text check: before strata's
  // implementation is installed, the cold path hands back a site with a stand-in name, which
  // must be looked up again later.
  const bool fixed = std::strcmp(s->name, name) == 0 && in_read_only_segment(name);
  insert(first_set(h), second_set(h), {key | (fixed ? name_cache::read_only : 0), s});
  return s;
}

/// The rest of a look-up that is not a read-only name in its first set: the second set, the
/// text check of a name that may change, or the slow path. Out of line, so that the common
/// case stays a few instructions and needs no stack frame.
STRATA_NOINLINE inline const site* site_of_checked(layer l, record_kind k, const char* name) noexcept {
  const std::uintptr_t key = cache_key(l, k, name);
  const std::uint64_t h = cache_hash(key);
  for (const name_cache::entry* set : {first_set(h), second_set(h)}) {
    if (const std::size_t way = find_way(set, key); way < name_cache::ways) {
      const name_cache::entry& e = set[way];
      if ((e.key & name_cache::read_only) != 0 || std::strcmp(e.site->name, name) == 0)
        return e.site;
      break;  // the buffer holds another text now
    }
  }
  return site_of_slow(l, k, name);
}

/// The descriptor of `name`: a read-only name cached in its first set costs a hash, a load and
/// up to four compares.
STRATA_FORCE_INLINE const site* site_of(layer l, record_kind k, const char* name) noexcept {
  if (name == nullptr) [[unlikely]]
    name = "";
  const std::uintptr_t key = cache_key(l, k, name) | name_cache::read_only;
  const name_cache::entry* set = first_set(cache_hash(key & ~name_cache::read_only));
  for (std::size_t way = 0; way < name_cache::ways; ++way)
    if (set[way].key == key) [[likely]]
      return set[way].site;
  return site_of_checked(l, k, name);
}

inline void report_unmatched_pop() noexcept {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fputs("strata: strata_pop() with no open range on this thread; ignored (said once)\n",
               stderr);
}

// The C API's session: one at a time, like a C++ profiler; the session calls hold `mutex`.
struct c_session_state {
  std::mutex mutex;
  std::unique_ptr<profiler> session;
  std::string output;     // the configured trace file
  std::string table;      // the last table rendered, for strata_table's second call
  std::string table_key;  // what it was rendered for: sort_by and row_limit
  bool has_table = false;
  // The Perfetto writer, set by the calls that can ask for it (strata_start_ex, strata_export):
  // a program that only calls strata_start and strata_stop_and_export (JSON) never refers to
  // it, so a build with -ffunction-sections -Wl,--gc-sections leaves it out.
  export_result (*export_perfetto)(profiler&, const std::string&) = nullptr;
};

inline c_session_state& c_state() {
  static c_session_state* s = new c_session_state;  // used at exit too
  return *s;
}

inline std::unique_ptr<profiler>& c_session() { return c_state().session; }

// STRATA_CRASH_DUMP=1 in the environment asks every C session for a crash dump, as
// strata_config.crash_dump does. A bad value is named, and the session starts without one.
inline bool crash_dump_asked() noexcept {
  try {
    return crash_dump_from_env([](const char* n) { return std::getenv(n); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_start: %s; this session writes no crash dump\n", e.what());
    return false;
  }
}

/// Says on stderr that `call` failed: "strata_export: cannot write ...".
inline int report(const char* call, const std::exception& e, int status) noexcept {
  const char* what = e.what();
  if (std::strncmp(what, "strata: ", 8) == 0) what += 8;  // the call's name says it is strata
  std::fprintf(stderr, "%s: %s\n", call, what);
  return status;
}

}  // namespace c_api
}  // namespace detail
}  // namespace v1
}  // namespace strata
