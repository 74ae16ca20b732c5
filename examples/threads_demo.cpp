// The foundation's main job: several threads record nested scopes, instants and counters; the
// trace goes to strata-out/trace.json. A later example (compare_ops) takes its place.
//
//   threads_demo [OUTPUT_DIR]
//
// strata's implementation is compiled once, in examples/strata_implementation.cpp.
#include "strata/error.hpp"
#include "strata/profiler.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "command_line.hpp"

namespace {

double work(int n) {
  double acc = 0;
  for (int i = 0; i < n; ++i) acc += std::sqrt(static_cast<double>(i) + acc);
  return acc;
}

double decode_step(int worker, int step) {
  STRATA_SCOPE_LAYER(strata::layer::framework, "decode_step");
  double acc = 0;
  {
    STRATA_SCOPE_LAYER(strata::layer::framework, "aten::matmul");
    acc += work(20000 + 1000 * worker);
  }
  {
    STRATA_SCOPE_DYNAMIC(strata::layer::runtime, "submit core " + std::to_string(worker % 2));
    acc += work(5000);
  }
  {
    STRATA_SCOPE_LAYER(strata::layer::framework, "aten::softmax");
    acc += work(8000);
  }
  STRATA_COUNTER("tokens", step + 1);
  return acc;
}

}  // namespace

int main(int argc, char** argv) {
  const examples::command_line cl(
      "threads_demo", "four threads recording nested scopes, instants and counters, without the simulator",
      "strata-out", {}, {{"OUTPUT_DIR/trace.json", "the trace of the five threads"}});
  const std::string out_dir = cl.parse(argc, argv, [](std::string_view, std::string_view) { return false; });
  try {
    strata::profiler prof({.output_dir = out_dir});
    prof.start();
    std::vector<std::thread> workers;
    std::vector<double> results(4);
    for (int w = 0; w < 4; ++w) {
      workers.emplace_back([w, &results] {
        strata::set_thread_name("worker " + std::to_string(w));
        for (int step = 0; step < 50; ++step) results[static_cast<std::size_t>(w)] += decode_step(w, step);
        STRATA_INSTANT("worker done");
      });
    }
    {
      STRATA_SCOPE("main: wait for workers");
      for (auto& t : workers) t.join();
    }
    prof.stop();
    const auto written = prof.export_chrome_trace();
    const auto stats = prof.stats();
    std::printf("strata: %llu records from %llu threads, %llu dropped\n",
                static_cast<unsigned long long>(stats.recorded),
                static_cast<unsigned long long>(stats.threads),
                static_cast<unsigned long long>(stats.dropped));
    std::printf("strata: wrote %s (%llu events, %llu bytes)\n", written.path.c_str(),
                static_cast<unsigned long long>(written.events),
                static_cast<unsigned long long>(written.bytes));
    std::printf("strata: open it at https://ui.perfetto.dev (Open trace file) or chrome://tracing\n");
    return results[0] > 0 ? 0 : 1;
  } catch (const strata::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
