// strata/core/snapshot.hpp: a copy of what a running session holds, taken without stopping it.
//
// `take_session` (session.hpp) moves a session's records out once it has ended; a snapshot
// copies them while threads go on recording: each flight recorder's ring as a drain would read
// it (without advancing it, so the next drain or stop() sees the same records), and each
// lossless thread's chain of blocks one block at a time under its store's lock.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strata/core/session.hpp"
#include "strata/core/thread_registry.hpp"
#include "strata/core/trace_data.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// Appends a copy of every record the running session holds now to `out` (whose facts, such as
/// `start_ticks` and the clock, are the session's), one track per thread, device track and
/// steps track, unordered (`order_session` sorts them). Recording threads are never stopped:
/// the registry's lock is held while rings, steps and device tracks are copied (at most a
/// ring's capacity each), a store's lock for one block at a time. The session must not end
/// meanwhile (the profiler holds its control mutex).
inline void snapshot_session(trace_data& out) {
  std::vector<std::pair<std::size_t, std::shared_ptr<thread_buffer>>> chains;
  registry& reg = registry::instance();
  reg.visit_buffers([&](const std::shared_ptr<thread_buffer>& b) {
    const thread_info& info = *b->info;
    thread_track t = track_for(info);
    if (info.steps_of) {
      t.records = b->steps;
    } else if (b->chain) {
      chains.emplace_back(out.threads.size(), b);  // copied below, without the registry's lock
    } else {
      b->drained.copy_to(t.records);
      t.lost = b->lost;
      if (b->ring) t.lost += b->ring->copy_newest(t.records).lost;
    }
    out.threads.push_back(std::move(t));
  });
  for (auto& [index, b] : chains) {
    thread_track& t = out.threads[index];
    if (!b->chain->copy_to(t.records)) out.spill_error = "the spill file could not be read back";
    t.lost = b->chain->dropped();
  }
  if (std::shared_ptr<block_store> store = reg.store()) note_memory(out, *store);
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
