// strata/core/session.hpp: how a session's records are collected out of the registry.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/core/clock.hpp"
#include "strata/core/trace_data.hpp"
#include "strata/core/layer.hpp"
#include "strata/core/record.hpp"
#include "strata/core/record_order.hpp"
#include "strata/core/ring_buffer.hpp"
#include "strata/core/thread_registry.hpp"

namespace strata {
inline namespace v1 {

namespace detail {

/// A track for the buffer of `info`, with no records yet: its thread's (or device track's) ids
/// and names; a steps track is named after its thread as the thread is named now.
inline thread_track track_for(const thread_info& info) {
  thread_track t;
  t.tid = info.tid;
  t.sort_index = info.order;
  t.name = info.name;
  t.exited = info.exited;
  t.pid = info.pid;
  t.process_name = info.process_name;
  t.timestamps_in_ns = info.timestamps_in_ns;
  if (info.steps_of) {
    const thread_info& of = *info.steps_of;
    t.steps = true;
    t.steps_of = of.tid;
    t.name = (of.name.empty() ? "thread " + std::to_string(of.tid) : of.name) + " steps";
    t.exited = of.exited;
  }
  return t;
}

/// What a lossless session's store did with its memory, into `out`.
inline void note_memory(trace_data& out, block_store& store) {
  const block_store_stats s = store.stats();
  out.spilled = s.spilled_records;
  out.spill_bytes = s.spill_bytes;
  out.peak_memory = s.peak_bytes;
  out.memory_waits = s.waits;
  if (out.spill_error.empty()) out.spill_error = s.spill_error;
}

/// Moves every thread's records of the session that just ended out of the registry into `out`
/// (whose `start_ticks` must be set), as they are: one copy of each thread's blocks, nothing
/// sorted yet (`order_session` does that, on any thread). The registry is then free to begin
/// the next session.
inline void take_session(trace_data& out) {
  const std::shared_ptr<block_store> store = registry::instance().store();
  if (store) store->clear_spill_queue();
  registry::instance().for_each_buffer([&](thread_buffer& b, const thread_info& info) {
    thread_track t = track_for(info);
    if (b.chain) {
      // What was spilled stays in the spill file (the trace writers read it from there); the
      // rest is copied out of the blocks, and the records not in order set apart as the writer
      // did for the spilled blocks before them (record_order.hpp).
      b.chain->take(t.spilled.extents, t.records);  // the blocks go now, not at the next record
      if (!t.spilled.empty()) {
        spilled_thread noted = store->take_spilled(info.order);
        const std::size_t kept =
            noted.order.split(t.records.data(), t.records.size(), t.records.data(), &noted.late);
        t.records.resize(kept);
        t.spilled.late = std::move(noted.late);
        t.spilled.in_order = noted.in_order;
      }
    } else if (info.steps_of) {
      t.records = std::move(b.steps);
    } else {
      t.records = b.drained.take();
    }
    t.lost = b.lost_so_far();
    out.threads.push_back(std::move(t));
  });
  if (store) {
    note_memory(out, *store);
    out.spill = store->take_spill_file();
    store->release_free_blocks();
  }
}

/// Puts the records `take_session` moved into `out` in order: each track's oldest first (a
/// parent before its children), host threads first (each steps track just before its thread),
/// then each device's tracks. Touches nothing but `out`, so it may run on any thread.
inline void order_session(trace_data& out) {
  for (thread_track& t : out.threads) {
    // A scope opened in an earlier session and closed in this one landed in this session's
    // buffer; it belongs to neither (as in torch.profiler, a scope open at stop() is not
    // recorded), so it is left out rather than shown starting before this session did.
    // Device tracks only take records while a session runs, so they need no such check.
    // Of a spilled thread, such a scope is among the late records.
    const auto before_session = [&](const record& r) {
      return r.kind() == record_kind::scope && r.begin < out.start_ticks;
    };
    if (!t.timestamps_in_ns) {
      std::erase_if(t.records, before_session);
      std::erase_if(t.spilled.late, before_session);
    }
    sort_records(t.records.data(), t.records.size());
    sort_records(t.spilled.late.data(), t.spilled.late.size());
  }
  std::sort(out.threads.begin(), out.threads.end(), [](const thread_track& a, const thread_track& b) {
    if (a.pid != b.pid) return a.pid < b.pid;
    if (a.sort_index != b.sort_index) return a.sort_index < b.sort_index;
    return a.steps && !b.steps;
  });
}

/// Moves every thread's records of the session that just ended out of the registry into `out`,
/// in order (`take_session`, then `order_session`).
inline void collect_session(trace_data& out) {
  take_session(out);
  order_session(out);
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
