// benchmarks/sustained_load.cpp: records far more than fits in memory, and reports what was
// made, kept, lost and spilled, and how much memory the process used.
//
//   sustained_load lossless|flight [--seconds S] [--rate R] [--threads N] [--contention]
//                  [--memory-limit-mb M] [--preallocate-mb M] [--no-spill] [--ring RECORDS] [--nested]
//                  [--export] [--table]
//
// N recording threads (default 2) each record R scopes per second (default 5,000,000; 0: as
// fast as they can) for S seconds (default 4), pacing themselves against steady_clock in
// batches of 4096 scopes. --contention adds one spinning thread per core, so the recording
// threads, the store's writer and the spinners compete for the cores as on a busy host.
// "lossless" uses the default settings (only output_dir set; --memory-limit-mb,
// --preallocate-mb and --no-spill change them) and must lose nothing (with --no-spill: keep exactly the limit's blocks plus one
// per thread); "flight" is a flight recorder (overflow_policy::flight_recorder) keeping
// the newest RECORDS - 1 per thread (default 2^18) in constant memory. --nested records ops of
// three nested scopes each (4 records an op) instead of flat scopes, so blocks hold parents
// after their children and scopes span blocks.
//
// Memory: VmHWM (peak RSS) is read from /proc/self/status just before stop(), while the
// session holds its records (in memory up to the limit, the rest spilled), and again after
// stop() has collected them (what stayed in memory is copied out of the blocks; what was
// spilled stays in the spill file).
//
// --table then computes key_averages, and --export writes the session as Chrome JSON (into the
// temporary directory, removed afterwards) three times as it was collected
// (profiler::export_chrome_trace: spilled records read from the spill file), then three times
// from memory once profiler::data() has read everything back; each timed, with its own peak RSS
// (VmHWM reset before it through /proc/self/clear_refs).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "strata/export/chrome_trace.hpp"
#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "strata/trace_data.hpp"

namespace {

// A /proc/self/status field (VmRSS, VmHWM) in MiB.
double memory_mib(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(status, line))
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':')
      return std::strtod(line.c_str() + n + 1, nullptr) / 1024.0;
  return -1;
}

// Resets VmHWM to the current RSS, so the next reading is the peak of what follows.
void reset_peak_memory() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

// Records scopes at `per_second` (0: unpaced) until `until`, in batches; returns how many.
// `nested`: each op is a scope holding three (4 records an op).
std::uint64_t record_paced(double per_second, std::chrono::steady_clock::time_point until, bool nested) {
  using clock = std::chrono::steady_clock;
  constexpr int batch = 4096;
  const auto start = clock::now();
  const double ns_per_batch = per_second > 0 ? 1e9 * batch / per_second : 0;
  std::uint64_t made = 0;
  for (std::uint64_t b = 0;; ++b) {
    const auto now = clock::now();
    if (now >= until) break;
    const auto due = start + std::chrono::nanoseconds(static_cast<std::int64_t>(ns_per_batch * static_cast<double>(b)));
    if (now < due) std::this_thread::sleep_until(due);  // ahead of the schedule: wait for it
    if (nested) {
      for (int i = 0; i < batch / 4; ++i) {
        STRATA_SCOPE("sustained op");
        for (int k = 0; k < 3; ++k) {
          STRATA_SCOPE("sustained kernel");
        }
      }
    } else {
      for (int i = 0; i < batch; ++i) {
        STRATA_SCOPE("sustained");
      }
    }
    made += batch;
  }
  return made;
}

struct options {
  bool flight = false;
  double seconds = 4;
  double rate = 5e6;
  int threads = 2;
  bool contention = false;
  std::size_t memory_limit_mb = 0;  // 0: the default
  long long preallocate_mb = -1;    // -1: the default
  bool spill = true;
  std::size_t ring = std::size_t{1} << 18;
  bool nested = false;
  bool export_trace = false;
  bool table = false;
};

