// strata/detail/huge_page_allocator.hpp: large scratch arrays of an export's passes in
// transparent huge pages.
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

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "strata/detail/huge_pages.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

/// A std::allocator for an export's large scratch arrays: an allocation of 2 MiB or more is
/// its own mapping in huge pages, returned to the system when freed; a smaller one comes from
/// operator new.
template <class T>
struct huge_page_allocator {
  using value_type = T;

  huge_page_allocator() noexcept = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
#if defined(__linux__)
    if (bytes >= huge_page_bytes) {
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
    if (n * sizeof(T) >= huge_page_bytes) {  // the size decides, as it did in allocate()
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

}  // namespace detail
}  // namespace v1
}  // namespace strata
