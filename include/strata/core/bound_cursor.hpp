// strata/core/bound_cursor.hpp: where a buffer finds its producer's position.
//
// While a thread records into a buffer, the position lives in the thread's thread-local cursor
// (recording_state.hpp), so the hot path reaches it without loading a pointer; the buffer points
// at that cursor ("bound"). When the thread moves on (a new session, its exit), the position is
// copied back into the buffer's own cursor and the thread's cursor is left at its limit, so that
// a push through it goes to the slow path. Ring buffers and block chains both keep one.
#pragma once

#include "strata/core/recording_state.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

class bound_cursor {
 public:
  bound_cursor() = default;
  bound_cursor(const bound_cursor&) = delete;  // points into itself
  bound_cursor& operator=(const bound_cursor&) = delete;

  /// The cursor the producer writes through now.
  producer_cursor* operator->() const noexcept { return cursor_; }
  /// The buffer's own cursor (to set the position before any thread is bound).
  producer_cursor& own() noexcept { return own_; }

  /// On the producer's thread, ordered with the consumer by the buffer's lock: from now on the
  /// producer writes through `c`, which takes over the position.
  void bind(producer_cursor& c) noexcept {
    c.store_next(cursor_->load_next());
    c.limit = cursor_->limit;
    cursor_ = &c;
  }

  /// Undoes `bind`.
  void unbind() noexcept {
    if (cursor_ == &own_) return;
    own_.store_next(cursor_->load_next());
    own_.limit = cursor_->limit;
    cursor_->store_next(nullptr);
    cursor_->limit = nullptr;
    cursor_ = &own_;
  }

 private:
  producer_cursor own_;
  producer_cursor* cursor_ = &own_;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
