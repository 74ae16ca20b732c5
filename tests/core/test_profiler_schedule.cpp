// profiler with a schedule: when on_trace_ready runs, what each window holds, the default
// handler's files, stop() in the middle of a window, and records with explicit timestamps.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "strata/core/macros.hpp"
#include "strata/profiler.hpp"
#include "support.hpp"

using strata::layer;

namespace {

// The names of every record of a session, sorted.
std::vector<std::string> names(const strata::trace_data& d) {
  std::vector<std::string> out;
  for (const auto& t : d.threads)
    for (const auto& r : t.records) out.emplace_back(strata_test::name_of(r));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// What one on_trace_ready call saw.
struct delivery {
  std::int64_t step_num;
  strata::step_window window;
  std::vector<std::string> names;
  bool nested;  // every "work N" lies within its ProfilerStep#N
};

delivery deliver(const strata::profiler& p) {
  delivery d{p.step_num(), p.window(), names(p.data()), true};
  for (const auto& t : p.data().threads)
    for (const auto& r : t.records) {
      const std::string n(strata_test::name_of(r));
      if (n.rfind("work ", 0) != 0) continue;
      const auto steps = strata_test::named(t, "ProfilerStep#" + n.substr(5));
      if (steps.size() != 1 || !strata_test::within(r, steps[0])) d.nested = false;
    }
  return d;
}

// One step's work: a user scope named after the step.
void work(std::int64_t step) { STRATA_SCOPE_DYNAMIC(layer::user, "work " + std::to_string(step)); }

}  // namespace

TEST_CASE("on_trace_ready runs in the step() that leaves each record_and_save step") {
  strata_test::temp_dir dir("sched");
  auto config = strata_test::config_in(dir);
  config.schedule = {.skip_first = 1, .wait = 1, .warmup = 1, .active = 2, .repeat = 2};
  std::vector<delivery> seen;
  config.on_trace_ready = [&](strata::profiler& p) { seen.push_back(deliver(p)); };
  strata::profiler prof(config);

  prof.start();
  for (int i = 0; i < 11; ++i) {
    work(prof.step_num());
    prof.step();
  }
  CHECK(prof.step_num() == 11);
  prof.stop();  // step 11 is none: stop() delivers nothing more

  // The notes' worked table: ready during the 5th and the 9th step() calls.
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].step_num == 5);
  CHECK(seen[0].window.first == 3);
  CHECK(seen[0].window.last == 4);
  CHECK(seen[0].names == sorted({"ProfilerStep#3", "ProfilerStep#4", "work 3", "work 4"}));
  CHECK(seen[0].nested);
  CHECK(seen[1].step_num == 9);
  CHECK(seen[1].window.first == 7);
  CHECK(seen[1].window.last == 8);
  CHECK(seen[1].names == sorted({"ProfilerStep#7", "ProfilerStep#8", "work 7", "work 8"}));
  CHECK(seen[1].nested);
  // A handler is set, so no file was written for it.
  CHECK(prof.trace_files().empty());
  CHECK(strata_test::entries(config.output_dir).empty());
}

TEST_CASE("the actions and recording state follow the schedule step by step") {
  strata_test::temp_dir dir("sched-state");
  auto config = strata_test::config_in(dir);
  config.schedule = {.wait = 1, .warmup = 1, .active = 2, .repeat = 1};
  config.on_trace_ready = [](strata::profiler&) {};
  strata::profiler prof(config);
  using A = strata::profiler_action;
  std::vector<A> actions;
  std::vector<bool> recording;
  prof.start();
  for (int i = 0; i < 6; ++i) {
    actions.push_back(prof.current_action());
    recording.push_back(prof.recording());
    prof.step();
  }
  prof.stop();
  CHECK(actions == std::vector{A::none, A::warmup, A::record, A::record_and_save, A::none, A::none});
  CHECK(recording == std::vector<bool>{false, false, true, true, false, false});
  CHECK_FALSE(prof.running());
}

