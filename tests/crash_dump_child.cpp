// A program that records known scopes and then crashes (or not), for check_crash_dump.py:
//   crash_dump_child MODE OVERFLOW DIR
// MODE: segv (a write to a page that allows none), abort (std::abort), exit (stops normally), or
// env-segv (no profiler of its own: STRATA_PROFILE=1 STRATA_CRASH_DUMP=1 start one). OVERFLOW:
// lossless or flight. It records 5000 "main scope" (more than two 2048-record blocks), one scope
// of a hostile name, 3000 "worker scope" on a thread that exits, and 1000 "parked scope" on a
// thread still alive (blocked) at the crash. Core dumps are off, so the tests leave none.
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>

#include <sys/mman.h>
#include <sys/resource.h>

#include "strata/macros.hpp"
#include "strata/profiler.hpp"

namespace {

std::mutex parked_mutex;
std::condition_variable parked_cv;
bool parked_ready = false;

[[noreturn]] void crash(std::string_view mode) {
  std::fflush(stdout);
  if (mode == "abort") std::abort();
  // A real fault, not raise(): a store to a page that allows no access (not a null pointer,
  // which UBSan would report first). Volatile, or the store dies before abort().
  void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) std::raise(SIGSEGV);
  *static_cast<volatile int*>(page) = 1;
  std::abort();  // not reached
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: crash_dump_child segv|abort|exit|env-segv lossless|flight DIR\n");
    return 2;
  }
  const std::string_view mode = argv[1];
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);

  strata::profiler_config config;
  config.output_dir = argv[3];
  config.crash_dump = true;
  config.buffer_capacity = std::size_t{1} << 14;
  if (std::string_view(argv[2]) == "flight") config.overflow = strata::overflow_policy::flight_recorder;
  std::unique_ptr<strata::profiler> prof;
  if (mode != "env-segv") {
    prof = std::make_unique<strata::profiler>(config);
    prof->start();
  }

  std::thread worker([] {
    for (int i = 0; i < 3000; ++i) STRATA_SCOPE("worker scope");
  });
  worker.join();
  std::thread parked([] {
    for (int i = 0; i < 1000; ++i) STRATA_SCOPE("parked scope");
    std::unique_lock lock(parked_mutex);
    parked_ready = true;
    parked_cv.notify_all();
    parked_cv.wait(lock, [] { return false; });  // alive, holding its buffer, at the crash
  });
  {
    std::unique_lock lock(parked_mutex);
    parked_cv.wait(lock, [] { return parked_ready; });
  }
  for (int i = 0; i < 5000; ++i) STRATA_SCOPE_LAYER(strata::layer::framework, "main scope");
  { STRATA_SCOPE("hostile \"name\" \\ with\x01 control\n bytes\t"); }

  if (mode == "exit") {
    prof->stop();
    std::printf("child done\n");
    std::fflush(stdout);
    std::_Exit(0);  // the parked thread never joins
  }
  crash(mode);
}
