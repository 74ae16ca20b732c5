// benchmarks/overhead_cases_off.cpp: the scope case of overhead_cases.cpp in a translation unit
// built with -DSTRATA_ENABLED=0 (benchmarks/meson.build), where the macro compiles to nothing.
#include "overhead_cases.hpp"

#include <benchmark/benchmark.h>

#include "strata/macros.hpp"

#if STRATA_ENABLED
#error "overhead_cases_off.cpp measures compiled-out scopes: build it with -DSTRATA_ENABLED=0"
#endif

namespace strata_bench {

std::uint64_t scope_compiled_out(std::uint64_t x) noexcept {
  STRATA_SCOPE("bench scope");
  benchmark::DoNotOptimize(x);
  return x + 1;
}

}  // namespace strata_bench