TEST_CASE("stop() during a window delivers the partial trace; during warmup, nothing") {
  strata_test::temp_dir dir("sched-exit");
  auto config = strata_test::config_in(dir);
  std::vector<delivery> seen;
  config.on_trace_ready = [&](strata::profiler& p) { seen.push_back(deliver(p)); };

  SUBCASE("in record") {
    config.schedule = {.wait = 1, .active = 4};  // steps 1-3 record, 4 record_and_save
    strata::profiler prof(config);
    prof.start();
    for (int i = 0; i < 3; ++i) {  // steps 0 (none), 1 and 2 (record) ...
      work(prof.step_num());
      prof.step();
    }
    work(prof.step_num());  // ... step 3, whose ProfilerStep is still open at stop()
    CHECK(prof.current_action() == strata::profiler_action::record);
    prof.stop();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].step_num == 3);
    CHECK(seen[0].window.first == 1);
    CHECK(seen[0].window.last == 3);
    CHECK(seen[0].names == sorted({"ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3",
                                   "work 1", "work 2", "work 3"}));
    CHECK(seen[0].nested);
  }
  SUBCASE("in warmup") {
    config.schedule = {.wait = 1, .warmup = 2, .active = 1};
    strata::profiler prof(config);
    prof.start();
    work(prof.step_num());
    prof.step();
    work(prof.step_num());
    CHECK(prof.current_action() == strata::profiler_action::warmup);
    prof.stop();
    CHECK(seen.empty());
    CHECK(prof.data().recorded() == 0);
  }
  SUBCASE("in warmup, with the default handler: no file") {
    config.on_trace_ready = nullptr;
    config.schedule = {.warmup = 2, .active = 1};
    strata::profiler prof(config);
    prof.start();
    prof.step();
    prof.stop();
    CHECK(prof.trace_files().empty());
    CHECK(strata_test::entries(config.output_dir).empty());
  }
  SUBCASE("the destructor stops like stop()") {
    config.schedule = {.active = 2};
    {
      strata::profiler prof(config);
      prof.start();
      work(prof.step_num());
    }
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].names == sorted({"ProfilerStep#0", "work 0"}));
  }
}

TEST_CASE("the default handler writes one file per window and never overwrites") {
  strata_test::temp_dir dir("sched-files");
  auto config = strata_test::config_in(dir);
  config.schedule = {.active = 1};  // every step is a window of its own
  const std::filesystem::path out = config.output_dir;
  strata::profiler prof(config);
  // A file left by someone else under the first window's name.
  std::filesystem::create_directories(out);
  strata_test::write_file(out / "trace_step0-0.json", "not ours");

  const auto run = [&] {
    prof.start();
    for (int i = 0; i < 2; ++i) {
      work(prof.step_num());
      prof.step();
    }
    work(prof.step_num());
    prof.stop();  // step 2's window is delivered here
  };
  run();
  REQUIRE(prof.trace_files().size() == 3);
  CHECK(prof.trace_files()[0] == out / "trace_step0-0.1.json");
  CHECK(prof.trace_files()[1] == out / "trace_step1-1.json");
  CHECK(prof.trace_files()[2] == out / "trace_step2-2.json");
  CHECK(strata_test::read_file(out / "trace_step0-0.json") == "not ours");
  for (int step = 0; step < 3; ++step) {
    CAPTURE(step);
    const std::string trace = strata_test::read_file(prof.trace_files()[static_cast<std::size_t>(step)]);
    CHECK(strata_test::lines_with(trace, "\"ProfilerStep#").size() == 1);
    CHECK(strata_test::lines_with(trace, "\"ProfilerStep#" + std::to_string(step) + "\"").size() == 1);
    CHECK(strata_test::lines_with(trace, "\"work ").size() == 1);
    CHECK(strata_test::lines_with(trace, "\"work " + std::to_string(step) + "\"").size() == 1);
  }
  const std::string first_window = strata_test::read_file(out / "trace_step1-1.json");

  // A second session of the same profiler: same windows, new names, old files untouched.
  run();
  REQUIRE(prof.trace_files().size() == 3);
  CHECK(prof.trace_files()[0] == out / "trace_step0-0.2.json");
  CHECK(prof.trace_files()[1] == out / "trace_step1-1.1.json");
  CHECK(prof.trace_files()[2] == out / "trace_step2-2.1.json");
  CHECK(strata_test::read_file(out / "trace_step1-1.json") == first_window);
  CHECK(strata_test::entries(out).size() == 7);

  // export_chrome_trace() still writes the last window.
  const auto last = prof.export_chrome_trace();
  CHECK(strata_test::lines_with(strata_test::read_file(last.path), "\"ProfilerStep#2\"").size() == 1);
}

