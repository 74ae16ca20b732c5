// benchmarks/session_restarts.cpp: is every session of a process measured alike?
//
//   session_restarts [SESSIONS] [SCOPES] [--flight]
//
// Starts and stops SESSIONS lossless sessions (default 20) in one process. In each, on the same
// thread, it times the thread's first scope of the session (which takes the thread's first
// block), then SCOPES scopes (default 65536) and as many calls of the limit baseline (two rdtsc
// and one 32-byte store, benchmarks/overhead_cases.hpp), and prints one line per session. A
// first scope that allocated and zeroed a buffer would take milliseconds; a session whose scopes
// cost more than others would show a higher ratio. --flight measures flight-recorder sessions
// (rings of 2^20 records) instead.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "overhead_cases.hpp"
#include "strata/clock.hpp"
#include "strata/profiler.hpp"

namespace {

using steady = std::chrono::steady_clock;

double ns_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

template <class F>
double per_call_ns(F f, int calls) {
  std::uint64_t v = 0;
  const auto t0 = steady::now();
  for (int i = 0; i < calls; ++i) v = f(v);
  const auto t1 = steady::now();
  if (v != static_cast<std::uint64_t>(calls)) std::abort();  // every call ran
  return ns_between(t0, t1) / calls;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int sessions = 20;
  int scopes = 65536;
  bool flight = false;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--flight") == 0)
      flight = true;
    else if (positional++ == 0)
      sessions = std::atoi(argv[i]);
    else
      scopes = std::atoi(argv[i]);
  }
  if (sessions <= 0 || scopes <= 0) {
    std::fprintf(stderr, "usage: %s [SESSIONS] [SCOPES] [--flight]\n", argv[0]);
    return 2;
  }
  strata::clock::select_once();
  strata_bench::limit_prepare<strata_bench::large_ring>();

  strata::profiler_config config;
  config.output_dir = (std::filesystem::temp_directory_path() / "strata-restarts").string();
  if (flight) {
    config.overflow = strata::overflow_policy::flight_recorder;
    config.buffer_capacity = std::size_t{1} << 20;
  }
  std::printf("%s sessions, %d scopes each, clock %s\n", flight ? "flight-recorder" : "lossless",
              scopes, std::string(strata::clock_source_name(strata::clock::source())).c_str());
  std::printf("session  first scope (us)  scope (ns)  limit (ns)  ratio\n");
  std::vector<double> firsts, ratios;
  for (int s = 0; s < sessions; ++s) {
    strata::profiler prof(config);
    prof.start();
    const auto t0 = steady::now();
    strata_bench::scope_user(0);  // the thread's first record of the session
    const double first_us = ns_between(t0, steady::now()) / 1e3;
    const double scope_ns = per_call_ns(strata_bench::scope_user, scopes);
    const double limit_ns = per_call_ns(strata_bench::limit_scope<strata_bench::large_ring>, scopes);
    prof.stop();
    const strata::profiler_stats st = prof.stats();
    if (st.recorded + st.dropped != static_cast<std::uint64_t>(scopes) + 1) {
      std::fprintf(stderr, "session %d took %llu records, expected %d\n", s,
                   static_cast<unsigned long long>(st.recorded + st.dropped), scopes + 1);
      return 1;
    }
    std::printf("%7d  %16.2f  %10.2f  %10.2f  %5.2f\n", s, first_us, scope_ns, limit_ns,
                scope_ns / limit_ns);
    firsts.push_back(first_us);
    ratios.push_back(scope_ns / limit_ns);
  }
  std::printf("median   %16.2f  ratio median %.2f, max %.2f, min %.2f; first scope max %.2f us\n",
              median(firsts), median(ratios), *std::max_element(ratios.begin(), ratios.end()),
              *std::min_element(ratios.begin(), ratios.end()),
              *std::max_element(firsts.begin(), firsts.end()));
  return 0;
}
