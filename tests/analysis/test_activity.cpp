// A run's activity (strata/analysis/activity.hpp): busy time per track and per bin by
// containment, self time to the innermost event, steps marked and never busy, the device's
// union over its tracks, events cut at the run's ends. Every figure is worked out by hand from
// the rules at the top of the header.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "strata/analysis/activity.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_activity {

namespace {

using strata::op_event;
using strata::track_kind;
using strata::track_label;

op_event ev(std::string name, std::int64_t b, std::int64_t e, std::uint64_t track = 0,
            strata::layer l = strata::layer::framework) {
  op_event o;
  o.name = std::move(name);
  o.begin_ns = b;
  o.end_ns = e;
  o.track = track;
  o.layer = l;
  return o;
}

std::int64_t self_of(const strata::activity& a, std::size_t track, std::size_t bin, std::string_view name) {
  for (const auto& [id, ns] : a.tracks[track].top[bin])
    if (a.names[id] == name) return ns;
  return 0;
}

}  // namespace

TEST_CASE("activity: a track's busy time is the union of its events, each stretch the innermost's") {
  // forward [0, 100) holds mm [20, 50) and add [60, 70); a gap, then idle [100, 200) ends the run.
  const std::vector<op_event> events = {ev("forward", 0, 100), ev("mm", 20, 50), ev("add", 60, 70), ev("late", 150, 200)};
  const std::vector<track_label> labels = {{"main", "proc", track_kind::host}};
  const strata::activity a = strata::activity_of(events, labels, 1);
  REQUIRE(a.tracks.size() == 1);
  CHECK(a.begin_ns == 0);
  CHECK(a.end_ns == 200);
  CHECK(a.tracks[0].busy_ns == 150);
  CHECK(a.tracks[0].busy[0] == 150);
  CHECK(self_of(a, 0, 0, "forward") == 60);
  CHECK(self_of(a, 0, 0, "mm") == 30);
  CHECK(self_of(a, 0, 0, "add") == 10);
  CHECK(self_of(a, 0, 0, "late") == 50);
  // Most first.
  CHECK(a.names[a.tracks[0].top[0][0].first] == "forward");
  CHECK(a.framework_ops == 4);
  CHECK(a.device_busy_ns == 0);
  CHECK_FALSE(a.has_device());
}

TEST_CASE("activity: bins split an event at their edges") {
  const std::vector<op_event> events = {ev("a", 0, 100), ev("b", 25, 35)};
  const strata::activity a = strata::activity_of(events, std::vector<track_label>{}, 4);  // bins of 25 ns
  REQUIRE(a.bins == 4);
  const auto& busy = a.tracks[0].busy;
  CHECK(busy == std::vector<std::int64_t>{25, 25, 25, 25});
  CHECK(self_of(a, 0, 0, "a") == 25);
  CHECK(self_of(a, 0, 1, "b") == 10);
  CHECK(self_of(a, 0, 1, "a") == 15);
  CHECK(self_of(a, 0, 2, "b") == 0);
  CHECK(a.tracks[0].label.name == "track 0");  // no label: the track's number
}

TEST_CASE("activity: steps are marked, not busy; a child that outlives its parent is cut at its end") {
  op_event step = ev("ProfilerStep#3", 0, 100);
  std::vector<op_event> events = {step, ev("op", 10, 40), ev("inner", 30, 60)};
  op_event strata_step = ev("ProfilerStep#4", 100, 120, 1);
  strata_step.steps_of = 0;
  events.push_back(strata_step);
  events.push_back(ev("end", 100, 120));
  const strata::activity a = strata::activity_of(events, std::vector<track_label>{}, 1);
  REQUIRE(a.steps.size() == 2);
  CHECK(a.steps[0].name == "ProfilerStep#3");
  CHECK(a.steps[1].begin_ns == 100);
  REQUIRE(a.tracks.size() == 1);  // the steps track is no track of the timeline
  // op [10, 40) with inner [30, 40) (cut at op's end), end [100, 120).
  CHECK(a.tracks[0].busy_ns == 50);
  CHECK(self_of(a, 0, 0, "op") == 20);
  CHECK(self_of(a, 0, 0, "inner") == 10);
}

TEST_CASE("activity: device busy time is the union over every device track") {
  const std::vector<op_event> events = {ev("host", 0, 100, 0), ev("k", 0, 10, 1, strata::layer::device),
                                        ev("tensor", 5, 20, 2, strata::layer::device),
                                        ev("dma", 50, 60, 3, strata::layer::device)};
  const std::vector<track_label> labels = {{"main", "p", track_kind::host},
                                           {"Kernel", "core", track_kind::device},
                                           {"Tensor", "core", track_kind::engine},
                                           {"DMA queue 0", "core", track_kind::engine}};
  const strata::activity a = strata::activity_of(events, labels, 10);
  CHECK(a.device_busy_ns == 30);  // [0, 20) and [50, 60)
  CHECK(a.has_device());
  CHECK(a.tracks[2].label.kind == track_kind::engine);
  CHECK(a.tracks[2].busy_ns == 15);
}

TEST_CASE("activity: an empty run has no bins and no tracks") {
  const strata::activity a = strata::activity_of(std::vector<op_event>{}, std::vector<track_label>{});
  CHECK(a.bins == 0);
  CHECK(a.tracks.empty());
  CHECK(a.wall_ns() == 0);
}

TEST_CASE("activity: a session's threads and device tracks, with the session's ends as the run") {
  strata::trace_data d;
  d.clock = strata::clock_calibration::from_parts(strata::clock_source::steady_clock, 0, 0, 1.0);
  d.start_ticks = 1000;
  d.stop_ticks = 2000;
  d.process_name = "proc";
  static const strata::site outer{.name = "outer", .file = __FILE__, .line = __LINE__, .layer = strata::layer::framework, .kind = strata::record_kind::scope};
  static const strata::site inner{.name = "inner", .file = __FILE__, .line = __LINE__, .layer = strata::layer::runtime, .kind = strata::record_kind::scope};
  static const strata::site kernel{.name = "kernel", .file = __FILE__, .line = __LINE__, .layer = strata::layer::device, .kind = strata::record_kind::scope,
                                   .args_json = "\"bytes\":4096"};
  strata::thread_track host;
  host.tid = 7;
  host.name = "main";
  // outer [900, 1500) starts before the session: cut at 1000.
  host.records = {{900, 1500, &outer, 0}, {1100, 1200, &inner, 0}};
  strata::thread_track dev;
  dev.pid = 99;
  dev.tid = 0;
  dev.name = "Kernel";
  dev.process_name = "NeuronCore 0";
  dev.timestamps_in_ns = true;
  dev.records = {{1300, 1700, &kernel, 1}};
  d.threads = {host, dev};
  const strata::activity a = strata::activity_of(d, 2);  // bins [1000, 1500), [1500, 2000)
  REQUIRE(a.tracks.size() == 2);
  CHECK(a.tracks[0].label.name == "main");
  CHECK(a.tracks[0].label.group == "proc");
  CHECK(a.tracks[0].busy_ns == 500);
  CHECK(self_of(a, 0, 0, "outer") == 400);
  CHECK(self_of(a, 0, 0, "inner") == 100);
  CHECK(a.tracks[1].label.kind == track_kind::device);
  CHECK(a.tracks[1].label.group == "NeuronCore 0");
  CHECK(a.tracks[1].busy == std::vector<std::int64_t>{200, 200});
  CHECK(a.tracks[1].bytes == 4096);
  CHECK(a.device_busy_ns == 400);
  CHECK(a.framework_ops == 1);
}

}  // namespace test_activity