TEST_CASE("without a schedule, step() only counts and on_trace_ready runs at stop()") {
  strata_test::temp_dir dir("sched-none");
  auto config = strata_test::config_in(dir);
  int calls = 0;
  std::vector<std::string> seen;
  config.on_trace_ready = [&](strata::profiler& p) {
    ++calls;
    seen = names(p.data());
  };
  strata::profiler prof(config);
  prof.start();
  for (int i = 0; i < 3; ++i) {
    work(prof.step_num());
    prof.step();
  }
  CHECK(prof.step_num() == 3);
  CHECK(calls == 0);
  CHECK(prof.recording());
  prof.stop();
  CHECK(calls == 1);
  CHECK(seen == sorted({"work 0", "work 1", "work 2"}));  // no ProfilerStep#N
  CHECK(prof.trace_files().empty());
  CHECK(strata_test::entries(config.output_dir).empty());
}

TEST_CASE("no ProfilerStep#N when the framework layer is not captured") {
  strata_test::temp_dir dir("sched-layers");
  auto config = strata_test::config_in(dir);
  config.layers = {layer::user};
  config.schedule = {.active = 2};
  std::vector<std::string> seen;
  config.on_trace_ready = [&](strata::profiler& p) { seen = names(p.data()); };
  strata::profiler prof(config);
  prof.start();
  work(prof.step_num());
  prof.step();
  work(prof.step_num());
  prof.step();
  CHECK(seen == sorted({"work 0", "work 1"}));
  prof.stop();
}

TEST_CASE("an exception from on_trace_ready reaches step() after the step is entered") {
  strata_test::temp_dir dir("sched-throw");
  auto config = strata_test::config_in(dir);
  config.schedule = {.active = 1};
  int calls = 0;
  config.on_trace_ready = [&](strata::profiler& p) {
    ++calls;
    if (calls == 1) throw std::runtime_error("handler failed");
    if (calls == 2) p.step();  // re-entering is refused
  };
  strata::profiler prof(config);
  prof.start();
  CHECK_THROWS_WITH_AS(prof.step(), "handler failed", std::runtime_error);
  CHECK(prof.step_num() == 1);
  CHECK(prof.recording());  // the next window started anyway
  CHECK_THROWS_WITH_AS(prof.step(), doctest::Contains("called from on_trace_ready"), strata::error);
  CHECK(prof.step_num() == 2);
  work(prof.step_num());
  prof.stop();
  CHECK(calls == 3);
  CHECK(names(prof.data()) == sorted({"ProfilerStep#2", "work 2"}));
}

TEST_CASE("append_record takes records with explicit timestamps") {
  strata_test::temp_dir dir("append");
  strata::profiler prof(strata_test::config_in(dir));
  const strata::site* op = strata::intern(layer::framework, "replayed op");
  const strata::site* mark = strata::intern(layer::framework, "replayed mark", strata::record_kind::instant);
  const strata::site* gauge = strata::intern(layer::framework, "a gauge", strata::record_kind::counter);

  CHECK_FALSE(strata::append_record(op, 1, 2));  // no session

  prof.start();
  const std::uint64_t t0 = strata::clock::now();
  const std::uint64_t t1 = t0 + 1000;
  CHECK(strata::append_record(op, t0, t1, 42));
  CHECK(strata::append_record(mark, t0 + 10, 0));  // an instant: end is ignored
  CHECK_FALSE(strata::append_record(op, t1, t0));  // ends before it begins
  CHECK_FALSE(strata::append_record(gauge, t0, t1));
  CHECK_FALSE(strata::append_record(nullptr, t0, t1));
  CHECK(strata::append_record(op, prof.data().start_ticks - 1, t1));  // taken, left out at stop
  prof.stop();

  REQUIRE(prof.data().threads.size() == 1);
  const auto& track = prof.data().threads[0];
  const auto ops = strata_test::named(track, "replayed op");
  REQUIRE(ops.size() == 1);
  CHECK(ops[0].begin == t0);
  CHECK(ops[0].end == t1);
  CHECK(ops[0].payload == 42);
  const auto marks = strata_test::named(track, "replayed mark");
  REQUIRE(marks.size() == 1);
  CHECK(marks[0].begin == t0 + 10);
  CHECK(marks[0].end == t0 + 10);
  CHECK(marks[0].kind() == strata::record_kind::instant);

  SUBCASE("a layer that is not captured") {
    auto config = strata_test::config_in(dir);
    config.layers = {layer::user};
    strata::profiler user_only(config);
    user_only.start();
    CHECK_FALSE(strata::append_record(op, t0, t1));
    user_only.stop();
    CHECK(user_only.data().recorded() == 0);
  }
}
