// strata/detail/huge_pages.hpp: memory mapped on its own, aligned to 2 MiB and asked for in
// transparent huge pages, for the two kinds of large memory strata uses: the record blocks'
// chunks (detail/record_block.hpp) and an export's scratch arrays
// (detail/huge_page_allocator.hpp). A fresh 4 KiB page costs a fault each, 10-15 us on a
// virtual machine; a 2 MiB page costs one fault for 512 of them.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace strata {
inline namespace v1 {
namespace detail {

inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

/// Whether a mapping is counted against the system's commit limit when it is made.
enum class swap_reserve : bool {
  reserved,  ///< counted now: a mapping the system cannot back fails here, not on first touch
  none,      ///< MAP_NORESERVE: for a reserve() sized for the worst case that touches only what it uses
};

/// Maps `bytes` (a multiple of 2 MiB) aligned to 2 MiB and asks for huge pages (MADV_HUGEPAGE,
/// which works where transparent huge pages are `always` or `madvise`); nullptr when the system
/// has no memory to map, and off Linux. Nothing is touched: pages come on first write. Return
/// it with ::munmap(p, bytes).
inline void* map_huge_pages(std::size_t bytes, swap_reserve reserve) noexcept {
#if defined(__linux__)
  // Twice the alignment's worth mapped, then the unaligned ends unmapped.
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (reserve == swap_reserve::none ? MAP_NORESERVE : 0);
  void* p = ::mmap(nullptr, bytes + huge_page_bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t base = (at + huge_page_bytes - 1) & ~(std::uintptr_t{huge_page_bytes} - 1);
  if (base != at) ::munmap(p, base - at);
  if (base + bytes != at + bytes + huge_page_bytes)
    ::munmap(reinterpret_cast<void*>(base + bytes), at + huge_page_bytes - base);
#ifdef MADV_HUGEPAGE
  ::madvise(reinterpret_cast<void*>(base), bytes, MADV_HUGEPAGE);
#endif
  return reinterpret_cast<void*>(base);
#else
  (void)bytes;
  (void)reserve;
  return nullptr;
#endif
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
