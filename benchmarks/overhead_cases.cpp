// benchmarks/overhead_cases.cpp: strata's macros and the limit baseline, one function per case
// (see overhead_cases.hpp for why each lives out of line).
#include "overhead_cases.hpp"

#include <memory>
#include <string>

#include <benchmark/benchmark.h>
#include <x86intrin.h>

#include "strata/macros.hpp"

namespace strata_bench {
namespace {

// A run-time name, as an engine would build it; interned by warm_up() before any measurement.
const std::string dynamic_scope_name = std::string("submit core ") + std::to_string(0);

// The baseline's ring. The hot path sees two constant-initialised, trivially destructible
// thread_locals (a plain %fs-relative access, like strata's tl_buffer); the owner that frees
// the ring at thread exit is touched only by limit_prepare().
thread_local constinit limit_record* tl_ring = nullptr;
thread_local constinit std::uint64_t tl_index = 0;
thread_local std::unique_ptr<limit_record[]> tl_ring_owner;

// What the baseline's records point to, like a strata::site.
constexpr char limit_site[] = "limit scope";

}  // namespace

std::uint64_t scope_user(std::uint64_t x) noexcept {
  STRATA_SCOPE("bench scope");
  benchmark::DoNotOptimize(x);
  return x + 1;
}

std::uint64_t scope_dynamic(std::uint64_t x) noexcept {
  STRATA_SCOPE_DYNAMIC(strata::layer::user, dynamic_scope_name);
  benchmark::DoNotOptimize(x);
  return x + 1;
}

std::uint64_t instant_user(std::uint64_t x) noexcept {
  STRATA_INSTANT("bench instant");
  benchmark::DoNotOptimize(x);
  return x + 1;
}

std::uint64_t counter_user(std::uint64_t x) noexcept {
  STRATA_COUNTER("bench counter", x);
  benchmark::DoNotOptimize(x);
  return x + 1;
}

alignas(64) char memory_block[64];

std::uint64_t memory_pair(std::uint64_t x) noexcept {
  STRATA_ALLOC(memory_block, 64);
  benchmark::DoNotOptimize(x);
  STRATA_FREE(memory_block);
  return x + 1;
}

void warm_up() noexcept {
  STRATA_SCOPE_DYNAMIC(strata::layer::user, dynamic_scope_name);
}

template <std::size_t Capacity>
void limit_prepare() {
  static_assert((Capacity & (Capacity - 1)) == 0, "the baseline ring's size is a power of two");
  tl_ring_owner = std::make_unique<limit_record[]>(Capacity);  // value-initialised: zeroed
  tl_ring = tl_ring_owner.get();
  tl_index = 0;
}

template <std::size_t Capacity>
std::uint64_t limit_scope(std::uint64_t x) noexcept {
  const std::uint64_t begin = __rdtsc();
  benchmark::DoNotOptimize(x);
  const std::uint64_t end = __rdtsc();
  const std::uint64_t i = tl_index;
  tl_ring[i & (Capacity - 1)] = limit_record{begin, end, limit_site, 0};
  tl_index = i + 1;
  return x + 1;
}

template <std::size_t Capacity>
std::uint64_t limit_instant(std::uint64_t x) noexcept {
  const std::uint64_t t = __rdtsc();
  const std::uint64_t i = tl_index;
  tl_ring[i & (Capacity - 1)] = limit_record{t, t, limit_site, 0};
  tl_index = i + 1;
  benchmark::DoNotOptimize(x);
  return x + 1;
}

template <std::size_t Capacity>
std::uint64_t limit_memory_pair(std::uint64_t x) noexcept {
  const std::uint64_t t = __rdtsc();
  const std::uint64_t i = tl_index;
  tl_ring[i & (Capacity - 1)] = limit_record{t, 64, limit_site, 1};
  benchmark::DoNotOptimize(x);
  const std::uint64_t u = __rdtsc();
  tl_ring[(i + 1) & (Capacity - 1)] = limit_record{u, 0, limit_site, 2};
  tl_index = i + 2;
  return x + 1;
}

std::uint64_t limit_records_written() noexcept { return tl_index; }

template void limit_prepare<small_ring>();
template void limit_prepare<large_ring>();
template void limit_prepare<whole_ring>();
template std::uint64_t limit_scope<small_ring>(std::uint64_t) noexcept;
template std::uint64_t limit_scope<large_ring>(std::uint64_t) noexcept;
template std::uint64_t limit_scope<whole_ring>(std::uint64_t) noexcept;
template std::uint64_t limit_instant<small_ring>(std::uint64_t) noexcept;
template std::uint64_t limit_instant<large_ring>(std::uint64_t) noexcept;
template std::uint64_t limit_memory_pair<large_ring>(std::uint64_t) noexcept;

}  // namespace strata_bench
