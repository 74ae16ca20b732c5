// benchmarks/bench_overhead.cpp: what one STRATA_* call costs, against a limit baseline measured
// in the same run.
//
// Each benchmark calls one function of overhead_cases.hpp in a loop, `v = f(v)`; the functions
// share one body and differ only in their instrumentation, so the loops are identical and every
// difference in time is the instrumentation's. The figures and the command that produced them
// are in docs/benchmarks.md.
//
// Sessions: the profiler is started by thread 0 before the measured loop and stopped after it,
// once per run, with overflow_policy::flight_recorder so that the steady state is the normal
// store path (a flight recorder laps its ring instead of dropping), never the full-buffer path.
// Before the loop every thread records once (warm_up), so taking its buffer, which allocates
// and zeroes it, is not measured either. After the loop thread 0 checks that the session holds
// exactly one record per iteration per thread, so a case that silently stopped recording would
// fail instead of looking cheap.
#include <barrier>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "overhead_cases.hpp"
#include "strata/clock.hpp"
#include "strata/profiler.hpp"

#ifndef STRATA_BENCH_BUILD
#define STRATA_BENCH_BUILD "unknown"
#endif

namespace {

using namespace strata_bench;

/// Which session runs while a case is measured.
enum class session {
  none,          ///< no profiler: strata is disabled at run time
  capture_all,   ///< every layer captured, a flight recorder's ring: the scope records
  capture_lossless,  ///< every layer captured, a lossless session (blocks, spilled past 256 MiB)
  capture_shapes,  ///< every layer, and the arguments of scopes that carry them
  capture_flops,   ///< every layer, and the FLOP counts of scopes that carry them (with_flops)
  skip_user,     ///< every layer but `user`: the scope's layer is not captured
  capture_memory,  ///< every layer and memory events (profile_memory)
};

std::optional<strata::profiler>& current_profiler() {
  static std::optional<strata::profiler> p;
  return p;
}

void start_session(session mode, std::size_t capacity) {
  if (mode == session::none) return;
  strata::profiler_config config{
      .output_dir = std::filesystem::temp_directory_path() / "strata-bench",
      .layers = mode != session::skip_user
                    ? strata::layer_set::all()
                    : strata::layer_set{strata::layer::framework, strata::layer::runtime,
                                        strata::layer::device},
      .buffer_capacity = capacity,
      .overflow = mode == session::capture_lossless ? strata::overflow_policy::lossless
                                                    : strata::overflow_policy::flight_recorder,
      .record_shapes = mode == session::capture_shapes,
      .profile_memory = mode == session::capture_memory,
      .with_flops = mode == session::capture_flops};
  current_profiler().emplace(std::move(config));
  current_profiler()->start();
}

/// Stops the session (nothing is exported) and checks how many records it took.
void stop_session(benchmark::State& state, session mode, std::uint64_t warm_up_records,
                  std::uint64_t per_iteration = 1) {
  if (mode == session::none) return;
  auto& prof = *current_profiler();
  prof.stop();
  const strata::profiler_stats s = prof.stats();
  // Every thread recorded once in warm_up() (twice for the extra cases, which record once more
  // before the loop) and once per iteration, when its layer is captured.
  const std::uint64_t per_thread = static_cast<std::uint64_t>(state.iterations()) * per_iteration + warm_up_records;
  const std::uint64_t expected =
      mode != session::skip_user ? per_thread * static_cast<std::uint64_t>(state.threads()) : 0;
  if (s.recorded + s.dropped != expected)
    state.SkipWithError(("session took " + std::to_string(s.recorded + s.dropped) +
                         " records, expected " + std::to_string(expected))
                            .c_str());
  current_profiler().reset();
}

/// Waits until every thread of the benchmark gets here (std::barrier needs its count up front).
void sync_threads(const benchmark::State& state) {
  static constexpr int max_threads = 8;
  static std::vector<std::unique_ptr<std::barrier<>>> barriers = [] {
    std::vector<std::unique_ptr<std::barrier<>>> v;
    for (int n = 1; n <= max_threads; ++n) v.push_back(std::make_unique<std::barrier<>>(n));
    return v;
  }();
  if (state.threads() > 1) barriers.at(static_cast<std::size_t>(state.threads() - 1))->arrive_and_wait();
}

/// One of strata's cases under the session `mode`.
template <case_fn Case>
void strata_case(benchmark::State& state, session mode, std::size_t capacity) {
  if (state.thread_index() == 0) start_session(mode, capacity);
  sync_threads(state);  // the session runs before any thread records
  warm_up();
  // The extra cases record once more before the loop (their names interned, their arguments
  // cached), so that the loop measures the steady state.
  constexpr bool extra =
      Case == c_range || Case == scope_args_seen || Case == scope_framework || Case == scope_flops;
  if constexpr (extra) Case(0);
  // The C cases over several names push each once first (each name seen before).
  constexpr std::uint64_t names_seen =
      Case == c_range_adjacent ? 2 : Case == c_range_engine ? engine_name_count : 0;
  for (std::uint64_t i = 0; i < names_seen; ++i) Case(i);
  std::uint64_t v = 0;
  for (auto _ : state) v = Case(v);
  benchmark::DoNotOptimize(v);
  // The loop's end is a barrier of all threads, so every record is in by now.
  // The memory pair stores two records when memory is profiled, none otherwise.
  const std::uint64_t per_iteration = Case != memory_pair ? 1 : mode == session::capture_memory ? 2 : 0;
  if (state.thread_index() == 0) stop_session(state, mode, (extra ? 2 : 1) + names_seen, per_iteration);
}

/// A limit-baseline case: the same loop over a function of the same shape.
template <case_fn Case, std::size_t Capacity, std::uint64_t Records = 1>
void limit_case(benchmark::State& state) {
  limit_prepare<Capacity>();
  std::uint64_t v = 0;
  for (auto _ : state) v = Case(v);
  benchmark::DoNotOptimize(v);
  if (limit_records_written() != static_cast<std::uint64_t>(state.iterations()) * Records)
    state.SkipWithError("the limit baseline did not store one record per iteration");
}

template <std::size_t Capacity>
void register_scope_pair() {
  const std::string ring = "/ring:" + std::to_string(Capacity);
  benchmark::RegisterBenchmark(("scope/limit_baseline" + ring).c_str(),
                               limit_case<limit_scope<Capacity>, Capacity>)
      ->Threads(1)
      ->Threads(2);
  benchmark::RegisterBenchmark(("scope/strata_enabled" + ring).c_str(),
                               strata_case<scope_user>, session::capture_all, Capacity)
      ->Threads(1)
      ->Threads(2);
}

void register_benchmarks() {
  // Adjacent pairs, so a baseline and the case compared with it run close together in time.
  register_scope_pair<large_ring>();
  // The default session: blocks handed off when full, spilled past the memory limit.
  benchmark::RegisterBenchmark("scope/strata_lossless", strata_case<scope_user>,
                               session::capture_lossless, large_ring)
      ->Threads(1)
      ->Threads(2);
  register_scope_pair<small_ring>();
  benchmark::RegisterBenchmark("scope/strata_disabled", strata_case<scope_user>, session::none,
                               large_ring);
  benchmark::RegisterBenchmark("scope/strata_not_captured", strata_case<scope_user>,
                               session::skip_user, large_ring);
  benchmark::RegisterBenchmark("scope/strata_compiled_out", strata_case<scope_compiled_out>,
                               session::none, large_ring);
  benchmark::RegisterBenchmark("scope/strata_dynamic_interned", strata_case<scope_dynamic>,
                               session::capture_all, large_ring);
  benchmark::RegisterBenchmark("instant/limit_baseline",
                               limit_case<limit_instant<large_ring>, large_ring>);
  benchmark::RegisterBenchmark("instant/strata_enabled", strata_case<instant_user>,
                               session::capture_all, large_ring);
  benchmark::RegisterBenchmark("counter/strata_enabled", strata_case<counter_user>,
                               session::capture_all, large_ring);
  // An allocation and its free: recorded, against two instants at the limit; and with a
  // session that does not profile memory (one relaxed load and a branch each).
  benchmark::RegisterBenchmark("memory_pair/limit_baseline",
                               limit_case<limit_memory_pair<large_ring>, large_ring, 2>);
  benchmark::RegisterBenchmark("memory_pair/strata_enabled", strata_case<memory_pair>,
                               session::capture_memory, large_ring);
  benchmark::RegisterBenchmark("memory_pair/strata_off", strata_case<memory_pair>,
                               session::capture_all, large_ring);
  benchmark::RegisterBenchmark("memory_pair/strata_disabled", strata_case<memory_pair>,
                               session::none, large_ring);
  // The C API against the C++ scope it mirrors; a scope with arguments seen before against the
  // same scope without arguments.
  benchmark::RegisterBenchmark("c_range/strata_enabled", strata_case<c_range>,
                               session::capture_all, large_ring);
  benchmark::RegisterBenchmark("c_range/adjacent_literals", strata_case<c_range_adjacent>,
                               session::capture_all, large_ring);
  benchmark::RegisterBenchmark("c_range/engine_128_literals", strata_case<c_range_engine>,
                               session::capture_all, large_ring);
  benchmark::RegisterBenchmark("scope_args/framework_scope", strata_case<scope_framework>,
                               session::capture_shapes, large_ring);
  benchmark::RegisterBenchmark("scope_args/seen_before", strata_case<scope_args_seen>,
                               session::capture_shapes, large_ring);
  // A scope with a FLOP count beside the plain scope and the limit baseline, FLOPs recorded
  // and not.
  benchmark::RegisterBenchmark("scope_flops/limit_baseline",
                               limit_case<limit_scope<large_ring>, large_ring>);
  benchmark::RegisterBenchmark("scope_flops/plain_scope", strata_case<scope_user>,
                               session::capture_all, large_ring);
  benchmark::RegisterBenchmark("scope_flops/with_flops_off", strata_case<scope_flops>,
                               session::capture_all, large_ring);
  benchmark::RegisterBenchmark("scope_flops/with_flops_on", strata_case<scope_flops>,
                               session::capture_flops, large_ring);
  benchmark::RegisterBenchmark("scope_flops/disabled", strata_case<scope_flops>, session::none,
                               large_ring);
}

}  // namespace

int main(int argc, char** argv) {
  strata::clock::select_once();  // what a profiler would choose; printed with the context
  benchmark::AddCustomContext("strata_clock",
                              std::string(strata::clock_source_name(strata::clock::source())));
  benchmark::AddCustomContext("compiler", __VERSION__);
  benchmark::AddCustomContext("build", STRATA_BENCH_BUILD);
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
