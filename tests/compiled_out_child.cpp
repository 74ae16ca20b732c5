// A whole program built with STRATA_ENABLED=0, implementation included: tests/check_compiled_out_run.py
// runs it and checks what it says and leaves behind.
#define STRATA_IMPLEMENTATION
#include "strata/profiler.hpp"

#include <cstdio>
#include <string>

static_assert(STRATA_ENABLED == 0, "this program must be compiled with -DSTRATA_ENABLED=0");

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  for (int session = 0; session < 2; ++session) {  // two profilers: still said only once
    strata::profiler prof({.output_dir = argv[1]});
    prof.start();
    { STRATA_SCOPE("never recorded"); }
    STRATA_STEP();
    prof.stop();
    const strata::export_result written = prof.export_chrome_trace();
    std::printf("written: '%s' events=%llu\n", written.path.c_str(),
                static_cast<unsigned long long>(written.events));
    std::printf("compiled_out=%d recorded=%llu\n", prof.stats().compiled_out ? 1 : 0,
                static_cast<unsigned long long>(prof.stats().recorded));
    std::fputs(prof.key_averages().table().c_str(), stdout);
    prof.export_stacks(std::string(argv[1]) + "/stacks.folded");  // writes nothing either
  }
  return 0;
}
