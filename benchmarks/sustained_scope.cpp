// benchmarks/sustained_scope.cpp: what one STRATA_SCOPE costs in a sustained session, against
// the limit baseline, one candidate per process.
//
//   sustained_scope limit|lossless|lossless_lazy|flight [--calls N] [--warm-up N] [--threads T]
//                   [--ring RECORDS] [--limit-ring 16384|1048576|4194304]
//
// T recording threads (default 1), thread i pinned to the i-th CPU the process may run on
// (modulo their number), each call the candidate's function WARM-UP times (default 100,000),
// then, once every thread is warm, N times more (default 1,000,000), timed on steady_clock
// around those N calls alone. The functions are overhead_cases.hpp's: `scope_user` (one
// STRATA_SCOPE around `DoNotOptimize(x); return x + 1;`, out of line) and `limit_scope` (the
// same body between two rdtsc, one 32-byte store into a thread-local ring of --limit-ring
// records, default 2^20, zeroed by limit_prepare() before the warm-up).
//
//   limit     the limit baseline, no profiler
//   lossless  scope_user under the default session (only output_dir set, to the temporary
//             directory: blocks of 64 KiB handed to the session, spilled past 256 MiB; the
//             256 MiB made ready in start())
//   lossless_lazy  the same with `preallocate = 0`: blocks made as the session needs them, by
//             the session's writer thread ahead of demand
//   flight    scope_user under a flight recorder: overflow_policy::flight_recorder, buffer_capacity --ring
//             (default 2^16)
//
// The profiler is started before the threads start and stopped after they are joined; nothing
// is exported. Each candidate runs in a process of its own so that one cannot leave another
// its heap, its page cache or its session; benchmarks/sustained_scope.py runs them interleaved
// and tabulates them.
//
// Output: one JSON line on stdout (ns per call of each thread and their median, each thread's
// CPU time per call, the process's getrusage from the moment every thread is warm to the moment
// the last finishes, and the session's stats()), a human summary on stderr. Exits 1 unless
// every call ran and was stored: recorded + dropped = T × (WARM-UP + N) for a session, and
// nothing dropped by the lossless one; the limit's ring index advanced once per call.
#include <sched.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "overhead_cases.hpp"
#include "strata/clock.hpp"
#include "strata/profiler.hpp"

#ifndef STRATA_BENCH_BUILD
#define STRATA_BENCH_BUILD "unknown"
#endif

namespace {

using steady = std::chrono::steady_clock;
using namespace strata_bench;

enum class candidate { limit, lossless, lossless_lazy, flight };

struct options {
  candidate what = candidate::limit;
  std::string name;
  std::uint64_t calls = 1000000;
  std::uint64_t warm_up = 100000;
  int threads = 1;
  std::size_t ring = std::size_t{1} << 16;
  std::size_t limit_ring = large_ring;
};

bool parse(int argc, char** argv, options& o) {
  if (argc < 2) return false;
  o.name = argv[1];
  if (o.name == "limit") o.what = candidate::limit;
  else if (o.name == "lossless") o.what = candidate::lossless;
  else if (o.name == "lossless_lazy") o.what = candidate::lossless_lazy;
  else if (o.name == "flight") o.what = candidate::flight;
  else return false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (a == "--calls") o.calls = std::strtoull(v, nullptr, 10);
    else if (a == "--warm-up") o.warm_up = std::strtoull(v, nullptr, 10);
    else if (a == "--threads") o.threads = std::atoi(v);
    else if (a == "--ring") o.ring = std::strtoull(v, nullptr, 10);
    else if (a == "--limit-ring") o.limit_ring = std::strtoull(v, nullptr, 10);
    else return false;
  }
  // Only the two rings overhead_cases.cpp instantiates.
  const bool limit_ring_ok = o.limit_ring == small_ring || o.limit_ring == large_ring || o.limit_ring == whole_ring;
  return o.calls > 0 && o.threads > 0 && o.threads <= 64 && limit_ring_ok;
}

/// The CPUs this process may run on, in order (all of them if the mask cannot be read).
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.empty())
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c)
      cpus.push_back(static_cast<int>(c));
  return cpus;
}

