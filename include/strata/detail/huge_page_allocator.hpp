// strata/detail/huge_page_allocator.hpp: large scratch arrays of an export's passes, and its
// output buffers, in transparent huge pages.
//
// An export builds arrays of tens of MiB (the flows of a session, their marks) and frees them
// when it returns, so every export meets them as fresh memory. Faulted in 4 KiB pages that is
// one fault per page, which on a virtual machine can cost 10-15 us each: 150 ms for 64 MiB, more
// than writing the whole trace. In 2 MiB pages (asked for with MADV_HUGEPAGE, which works where
// transparent huge pages are `always` or `madvise`) the same 64 MiB took 3.5 ms on that machine.
// Small arrays stay with operator new, which reuses memory the process already has.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "strata/detail/huge_pages.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// A std::allocator for an export's large scratch arrays: an allocation of 256 KiB or more is
/// its own mapping in huge pages, returned to the system when freed; a smaller one comes from
/// operator new. (One 2 MiB fault costs about what a dozen 4 KiB ones do on a virtual machine,
/// so an array of 64 pages or more is cheaper to fault in as one huge page, even half empty.)
template <class T>
struct huge_page_allocator {
  using value_type = T;
  static constexpr std::size_t mapped_bytes = std::size_t{256} << 10;

  huge_page_allocator() noexcept = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
#if defined(__linux__)
    if (bytes >= mapped_bytes) {
      // Reserved without swap accounting: a reserve() sized for the worst case touches only
      // what is used.
      if (void* p = map_huge_pages(rounded(bytes), swap_reserve::none)) return static_cast<T*>(p);
      throw std::bad_alloc();
    }
#endif
    return static_cast<T*>(::operator new(bytes, std::align_val_t{alignof(T)}));
  }

  void deallocate(T* p, std::size_t n) noexcept {
#if defined(__linux__)
    if (n * sizeof(T) >= mapped_bytes) {  // the size decides, as it did in allocate()
      ::munmap(p, rounded(n * sizeof(T)));
      return;
    }
#endif
    ::operator delete(p, std::align_val_t{alignof(T)});
  }

  template <class U>
  bool operator==(const huge_page_allocator<U>&) const noexcept {
    return true;
  }

 private:
  static std::size_t rounded(std::size_t bytes) noexcept {
    return (bytes + huge_page_bytes - 1) & ~(huge_page_bytes - 1);
  }
};

/// An export's output buffer: `size()` bytes, left uninitialised, from huge_page_allocator (a
/// buffer of 1 MiB, fresh in every export, is then one fault rather than 256).
class scratch_bytes {
 public:
  explicit scratch_bytes(std::size_t n) : data_(huge_page_allocator<char>().allocate(n)), size_(n) {}
  scratch_bytes(scratch_bytes&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  scratch_bytes& operator=(scratch_bytes&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  ~scratch_bytes() {
    if (data_ != nullptr) huge_page_allocator<char>().deallocate(data_, size_);
  }

  char* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  char* data_;
  std::size_t size_;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
