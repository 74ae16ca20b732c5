// strata/sim/memory_pool.hpp: the allocator of one on-chip memory (SBUF or PSUM): bytes per
// partition in program order, with overflow errors, plus the usage over simulated time that
// becomes a counter. Internal to the simulator.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "strata/error.hpp"

namespace strata {
inline namespace v1 {
namespace sim {
namespace detail {

/// "192 KiB" for whole KiB, "100 bytes" otherwise.
inline std::string format_bytes(std::uint64_t b) {
  if (b % 1024 == 0) return fmt::format("{} KiB", b / 1024);
  return fmt::format("{} bytes", b);
}

class memory_pool {
 public:
  memory_pool(std::string_view memory_name, std::string_view counter, std::uint64_t capacity,
              std::uint32_t partitions)
      : memory_name_(memory_name), counter_(counter), capacity_(capacity),
        partitions_(partitions) {}

  /// Reserves `bytes` per partition for `instruction`, or raises strata::error on overflow.
  /// Returns the simulated time from which the space is free: space released in program order
  /// may still be read until later (by then-pending instructions), so a new tile that needs it
  /// waits for those reads (`horizon`: no future instruction starts before it).
  std::int64_t reserve(std::uint64_t bytes, std::string_view instruction, std::int64_t horizon) {
    if (live_ + bytes > capacity_)
      throw error(fmt::format("sim: {}: {} overflow: {} per partition needed, {} available "
                              "({} held by live tiles)",
                              instruction, memory_name_, format_bytes(live_ + bytes),
                              format_bytes(capacity_), format_bytes(live_)));
    live_ += bytes;
    if (live_ + pending_bytes_ <= capacity_) return 0;  // fits beside everything still in use
    std::erase_if(pending_, [&](const pending& p) {
      if (p.release_ps > horizon) return false;
      pending_bytes_ -= p.bytes;
      return true;
    });
    std::int64_t ready = 0;
    if (live_ + pending_bytes_ > capacity_) {
      std::sort(pending_.begin(), pending_.end(),
                [](const pending& a, const pending& b) { return a.release_ps < b.release_ps; });
      std::uint64_t still_held = pending_bytes_;
      for (const auto& p : pending_) {
        still_held -= p.bytes;
        ready = p.release_ps;
        if (live_ + still_held <= capacity_) break;
      }
    }
    return ready;
  }

  /// The tile holding `bytes` was first written at `first_use_ps`.
  void note_first_use(std::uint64_t bytes, std::int64_t first_use_ps) {
    if (open_) events_.push_back({first_use_ps, static_cast<std::int64_t>(bytes)});
  }

  /// The tile holding `bytes` is gone in program order; its last access ends at `release_ps`.
  void release(std::uint64_t bytes, bool was_used, std::int64_t release_ps) {
    live_ -= bytes;
    if (!open_) return;
    pending_.push_back({bytes, release_ps});
    pending_bytes_ += bytes;
    if (was_used) events_.push_back({release_ps, -static_cast<std::int64_t>(bytes)});
  }

  /// Stops recording: the run is over (tiles that outlive it still release their bytes).
  void close() noexcept { open_ = false; }

  /// Samples of the usage over time (bytes per partition x partitions), one per distinct time,
  /// starting with 0 at time 0.
  template <class Sample>
  void samples(std::vector<Sample>& out) const {
    auto events = events_;
    std::stable_sort(events.begin(), events.end(),
                     [](const event& a, const event& b) { return a.t_ps < b.t_ps; });
    std::int64_t used = 0;
    out.push_back(Sample{counter_, 0, 0.0});
    for (std::size_t i = 0; i < events.size(); ++i) {
      used += events[i].delta;
      if (i + 1 < events.size() && events[i + 1].t_ps == events[i].t_ps) continue;
      const double value = static_cast<double>(used) * partitions_;
      if (out.back().name == counter_ && out.back().t_ps == events[i].t_ps)
        out.back().value = value;
      else
        out.push_back(Sample{counter_, events[i].t_ps, value});
    }
  }

  std::uint64_t live_bytes_per_partition() const noexcept { return live_; }
  std::uint64_t capacity_per_partition() const noexcept { return capacity_; }

 private:
  struct pending {
    std::uint64_t bytes;
    std::int64_t release_ps;
  };
  struct event {
    std::int64_t t_ps;
    std::int64_t delta;
  };

  std::string_view memory_name_;
  std::string_view counter_;
  std::uint64_t capacity_;
  std::uint32_t partitions_;
  std::uint64_t live_ = 0;
  std::vector<pending> pending_ = {};
  std::uint64_t pending_bytes_ = 0;  ///< sum over pending_
  std::vector<event> events_ = {};
  bool open_ = true;
};

}  // namespace detail
}  // namespace sim
}  // namespace v1
}  // namespace strata
