// strata/core/ring_buffer.hpp: a single-producer single-consumer ring of records.
//
// The producer is the thread that records; the consumer is whoever drains (the profiler at
// stop or export). Neither ever waits for the other. Indices are 64-bit counters that only
// grow, so `head - tail` is the fill level and nothing wraps in practice.
//
// Slots are read and written through relaxed `std::atomic_ref` stores and loads, which compile
// to plain moves on x86-64 and AArch64, so that the overwrite-oldest mode (where the consumer
// may read a slot the producer is rewriting) is race-free in the C++ memory model as well as
// in practice: the consumer validates what it copied afterwards, like a seqlock reader.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "strata/core/config.hpp"
#include "strata/core/record.hpp"

namespace strata {
inline namespace v1 {

/// What a full buffer does with the next record. Either way nothing blocks and every lost
/// record is counted.
enum class overflow_policy : std::uint8_t {
  drop_newest,       ///< keep what is there, count the new record as dropped (default)
  overwrite_oldest,  ///< flight recorder: keep the newest records (`capacity - 1` once the
                     ///< ring has filled: the slot being rewritten is never trusted)
};

constexpr std::string_view overflow_policy_name(overflow_policy p) noexcept {
  return p == overflow_policy::drop_newest ? "drop_newest" : "overwrite_oldest";
}

/// The result of one drain: how many records were copied out and how many were lost since the
/// previous drain.
struct drain_result {
  std::uint64_t copied = 0;
  std::uint64_t lost = 0;
};

/// SPSC ring of `record`s with a power-of-two capacity.
class ring_buffer {
 public:
  /// `capacity` must be a non-zero power of two (the profiler checks it with a clear message).
  ring_buffer(std::size_t capacity, overflow_policy policy)
      : slots_(std::make_unique<record[]>(capacity)), mask_(capacity - 1), policy_(policy) {}

  ring_buffer(const ring_buffer&) = delete;
  ring_buffer& operator=(const ring_buffer&) = delete;

  std::size_t capacity() const noexcept { return static_cast<std::size_t>(mask_ + 1); }
  overflow_policy policy() const noexcept { return policy_; }

  /// Producer only. Stores one record, or counts it as dropped when the buffer is full and the
  /// policy is drop_newest. Returns whether the record was stored.
  STRATA_FORCE_INLINE bool push(const record& r) noexcept {
    const std::uint64_t h = head_local_;
    if (h - cached_tail_ > mask_) [[unlikely]] {
      if (!make_room(h)) return false;
    }
    // Orders the previous head publication before this slot's rewrite: a consumer that sees
    // any byte of the new record will then also see the head that marks the old one stale.
    std::atomic_thread_fence(std::memory_order_release);
    record& slot = slots_[h & mask_];
    std::atomic_ref<std::uint64_t>(slot.begin).store(r.begin, std::memory_order_relaxed);
    std::atomic_ref<std::uint64_t>(slot.end).store(r.end, std::memory_order_relaxed);
    std::atomic_ref<const site*>(slot.where).store(r.where, std::memory_order_relaxed);
    std::atomic_ref<std::uint64_t>(slot.payload).store(r.payload, std::memory_order_relaxed);
    head_local_ = h + 1;
    head_.store(h + 1, std::memory_order_release);
    return true;
  }

  /// Consumer only. Appends every record available now to `out`, oldest first, and reports how
  /// many were lost (dropped by the producer or overwritten before this drain could copy them).
  drain_result drain(std::vector<record>& out) {
    drain_result result;
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    std::uint64_t from = tail;
    const std::uint64_t cap = mask_ + 1;
    if (head - from > cap) from = head - cap;  // overwrite_oldest: the oldest are gone

    const std::size_t base = out.size();
    out.resize(base + static_cast<std::size_t>(head - from));
    for (std::uint64_t i = from; i != head; ++i) {
      record& slot = slots_[i & mask_];
      record& dst = out[base + static_cast<std::size_t>(i - from)];
      dst.begin = std::atomic_ref<std::uint64_t>(slot.begin).load(std::memory_order_relaxed);
      dst.end = std::atomic_ref<std::uint64_t>(slot.end).load(std::memory_order_relaxed);
      dst.where = std::atomic_ref<const site*>(slot.where).load(std::memory_order_relaxed);
      dst.payload = std::atomic_ref<std::uint64_t>(slot.payload).load(std::memory_order_relaxed);
    }
    if (policy_ == overflow_policy::overwrite_oldest) {
      // The producer may have lapped us while we copied. Index i is intact only while the
      // producer has not begun writing index i + cap, which it may do as soon as head reaches
      // i + cap; so everything below head_after - cap + 1 is suspect and is counted as lost.
      // (With a lapped ring this always sacrifices the one slot that may be mid-rewrite.)
      std::atomic_thread_fence(std::memory_order_acquire);
      const std::uint64_t head_after = head_.load(std::memory_order_relaxed);
      if (head_after + 1 > from + cap) {
        const std::uint64_t first_intact = head_after + 1 - cap;
        const std::uint64_t torn = std::min(first_intact, head) - from;
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(base),
                  out.begin() + static_cast<std::ptrdiff_t>(base + torn));
        from += torn;
      }
    }
    result.copied = head - from;
    result.lost = (from - tail) + take_dropped();
    tail_.store(head, std::memory_order_release);
    return result;
  }

  /// Records the producer has published so far (stored, whether or not drained since).
  std::uint64_t published() const noexcept { return head_.load(std::memory_order_acquire); }

 private:
  // Cold part of push: refresh the consumer's position; if still full, apply the policy.
  STRATA_NOINLINE bool make_room(std::uint64_t h) noexcept {
    cached_tail_ = tail_.load(std::memory_order_acquire);
    if (h - cached_tail_ <= mask_) return true;
    if (policy_ == overflow_policy::overwrite_oldest) {
      // The flight recorder laps an undrained ring by design; the consumer's position no
      // longer limits the producer, so skip this check for one more lap.
      cached_tail_ = h;
      return true;
    }
    dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return false;
  }

  // Consumer's share of the drop counter: what was dropped since the last drain.
  std::uint64_t take_dropped() noexcept {
    const std::uint64_t total = dropped_.load(std::memory_order_relaxed);
    const std::uint64_t fresh = total - dropped_seen_;
    dropped_seen_ = total;
    return fresh;
  }

  // Producer's cache line: its own copies of the indices plus what it publishes.
  alignas(64) std::uint64_t head_local_ = 0;
  std::uint64_t cached_tail_ = 0;
  std::atomic<std::uint64_t> head_{0};
  std::atomic<std::uint64_t> dropped_{0};  // written by the producer only, so no RMW needed
  std::unique_ptr<record[]> slots_;
  std::uint64_t mask_;
  overflow_policy policy_;

  // Consumer's cache line.
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  std::uint64_t dropped_seen_ = 0;
};

}  // namespace v1
}  // namespace strata
