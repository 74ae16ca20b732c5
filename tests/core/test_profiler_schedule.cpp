// profiler with a schedule: when on_trace_ready runs, what each window holds, the default
// handler's files, stop() in the middle of a window, and records with explicit timestamps.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "strata/macros.hpp"
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
  bool nested;  // every "work N" lies within its ProfilerStep#N (on its thread's steps track)
};

delivery deliver(strata::profiler& p) {
  delivery d{p.step_num(), p.window(), names(p.data()), true};
  for (const auto& t : p.data().threads) {
    const strata::thread_track* steps = strata_test::steps_track_of(p.data(), t.tid);
    for (const auto& r : t.records) {
      const std::string n(strata_test::name_of(r));
      if (n.rfind("work ", 0) != 0) continue;
      const auto marks = steps != nullptr ? strata_test::named(*steps, "ProfilerStep#" + n.substr(5))
                                          : std::vector<strata::record>{};
      if (marks.size() != 1 || !strata_test::within(r, marks[0])) d.nested = false;
    }
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

namespace {

// A track's name as traces show it.
std::string shown_name(const strata::thread_track& t) {
  return t.name.empty() ? "thread " + std::to_string(t.tid) : t.name;
}

// The part of [b, e] that the top-level scopes of `t` cover (they are disjoint: one thread's
// scopes nest), in nanoseconds.
std::int64_t covered_ns(const strata::trace_data& d, const strata::thread_track& t, std::int64_t b,
                        std::int64_t e) {
  std::int64_t covered = 0;
  for (const auto& r : t.records) {
    if (r.kind() != strata::record_kind::scope) continue;
    bool top = true;
    for (const auto& o : t.records)
      if (&o != &r && o.kind() == strata::record_kind::scope && strata_test::within(r, o) &&
          !(o.begin == r.begin && o.end == r.end))
        top = false;
    if (!top) continue;
    const std::int64_t from = std::max(b, d.ns_of(t, r.begin)), to = std::min(e, d.ns_of(t, r.end));
    if (to > from) covered += to - from;
  }
  return covered;
}

}  // namespace

TEST_CASE("a scope left open across step(): steps on a track of their own, every track nests") {
  strata_test::temp_dir dir("sched-span");
  auto config = strata_test::config_in(dir);
  config.schedule = {.active = 3, .repeat = 1};  // steps 0-2 are one window
  strata::trace_data seen;
  strata::averages table;
  config.on_trace_ready = [&](strata::profiler& p) {
    seen = p.data();
    table = p.key_averages();
  };
  strata::profiler prof(config);
  prof.start();
  {
    STRATA_SCOPE("spanning");  // opened in step 0 ...
    work(0);
    prof.step();
    work(1);
  }  // ... closed in step 1
  prof.step();
  work(2);
  prof.step();  // delivers the window
  prof.stop();

  const strata::thread_track* thread = strata_test::track_of(seen, strata_test::os_tid());
  const strata::thread_track* steps = strata_test::steps_track_of(seen, strata_test::os_tid());
  REQUIRE(thread != nullptr);
  REQUIRE(steps != nullptr);
  CHECK(steps->tid == strata::steps_track_tid(strata_test::os_tid()));
  CHECK(steps->name == shown_name(*thread) + " steps");
  CHECK(steps->sort_index == thread->sort_index);
  CHECK(steps + 1 == thread);  // listed just before its thread
  CHECK_FALSE(thread->steps);
  REQUIRE(steps->records.size() == 3);
  for (int n = 0; n < 3; ++n)
    CHECK(strata_test::name_of(steps->records[static_cast<std::size_t>(n)]) == "ProfilerStep#" + std::to_string(n));
  CHECK(strata_test::named(*thread, "ProfilerStep#0").empty());

  // The scope crosses the first step boundary, and still no track holds a partial overlap.
  const auto spanning = strata_test::named(*thread, "spanning");
  REQUIRE(spanning.size() == 1);
  CHECK(spanning[0].begin < steps->records[0].end);
  CHECK(spanning[0].end > steps->records[1].begin);
  for (const auto& t : seen.threads) CHECK(strata_test::scopes_nest(t.records));

  // key_averages: the steps make one ProfilerStep* row (torch's folded name); what the
  // thread's top-level scopes cover of each step is their self time, not the step's; the
  // spanning scope counts once, whole.
  std::int64_t steps_total = 0, steps_self = 0;
  for (int n = 0; n < 3; ++n) {
    CAPTURE(n);
    const strata::record& mark = steps->records[static_cast<std::size_t>(n)];
    const std::int64_t b = seen.ns_of(*steps, mark.begin), e = seen.ns_of(*steps, mark.end);
    steps_total += e - b;
    steps_self += e - b - covered_ns(seen, *thread, b, e);
    CHECK(e - b - covered_ns(seen, *thread, b, e) >= 0);
  }
  const strata::average_row* row = nullptr;
  for (const auto& r : table.rows) {
    CHECK(r.name.rfind("ProfilerStep#", 0) != 0);
    if (r.name == "ProfilerStep*") row = &r;
  }
  REQUIRE(row != nullptr);
  CHECK(row->count == 3);
  CHECK(row->top_level);
  CHECK(row->cpu_total_ns == steps_total);
  CHECK(row->self_cpu_ns == steps_self);
  const strata::average_row* span_row = nullptr;
  for (const auto& r : table.rows)
    if (r.name == "spanning") span_row = &r;
  REQUIRE(span_row != nullptr);
  CHECK(span_row->count == 1);
  CHECK(span_row->top_level);
  CHECK(span_row->cpu_total_ns == seen.ns_of(*thread, spanning[0].end) - seen.ns_of(*thread, spanning[0].begin));
  const auto w0 = strata_test::named(*thread, "work 0"), w1 = strata_test::named(*thread, "work 1");
  REQUIRE(w0.size() == 1);
  REQUIRE(w1.size() == 1);
  CHECK(span_row->self_cpu_ns == span_row->cpu_total_ns - (seen.ns_of(*thread, w0[0].end) - seen.ns_of(*thread, w0[0].begin)) -
                                     (seen.ns_of(*thread, w1[0].end) - seen.ns_of(*thread, w1[0].begin)));
  // Every nanosecond of the thread's top-level scopes and of its steps is self time once.
  std::int64_t self_total = 0;
  for (const auto& r : table.rows) self_total += r.self_cpu_ns;
  CHECK(table.self_cpu_total_ns() == self_total);
  const std::string text = table.table();
  CHECK(text.find("ProfilerStep*") != std::string::npos);
  CHECK(text.find("ProfilerStep#") == std::string::npos);
  CHECK(text.find("spanning") != std::string::npos);
}

TEST_CASE("STRATA_STEP() steps the running profiler; the marks go to the calling thread's steps") {
  strata_test::temp_dir dir("sched-macro");
  auto config = strata_test::config_in(dir);
  config.schedule = {.active = 2, .repeat = 1};
  strata::trace_data seen;
  config.on_trace_ready = [&](strata::profiler& p) { seen = p.data(); };
  STRATA_STEP();  // no profiler: nothing happens
  strata::profiler prof(config);
  prof.start();
  std::uint64_t stepper = 0;
  std::thread other([&] {
    stepper = strata_test::os_tid();
    work(0);
    STRATA_STEP();
  });
  other.join();
  CHECK(prof.step_num() == 1);
  work(1);
  STRATA_STEP();  // leaves step 1, the window's last
  CHECK(prof.step_num() == 2);
  prof.stop();
  // Each thread that marked a step has its own steps track, holding the steps it ended.
  const strata::thread_track* theirs = strata_test::steps_track_of(seen, stepper);
  const strata::thread_track* ours = strata_test::steps_track_of(seen, strata_test::os_tid());
  REQUIRE(theirs != nullptr);
  REQUIRE(ours != nullptr);
  CHECK(theirs->records.size() == 1);
  CHECK(strata_test::name_of(theirs->records[0]) == "ProfilerStep#0");
  CHECK(theirs->exited);  // as its thread had
  CHECK(ours->records.size() == 1);
  CHECK(strata_test::name_of(ours->records[0]) == "ProfilerStep#1");
}

TEST_CASE("the default handler writes in the background what step() wrote before") {
  strata_test::temp_dir dir("sched-background");
  auto config = strata_test::config_in(dir);
  config.schedule = {.wait = 1, .active = 2};
  const std::filesystem::path out = config.output_dir;

  SUBCASE("the files are in order, and stop() waits for the last") {
    strata::profiler prof(config);
    prof.start();
    for (int i = 0; i < 8; ++i) {
      work(prof.step_num());
      prof.step();
    }
    prof.stop();  // in step 8, the last of window 7-8: written by stop()
    const std::vector<std::string> want = {out / "trace_step1-2.json", out / "trace_step4-5.json",
                                           out / "trace_step7-8.json"};
    CHECK(prof.trace_files() == want);
    // The last window's file holds what export_chrome_trace writes of the same window.
    const auto again = prof.export_chrome_trace((dir / "again.json").string());
    CHECK(strata_test::read_file(want.back()) == strata_test::read_file(again.path));
    CHECK(names(prof.data()) == sorted({"ProfilerStep#7", "ProfilerStep#8", "work 7"}));
  }
  SUBCASE("the destructor waits for the window it ends") {
    {
      strata::profiler prof(config);
      prof.start();
      prof.step();
      work(prof.step_num());
    }
    CHECK(strata_test::entries(out) == std::vector<std::string>{"trace_step1-1.json"});
  }
  SUBCASE("a window that cannot be written: the next step() or stop() raises why, once") {
    config.schedule = {.active = 1, .repeat = 1};  // one window: step 0
    strata::profiler prof(config);
    prof.start();
    work(0);
    std::filesystem::remove_all(out);  // the file cannot be created now
    int raised = 0;
    for (int i = 0; i < 4; ++i) {
      try {
        if (i < 3)
          prof.step();  // the first one ends the window
        else
          prof.stop();
      } catch (const strata::error& e) {
        ++raised;
        CHECK(std::string(e.what()).find("trace_step0-0.json") != std::string::npos);
      }
    }
    CHECK(raised == 1);
    CHECK(prof.trace_files().empty());
    CHECK_FALSE(prof.running());
  }
}