/// Pins the calling thread to `cpu`; an empty string, or why it could not.
std::string pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  return err == 0 ? std::string() : std::string(std::strerror(err));
}

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

struct thread_result {
  int cpu = -1;
  std::string pin_error;
  double ns_per_call = 0;      ///< steady_clock around the timed calls
  double cpu_ns_per_call = 0;  ///< the thread's CPU time around the same calls
  long minor_faults = 0;       ///< the thread's own, during its timed calls
  long involuntary_switches = 0;
  bool every_call_ran = false;
  std::uint64_t limit_stored = 0;  ///< limit: records its ring index counted
};

/// The process's usage at the two ends of the timed region: taken by the last thread to arrive
/// at each barrier, before any thread is released.
struct process_mark {
  rusage usage{};
  steady::time_point at{};
  void take() noexcept {
    getrusage(RUSAGE_SELF, &usage);
    at = steady::now();
  }
};

struct take_mark {
  process_mark* mark;
  void operator()() const noexcept { mark->take(); }
};

/// One recording thread: pin, prepare, warm up, wait for the others, time the calls.
template <case_fn Case>
void record(const options& o, int cpu, std::barrier<take_mark>& start_line,
            std::barrier<take_mark>& finish_line, thread_result& r) {
  r.cpu = cpu;
  r.pin_error = pin_to(cpu);
  if (o.what == candidate::limit) {
    if (o.limit_ring == small_ring) limit_prepare<small_ring>();
    else if (o.limit_ring == whole_ring) limit_prepare<whole_ring>();
    else limit_prepare<large_ring>();
  }
  std::uint64_t v = 0;
  for (std::uint64_t i = 0; i < o.warm_up; ++i) v = Case(v);
  start_line.arrive_and_wait();
  rusage u0{}, u1{};
  getrusage(RUSAGE_THREAD, &u0);
  const double c0 = thread_cpu_ns();
  const auto t0 = steady::now();
  for (std::uint64_t i = 0; i < o.calls; ++i) v = Case(v);
  const auto t1 = steady::now();
  const double c1 = thread_cpu_ns();
  getrusage(RUSAGE_THREAD, &u1);
  finish_line.arrive_and_wait();
  const double n = static_cast<double>(o.calls);
  r.ns_per_call = std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
  r.cpu_ns_per_call = (c1 - c0) / n;
  r.minor_faults = u1.ru_minflt - u0.ru_minflt;
  r.involuntary_switches = u1.ru_nivcsw - u0.ru_nivcsw;
  r.every_call_ran = v == o.warm_up + o.calls;
  if (o.what == candidate::limit) r.limit_stored = limit_records_written();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

template <class T, class F>
std::string json_array(const std::vector<T>& items, F&& each) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ',';
    out += each(items[i]);
  }
  return out + "]";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: %s limit|lossless|lossless_lazy|flight [--calls N] [--warm-up N] [--threads T]\n"
                 "       [--ring RECORDS] [--limit-ring 16384|1048576|4194304]\n",
                 argv[0]);
    return 2;
  }
  strata::clock::select_once();  // what the profiler chooses; reported for every candidate
  const std::vector<int> cpus = allowed_cpus();
  const std::uint64_t threads = static_cast<std::uint64_t>(o.threads);

  strata::profiler_config config;
  config.output_dir = (std::filesystem::temp_directory_path() / "strata-sustained-scope").string();
  if (o.what == candidate::flight) {
    config.overflow = strata::overflow_policy::flight_recorder;
    config.buffer_capacity = o.ring;
  }
  if (o.what == candidate::lossless_lazy) config.preallocate = 0;
  std::optional<strata::profiler> prof;
  std::vector<thread_result> results(static_cast<std::size_t>(o.threads));
  process_mark begin, end;
  double start_ms = 0;  // how long prof->start() took (a lossless session makes its blocks ready there)
  try {
    if (o.what != candidate::limit) {
      prof.emplace(config);
      const auto t0 = steady::now();
      prof->start();
      start_ms = std::chrono::duration<double, std::milli>(steady::now() - t0).count();
    }
    std::barrier<take_mark> start_line(o.threads, take_mark{&begin});
    std::barrier<take_mark> finish_line(o.threads, take_mark{&end});
    std::vector<std::thread> workers;
    for (int t = 0; t < o.threads; ++t) {
      workers.emplace_back([&, t] {
        const int cpu = cpus[static_cast<std::size_t>(t) % cpus.size()];
        thread_result& r = results[static_cast<std::size_t>(t)];
        if (o.what != candidate::limit)
          record<scope_user>(o, cpu, start_line, finish_line, r);
        else if (o.limit_ring == small_ring)
          record<limit_scope<small_ring>>(o, cpu, start_line, finish_line, r);
        else if (o.limit_ring == whole_ring)
          record<limit_scope<whole_ring>>(o, cpu, start_line, finish_line, r);
        else
          record<limit_scope<large_ring>>(o, cpu, start_line, finish_line, r);
      });
    }
    for (auto& w : workers) w.join();
    if (prof) prof->stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sustained_scope: %s\n", e.what());
    return 1;
  }

  // Checks: every call ran and was stored once.
  std::vector<std::string> failures;
  const std::uint64_t per_thread = o.warm_up + o.calls;
  strata::profiler_stats st;
  if (prof) {
    st = prof->stats();
    if (st.recorded + st.dropped != threads * per_thread)
      failures.push_back("recorded + dropped = " + std::to_string(st.recorded + st.dropped) +
                         ", expected threads x (warm-up + calls) = " +
                         std::to_string(threads * per_thread));
    if (o.what != candidate::flight && st.dropped != 0)
      failures.push_back("the lossless session dropped " + std::to_string(st.dropped) + " records");
    if (st.compiled_out) failures.push_back("strata's implementation is compiled out");
  }
  for (std::size_t t = 0; t < results.size(); ++t) {
    if (!results[t].every_call_ran) failures.push_back("thread " + std::to_string(t) + " skipped calls");
    if (o.what == candidate::limit && results[t].limit_stored != per_thread)
      failures.push_back("thread " + std::to_string(t) + " stored " +
                         std::to_string(results[t].limit_stored) + " limit records, expected " +
                         std::to_string(per_thread));
  }

  std::vector<double> ns, cpu_ns;
  bool pinned = true;
  for (const auto& r : results) {
    ns.push_back(r.ns_per_call);
    cpu_ns.push_back(r.cpu_ns_per_call);
    pinned = pinned && r.pin_error.empty();
  }
  double mean = 0;
  for (double x : ns) mean += x / static_cast<double>(ns.size());
  const rusage& u0 = begin.usage;
  const rusage& u1 = end.usage;
  const long minor_faults = u1.ru_minflt - u0.ru_minflt;
  const long major_faults = u1.ru_majflt - u0.ru_majflt;
  const double user_s = seconds(u1.ru_utime) - seconds(u0.ru_utime);
  const double sys_s = seconds(u1.ru_stime) - seconds(u0.ru_stime);
  const double wall_s = std::chrono::duration<double>(end.at - begin.at).count();
  const std::string clock_name(strata::clock_source_name(strata::clock::source()));
  const std::string policy = o.what == candidate::limit    ? "none"
                             : o.what == candidate::flight ? "flight_recorder"
                                                           : "lossless";
