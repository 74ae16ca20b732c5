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

// Two short literals side by side in the binary's read-only data ("rope" and "attention",
// a few bytes apart: one slot of the C API's former direct-mapped name cache), pushed in turn.
std::uint64_t c_range_adjacent(std::uint64_t x) noexcept {
  strata_push((x & 1) != 0 ? "rope" : "attention");
  benchmark::DoNotOptimize(x);
  strata_pop();
  return x + 1;
}

namespace {

// An engine's worth of literals (llama2.c's forward pass names a few dozen stages; with their
// layers and kinds about 120 distinct names), adjacent in read-only data.
#define STRATA_BENCH_NAMES_16(p)                                                                   \
  p "0", p "1", p "2", p "3", p "4", p "5", p "6", p "7", p "8", p "9", p "10", p "11", p "12",    \
      p "13", p "14", p "15"
constexpr const char* engine_names[] = {
    STRATA_BENCH_NAMES_16("rmsnorm "), STRATA_BENCH_NAMES_16("rope "), STRATA_BENCH_NAMES_16("qkv "),
    STRATA_BENCH_NAMES_16("attention "), STRATA_BENCH_NAMES_16("softmax "), STRATA_BENCH_NAMES_16("ffn "),
    STRATA_BENCH_NAMES_16("silu "), STRATA_BENCH_NAMES_16("residual ")};
#undef STRATA_BENCH_NAMES_16
static_assert(sizeof engine_names / sizeof engine_names[0] == engine_name_count);

}  // namespace

std::uint64_t c_range_engine(std::uint64_t x) noexcept {
  strata_push(engine_names[x & (engine_name_count - 1)]);
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

std::uint64_t scope_flops(std::uint64_t x) noexcept {
  STRATA_SCOPE_FLOPS("gemm", 2 * rows * inner * cols);
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
  scope_flops(0);
}

}  // namespace strata_bench
