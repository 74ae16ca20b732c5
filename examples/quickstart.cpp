#define STRATA_IMPLEMENTATION  // in one file of the program: compiles strata's implementation
#include <strata/profiler.hpp>  // the file that runs a session; other files: <strata/strata.hpp>
#include <cstdio>
#include <thread>

void matmul() { STRATA_SCOPE_LAYER(strata::layer::framework, "aten::matmul"); /* ... */ }

int main() {
  strata::profiler prof({.output_dir = "strata-out",             // created if missing
                         .layers = {strata::layer::framework, strata::layer::user}});
  prof.start();
  std::thread worker([] {
    strata::set_thread_name("worker");
    for (int step = 0; step < 100; ++step) {
      STRATA_SCOPE("decode step");                             // user layer, static name
      matmul();
      STRATA_COUNTER("tokens", step + 1);                      // a counter track
    }
  });
  worker.join();                          // its records survive the thread
  prof.stop();
  prof.export_chrome_trace();             // strata-out/trace.json, written atomically
  std::puts(prof.key_averages().table({.sort_by = "self_cpu_time_total"}).c_str());
}