bool parse(int argc, char** argv, options& o) {
  if (argc < 2) return false;
  const std::string mode = argv[1];
  if (mode != "lossless" && mode != "flight") return false;
  o.flight = mode == "flight";
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--contention") o.contention = true;
    else if (a == "--no-spill") o.spill = false;
    else if (a == "--nested") o.nested = true;
    else if (a == "--export") o.export_trace = true;
    else if (a == "--table") o.table = true;
    else if (a == "--seconds" && has_value) o.seconds = std::strtod(argv[++i], nullptr);
    else if (a == "--rate" && has_value) o.rate = std::strtod(argv[++i], nullptr);
    else if (a == "--threads" && has_value) o.threads = std::atoi(argv[++i]);
    else if (a == "--memory-limit-mb" && has_value) o.memory_limit_mb = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--preallocate-mb" && has_value) o.preallocate_mb = std::strtoll(argv[++i], nullptr, 10);
    else if (a == "--ring" && has_value) o.ring = std::strtoull(argv[++i], nullptr, 10);
    else return false;
  }
  return o.seconds > 0 && o.threads > 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: %s lossless|flight [--seconds S] [--rate R] [--threads N] [--contention]\n"
                 "       [--memory-limit-mb M] [--preallocate-mb M] [--no-spill] [--ring RECORDS] [--nested]\n"
                 "       [--export] [--table]\n",
                 argv[0]);
    return 2;
  }
  strata::profiler_config config;
  config.output_dir = (std::filesystem::temp_directory_path() / "strata-sustained").string();
  if (o.flight) {
    config.overflow = strata::overflow_policy::flight_recorder;
    config.buffer_capacity = o.ring;
  }
  if (o.memory_limit_mb != 0) config.memory_limit = o.memory_limit_mb << 20;
  if (o.preallocate_mb >= 0) config.preallocate = static_cast<std::size_t>(o.preallocate_mb) << 20;
  config.spill = o.spill;
  strata::profiler prof(config);

  // Spinners first, so the recording threads start on a busy machine.
  std::atomic<bool> spin{o.contention};
  std::vector<std::thread> spinners;
  if (o.contention)
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c)
      spinners.emplace_back([&] {
        while (spin.load(std::memory_order_relaxed)) {
        }
      });

  const double rss_before = memory_mib("VmRSS");
  prof.start();
  const auto t0 = std::chrono::steady_clock::now();
  const auto until = t0 + std::chrono::nanoseconds(static_cast<std::int64_t>(o.seconds * 1e9));
  std::vector<std::uint64_t> made(static_cast<std::size_t>(o.threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < o.threads; ++t)
    workers.emplace_back([&, t] { made[static_cast<std::size_t>(t)] = record_paced(o.rate, until, o.nested); });
  // The main thread samples memory once a second while the workers record.
  std::vector<double> rss_samples;
  while (std::chrono::steady_clock::now() + std::chrono::seconds(1) < until) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    rss_samples.push_back(memory_mib("VmRSS"));
  }
  for (auto& w : workers) w.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spin.store(false);
  for (auto& s : spinners) s.join();
  const double hwm_recording = memory_mib("VmHWM");
  const auto c0 = std::chrono::steady_clock::now();
  prof.stop();
  const double collect_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
  const strata::profiler_stats s = prof.stats();

  std::uint64_t total = 0;
  for (auto m : made) total += m;
  std::printf("mode            %s (%s)%s\n", o.flight ? "flight" : "lossless",
              o.flight ? ("flight_recorder, " + std::to_string(o.ring) + " records per thread").c_str()
                       : ("memory_limit " + std::to_string(config.memory_limit >> 20) + " MiB, spill " +
                          (config.spill ? "on" : "off")).c_str(),
              o.contention ? ", contention: a spinning thread per core" : "");
  std::printf("scopes made     %llu in %.2f s = %.2f M/s over %d threads\n",
              static_cast<unsigned long long>(total), elapsed, static_cast<double>(total) / elapsed / 1e6,
              o.threads);
  std::printf("records kept    %llu\n", static_cast<unsigned long long>(s.recorded));
  std::printf("records lost    %llu\n", static_cast<unsigned long long>(s.dropped));
  std::printf("spilled         %llu records, %.1f MiB file; %llu waits at the limit\n",
              static_cast<unsigned long long>(s.memory.spilled), static_cast<double>(s.memory.spill_bytes) / 1048576.0,
              static_cast<unsigned long long>(s.memory.waits));
  if (!s.memory.spill_error.empty()) std::printf("spill error     %s\n", s.memory.spill_error.c_str());
  std::printf("blocks peak     %.1f MiB\n", static_cast<double>(s.memory.peak) / 1048576.0);
  std::printf("VmRSS MiB       before %.1f, per second:", rss_before);
  for (double r : rss_samples) std::printf(" %.0f", r);
  std::printf("\n");
  std::printf("VmHWM MiB       %.1f while recording; %.1f after stop() collected (%.2f s)\n",
              hwm_recording, memory_mib("VmHWM"), collect_s);
  // lossless: every scope made is kept; with --no-spill, the limit's blocks plus each thread's
  // current one. flight: each thread keeps exactly its newest `ring`. Either way kept + lost
  // accounts for every scope.
  const std::uint64_t block = 2048;
  const std::uint64_t no_spill_keeps = (config.memory_limit / (block * 32) + o.threads) * block;
  const bool accounted = s.recorded + s.dropped == total;
  std::uint64_t flight_keeps = 0;
  for (auto m : made) flight_keeps += std::min<std::uint64_t>(m, o.ring);
  const bool ok = accounted && (o.flight     ? s.recorded == flight_keeps
                                : o.spill   ? s.dropped == 0
                                            : s.recorded == std::min(total, no_spill_keeps));
  bool exported = true;
  if (o.table) {
    reset_peak_memory();
    const auto k0 = std::chrono::steady_clock::now();
    const strata::averages a = prof.key_averages();
    const double table_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - k0).count();
    std::printf("key_averages    %.2f s = %.2f M records/s, %zu rows; VmHWM %.1f MiB during\n", table_s,
                static_cast<double>(s.recorded) / table_s / 1e6, a.rows.size(), memory_mib("VmHWM"));
  }
  if (o.export_trace) {
    // Three exports as the session was collected (spilled records read from the spill file),
    // then, once data() has read them back into memory, three of the same records from memory:
    // the same trace both ways, in one process, so the ratio is not the machine's mood.
    const std::string path = config.output_dir + "/sustained.json";
    const auto timed_export = [&](auto&& write) {
      reset_peak_memory();
      const auto e0 = std::chrono::steady_clock::now();
      const strata::export_result r = write();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - e0).count();
      exported = exported && r.events >= s.recorded;
      std::filesystem::remove(path);
      return std::pair<double, double>(seconds, static_cast<double>(r.bytes) / 1048576.0);
    };
    std::vector<double> streamed, in_memory;
    double hwm_streamed = 0, json_mib = 0;
    const double rss_streamed = memory_mib("VmRSS");
    for (int i = 0; i < 3; ++i) {
      const auto [seconds, mib] = timed_export([&] { return prof.export_chrome_trace(path); });
      streamed.push_back(seconds);
      json_mib = mib;
      hwm_streamed = std::max(hwm_streamed, memory_mib("VmHWM"));
    }
    const auto l0 = std::chrono::steady_clock::now();
    const strata::trace_data& all = prof.data();  // reads the spilled records back
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - l0).count();
    const double rss_loaded = memory_mib("VmRSS");
    for (int i = 0; i < 3; ++i)
      in_memory.push_back(timed_export([&] { return strata::write_chrome_trace(all, path); }).first);
    const auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double records = static_cast<double>(s.recorded);
    std::printf("export          %.0f MiB of JSON; as collected: median %.2f s = %.2f M records/s "
                "(VmRSS %.1f MiB before, VmHWM %.1f MiB during)\n",
                json_mib, median(streamed), records / median(streamed) / 1e6, rss_streamed, hwm_streamed);
    std::printf("                read back by data() in %.2f s (VmRSS %.1f MiB), then from memory: "
                "median %.2f s = %.2f M records/s; ratio %.2f\n",
                load_s, rss_loaded, median(in_memory), records / median(in_memory) / 1e6,
                median(in_memory) / median(streamed));
  }
  std::printf("check           %s\n", ok && exported ? "ok" : "FAILED");
  return ok && exported ? 0 : 1;
}
