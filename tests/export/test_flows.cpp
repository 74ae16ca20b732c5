// flows: the arrows that follow a correlation id from the op through the runtime to the device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "strata/device.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/detail/flow_marks.hpp"
#include "strata/detail/flows.hpp"
#include "support.hpp"

using strata::layer;
using strata::record_kind;

namespace {

constexpr strata::site op_a{"op a", "f.cpp", 1, layer::framework, record_kind::scope};
constexpr strata::site op_b{"op b", "f.cpp", 2, layer::user, record_kind::scope};
constexpr strata::site submit{"submit", "f.cpp", 3, layer::runtime, record_kind::scope};
constexpr strata::site wait{"wait", "f.cpp", 4, layer::runtime, record_kind::scope};
constexpr strata::site mm{"matmul", "f.cpp", 5, layer::device, record_kind::scope};
constexpr strata::site add{"add", "f.cpp", 6, layer::device, record_kind::scope};
constexpr strata::site mark{"mark", "f.cpp", 7, layer::framework, record_kind::instant};

// Host thread 0: op a (id 1) holding two runtime calls, op b (id 2) without one. Device
// tracks 1 and 2: id 1 on both, id 2 on track 1, id 3 only on the device.
strata::trace_data program() {
  strata::trace_data d;
  d.pid = 5;
  d.threads.resize(3);
  d.threads[0].tid = 10;
  d.threads[0].records = {{0, 100, &op_a, 1}, {10, 20, &submit, 1}, {30, 90, &wait, 1},
                          {50, 50, &mark, 1}, {200, 300, &op_b, 2}};
  d.threads[1].tid = 0;
  d.threads[1].pid = strata::device_pid(0);
  d.threads[1].records = {{40, 50, &mm, 1}, {60, 70, &mm, 1}, {210, 220, &mm, 2}, {400, 410, &mm, 3}};
  d.threads[2].tid = 1;
  d.threads[2].pid = strata::device_pid(0);
  d.threads[2].records = {{45, 55, &add, 1}};
  return d;
}

struct point {
  char phase;
  std::uint64_t id, correlation;
  std::size_t thread, record;
  bool operator==(const point&) const = default;
};

std::vector<point> points(const strata::trace_data& d) {
  std::vector<point> out;
  for (const auto& f : strata::detail::correlation_flows(d))
    out.push_back({f.phase, f.id, f.correlation_id, f.thread, f.record});
  return out;
}

}  // namespace

TEST_CASE("flows: op -> runtime calls in time order -> the first record of each device track") {
  const std::vector<point> want = {
      {'s', 1, 1, 0, 0}, {'t', 1, 1, 0, 1}, {'f', 1, 1, 0, 2},  // op a -> submit -> wait
      {'s', 2, 1, 0, 2}, {'f', 2, 1, 1, 0},                     // wait -> track 1's first
      {'s', 3, 1, 0, 2}, {'f', 3, 1, 2, 0},                     // wait -> track 2's first
      {'s', 4, 2, 0, 4}, {'f', 4, 2, 1, 2},                     // op b (no runtime) -> device
  };
  CHECK(points(program()) == want);
}

TEST_CASE("flows: the outermost op starts the path; no host record, no flow") {
  strata::trace_data d = program();
  // An inner framework op of id 1 inside op a does not start a second path.
  d.threads[0].records.insert(d.threads[0].records.begin() + 1, strata::record{5, 8, &op_a, 1});
  const auto got = points(d);
  REQUIRE(!got.empty());
  CHECK(got[0] == point{'s', 1, 1, 0, 0});
  CHECK(got[1] == point{'t', 1, 1, 0, 2});
  for (const auto& p : got) CHECK(p.correlation != 3);

  strata::trace_data device_only;
  device_only.threads.resize(1);
  device_only.threads[0].records = {{1, 2, &mm, 9}};
  CHECK(points(device_only).empty());
}

TEST_CASE("flows: a device track is reached from the host record that launched it") {
  strata::trace_data d = program();
  // Track 2's work of id 1 now starts at 25: after submit (10), before wait (30) began.
  d.threads[2].records = {{25, 28, &add, 1}};
  // A queue wait of id 1 (its own category, on the core's process) is not part of the path.
  static constexpr strata::site queued{"queue wait", "f.cpp", 8, layer::runtime, record_kind::scope,
                                       nullptr, nullptr, "runtime.queue"};
  d.threads.push_back({});
  d.threads[3].pid = strata::device_pid(0);
  d.threads[3].tid = 100;
  d.threads[3].records = {{12, 24, &queued, 1}};
  const auto got = points(d);
  const std::vector<point> want_id1 = {
      {'s', 1, 1, 0, 0}, {'t', 1, 1, 0, 1}, {'f', 1, 1, 0, 2},
      {'s', 2, 1, 0, 1}, {'f', 2, 1, 2, 0},  // track 2 (starts at 25): from submit
      {'s', 3, 1, 0, 2}, {'f', 3, 1, 1, 0},  // track 1 (starts at 40): from wait
  };
  REQUIRE(got.size() >= want_id1.size());
  CHECK(std::vector<point>(got.begin(), got.begin() + 7) == want_id1);
}

