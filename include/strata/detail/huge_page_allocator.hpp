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
#include <cstdint>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace strata {
inline namespace v1 {
namespace detail {

/// Maps `bytes` (a multiple of 2 MiB) aligned to 2 MiB and asks for huge pages; nullptr when the
/// system has no memory to map. Nothing is touched: pages come on first write, 2 MiB at a time.
inline void* map_huge_pages(std::size_t bytes) noexcept {
#if defined(__linux__)
  constexpr std::size_t huge = std::size_t{2} << 20;
  // Reserved without swap accounting: a reserve() sized for the worst case touches only what
  // is used.
  void* p = ::mmap(nullptr, bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t base = (at + huge - 1) & ~(std::uintptr_t{huge} - 1);
  if (base != at) ::munmap(p, base - at);
  if (base + bytes != at + bytes + huge) ::munmap(reinterpret_cast<void*>(base + bytes), at + huge - base);
#ifdef MADV_HUGEPAGE
  ::madvise(reinterpret_cast<void*>(base), bytes, MADV_HUGEPAGE);
#endif
  return reinterpret_cast<void*>(base);
#else
  (void)bytes;
  return nullptr;
#endif
}

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
    if (bytes >= huge) {
      if (void* p = map_huge_pages(rounded(bytes))) return static_cast<T*>(p);
      throw std::bad_alloc();
    }
#endif
    return static_cast<T*>(::operator new(bytes, std::align_val_t{alignof(T)}));
  }

  void deallocate(T* p, std::size_t n) noexcept {
#if defined(__linux__)
    if (n * sizeof(T) >= huge) {  // the size decides, as it did in allocate()
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
  static constexpr std::size_t huge = std::size_t{2} << 20;
  static std::size_t rounded(std::size_t bytes) noexcept { return (bytes + huge - 1) & ~(huge - 1); }
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
