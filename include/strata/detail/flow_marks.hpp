// strata/detail/flow_marks.hpp: the flows of a session as small ids bound to records, for the
// Perfetto writer, which writes a flow's ids on the slices it passes through.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "strata/record.hpp"
#include "strata/detail/flows.hpp"
#include "strata/detail/huge_page_allocator.hpp"
#include "strata/detail/record_order.hpp"
#include "strata/detail/session.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// Flow ids for the wire, reused so that they stay small (a varint of one or two bytes, not
/// three): trace_processor reads the points of all sequences in time order, and a flow ends at
/// its terminating id, after which the id may begin another flow. An id is reused only by a
/// flow that begins strictly after the id's last flow ended; flows mostly come in time order,
/// so the id that has been free longest is the one to try.
class small_ids {
 public:
  /// An id for a flow whose points lie in [from, to] (ns).
  std::uint64_t take(std::int64_t from, std::int64_t to) {
    // A long flow at the front would keep every id behind it from being reused: it goes to
    // the back, and the next is tried.
    for (int tries = 0; tries < 2 && count_ != 0; ++tries) {
      in_use front = ring_[head_];
      head_ = (head_ + 1) & (ring_.size() - 1);
      const bool free = front.free_after < from;
      if (free) front.free_after = to;
      ring_[(head_ + count_ - 1) & (ring_.size() - 1)] = front;  // to the back
      if (free) return front.id;
    }
    push_back({++issued_, to});
    return issued_;
  }

 private:
  struct in_use {
    std::uint64_t id;
    std::int64_t free_after;
  };
  void push_back(in_use u) {
    if (count_ == ring_.size()) {  // full: unrolled into a ring twice the size, front first
      std::vector<in_use> grown(std::max<std::size_t>(16, 2 * ring_.size()));
      for (std::size_t k = 0; k < count_; ++k) grown[k] = ring_[(head_ + k) & (ring_.size() - 1)];
      ring_.swap(grown);
      head_ = 0;
    }
    ring_[(head_ + count_) & (ring_.size() - 1)] = u;
    ++count_;
  }
  // The ids in use, the longest free first: a ring of a power-of-two size, from head_.
  std::vector<in_use> ring_;
  std::size_t head_ = 0, count_ = 0;
  std::uint64_t issued_ = 0;
};

/// The flow ids bound to each track's records, in record order, so the writer meets them as
/// it goes: flow_ids on a record start or continue a flow, terminating_flow_ids end one.
class flow_marks {
 public:
  struct mark {
    std::size_t record;
    std::uint32_t id;  // small_ids: at most one per flow, and flows are fewer than 2^32
    bool ends;
  };

  /// The flows of `data` (detail/flows.hpp), by track; within a track sorted by record only
  /// when not in order already (flows come path by path, and a track's paths are mostly met in
  /// record order).
  explicit flow_marks(const trace_data& data) : flow_marks(data, deferred) { make(); }

  struct deferred_t {};
  static constexpr deferred_t deferred{};

  /// Marks to be made by `make()`, which another thread may wait on (`wait`) meanwhile.
  flow_marks(const trace_data& data, deferred_t)
      : data_(data), by_track_(data.threads.size()) {}

  /// Reads the records on correlation paths, then makes the marks track by track: a track's
  /// are final once the paths first seen on it and on the tracks before it are built (a path's
  /// records lie on the track where it was first seen and after), and `wait(t)` returns as
  /// soon as track t's are.
  void make() {
    try {
      flow_builder builder(data_);
      std::vector<std::size_t> first_path(data_.threads.size() + 1, 0);  // by track: paths first seen before it
      for (std::size_t t = 0; t < data_.threads.size(); ++t) {
        std::size_t first = 0, with_id = 0;  // first: the place in the track of records[0]
        read_track(data_, data_.threads[t], [&](const record* records, std::size_t n) {
          for (const record* r = records; r != records + n; ++r)
            if (r->payload != 0) {
              builder.offer(t, first + static_cast<std::size_t>(r - records), *r);
              ++with_id;
            }
          first += n;
        });
        first_path[t + 1] = builder.paths();
        // Each record on a path takes a point of its host flow or ends a device flow; a host
        // record also starts the device flows it launched, which may take a track past this.
        by_track_[t].reserve(2 * with_id);  // address space: only what is made is touched
      }
      small_ids ids;
      std::vector<char> in_ns(data_.threads.size());  // read per point: a byte, not a thread_track
      for (std::size_t t = 0; t < data_.threads.size(); ++t) in_ns[t] = data_.threads[t].timestamps_in_ns;
      const clock_calibration clock = data_.clock;
      const auto flow = [&](const flow_point* points, std::size_t n) {
        // Its id on the wire is a small one, free again once the flow has ended.
        std::int64_t from = std::numeric_limits<std::int64_t>::max(), to = std::numeric_limits<std::int64_t>::min();
        for (std::size_t k = 0; k < n; ++k) {
          const std::uint64_t b = points[k].begin;
          const std::int64_t t = in_ns[points[k].thread] ? static_cast<std::int64_t>(b) : clock.to_ns(b);
          from = std::min(from, t);
          to = std::max(to, t);
        }
        const auto id = static_cast<std::uint32_t>(ids.take(from, to));
        for (std::size_t k = 0; k < n; ++k) by_track_[points[k].thread].push_back({points[k].record, id, points[k].phase == 'f'});
      };
      const auto by_record = [](const mark& a, const mark& b) { return a.record < b.record; };
      std::uint64_t next_id = 1;
      for (std::size_t t = 0; t < by_track_.size(); ++t) {
        builder.build(first_path[t], first_path[t + 1], next_id, flow);
        auto& marks = by_track_[t];
        if (!std::is_sorted(marks.begin(), marks.end(), by_record)) std::stable_sort(marks.begin(), marks.end(), by_record);
        publish(t + 1);
      }
    } catch (...) {
      publish(failed);
      throw;
    }
  }

  /// Waits until track t's marks are final; false if `make()` failed.
  bool wait(std::size_t t) const {
    std::size_t ready = ready_.load(std::memory_order_acquire);
    while (ready <= t) {
      ready_.wait(ready, std::memory_order_acquire);
      ready = ready_.load(std::memory_order_acquire);
    }
    return ready != failed;
  }

  /// The marks of track `t`, in record order (once final).
  const mark* begin(std::size_t t) const noexcept { return by_track_[t].data(); }
  const mark* end(std::size_t t) const noexcept { return by_track_[t].data() + by_track_[t].size(); }

 private:
  static constexpr std::size_t failed = static_cast<std::size_t>(-1);
  void publish(std::size_t ready) noexcept {
    ready_.store(ready, std::memory_order_release);
    ready_.notify_all();
  }

  const trace_data& data_;
  std::vector<std::vector<mark, huge_page_allocator<mark>>> by_track_;
  std::atomic<std::size_t> ready_{0};  // how many tracks' marks are final, or failed
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