TEST_CASE("flows are written after the events, bound to their slices' start") {
  strata_test::temp_dir dir;
  strata::trace_data d = program();
  const auto path = dir / "flows.json";
  strata::write_chrome_trace(d, path);
  const std::string text = strata_test::read_file(path);
  CHECK(strata_test::lines_with(text, R"({"ph":"s","id":1,"cat":"strata.flow","name":"correlation","pid":5,"tid":10,"ts":0.000,"args":{"correlation_id":1}})").size() == 1);
  CHECK(strata_test::lines_with(text, R"({"ph":"t","id":1,"cat":"strata.flow","name":"correlation","pid":5,"tid":10,"ts":0.010,)").size() == 1);
  CHECK(strata_test::lines_with(text, R"({"ph":"f","id":2,"cat":"strata.flow","name":"correlation","bp":"e","pid":16777216,"tid":0,"ts":0.040,)").size() == 1);
  CHECK(strata_test::lines_with(text, R"("cat":"strata.flow")").size() == 9);
}

TEST_CASE("flow ids on the wire: reused once free, never shared by flows that overlap") {
  strata::detail::small_ids ids;
  // One flow after another: one id.
  CHECK(ids.take(0, 10) == 1);
  CHECK(ids.take(11, 20) == 1);
  // A flow that begins when the last one ends may not take its id (trace_processor frees an
  // id at its terminating point, which may come after a point at the same instant).
  CHECK(ids.take(20, 30) == 2);

  // Many flows of random lengths, begun in time order: an id is taken again only by a flow
  // that begins after every earlier flow with that id has ended, through the ring's growth
  // and wrapping.
  strata::detail::small_ids random_ids;
  std::mt19937_64 rng(7);
  std::map<std::uint64_t, std::int64_t> busy_until;  // id -> end of its latest flow
  std::int64_t from = 0;
  std::size_t overlaps = 0;
  for (int k = 0; k < 20000; ++k) {
    from += static_cast<std::int64_t>(rng() % 5);
    const std::int64_t to = from + static_cast<std::int64_t>(rng() % (k % 1000 < 500 ? 20 : 400));
    const std::uint64_t id = random_ids.take(from, to);
    const auto it = busy_until.find(id);
    if (it != busy_until.end() && !(it->second < from)) ++overlaps;
    busy_until[id] = std::max(it != busy_until.end() ? it->second : to, to);
  }
  CHECK(overlaps == 0);
  CHECK(busy_until.size() > 16);   // the ring grew past its first size
  CHECK(busy_until.size() < 400);  // and ids were reused: at most ~100 flows are ever open at once
}

TEST_CASE("flow marks: each track's points of the flows in record order, one small id per flow") {
  // Three sessions: program(); a fan-out, one op (id 7) whose work reached five device tracks, so that the
  // op's track holds more marks than records with an id (its one record starts five flows).
  strata::trace_data fan_out;
  fan_out.threads.resize(6);
  fan_out.threads[0].records = {{0, 100, &op_a, 7}, {150, 160, &op_b, 0}};
  for (std::size_t t = 1; t < 6; ++t) {
    fan_out.threads[t].pid = strata::device_pid(0);
    fan_out.threads[t].tid = t;
    fan_out.threads[t].records = {{10 * t, 10 * t + 5, &mm, 0}, {20 + 10 * t, 30 + 10 * t, &add, 7}};
  }
  // And crossed paths: the device ran id 2's work before id 1's, so the device track's points
  // come out of record order (its flows are built in the order their ids were first seen).
  strata::trace_data crossed;
  crossed.threads.resize(2);
  crossed.threads[0].records = {{0, 10, &op_a, 1}, {20, 30, &op_b, 2}};
  crossed.threads[1].pid = strata::device_pid(0);
  crossed.threads[1].records = {{25, 28, &mm, 2}, {40, 45, &add, 1}};
  const strata::trace_data two_ops = program();
  const strata::trace_data* const sessions[] = {&two_ops, &fan_out, &crossed};
  for (const strata::trace_data* session : sessions) {
    const strata::trace_data& d = *session;
    const auto flows = strata::detail::correlation_flows(d);
    const strata::detail::flow_marks marks(d);
    std::map<std::uint64_t, std::uint32_t> small_of;  // flow id -> its id on the wire
    std::size_t seen = 0;
    for (std::size_t t = 0; t < d.threads.size(); ++t) {
      // The points on track t, in record order (flows in id order where records are equal).
      std::vector<strata::detail::flow_point> want;
      for (const auto& f : flows)
        if (f.thread == t) want.push_back(f);
      std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.record < b.record; });
      REQUIRE(static_cast<std::size_t>(marks.end(t) - marks.begin(t)) == want.size());
      for (std::size_t k = 0; k < want.size(); ++k) {
        const auto& m = marks.begin(t)[k];
        CHECK(m.record == want[k].record);
        CHECK(m.ends == (want[k].phase == 'f'));
        CHECK(small_of.try_emplace(want[k].id, m.id).first->second == m.id);  // a flow's points share an id
        ++seen;
      }
    }
    CHECK(seen == flows.size());
    if (session == &crossed) {
      REQUIRE(flows.size() == 4);
      CHECK(flows[1].record == 1);  // id 1's device point first, on the later record
    }
    if (session == &fan_out) {
      // The five flows leave the op at one instant and are open together: five ids.
      REQUIRE(flows.size() == 10);
      std::vector<std::uint32_t> ids;
      for (const auto& [flow, id] : small_of) ids.push_back(id);
      std::sort(ids.begin(), ids.end());
      CHECK(std::unique(ids.begin(), ids.end()) == ids.end());
      CHECK(marks.end(0) - marks.begin(0) == 5);
    }
  }
}
