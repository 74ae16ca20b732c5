// benchmarks/count_instructions.cpp: calls one case of overhead_cases.hpp a fixed number of
// times, in the same steady state as bench_overhead (session started, thread warmed up), so that
// `valgrind --tool=callgrind --toggle-collect=<the case's function>` counts the instructions of
// exactly those calls. benchmarks/count_instructions.sh runs it for every case.
//
//   count_instructions CASE [CALLS]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "overhead_cases.hpp"
#include "strata/clock.hpp"
#include "strata/error.hpp"
#include "strata/profiler.hpp"

namespace {

using namespace strata_bench;

enum class session { none, capture_all, capture_shapes, skip_user };

struct case_info {
  std::string_view name;
  case_fn fn;
  session mode;
  bool limit;  // a baseline case: give the thread its ring first
};

constexpr case_info cases[] = {
    {"limit_scope", limit_scope<large_ring>, session::none, true},
    {"scope_enabled", scope_user, session::capture_all, false},
    {"scope_disabled", scope_user, session::none, false},
    {"scope_not_captured", scope_user, session::skip_user, false},
    {"scope_compiled_out", scope_compiled_out, session::none, false},
    {"scope_dynamic_interned", scope_dynamic, session::capture_all, false},
    {"limit_instant", limit_instant<large_ring>, session::none, true},
    {"instant_enabled", instant_user, session::capture_all, false},
    {"counter_enabled", counter_user, session::capture_all, false},
    {"c_range_enabled", c_range, session::capture_all, false},
    {"scope_framework", scope_framework, session::capture_shapes, false},
    {"scope_args_seen", scope_args_seen, session::capture_shapes, false},
};

int usage() {
  std::fprintf(stderr, "usage: count_instructions CASE [CALLS]\ncases:");
  for (const case_info& c : cases) std::fprintf(stderr, " %.*s", static_cast<int>(c.name.size()), c.name.data());
  std::fprintf(stderr, "\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) return usage();
  const case_info* chosen = nullptr;
  for (const case_info& c : cases)
    if (c.name == argv[1]) chosen = &c;
  if (chosen == nullptr) return usage();
  const long calls = argc == 3 ? std::strtol(argv[2], nullptr, 10) : 1000000;
  if (calls <= 0) return usage();

  try {
    std::optional<strata::profiler> prof;
    if (chosen->mode != session::none) {
      prof.emplace(strata::profiler_config{
          .output_dir = std::filesystem::temp_directory_path() / "strata-bench",
          .layers = chosen->mode != session::skip_user
                        ? strata::layer_set::all()
                        : strata::layer_set{strata::layer::framework, strata::layer::runtime,
                                            strata::layer::device},
          .buffer_capacity = large_ring,
          .overflow = strata::overflow_policy::flight_recorder,
          .record_shapes = chosen->mode == session::capture_shapes});
      prof->start();
    } else {
      strata::clock::select_once();
    }
    if (chosen->limit) limit_prepare<large_ring>();
    warm_up();
    const bool extra = chosen->fn == c_range || chosen->fn == scope_framework ||
                       chosen->fn == scope_args_seen;
    if (extra) chosen->fn(0);  // names interned, arguments cached: the loop is steady state

    std::uint64_t v = 0;
    for (long i = 0; i < calls; ++i) v = chosen->fn(v);

    std::uint64_t recorded = 0;
    if (prof) {
      prof->stop();
      const strata::profiler_stats s = prof->stats();
      recorded = s.recorded + s.dropped;
    }
    if (chosen->limit) recorded = limit_records_written();
    // One record per call when the case records, plus warm_up()'s own when a session captures.
    const auto n = static_cast<std::uint64_t>(calls);
    const std::uint64_t warm = extra ? 2 : 1;
    const std::uint64_t expected = chosen->limit                           ? n
                                   : chosen->mode == session::capture_all ||
                                           chosen->mode == session::capture_shapes
                                       ? n + warm
                                       : 0;
    std::fprintf(stderr, "count_instructions: %s: %ld calls, %llu records (expected %llu), clock %s, compiler %s\n",
                 argv[1], calls, static_cast<unsigned long long>(recorded),
                 static_cast<unsigned long long>(expected),
                 std::string(strata::clock_source_name(strata::clock::source())).c_str(), __VERSION__);
    return v == n && recorded == expected ? 0 : 1;
  } catch (const strata::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
