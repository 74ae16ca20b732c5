// tests/buffer_support.hpp: driving a thread_buffer directly, as a recording thread does through
// its cursor (strata/detail/record_path.hpp's push_record), without a profiler.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "strata/detail/thread_buffer.hpp"

namespace strata_test {

inline constexpr strata::site buffer_site{"buffer", __FILE__, __LINE__, strata::layer::user,
                                          strata::record_kind::scope};

/// Record number i carries i in every field in a different form, so a torn copy (fields of two
/// records) cannot pass for an intact one.
inline strata::record make_record(std::uint64_t i) { return {i, ~i, &buffer_site, i}; }

inline bool intact(const std::vector<strata::record>& rs) {
  for (const auto& r : rs)
    if (r.end != ~r.begin || r.site != &buffer_site || r.payload != r.begin) return false;
  return true;
}

/// A store of blocks for a buffer under test: its writer started, as a session's is; or, with
/// `writer` false and a reserve of one block, a store that allocates only what is taken, so
/// that its peak counts the blocks a buffer took.
inline std::shared_ptr<strata::detail::block_store> test_store(bool writer = true) {
  strata::detail::block_store_settings settings;
  if (!writer) settings.reserve_blocks = 1;
  auto store = std::make_shared<strata::detail::block_store>(settings);
  if (writer) store->start_writer();
  return store;
}

/// What collecting a session gives of `buffer`: take(), then the records of the blocks it
/// handed over put in front, as ordering the session does (detail/session.hpp).
inline void take_all(strata::detail::thread_buffer& buffer, strata::thread_track& t) {
  buffer.take(t, nullptr);  // the caller keeps the buffer alive
  if (t.taken) {
    t.taken->move_to_front_of(t.records);
    t.taken.reset();
  }
}

/// The producer side: a cursor bound to the buffer, and the same push as the hot path's.
class buffer_producer {
 public:
  explicit buffer_producer(strata::detail::thread_buffer& b) : buffer_(b) { buffer_.bind(cursor_); }
  ~buffer_producer() { buffer_.unbind(); }
  buffer_producer(const buffer_producer&) = delete;
  buffer_producer& operator=(const buffer_producer&) = delete;

  bool push(const strata::record& r) noexcept {
    strata::record* p = cursor_.load_next();
    if (p < cursor_.limit) {
      strata::detail::write_slot(p, r.begin, r.end, r.site, r.payload);
      cursor_.publish_next(p + 1);
      return true;
    }
    return buffer_.push_slow(r);
  }

 private:
  strata::detail::thread_buffer& buffer_;
  strata::detail::cursor cursor_;
};

}  // namespace strata_test
