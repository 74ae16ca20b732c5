// benchmarks/sustained_load.cpp: records far more than the buffers hold, at a fixed rate, and
// reports what was kept, what was lost and how much memory the process used.
//
//   sustained_load drain  [SECONDS] [RATE] [RING] [INTERVAL_US]   background drain, drop_newest
//   sustained_load flight [SECONDS] [RATE] [RING]                 overwrite_oldest, no drain
//
// Two threads share RATE scopes per second (default 10,000,000 in total) for SECONDS (default
// 10), each pacing itself against steady_clock in batches of 4096 scopes (sleeping until a
// batch is due, so that the recording threads leave the cores to the drain as a real workload
// would). Each thread's ring
// holds RING records (default 2^18 = 8 MiB). "drain" moves records out every INTERVAL_US
// (default 1000 us) and must lose none; "flight" keeps the newest RING - 1 records per thread
// in constant memory. Memory is read from /proc/self/status (VmRSS, VmHWM).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "strata/core/macros.hpp"
#include "strata/profiler.hpp"
#include "strata/core/trace_data.hpp"

namespace {

// VmRSS or VmHWM of this process, in MiB.
double memory_mib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0) return std::strtod(line.c_str() + field.size() + 1, nullptr) / 1024.0;
  return -1;
}

// Records scopes at `per_second` until `until`, pacing in batches; returns how many.
std::uint64_t record_paced(double per_second, std::chrono::steady_clock::time_point until) {
  using clock = std::chrono::steady_clock;
  constexpr int batch = 4096;
  const auto start = clock::now();
  const double ns_per_batch = 1e9 * batch / per_second;
  std::uint64_t made = 0;
  for (std::uint64_t b = 0;; ++b) {
    const auto due = start + std::chrono::nanoseconds(static_cast<std::int64_t>(ns_per_batch * static_cast<double>(b)));
    const auto now = clock::now();
    if (now >= until) break;
    if (now < due) std::this_thread::sleep_until(due);  // ahead of the schedule: wait for it
    for (int i = 0; i < batch; ++i) {
      STRATA_SCOPE("sustained");
    }
    made += batch;
  }
  return made;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (std::string(argv[1]) != "drain" && std::string(argv[1]) != "flight")) {
    std::fprintf(stderr, "usage: %s drain|flight [SECONDS] [RATE] [RING] [INTERVAL_US]\n", argv[0]);
    return 2;
  }
  const bool drain = std::string(argv[1]) == "drain";
  const double seconds = argc > 2 ? std::strtod(argv[2], nullptr) : 10.0;
  const double rate = argc > 3 ? std::strtod(argv[3], nullptr) : 10e6;
  const std::size_t ring = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : std::size_t{1} << 18;
  const long interval_us = argc > 5 ? std::strtol(argv[5], nullptr, 10) : 1000;
  constexpr int threads = 2;

  strata::profiler_config config;
  config.output_dir = std::filesystem::temp_directory_path() / "strata-sustained";
  config.buffer_capacity = ring;
  config.overflow = drain ? strata::overflow_policy::drop_newest : strata::overflow_policy::overwrite_oldest;
  config.drain_interval = drain ? std::chrono::microseconds(interval_us) : std::chrono::microseconds(0);
  strata::profiler prof(config);

  const double rss_before = memory_mib("VmRSS");
  prof.start();
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::nanoseconds(static_cast<std::int64_t>(seconds * 1e9));
  std::vector<std::uint64_t> made(threads);
  std::vector<double> rss_samples;
  std::vector<std::thread> workers;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] { made[static_cast<std::size_t>(t)] = record_paced(rate / threads, until); });
  // The main thread samples memory once a second while the workers record.
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    rss_samples.push_back(memory_mib("VmRSS"));
  }
  for (auto& w : workers) w.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double rss_end = memory_mib("VmRSS");
  const std::uint64_t drains = prof.background_drains();
  prof.stop();

  std::uint64_t total = 0;
  for (auto m : made) total += m;
  const auto& data = prof.data();
  std::printf("mode            %s (%s, ring %zu records = %.1f MiB per thread%s)\n",
              drain ? "drain" : "flight", strata::overflow_policy_name(config.overflow).data(), ring,
              static_cast<double>(ring) * 32 / 1048576.0,
              drain ? (", interval " + std::to_string(interval_us) + " us").c_str() : "");
  std::printf("scopes made     %llu in %.2f s = %.2f M/s over %d threads\n",
              static_cast<unsigned long long>(total), elapsed, static_cast<double>(total) / elapsed / 1e6, threads);
  std::printf("records kept    %llu\n", static_cast<unsigned long long>(data.recorded()));
  std::printf("records lost    %llu\n", static_cast<unsigned long long>(data.lost()));
  if (drain) std::printf("drain passes    %llu\n", static_cast<unsigned long long>(drains));
  std::printf("VmRSS MiB       before %.1f, per second:", rss_before);
  for (double r : rss_samples) std::printf(" %.0f", r);
  std::printf(", at the end %.1f\n", rss_end);
  std::printf("VmHWM MiB       %.1f (after collecting)\n", memory_mib("VmHWM"));
  // drain: every scope made is kept. flight: each thread keeps its newest ring - 1 and counts
  // the rest as lost. Either way kept + lost accounts for every scope.
  const bool accounted = data.recorded() + data.lost() == total;
  const bool ok = accounted && (drain ? data.lost() == 0 : data.recorded() <= threads * (ring - 1));
  std::printf("check           %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
