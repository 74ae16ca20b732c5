// A program that carries strata's scopes but never creates a profiler itself: what an engine
// looks like to STRATA_PROFILE=1. It includes nothing but the macros: the implementation it is
// linked with reads the environment. check_env_capture.py runs it under several environments.
// It prints "child done" last, so a crash or an early exit is visible.
#include <cstdio>
#include <thread>

#include "strata/macros.hpp"

int main() {
  std::thread worker([] {
    for (int i = 0; i < 10; ++i) STRATA_SCOPE_LAYER(strata::layer::framework, "worker step");
  });
  worker.join();
  for (int i = 0; i < 5; ++i) STRATA_SCOPE("main step");
  std::printf("child done\n");
  return 0;
}