#if defined(__clang__)
  std::string compiler = std::string("clang ") + __clang_version__;
#else
  std::string compiler = std::string("g++ ") + __VERSION__;
#endif
  while (!compiler.empty() && compiler.back() == ' ') compiler.pop_back();  // clang's ends in one

  std::string line = "{\"benchmark\":\"sustained_scope\"";
  line += ",\"candidate\":" + json_string(o.name);
  line += ",\"compiler\":" + json_string(compiler);
  line += ",\"build\":" + json_string(STRATA_BENCH_BUILD);
  line += ",\"clock\":" + json_string(clock_name);
  line += ",\"threads\":" + std::to_string(o.threads);
  line += ",\"calls\":" + std::to_string(o.calls);
  line += ",\"warm_up\":" + std::to_string(o.warm_up);
  line += ",\"overflow\":" + json_string(policy);
  line += ",\"ring\":" + std::to_string(o.what == candidate::flight ? o.ring : 0);
  line += ",\"limit_ring\":" + std::to_string(o.what == candidate::limit ? o.limit_ring : 0);
  line += ",\"pinned\":" + std::string(pinned ? "true" : "false");
  line += ",\"cpus\":" + json_array(results, [](const thread_result& r) { return std::to_string(r.cpu); });
  line += ",\"ns_per_call\":" + number(median(ns));
  line += ",\"ns_per_call_mean\":" + number(mean);
  line += ",\"thread_ns_per_call\":" + json_array(ns, number);
  line += ",\"thread_cpu_ns_per_call\":" + json_array(cpu_ns, number);
  line += ",\"thread_minor_faults\":" +
          json_array(results, [](const thread_result& r) { return std::to_string(r.minor_faults); });
  line += ",\"thread_involuntary_switches\":" +
          json_array(results, [](const thread_result& r) { return std::to_string(r.involuntary_switches); });
  line += ",\"minor_faults\":" + std::to_string(minor_faults);
  line += ",\"major_faults\":" + std::to_string(major_faults);
  line += ",\"user_s\":" + number(user_s);
  line += ",\"sys_s\":" + number(sys_s);
  line += ",\"wall_s\":" + number(wall_s);
  if (prof) {
    line += ",\"recorded\":" + std::to_string(st.recorded);
    line += ",\"dropped\":" + std::to_string(st.dropped);
    line += ",\"spilled\":" + std::to_string(st.memory.spilled);
    line += ",\"peak_memory\":" + std::to_string(st.memory.peak);
    line += ",\"start_ms\":" + std::to_string(start_ms);
  }
  line += ",\"ok\":" + std::string(failures.empty() ? "true" : "false");
  line += ",\"failures\":" + json_array(failures, json_string);
  line += "}";
  std::printf("%s\n", line.c_str());

  std::fprintf(stderr, "%s: %d thread%s x %llu calls (after %llu warm-up), %s, clock %s\n",
               o.name.c_str(), o.threads, o.threads == 1 ? "" : "s",
               static_cast<unsigned long long>(o.calls), static_cast<unsigned long long>(o.warm_up),
               o.what == candidate::limit    ? ("limit baseline, ring " + std::to_string(o.limit_ring)).c_str()
               : o.what == candidate::flight ? ("flight recorder of " + std::to_string(o.ring)).c_str()
               : o.what == candidate::lossless_lazy ? "lossless session, preallocate 0"
                                             : "default lossless session",
               clock_name.c_str());
  for (std::size_t t = 0; t < results.size(); ++t) {
    const auto& r = results[t];
    std::fprintf(stderr, "  thread %zu on CPU %d%s: %.2f ns/call (CPU %.2f), %ld minor faults, %ld preemptions\n",
                 t, r.cpu, r.pin_error.empty() ? "" : (" (pinning FAILED: " + r.pin_error + ")").c_str(),
                 r.ns_per_call, r.cpu_ns_per_call, r.minor_faults, r.involuntary_switches);
  }
  if (results.size() > cpus.size())
    std::fprintf(stderr, "  note: %zu threads on %zu CPUs, so some share a CPU\n", results.size(),
                 cpus.size());
  std::fprintf(stderr, "  median %.2f ns/call; process during the timed region: %.3f s wall, user %.3f s, "
               "sys %.3f s, %ld minor faults, %ld major\n",
               median(ns), wall_s, user_s, sys_s, minor_faults, major_faults);
  if (prof)
    std::fprintf(stderr, "  stats: recorded %llu, dropped %llu, spilled %llu, peak %.1f MiB\n",
                 static_cast<unsigned long long>(st.recorded), static_cast<unsigned long long>(st.dropped),
                 static_cast<unsigned long long>(st.memory.spilled),
                 static_cast<double>(st.memory.peak) / 1048576.0);
  for (const auto& f : failures) std::fprintf(stderr, "  FAILED: %s\n", f.c_str());
  return failures.empty() ? 0 : 1;
}
