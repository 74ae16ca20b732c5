// Windows of a schedule that end while other threads record: the default handler writes each
// window's trace on its own thread, in order, while the next window records; trace_files()
// waits for it from the stepping thread.
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "support.hpp"

namespace {

// Lets workers record a fixed number of scopes per step, between the stepper's steps, so
// that every window holds a known number of records whatever the machine's speed.
class step_gate {
 public:
  explicit step_gate(int workers) : workers_(workers) {}

  // Stepper: lets each worker record its share of step `n` (from 1), and waits for them.
  void run_step(int n) {
    generation_.store(n, std::memory_order_release);
    while (done_.load(std::memory_order_acquire) < workers_ * n) std::this_thread::yield();
  }
  void finish() { quit_.store(true, std::memory_order_release); }

  // Worker: calls `work` once per step until finish().
  template <class Work>
  void serve(Work work) {
    for (int seen = 0;;) {
      int g = 0;
      while ((g = generation_.load(std::memory_order_acquire)) == seen) {
        if (quit_.load(std::memory_order_acquire)) return;
        std::this_thread::yield();
      }
      seen = g;
      work();
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }

 private:
  const int workers_;
  std::atomic<int> generation_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> quit_{false};
};

constexpr int scopes_per_step = 50;

}  // namespace

TEST_CASE("windows are written in the background, in order, while threads record") {
  strata_test::temp_dir dir("step-windows");
  auto config = strata_test::config_in(dir);
  config.schedule = {.active = 2};  // windows of two steps, back to back
  const std::filesystem::path out = config.output_dir;
  strata::profiler prof(config);
  constexpr int workers = 2;
  constexpr int steps = 12;
  step_gate gate(workers);
  prof.start();
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&gate, w] {
      strata::set_thread_name("window worker " + std::to_string(w));
      gate.serve([] {
        for (int i = 0; i < scopes_per_step; ++i) STRATA_SCOPE("window work");
      });
    });
  std::vector<std::string> midway;
  for (int s = 0; s < steps; ++s) {
    gate.run_step(s + 1);
    { STRATA_SCOPE_LAYER(strata::layer::framework, "stepper op"); }
    STRATA_STEP();
    if (s == 5) midway = prof.trace_files();  // waits for the windows written so far
  }
  gate.finish();
  for (auto& t : threads) t.join();
  prof.stop();  // in step 12, a window of its own

  std::vector<std::string> want;
  for (int first = 0; first < steps; first += 2)
    want.push_back(out / ("trace_step" + std::to_string(first) + "-" + std::to_string(first + 1) + ".json"));
  CHECK(midway == std::vector<std::string>(want.begin(), want.begin() + 3));
  want.push_back(out / "trace_step12-12.json");
  REQUIRE(prof.trace_files() == want);
  for (int w = 0; w < steps / 2; ++w) {
    CAPTURE(w);
    const std::string trace = strata_test::read_file(want[static_cast<std::size_t>(w)]);
    CHECK(strata_test::lines_with(trace, "\"ProfilerStep#").size() == 2);
    CHECK(strata_test::lines_with(trace, "\"ProfilerStep#" + std::to_string(2 * w) + "\"").size() == 1);
    CHECK(strata_test::lines_with(trace, "\"stepper op\"").size() == 2);
    CHECK(strata_test::lines_with(trace, "\"window work\"").size() == 2 * workers * scopes_per_step);
  }
  const std::string last = strata_test::read_file(want.back());
  CHECK(strata_test::lines_with(last, "\"ProfilerStep#12\"").size() == 1);
  CHECK(strata_test::lines_with(last, "\"window work\"").empty());
  CHECK(prof.data().recorded() == 1);  // the last window: ProfilerStep#12
}
