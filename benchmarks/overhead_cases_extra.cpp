// benchmarks/overhead_cases_extra.cpp: the cases of the C API and of scopes with arguments, in a
// translation unit of their own so that the main cases' (overhead_cases.cpp) stays as it was.
#include <benchmark/benchmark.h>

#include "overhead_cases.hpp"
#include "strata/args/op_args.hpp"
#include "strata/strata.h"

namespace strata_bench {
namespace {

struct mm_args {
  BOOST_HANA_DEFINE_STRUCT(mm_args, (strata::shape, self), (strata::shape, mat2));
};

// The dimensions, read at run time as a real op reads its tensors' (so the encoding and its
// hash are computed per call, not folded into constants by the compiler).
std::int64_t rows = 128, inner = 512, cols = 64;

}  // namespace

std::uint64_t c_range(std::uint64_t x) noexcept {
  strata_push("bench c range");
  benchmark::DoNotOptimize(x);
  strata_pop();
  return x + 1;
}

std::uint64_t scope_args_seen(std::uint64_t x) noexcept {
  // The same shapes every call: after the first, a cache hit.
  benchmark::DoNotOptimize(rows);
  benchmark::DoNotOptimize(inner);
  benchmark::DoNotOptimize(cols);
  STRATA_SCOPE_ARGS(strata::layer::framework, "aten::mm",
                    (mm_args{strata::shape{rows, inner}, strata::shape{inner, cols}}));
  benchmark::DoNotOptimize(x);
  return x + 1;
}

std::uint64_t scope_framework(std::uint64_t x) noexcept {
  STRATA_SCOPE_LAYER(strata::layer::framework, "aten::mm");
  benchmark::DoNotOptimize(x);
  return x + 1;
}

void warm_up_extra() noexcept {
  c_range(0);
  scope_args_seen(0);
  scope_framework(0);
}

}  // namespace strata_bench
