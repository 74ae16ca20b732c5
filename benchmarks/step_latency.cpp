// benchmarks/step_latency.cpp: does the step that closes a window stall the loop?
//
//   step_latency [WINDOWS] [SCOPES] [--runs N] [--wait N]
//
// Runs a loop under a profiler with a schedule (wait 1, warmup 1, active 2, repeating; --wait
// sets the wait) for WINDOWS windows (default 20). Each step records SCOPES scopes (default 20000: a window holds
// 40000 records) on the stepping thread, one of them open across the step() call, as an
// engine's outer scope would be. Every step() call is timed and classed by what it does: an
// ordinary step, the step that enters a window (starts a session), and the step that closes
// one (collects the window; the default handler writes its trace file). Prints the median,
// 90th and 99th percentiles and maximum of each class in microseconds, per run, and the median
// and p99 over runs (--runs, default 5; with 20 windows a run has 20 steps that enter one, so
// its p99 is near its maximum). Uses the public API only, so it builds against any version of strata.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "strata/clock.hpp"
#include "strata/profiler.hpp"
#include "strata/strata.hpp"

namespace {

using steady = std::chrono::steady_clock;

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

// One step's work: SCOPES scopes of a few nanoseconds each.
void work(int scopes) {
  for (int i = 0; i < scopes; ++i) {
    STRATA_SCOPE("op");
  }
}

enum step_class { ordinary, enters, closes, class_count };
constexpr const char* class_names[] = {"ordinary", "enters window", "closes window"};

struct run_result {
  double median[class_count], p90[class_count], p99[class_count], max[class_count];
  std::size_t count[class_count];
};

run_result run(int windows, int scopes, int wait, const std::filesystem::path& dir) {
  std::filesystem::remove_all(dir);
  strata::profiler prof({.output_dir = dir.string(),
                         .layers = {strata::layer::framework, strata::layer::user},
                         .schedule = {.wait = wait, .warmup = 1, .active = 2}});
  std::vector<double> us[class_count];
  prof.start();
  const int steps = windows * (wait + 3);
  for (int s = 0; s < steps; ++s) {
    STRATA_SCOPE("iteration");  // open across step(), like an engine's outer loop scope
    work(scopes);
    const strata::profiler_action before = prof.current_action();
    const bool was_recording = prof.recording();
    const auto t0 = steady::now();
    prof.step();
    const double t = std::chrono::duration<double, std::micro>(steady::now() - t0).count();
    const step_class c = before == strata::profiler_action::record_and_save ? closes
                         : !was_recording && prof.recording()           ? enters
                                                                        : ordinary;
    us[c].push_back(t);
  }
  prof.stop();
  if (prof.trace_files().size() != static_cast<std::size_t>(windows)) {
    std::fprintf(stderr, "wrote %zu window traces, expected %d\n", prof.trace_files().size(), windows);
    std::exit(1);
  }
  run_result r{};
  for (int c = 0; c < class_count; ++c) {
    r.median[c] = quantile(us[c], 0.5);
    r.p90[c] = quantile(us[c], 0.9);
    r.p99[c] = quantile(us[c], 0.99);
    r.max[c] = us[c].empty() ? 0 : *std::max_element(us[c].begin(), us[c].end());
    r.count[c] = us[c].size();
  }
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int windows = 20;
  int scopes = 20000;
  int runs = 5;
  int wait = 1;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--wait") == 0 && i + 1 < argc)
      wait = std::atoi(argv[++i]);
    else if (positional++ == 0)
      windows = std::atoi(argv[i]);
    else
      scopes = std::atoi(argv[i]);
  }
  if (windows <= 0 || scopes <= 0 || runs <= 0 || wait < 0) {
    std::fprintf(stderr, "usage: %s [WINDOWS] [SCOPES] [--runs N] [--wait N]\n", argv[0]);
    return 2;
  }
  strata::clock::select_once();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("strata-step-latency-" + std::to_string(::getpid()));
  std::printf("%d windows of 2 recorded steps (wait %d, warmup 1), %d scopes a step, clock %s\n",
              windows, wait, scopes, std::string(strata::clock_source_name(strata::clock::source())).c_str());
  std::printf("run  %-14s %12s %10s %10s %10s %4s\n", "step", "median (us)", "p90 (us)", "p99 (us)", "max (us)", "n");
  std::vector<double> medians[class_count], p99s[class_count];
  for (int r = 0; r < runs; ++r) {
    const run_result res = run(windows, scopes, wait, dir);
    for (int c = 0; c < class_count; ++c) {
      std::printf("%3d  %-14s %12.1f %10.1f %10.1f %10.1f %4zu\n", r, class_names[c], res.median[c],
                  res.p90[c], res.p99[c], res.max[c], res.count[c]);
      medians[c].push_back(res.median[c]);
      p99s[c].push_back(res.p99[c]);
    }
  }
  for (int c = 0; c < class_count; ++c)
    std::printf("median of %d runs: %-14s %10.1f us, p99 %10.1f us (median of the runs' p99)\n", runs, class_names[c],
                quantile(medians[c], 0.5), quantile(p99s[c], 0.5));
  return 0;
}
