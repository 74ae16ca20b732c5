// strata/core/ring_buffer.hpp: a single-producer single-consumer ring of records.
//
// The producer is the thread that records; the consumer is whoever drains (the profiler at
// stop or export, or its background drain). Neither ever waits for the other.
//
// The producer writes through a `producer_cursor`: the slot the next record goes to and a
// limit below which it may write without asking. The hot path is a compare with the limit, the
// slot's stores and one release store of the new position; everything else (wrapping at the
// end of the array, finding room behind the consumer, counting drops) happens in `push_slow`
// when the limit is reached. A thread's cursor lives in thread-local storage, so its hot path
// reaches it without a pointer to load (thread_registry.hpp binds it to the thread's ring).
//
// Positions are 64-bit counters that only grow (`laps * capacity + slot`), so `head - tail` is
// the fill level. The consumer reads the producer's position under a sequence lock that only
// the wrap writes; within a lap the position is the cursor alone.
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
#include <thread>
#include <vector>

#include "strata/core/bound_cursor.hpp"
#include "strata/core/config.hpp"
#include "strata/core/overflow_policy.hpp"
#include "strata/core/record.hpp"
#include "strata/core/recording_state.hpp"

namespace strata {
inline namespace v1 {

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
  /// The slots are not zeroed (a consumer only reads slots the producer wrote): a thread's first
  /// record of a session costs an allocation, not the writing of its whole ring, and the pages
  /// are faulted in as the ring first fills.
  ring_buffer(std::size_t capacity, overflow_policy policy)
      : slots_(std::make_unique_for_overwrite<record[]>(capacity)), mask_(capacity - 1), policy_(policy) {
    cursor_.own().store_next(slots_.get());
    cursor_.own().limit = slots_.get();  // the first push finds its room in push_slow
  }

  ring_buffer(const ring_buffer&) = delete;
  ring_buffer& operator=(const ring_buffer&) = delete;

  std::size_t capacity() const noexcept { return static_cast<std::size_t>(mask_ + 1); }
  overflow_policy policy() const noexcept { return policy_; }

  /// Producer only. Stores one record, or counts it as dropped when the buffer is full and the
  /// policy is drop_newest. Returns whether the record was stored.
  STRATA_FORCE_INLINE bool push(const record& r) noexcept {
    record* p = cursor_->load_next();
    if (p >= cursor_->limit) [[unlikely]]
      return push_slow(r);
    write_slot(p, r);
    cursor_->publish_next(p + 1);
    return true;
  }

  /// Producer only: the cold part of a push, for a cursor at its limit. Wraps at the end of the
  /// array, finds room behind the consumer (drop_newest) or laps it (overwrite_oldest), moves
  /// the limit, then stores the record or counts it as dropped.
  STRATA_NOINLINE bool push_slow(const record& r) noexcept {
    record* p = cursor_->load_next();
    if (p == slots_end()) {
      // Wrap under the sequence lock, so that no reader pairs the old lap with the new slot.
      const std::uint64_t seq = seq_.load(std::memory_order_relaxed);
      seq_.store(seq + 1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      laps_.store(laps_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      p = slots_.get();
      cursor_->store_next(p);
      seq_.store(seq + 2, std::memory_order_release);
    }
    if (policy_ == overflow_policy::overwrite_oldest) {
      // The flight recorder laps an undrained ring by design: the consumer never limits it.
      cursor_->limit = slots_end();
    } else {
      const std::uint64_t head = position(laps_.load(std::memory_order_relaxed), p);
      const std::uint64_t room = capacity() - (head - tail_.load(std::memory_order_acquire));
      if (room == 0) {
        cursor_->limit = p;  // every push asks again until a drain makes room
        dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return false;
      }
      cursor_->limit = p + std::min<std::uint64_t>(room, static_cast<std::uint64_t>(slots_end() - p));
    }
    write_slot(p, r);
    cursor_->publish_next(p + 1);
    return true;
  }

  /// Stores `r` into slot `p` (the producer's hot path, with the cursor it owns).
  static STRATA_FORCE_INLINE void write_slot(record* p, const record& r) noexcept {
    detail::write_slot(p, r.begin, r.end, r.where, r.payload);
  }

  /// Producer's thread only, with whatever lock orders it with the consumer: from now on the
  /// producer writes through `c` (a thread-local cursor), which takes over the position.
  void bind(producer_cursor& c) noexcept { cursor_.bind(c); }

  /// Undoes `bind`: the ring keeps the position in its own cursor again, and the outside cursor
  /// is left at its limit (nullptr), so that a push through it goes to the slow path.
  void unbind() noexcept { cursor_.unbind(); }

  /// Consumer only. Appends every record available now to `out`, oldest first, and reports how
  /// many were lost (dropped by the producer or overwritten before this drain could copy them).
  drain_result drain(std::vector<record>& out) {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const copied c = copy_since(tail, out);
    tail_.store(c.head, std::memory_order_release);
    return {c.head - c.from, (c.from - tail) + take_dropped()};
  }

  /// Consumer only (with whatever lock serialises the consumers): appends the records a drain
  /// would take now to `out`, oldest first, without taking them: the ring stays as it is for the
  /// next drain. `lost`: records a drain now would report lost (overwritten or dropped since
  /// the last drain, and any slot the producer may have been rewriting while they were copied).
  drain_result copy_newest(std::vector<record>& out) const {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const copied c = copy_since(tail, out);
    return {c.head - c.from, (c.from - tail) + (dropped_.load(std::memory_order_relaxed) - dropped_seen_)};
  }

  /// Records the producer has published so far (stored, whether or not drained since). Any
  /// thread, with whatever lock orders it with `bind`/`unbind`.
  std::uint64_t published() const noexcept {
    std::uint64_t laps = 0;
    record* p = nullptr;
    // The producer is wrapping (a few instructions): let it finish.
    while (!read_cursor(laps, p)) std::this_thread::yield();
    return position(laps, p);
  }

  /// What a crash handler reads (core/crash_recorder.hpp): the slots, and the producer's
  /// position read like `published()` but giving up (false) after a few tries instead of
  /// waiting for a wrap that may never finish (the producer may be the crashed thread), and the
  /// consumer's (what drains took already). The records not drained yet are the positions
  /// from `max(tail, head - capacity())` below `head`, slot `i & (capacity - 1)`.
  bool crash_view(const record*& slots, std::uint64_t& head, std::uint64_t& tail) const noexcept {
    for (int attempt = 0; attempt < 1000; ++attempt) {
      std::uint64_t laps = 0;
      record* p = nullptr;
      if (!read_cursor(laps, p)) continue;
      if (p == nullptr) return false;  // unbound and never written through
      slots = slots_.get();
      head = position(laps, p);
      tail = tail_.load(std::memory_order_acquire);
      return tail <= head;
    }
    return false;
  }

 private:
  record* slots_end() const noexcept { return slots_.get() + (mask_ + 1); }

  std::uint64_t position(std::uint64_t laps, const record* p) const noexcept {
    return laps * (mask_ + 1) + static_cast<std::uint64_t>(p - slots_.get());
  }

  // One consistent read of the producer's laps and cursor (under the sequence count the producer
  // makes odd while it wraps); false if the producer was wrapping.
  bool read_cursor(std::uint64_t& laps, record*& p) const noexcept {
    const std::uint64_t seq = seq_.load(std::memory_order_acquire);
    if ((seq & 1) != 0) return false;
    laps = laps_.load(std::memory_order_relaxed);
    p = cursor_->acquire_next();
    std::atomic_thread_fence(std::memory_order_acquire);
    return seq_.load(std::memory_order_relaxed) == seq;
  }

  // What copy_since copied: records [from, head) of the producer's count.
  struct copied {
    std::uint64_t from, head;
  };

  // Appends the records published since `tail` that are still in the ring to `out`, oldest
  // first. With overwrite_oldest the producer may have lapped us while we copied: index i is
  // intact only while the producer has not begun writing index i + cap, which it may do as soon
  // as head reaches i + cap; so everything below head_after - cap + 1 is suspect and left out.
  // (With a lapped ring this always sacrifices the one slot that may be mid-rewrite.)
  copied copy_since(std::uint64_t tail, std::vector<record>& out) const {
    const std::uint64_t head = published();
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
      std::atomic_thread_fence(std::memory_order_acquire);
      const std::uint64_t head_after = published();
      if (head_after + 1 > from + cap) {
        const std::uint64_t torn = std::min(head_after + 1 - cap, head) - from;
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(base),
                  out.begin() + static_cast<std::ptrdiff_t>(base + torn));
        from += torn;
      }
    }
    return {from, head};
  }

  // Consumer's share of the drop counter: what was dropped since the last drain.
  std::uint64_t take_dropped() noexcept {
    const std::uint64_t total = dropped_.load(std::memory_order_relaxed);
    const std::uint64_t fresh = total - dropped_seen_;
    dropped_seen_ = total;
    return fresh;
  }

  // Producer's cache line: its cursor when not bound, the laps and the drop count.
  alignas(64) detail::bound_cursor cursor_;
  std::atomic<std::uint64_t> laps_{0};     // written by the producer only (in push_slow)
  std::atomic<std::uint64_t> seq_{0};      // odd while the producer wraps
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
