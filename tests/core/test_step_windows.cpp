// Windows of a schedule that end while other threads record: the default handler writes each
// window's trace on its own thread, in order, while the next window records; trace_files()
// waits for it from the stepping thread.
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "strata/detail/intern.hpp"
#include "strata/detail/registry.hpp"
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

namespace {

// Runs `steps` steps of a schedule (`wait` steps between windows of two) in which the stepping
// thread records `scopes` scopes a step, and returns the block store of each window, as the
// registry held it while the window recorded.
std::vector<std::shared_ptr<strata::detail::block_store>> run_windows(strata::profiler& prof,
                                                                      int steps, int scopes) {
  std::vector<std::shared_ptr<strata::detail::block_store>> stores;
  prof.start();
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < scopes; ++i) STRATA_SCOPE("window work");
    if (prof.recording()) stores.push_back(strata::detail::registry::instance().store());
    STRATA_STEP();
  }
  prof.stop();
  return stores;
}

}  // namespace

TEST_CASE("the windows of a schedule share one block store, and its blocks go back at stop") {
  strata_test::temp_dir dir("step-windows-store");
  auto config = strata_test::config_in(dir);
  config.schedule = {.wait = 1, .active = 2};
  constexpr int scopes = 3 * static_cast<int>(strata::detail::record_block::capacity) + 5;
  strata::profiler prof(config);
  const auto stores = run_windows(prof, 9, scopes);  // windows of steps 1-2, 4-5, 7-8
  REQUIRE(stores.size() == 6);
  CHECK(stores.front() != nullptr);
  for (const auto& s : stores) CHECK(s == stores.front());
  CHECK(strata::detail::registry::instance().store() == nullptr);  // released at stop()
  const std::vector<std::string> files = prof.trace_files();
  REQUIRE(files.size() == 3);
  for (const std::string& f : files) {
    CAPTURE(f);
    // Every scope of both steps, although each window handed its full blocks over unread.
    CHECK(strata_test::lines_with(strata_test::read_file(f), "\"window work\"").size() == 2 * scopes);
  }
}

TEST_CASE("an endless schedule's step names do not grow the interned names") {
  strata_test::temp_dir dir("step-windows-names");
  auto config = strata_test::config_in(dir);
  config.schedule = {.active = 2};
  std::vector<std::string> names;  // of each window's steps, read while its trace is ready
  config.on_trace_ready = [&names](strata::profiler& p) {
    for (const auto& t : p.data().threads)
      for (const auto& r : t.records)
        if (std::string_view(r.site->name).starts_with("ProfilerStep#")) names.emplace_back(r.site->name);
  };
  strata::profiler prof(config);
  prof.start();
  std::size_t after_first = 0;
  for (int s = 0; s < 400; ++s) {
    { STRATA_SCOPE_LAYER(strata::layer::framework, "stepper op"); }
    STRATA_STEP();
    if (s == 3) after_first = strata::detail::intern_table::instance().size();
  }
  prof.stop();
  CHECK(strata::detail::intern_table::instance().size() == after_first);
  REQUIRE(names.size() == 401);  // 200 windows of two steps, then step 400 alone
  for (std::size_t i = 0; i < names.size(); ++i) CHECK(names[i] == "ProfilerStep#" + std::to_string(i));
}

TEST_CASE("a schedule that waits first makes its block store at start, not in the step into its window") {
  strata_test::temp_dir dir("step-windows-prepared");
  auto config = strata_test::config_in(dir);
  config.schedule = {.wait = 2, .active = 1, .repeat = 1};
  strata::profiler prof(config);
  REQUIRE(strata::detail::registry::instance().store() == nullptr);
  prof.start();
  const auto prepared = strata::detail::registry::instance().store();
  CHECK(prepared != nullptr);  // made while the schedule waits
  CHECK_FALSE(prof.recording());
  STRATA_STEP();
  STRATA_STEP();  // step 2: the window
  REQUIRE(prof.recording());
  { STRATA_SCOPE("in the window"); }
  CHECK(strata::detail::registry::instance().store() == prepared);  // the same store serves it
  prof.stop();
  CHECK(strata::detail::registry::instance().store() == nullptr);
  REQUIRE(prof.trace_files().size() == 1);
  CHECK(strata_test::lines_with(strata_test::read_file(prof.trace_files()[0]), "\"in the window\"").size() == 1);
}
