// strata/detail/shared_handle.hpp: a counted reference to one of strata's own objects, for the
// public types that carry implementation state (trace_data's spill file, step names, and the
// blocks a session handed over). std::shared_ptr would do the same, but <memory> alone takes
// longer to compile than the whole budget of the compiled-out implementation's file, which
// defines trace_data's destructor; this header reads nothing. (boost::intrusive_ptr is the
// library for it, and its header costs a third of a second too.)
//
// The count is in the object (it derives from shared_object) and the destructor is virtual, so
// that a handle of a type only declared where the handle is destroyed still releases it.
#pragma once

#include <cstddef>

namespace strata {
inline namespace v1 {
namespace detail {

template <class T>
class shared_handle;

/// The base of what a shared_handle points to: how many handles hold it.
class shared_object {
 public:
  shared_object(const shared_object&) = delete;
  shared_object& operator=(const shared_object&) = delete;

 protected:
  shared_object() = default;
  virtual ~shared_object() = default;

 private:
  template <class T>
  friend class shared_handle;

  void acquire() const noexcept { __atomic_fetch_add(&handles_, 1, __ATOMIC_RELAXED); }
  void release() const noexcept {
    if (__atomic_sub_fetch(&handles_, 1, __ATOMIC_ACQ_REL) == 0) delete this;
  }

  mutable std::size_t handles_ = 0;
};

/// Shares an object made with `make_shared_handle`: the last handle to let go deletes it. As
/// thread-safe as std::shared_ptr: handles of one object may be copied and dropped on any
/// threads, one handle is not to be changed on two at once.
template <class T>
class shared_handle {
 public:
  shared_handle() noexcept = default;
  shared_handle(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): like shared_ptr
  shared_handle(const shared_handle& other) noexcept : object_(other.object_) { hold(); }
  shared_handle(shared_handle&& other) noexcept : object_(other.object_) { other.object_ = nullptr; }
  /// A handle of a `const T` from one of a `T`.
  template <class U>
  shared_handle(const shared_handle<U>& other) noexcept  // NOLINT(google-explicit-constructor)
      : object_(other.object_) {
    static_cast<void>(static_cast<T*>(other.get()));  // only where a U* is a T*
    hold();
  }
  ~shared_handle() { drop(); }

  shared_handle& operator=(shared_handle other) noexcept {
    shared_object* const old = object_;
    object_ = other.object_;
    other.object_ = old;  // released with `other`
    return *this;
  }

  void reset() noexcept {
    drop();
    object_ = nullptr;
  }

  T* get() const noexcept { return static_cast<T*>(object_); }
  T* operator->() const noexcept { return get(); }
  T& operator*() const noexcept { return *get(); }
  explicit operator bool() const noexcept { return object_ != nullptr; }
  friend bool operator==(const shared_handle& h, std::nullptr_t) noexcept { return h.object_ == nullptr; }

 private:
  template <class U>
  friend class shared_handle;
  template <class U, class... Args>
  friend shared_handle<U> make_shared_handle(Args&&... args);

  explicit shared_handle(T* made) noexcept : object_(const_cast<shared_object*>(static_cast<const shared_object*>(made))) {
    hold();
  }
  void hold() const noexcept {
    if (object_ != nullptr) object_->acquire();
  }
  void drop() const noexcept {
    if (object_ != nullptr) object_->release();
  }

  shared_object* object_ = nullptr;
};

/// A new `T(args...)`, shared.
template <class T, class... Args>
shared_handle<T> make_shared_handle(Args&&... args) {
  return shared_handle<T>(new T(static_cast<Args&&>(args)...));
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
