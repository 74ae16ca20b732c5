// strata/detail/session.hpp: how a session's records are collected out of the registry.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/clock.hpp"
#include "strata/record.hpp"
#include "strata/trace_data.hpp"
#include "strata/detail/record_order.hpp"
#include "strata/detail/registry.hpp"

namespace strata {
inline namespace v1 {

namespace detail {

/// A device or steps track of the registry as a track of the trace: its identity and a copy of
/// its records.
inline thread_track copy_of(const appended_track& a) {
  thread_track t;
  static_cast<track_identity&>(t) = a.identity();
  a.records.copy_to(t.records);
  t.lost = a.lost;
  return t;
}

/// Moves every track's records of the session that just ended out of the registry into `out`
/// (whose `start_ticks` must be set), as they are: one copy of each thread's blocks, nothing
/// sorted yet (`order_session` does that, on any thread). The registry is then free to begin
/// the next session.
inline void take_session(trace_data& out) {
  const std::shared_ptr<block_store> store = registry::instance().store();
  if (store) store->clear_spill_queue();
  registry::instance().visit(
      [&](const std::shared_ptr<recording_thread>& rt) {
        thread_track t;
        static_cast<track_identity&>(t) = *rt->thread;
        rt->buffer.take(t, rt);  // the blocks go now, not at the thread's next record
        if (!t.spilled.empty()) {
          if (t.taken) {  // the records in memory follow the spilled ones: split them here
            t.taken->move_to_front_of(t.records);
            t.taken.reset();
          }
          // What was spilled stays in the spill file (the trace writers read it from there);
          // the rest was copied out of the blocks, and its records not in order are set apart
          // as the writer did for the spilled blocks before them (record_order.hpp).
          spilled_thread noted = store->take_spilled(t.sort_index);
          const std::size_t kept =
              noted.order.split(t.records.data(), t.records.size(), t.records.data(), &noted.late);
          t.records.resize(kept);
          t.spilled.late = std::move(noted.late);
          t.spilled.in_order = noted.in_order;
        }
        out.threads.push_back(std::move(t));
      },
      [&](appended_track& a) { out.threads.push_back(copy_of(a)); });
  registry::instance().clear_step_tracks();
  if (store && out.overflow == overflow_policy::lossless) {
    out.memory = store->stats();
    out.spill = store->take_spill_file();
  }
}

/// Appends a copy of every record the running session holds now to `out` (whose facts, such as
/// `start_ticks` and the clock, are the session's), one track per thread, device track and
/// steps track, unordered (`order_session` sorts them). Recording threads are never stopped:
/// the registry's lock is held while flight recorders, steps and device tracks are copied (at
/// most a thread's `buffer_capacity` each), a store's lock for one block of a lossless chain at
/// a time. The session must not end meanwhile (the profiler holds its control mutex).
inline void snapshot_session(trace_data& out) {
  std::vector<std::pair<std::size_t, std::shared_ptr<recording_thread>>> chains;
  registry& reg = registry::instance();
  reg.visit(
      [&](const std::shared_ptr<recording_thread>& rt) {
        thread_track t;
        static_cast<track_identity&>(t) = *rt->thread;
        if (rt->buffer.flight_recorder()) {
          bool ok = true;
          t.lost = rt->buffer.copy_to(t.records, ok).lost;
        } else {
          chains.emplace_back(out.threads.size(), rt);  // copied below, without the lock
        }
        out.threads.push_back(std::move(t));
      },
      [&](appended_track& a) { out.threads.push_back(copy_of(a)); });
  for (auto& [index, rt] : chains) {
    thread_track& t = out.threads[index];
    bool ok = true;
    t.lost = rt->buffer.copy_to(t.records, ok).lost;
    if (!ok) out.memory.spill_error = "the spill file could not be read back";
  }
  if (out.overflow == overflow_policy::lossless)
    if (std::shared_ptr<block_store> store = reg.store()) {
      std::string error = std::move(out.memory.spill_error);
      out.memory = store->stats();
      if (!error.empty()) out.memory.spill_error = std::move(error);
    }
}

/// While a session records: what it holds so far, for `profiler::stats()`. Reads counters
/// only: what a flight recorder keeps is the same whether or not this is called.
struct recording_counts {
  std::uint64_t recorded = 0, lost = 0, threads = 0, tracks = 0;
};

inline recording_counts count_session() {
  recording_counts c;
  registry::instance().visit(
      [&](const std::shared_ptr<recording_thread>& rt) {
        const buffer_counts b = rt->buffer.counts();
        c.recorded += b.kept;
        c.lost += b.lost;
        ++c.tracks;
        if (b.kept + b.lost != 0) ++c.threads;
      },
      [&](appended_track& a) {
        c.recorded += a.records.size();
        c.lost += a.lost;
        ++c.tracks;
      });
  return c;
}

/// Puts the records `take_session` moved into `out` in order: each track's oldest first (a
/// parent before its children), host threads first (each steps track just before its thread),
/// then each device's tracks. Touches nothing but `out`, so it may run on any thread.
inline void order_session(trace_data& out) {
  for (thread_track& t : out.threads) {
    if (t.taken) {  // the blocks the session handed over, copied now (off the thread that ended it)
      t.taken->move_to_front_of(t.records);
      t.taken.reset();
    }
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
