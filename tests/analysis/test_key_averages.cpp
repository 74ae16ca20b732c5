// key_averages(): nesting by containment, self and total times, recursion, tracks, device time
// through correlation ids, grouping. Every expected number is worked out by hand from the
// rules in docs/key-averages.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "strata/analysis/key_averages.hpp"

#include "analysis/rows.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_key_averages {

namespace {

using strata::layer;
using strata::op_event;

op_event host(std::string name, std::int64_t b, std::int64_t e, std::uint64_t track = 1,
              std::uint64_t corr = 0, std::string shapes = {}) {
  return {std::move(name), layer::framework, track, b, e, corr, std::move(shapes)};
}

op_event at(layer l, std::string name, std::int64_t b, std::int64_t e, std::uint64_t track,
            std::uint64_t corr = 0) {
  return {std::move(name), l, track, b, e, corr, {}};
}

strata::averages averages_of(const std::vector<op_event>& ev, strata::key_averages_options o = {}) {
  return strata::key_averages(ev, o);  // a vector converts to the span
}

using strata_test::names;
using strata_test::row;

}  // namespace

TEST_CASE("key_averages: nesting gives self and total CPU time, rows in first-seen order") {
  // Given out of order on purpose: rows follow begin time, not input order.
  const std::vector<op_event> ev = {
      host("aten::addmm", 50, 300),  host("model_inference", 0, 500),
      host("aten::linear", 10, 310), host("aten::t", 20, 40),
      host("aten::transpose", 25, 35), host("aten::relu", 320, 420),
      host("aten::clamp_min", 330, 410), host("aten::linear", 430, 490),
      host("aten::t", 432, 440), host("aten::transpose", 433, 438),
      host("aten::addmm", 445, 488)};
  const auto a = averages_of(ev);
  CHECK(names(a) == std::vector<std::string>{"model_inference", "aten::linear", "aten::t",
                                             "aten::transpose", "aten::addmm", "aten::relu",
                                             "aten::clamp_min"});
  struct expect { std::string_view name; std::uint64_t count; std::int64_t total, self; };
  for (const expect& e : {expect{"model_inference", 1, 500, 40}, expect{"aten::linear", 2, 360, 39},
                          expect{"aten::t", 2, 28, 13}, expect{"aten::transpose", 2, 15, 15},
                          expect{"aten::addmm", 2, 293, 293}, expect{"aten::relu", 1, 100, 20},
                          expect{"aten::clamp_min", 1, 80, 80}}) {
    CAPTURE(e.name);
    const auto& r = row(a, e.name);
    CHECK(r.count == e.count);
    CHECK(r.cpu_total_ns == e.total);
    CHECK(r.self_cpu_ns == e.self);
    CHECK(r.self_device_ns == 0);
    CHECK(r.device_total_ns == 0);
  }
  CHECK(a.self_cpu_total_ns() == 500);
  CHECK(row(a, "model_inference").top_level);
  CHECK_FALSE(row(a, "aten::linear").top_level);
  CHECK(row(a, "aten::linear").cpu_avg_ns() == 180.0);
}

TEST_CASE("key_averages: containment at the edges") {
  SUBCASE("ending exactly at the parent's end is a child; starting there is not") {
    const auto a = averages_of({host("p", 0, 100), host("c", 60, 100), host("next", 100, 150)});
    CHECK(row(a, "p").self_cpu_ns == 60);
    CHECK_FALSE(row(a, "c").top_level);
    CHECK(row(a, "next").top_level);
    CHECK(row(a, "next").self_cpu_ns == 50);
  }
  SUBCASE("a partial overlap is not nesting") {
    const auto a = averages_of({host("p", 0, 100), host("x", 50, 150)});
    CHECK(row(a, "p").self_cpu_ns == 100);
    CHECK(row(a, "x").self_cpu_ns == 100);
    CHECK(row(a, "x").top_level);
  }
  SUBCASE("two events with the same interval: the first given is the parent") {
    const auto a = averages_of({host("outer", 0, 100), host("inner", 0, 100)});
    CHECK(names(a) == std::vector<std::string>{"outer", "inner"});
    CHECK(row(a, "outer").self_cpu_ns == 0);
    CHECK(row(a, "inner").self_cpu_ns == 100);
  }
  SUBCASE("an end before the begin counts as zero length") {
    const auto a = averages_of({host("p", 0, 100), host("bad", 50, 40)});
    CHECK(row(a, "bad").cpu_total_ns == 0);
    CHECK(row(a, "p").self_cpu_ns == 100);
  }
}

TEST_CASE("key_averages: recursion of one name") {
  SUBCASE("a same-named op among other children is counted twice in the total") {
    // foo[0,100] holds foo[10,50] and bar[60,90]: outer self 30, inner self 40.
    const auto a = averages_of({host("aten::foo", 0, 100), host("aten::foo", 10, 50),
                                host("aten::bar", 60, 90)});
    const auto& foo = row(a, "aten::foo");
    CHECK(foo.count == 2);
    CHECK(foo.cpu_total_ns == 140);
    CHECK(foo.self_cpu_ns == 70);
    CHECK(row(a, "aten::bar").self_cpu_ns == 30);
    CHECK(a.self_cpu_total_ns() == 100);
  }
  SUBCASE("an only child of the same name merges into its parent") {
    // foo[0,100] > foo[10,90] > foo[20,80] > bar[30,50]: one foo of 100 with child bar.
    const auto a = averages_of({host("foo", 0, 100), host("foo", 10, 90), host("foo", 20, 80),
                                host("bar", 30, 50)});
    CHECK(a.rows.size() == 2);
    const auto& foo = row(a, "foo");
    CHECK(foo.count == 1);
    CHECK(foo.cpu_total_ns == 100);
    CHECK(foo.self_cpu_ns == 80);
    CHECK(row(a, "bar").self_cpu_ns == 20);
  }
}

TEST_CASE("key_averages: events nest only within their own track") {
  const auto a = averages_of({host("a", 0, 100, 1), host("b", 50, 80, 2), host("c", 60, 70, 1),
                              host("b", 200, 210, 1)});
  CHECK(row(a, "a").self_cpu_ns == 90);  // only c, of its own track, is its child
  const auto& b = row(a, "b");
  CHECK(b.count == 2);
  CHECK(b.cpu_total_ns == 40);
  CHECK(b.self_cpu_ns == 40);
  CHECK(b.top_level);
  CHECK_FALSE(row(a, "c").top_level);
}

TEST_CASE("key_averages: top_level follows the first event of a row") {
  const auto nested_first = averages_of({host("p", 0, 10), host("x", 2, 4), host("x", 20, 30)});
  CHECK_FALSE(row(nested_first, "x").top_level);
  const auto top_first = averages_of({host("x", 0, 10), host("p", 20, 30), host("x", 22, 24)});
  CHECK(row(top_first, "x").top_level);
}

TEST_CASE("key_averages: device time reaches host ops through correlation ids") {
  // step > op (corr 7) > submit (runtime, corr 7); kernels of corr 7 on a device track.
  const std::vector<op_event> ev = {
      host("step", 0, 200),
      host("aten::mm", 10, 110, 1, 7),
      at(layer::runtime, "submit", 20, 40, 1, 7),
      at(layer::device, "kernel", 50, 100, 9, 7),
      at(layer::device, "kernel", 105, 125, 9, 7),
      at(layer::device, "orphan", 130, 140, 9, 8),  // no host event carries id 8
      at(layer::device, "plain", 150, 155, 9, 0)};

  SUBCASE("attributed") {
    const auto a = averages_of(ev);
    CHECK(names(a) == std::vector<std::string>{"step", "aten::mm", "submit", "kernel", "orphan", "plain"});
    const auto& submit = row(a, "submit");  // a runtime call: the op that launched it owns
    CHECK(submit.self_device_ns == 0);
    CHECK(submit.device_total_ns == 0);
    const auto& mm = row(a, "aten::mm");
    CHECK(mm.self_device_ns == 70);
    CHECK(mm.device_total_ns == 70);
    CHECK(mm.self_cpu_ns == 80);
    const auto& step = row(a, "step");
    CHECK(step.self_device_ns == 0);
    CHECK(step.device_total_ns == 70);
    CHECK(step.self_cpu_ns == 100);  // device events are never children of host events
    const auto& k = row(a, "kernel", true);
    CHECK(k.count == 2);
    CHECK(k.self_cpu_ns == 0);
    CHECK(k.cpu_total_ns == 0);
    CHECK(k.self_device_ns == 70);
    CHECK(k.device_total_ns == 70);
    CHECK(k.device_avg_ns() == 35.0);
    CHECK(k.top_level);
    CHECK(row(a, "orphan", true).self_device_ns == 10);
    CHECK(row(a, "plain", true).self_device_ns == 5);
    CHECK(a.self_device_total_ns() == 85);  // device rows only
    CHECK(a.self_cpu_total_ns() == 200);
  }
  SUBCASE("correlate_device_time = false leaves host ops without device time") {
    const auto a = averages_of(ev, {.correlate_device_time = false});
    CHECK(row(a, "step").device_total_ns == 0);
    CHECK(row(a, "submit").self_device_ns == 0);
    CHECK(row(a, "kernel", true).self_device_ns == 70);
  }
}

TEST_CASE("key_averages: the owner of a correlation id") {
  SUBCASE("a later event of the id outside the earliest one owns nothing") {
    const auto a = averages_of({host("first", 0, 10, 1, 5), host("later", 20, 30, 1, 5),
                                at(layer::device, "k", 40, 44, 9, 5)});
    CHECK(row(a, "first").self_device_ns == 4);
    CHECK(row(a, "later").device_total_ns == 0);
  }
  SUBCASE("on another track it owns nothing either") {
    const auto a = averages_of({host("first", 0, 10, 1, 5), host("other", 2, 8, 2, 5),
                                at(layer::device, "k", 40, 44, 9, 5)});
    CHECK(row(a, "first").self_device_ns == 4);
    CHECK(row(a, "other").device_total_ns == 0);
  }
  SUBCASE("the deepest op within the earliest one owns it, not a runtime call below it") {
    const auto a = averages_of({host("op", 0, 100, 1, 5), host("mid", 10, 90),
                                host("inner op", 15, 80, 1, 5),
                                at(layer::runtime, "launch", 20, 30, 1, 5),
                                at(layer::device, "k", 40, 46, 9, 5)});
    CHECK(row(a, "inner op").self_device_ns == 6);
    CHECK(row(a, "inner op").device_total_ns == 6);
    CHECK(row(a, "launch").self_device_ns == 0);
    CHECK(row(a, "mid").device_total_ns == 6);
    CHECK(row(a, "mid").self_device_ns == 0);
    CHECK(row(a, "op").device_total_ns == 6);
    CHECK(row(a, "op").self_device_ns == 0);
  }
  SUBCASE("without an op of the id, the deepest runtime call owns it") {
    const auto a = averages_of({host("step", 0, 100), at(layer::runtime, "execute", 10, 90, 1, 5),
                                at(layer::runtime, "launch", 20, 30, 1, 5),
                                at(layer::device, "k", 40, 46, 9, 5)});
    CHECK(row(a, "launch").self_device_ns == 6);
    CHECK(row(a, "execute").self_device_ns == 0);
    CHECK(row(a, "execute").device_total_ns == 6);
    CHECK(row(a, "step").device_total_ns == 6);
  }
  SUBCASE("a merged recursive op keeps its inner op's device time") {
    const auto a = averages_of({host("foo", 0, 100), host("foo", 10, 90, 1, 3),
                                at(layer::device, "k", 40, 50, 9, 3)});
    CHECK(row(a, "foo").count == 1);
    CHECK(row(a, "foo").self_device_ns == 10);
    CHECK(row(a, "foo").device_total_ns == 10);
  }
}

TEST_CASE("key_averages: a device event and a host op of one name are separate rows") {
  const auto a = averages_of({host("copy", 0, 10, 1, 1), at(layer::device, "copy", 20, 25, 9, 1)});
  REQUIRE(a.rows.size() == 2);
  CHECK(row(a, "copy").self_device_ns == 5);
  CHECK(row(a, "copy").cpu_total_ns == 10);
  CHECK(row(a, "copy", true).cpu_total_ns == 0);
}

TEST_CASE("key_averages: grouping by input shape") {
  const std::vector<op_event> ev = {host("mm", 0, 10, 1, 0, "[[2, 3]]"), host("mm", 20, 40, 1, 0, "[[4]]"),
                                    host("mm", 50, 80, 1, 0, "[[2, 3]]"), host("relu", 90, 95)};
  SUBCASE("grouped: one row per (name, shapes)") {
    const auto a = averages_of(ev, {.group_by_input_shape = true});
    REQUIRE(a.rows.size() == 3);
    CHECK(a.rows[0].name == "mm");
    CHECK(a.rows[0].input_shapes == "[[2, 3]]");
    CHECK(a.rows[0].count == 2);
    CHECK(a.rows[0].cpu_total_ns == 40);
    CHECK(a.rows[1].input_shapes == "[[4]]");
    CHECK(a.rows[1].cpu_total_ns == 20);
    CHECK(a.rows[2].name == "relu");
    CHECK(a.rows[2].input_shapes.empty());
  }
  SUBCASE("not grouped: one row per name, shapes dropped") {
    const auto a = averages_of(ev);
    REQUIRE(a.rows.size() == 2);
    CHECK(a.rows[0].count == 3);
    CHECK(a.rows[0].cpu_total_ns == 60);
    CHECK(a.rows[0].input_shapes.empty());
  }
}

TEST_CASE("key_averages: designated initializers leave the rest at their defaults") {
  const std::vector<op_event> ev = {{.name = "aten::mm", .begin_ns = 0, .end_ns = 500}};
  const auto a = strata::key_averages(ev);
  REQUIRE(a.rows.size() == 1);
  CHECK(a.rows[0].cpu_total_ns == 500);
  CHECK(a.rows[0].input_shapes.empty());
}

TEST_CASE("key_averages: options carry the device name; no events, no rows") {
  const auto a = averages_of({}, {.device_name = "TPU"});
  CHECK(a.rows.empty());
  CHECK(a.device_name == "TPU");
  CHECK(averages_of({}).device_name == "NEURON");
}

namespace {
// Sites as instrumented code has them: one static constexpr descriptor per call site.
constexpr strata::site step_site{"step", __FILE__, __LINE__, layer::framework, strata::record_kind::scope};
constexpr strata::site mm_site{"aten::mm", __FILE__, __LINE__, layer::framework, strata::record_kind::scope};
constexpr strata::site submit_site{"submit", __FILE__, __LINE__, layer::runtime, strata::record_kind::scope};
constexpr strata::site kernel_site{"tensor_matmul", __FILE__, __LINE__, layer::device, strata::record_kind::scope};
constexpr strata::site user_site{"load", __FILE__, __LINE__, layer::user, strata::record_kind::scope};
constexpr strata::site mark_site{"mark", __FILE__, __LINE__, layer::user, strata::record_kind::instant};
constexpr strata::site hbm_site{"hbm", __FILE__, __LINE__, layer::device, strata::record_kind::counter};
}  // namespace

TEST_CASE("key_averages: a session's records, ticks as nanoseconds on the steady clock") {
  strata::trace_data data;  // default calibration: steady_clock, one tick per ns
  REQUIRE(data.clock.source() == strata::clock_source::steady_clock);
  data.overflow = strata::overflow_policy::flight_recorder;
  strata::thread_track main_thread;
  main_thread.records = {{1000, 3000, &step_site, 0},
                         {1100, 2100, &mm_site, 42},
                         {1200, 1300, &submit_site, 42},
                         {1250, 1250, &mark_site, 0},
                         {2200, 2500, &mm_site, 0}};
  main_thread.lost = 3;
  strata::thread_track worker;
  worker.records = {{1500, 1800, &user_site, 0}, {1600, 0x4000000000000000u, &hbm_site, 0}};
  strata::thread_track device;
  device.records = {{1400, 1900, &kernel_site, 42}};
  device.lost = 2;
  data.threads = {main_thread, worker, device};

  const auto a = strata::key_averages(data);
  CHECK(names(a) == std::vector<std::string>{"step", "aten::mm", "submit", "tensor_matmul", "load"});
  CHECK(a.records_lost == 5);
  CHECK(a.overflow == strata::overflow_policy::flight_recorder);
  CHECK(row(a, "step").self_cpu_ns == 700);
  CHECK(row(a, "step").device_total_ns == 500);
  const auto& mm = row(a, "aten::mm");
  CHECK(mm.count == 2);
  CHECK(mm.cpu_total_ns == 1300);
  CHECK(mm.self_cpu_ns == 1200);
  CHECK(mm.device_total_ns == 500);
  CHECK(mm.self_device_ns == 500);
  CHECK(row(a, "submit").self_device_ns == 0);
  CHECK(row(a, "tensor_matmul", true).self_device_ns == 500);
  CHECK(row(a, "load").self_cpu_ns == 300);
  CHECK(row(a, "load").top_level);  // on its own thread, not inside step
}

namespace {

// The session's events as op_events, the way key_averages(trace_data) once built them: the
// rows of a session must be the rows of its op_events.
std::vector<op_event> events_of(const strata::trace_data& data) {
  std::vector<op_event> out;
  for (std::size_t t = 0; t < data.threads.size(); ++t) {
    // A steps track's events are steps of its thread's track (none: of a track never read).
    std::uint64_t steps_of = op_event::not_a_step;
    if (data.threads[t].steps) {
      steps_of = data.threads.size();
      for (std::size_t k = 0; k < data.threads.size() && steps_of == data.threads.size(); ++k)
        if (!data.threads[k].steps && data.threads[k].tid == data.threads[t].steps_of) steps_of = k;
    }
    for (const strata::record& r : data.threads[t].records) {
      if (r.kind() != strata::record_kind::scope || r.site->category != nullptr) continue;
      out.push_back({r.site->name, r.layer(), t, data.ns_of(data.threads[t], r.begin),
                     data.ns_of(data.threads[t], r.end), r.payload,
                     r.site->input_shapes != nullptr ? r.site->input_shapes : "", steps_of});
    }
  }
  return out;
}

void random_nest(std::mt19937_64& rng, std::vector<strata::record>& out,
                 const std::vector<const strata::site*>& host, std::uint64_t b, std::uint64_t e,
                 int depth, std::uint64_t& corr) {
  if (depth > 4 || e <= b) return;
  std::uint64_t t = b;
  for (int k = static_cast<int>(rng() % 4); k > 0 && t < e; --k) {
    std::uint64_t cb = t + rng() % 3 * (rng() % 20);
    if (cb >= e) break;
    if (rng() % 10 == 0) cb = b;  // the parent's begin
    const std::uint64_t ce = rng() % 8 == 0 ? e : cb + rng() % (e - cb + 1);
    const strata::site* s = host[rng() % host.size()];
    const std::uint64_t payload = rng() % 3 == 0 ? 1 + rng() % corr : 0;
    out.push_back({cb, ce, s, payload});
    if (rng() % 5 == 0) out.push_back({cb, ce, s, payload});  // an identical twin
    random_nest(rng, out, host, cb, ce, depth + 1, corr);
    t = ce;
    if (rng() % 3 == 0) ++corr;
  }
}

}  // namespace

TEST_CASE("key_averages: a session's rows are those of its events, however they nest") {
  // Few names, so that recursion collapses and sites merge into rows; shapes; a device row
  // named like a host op; ids shared across tracks; device events on a host track; tracks out
  // of order. The expected rows come from the op_event version.
  static constexpr strata::site a1{"a", "f", 1, layer::framework, strata::record_kind::scope};
  static constexpr strata::site a2{"a", "f", 2, layer::framework, strata::record_kind::scope, "[[1]]"};
  static constexpr strata::site b1{"b", "f", 3, layer::runtime, strata::record_kind::scope};
  static constexpr strata::site c1{"c", "f", 4, layer::user, strata::record_kind::scope, "[[2, 3]]"};
  static constexpr strata::site b2{"b", "f", 5, layer::framework, strata::record_kind::scope};
  static constexpr strata::site k1{"k1", "f", 6, layer::device, strata::record_kind::scope};
  static constexpr strata::site ka{"a", "f", 7, layer::device, strata::record_kind::scope};
  const std::vector<const strata::site*> host = {&a1, &a2, &b1, &c1, &b2};
  const std::vector<const strata::site*> device = {&k1, &ka};
  static constexpr strata::site s0{"ProfilerStep#0", "f", 8, layer::framework, strata::record_kind::scope};
  static constexpr strata::site s1{"ProfilerStep#1", "f", 9, layer::framework, strata::record_kind::scope};
  static constexpr strata::site s2{"ProfilerStep#2", "f", 10, layer::framework, strata::record_kind::scope};
  static constexpr strata::site s3{"ProfilerStep#3", "f", 11, layer::framework, strata::record_kind::scope};
  const std::vector<const strata::site*> step_sites = {&s0, &s1, &s2, &s3};
  std::mt19937_64 rng(11);
  for (int round = 0; round < 60; ++round) {
    CAPTURE(round);
    strata::trace_data data;
    std::uint64_t corr = 1;
    for (int h = 0; h < 1 + round % 3; ++h) {
      strata::thread_track t;
      std::uint64_t base = 1000 + rng() % 50;
      for (int top = 0; top < 12; ++top) {
        const std::uint64_t b = base + rng() % 30, e = b + rng() % 400;
        t.records.push_back({b, e, host[rng() % host.size()], rng() % 4 == 0 ? corr : 0});
        random_nest(rng, t.records, host, b, e, 1, corr);
        if (rng() % 9 == 0) t.records.push_back({b + 5, b + 50, device[rng() % 2], 1 + rng() % corr});
        if (rng() % 11 == 0) t.records.push_back({e, b, host[0], 0});  // ends before it begins
        base = round % 2 != 0 ? e + rng() % 10 : b + rng() % 200;  // overlapping siblings
      }
      if (round % 5 == 4)
        std::shuffle(t.records.begin(), t.records.end(), rng);
      else
        std::stable_sort(t.records.begin(), t.records.end(), strata::detail::record_order);
      data.threads.push_back(std::move(t));
    }
    strata::thread_track dev;
    dev.timestamps_in_ns = true;
    for (std::uint64_t b = 1000, k = 0; k < 40; ++k, b += rng() % 40)
      dev.records.push_back({b, b + rng() % 100, device[rng() % 2], rng() % 5 == 0 ? 0 : 1 + rng() % (corr + 3)});
    data.threads.push_back(std::move(dev));
    // Steps of a host thread (from a generator of their own, so the rounds above stay what
    // they were): back to back, with gaps, now and then overlapping or empty; now and then a
    // step shares a site with the thread's ops, or a device record sits on the steps track.
    std::mt19937_64 steps_rng(static_cast<std::uint64_t>(round));
    const std::size_t host_tracks = data.threads.size() - 1;
    for (std::size_t h = 0; h < host_tracks; ++h) data.threads[h].tid = 100 + h;
    if (round % 4 != 3) {
      strata::thread_track steps;
      steps.steps = true;
      steps.steps_of = 100 + steps_rng() % (host_tracks + (round % 7 == 6 ? 1 : 0));  // or of no track
      steps.tid = strata::steps_track_tid(steps.steps_of);
      for (std::uint64_t b = 900 + steps_rng() % 200, k = 0; k < 8; ++k) {
        const std::uint64_t e = b + (steps_rng() % 6 == 0 ? 0 : steps_rng() % 300);
        const strata::site* s = steps_rng() % 7 == 0 ? host[0] : step_sites[k % 4];
        steps.records.push_back({b, e, s, 0});
        if (steps_rng() % 9 == 0) steps.records.push_back({b, b + 20, device[0], 1 + steps_rng() % corr});
        b = steps_rng() % 5 == 0 ? b + steps_rng() % (e - b + 1) : e + (steps_rng() % 3 == 0 ? steps_rng() % 50 : 0);
      }
      data.threads.insert(data.threads.begin() + static_cast<std::ptrdiff_t>(steps_rng() % (data.threads.size() + 1)),
                          std::move(steps));
    }

    const std::vector<op_event> events = events_of(data);
    for (const bool shapes : {false, true})
      for (const bool correlate : {true, false}) {
        CAPTURE(shapes);
        CAPTURE(correlate);
        const strata::key_averages_options o{.group_by_input_shape = shapes, .correlate_device_time = correlate};
        const auto want = strata::key_averages(events, o), got = strata::key_averages(data, o);
        REQUIRE(got.rows.size() == want.rows.size());
        for (std::size_t i = 0; i < want.rows.size(); ++i) {
          const auto &g = got.rows[i], &w = want.rows[i];
          CAPTURE(i);
          CHECK(g.name == w.name);
          CHECK(g.input_shapes == w.input_shapes);
          CHECK(g.is_device == w.is_device);
          CHECK(g.top_level == w.top_level);
          CHECK(g.count == w.count);
          CHECK(g.self_cpu_ns == w.self_cpu_ns);
          CHECK(g.cpu_total_ns == w.cpu_total_ns);
          CHECK(g.self_device_ns == w.self_device_ns);
          CHECK(g.device_total_ns == w.device_total_ns);
        }
      }
  }
}

TEST_CASE("key_averages: steps on a track of their own, against their thread's top-level events") {
  // Thread track 1: outer [10, 150] (holding mm [20, 40], id 5) crosses the step boundary at
  // 100; add [170, 190] (id 6); tail [230, 290] outlasts the last step. Device work: 30 ns of
  // id 5, 10 ns of id 6. Steps of track 1, on track 9: [0, 100], [100, 200], [200, 250], named
  // "step N" here so that each is a row of its own (a ProfilerStep#N would fold).
  std::vector<op_event> ev = {
      host("outer", 10, 150, 1, 5), host("mm", 20, 40, 1, 5), host("add", 170, 190, 1, 6),
      host("tail", 230, 290, 1),    at(layer::device, "k5", 50, 80, 3, 5),
      at(layer::device, "k6", 195, 205, 3, 6)};
  for (int n = 0; n < 3; ++n) {
    const std::int64_t b[] = {0, 100, 200}, e[] = {100, 200, 250};
    op_event step = host("step " + std::to_string(n), b[n], e[n], 9);
    step.steps_of = 1;
    ev.push_back(step);
  }
  op_event stray = host("step 7", 0, 50, 8);  // of a track with no events
  stray.steps_of = 4;
  ev.push_back(stray);
  const auto a = averages_of(ev);
  // Self time: what the thread's top-level events leave of the step; device total: the device
  // time of those that begin within it. A step is never anyone's parent.
  CHECK(row(a, "step 0").cpu_total_ns == 100);
  CHECK(row(a, "step 0").self_cpu_ns == 10);        // outer covers [10, 100]
  CHECK(row(a, "step 0").device_total_ns == 30);    // outer begins in it
  CHECK(row(a, "step 0").self_device_ns == 0);
  CHECK(row(a, "step 1").self_cpu_ns == 30);        // outer [100, 150], add [170, 190]
  CHECK(row(a, "step 1").device_total_ns == 10);    // add, not outer
  CHECK(row(a, "step 2").self_cpu_ns == 30);        // tail covers [230, 250]
  CHECK(row(a, "step 2").device_total_ns == 0);
  CHECK(row(a, "step 7").self_cpu_ns == 50);
  for (const char* n : {"step 0", "step 1", "step 2", "outer", "add", "tail"}) {
    CAPTURE(n);
    CHECK(row(a, n).top_level);
    CHECK(row(a, n).count == 1);
  }
  // The ops keep their own times whole.
  CHECK(row(a, "outer").cpu_total_ns == 140);
  CHECK(row(a, "outer").self_cpu_ns == 120);
  CHECK(row(a, "outer").device_total_ns == 30);
  CHECK(row(a, "mm").self_device_ns == 30);
  CHECK(row(a, "add").self_device_ns == 10);
  CHECK(row(a, "tail").self_cpu_ns == 60);
  CHECK(a.self_cpu_total_ns() == 10 + 30 + 30 + 50 + 120 + 20 + 20 + 60);
  CHECK_FALSE(row(a, "mm").top_level);

  // The same as a session: a steps track (tid 2^24 + 1) of thread 1, in ticks of one ns.
  static constexpr strata::site outer{"outer", "f", 1, layer::framework, strata::record_kind::scope};
  static constexpr strata::site mm{"mm", "f", 2, layer::framework, strata::record_kind::scope};
  static constexpr strata::site add{"add", "f", 3, layer::framework, strata::record_kind::scope};
  static constexpr strata::site tail{"tail", "f", 4, layer::framework, strata::record_kind::scope};
  static constexpr strata::site k5{"k5", "f", 5, layer::device, strata::record_kind::scope};
  static constexpr strata::site k6{"k6", "f", 6, layer::device, strata::record_kind::scope};
  static constexpr strata::site p0{"step 0", "f", 7, layer::framework, strata::record_kind::scope};
  static constexpr strata::site p1{"step 1", "f", 8, layer::framework, strata::record_kind::scope};
  static constexpr strata::site p2{"step 2", "f", 9, layer::framework, strata::record_kind::scope};
  strata::trace_data data;
  strata::thread_track steps, thread, device;
  steps.steps = true;
  steps.steps_of = 1;
  steps.tid = strata::steps_track_tid(1);
  steps.records = {{0, 100, &p0, 0}, {100, 200, &p1, 0}, {200, 250, &p2, 0}};
  thread.tid = 1;
  thread.records = {{10, 150, &outer, 5}, {20, 40, &mm, 5}, {170, 190, &add, 6}, {230, 290, &tail, 0}};
  device.tid = 3;
  device.timestamps_in_ns = true;
  device.records = {{50, 80, &k5, 5}, {195, 205, &k6, 6}};
  data.threads = {steps, thread, device};
  const auto s = strata::key_averages(data);
  for (const char* n : {"step 0", "step 1", "step 2", "outer", "mm", "add", "tail"}) {
    CAPTURE(n);
    CHECK(row(s, n).self_cpu_ns == row(a, n).self_cpu_ns);
    CHECK(row(s, n).cpu_total_ns == row(a, n).cpu_total_ns);
    CHECK(row(s, n).device_total_ns == row(a, n).device_total_ns);
    CHECK(row(s, n).self_device_ns == row(a, n).self_device_ns);
    CHECK(row(s, n).top_level == row(a, n).top_level);
  }
}

TEST_CASE("key_averages: every ProfilerStep#N is one ProfilerStep* row, as torch's _rewrite_name") {
  // Steps of track 1 (on track 9): [0, 100] and [100, 250]; ops of track 1: mm [10, 40],
  // mm [120, 130]. A plain event named ProfilerStep#9 on track 2 (a torch trace's step, an
  // ordinary parent) holding relu [310, 320]. Only the prefix counts: ProfilerStep#x folds
  // too, ProfilerStep does not.
  std::vector<op_event> ev = {host("mm", 10, 40, 1), host("mm", 120, 130, 1),
                              host("ProfilerStep#9", 300, 400, 2), host("relu", 310, 320, 2),
                              host("ProfilerStep#x", 500, 510, 3), host("ProfilerStep", 600, 605, 3)};
  for (const auto& [b, e] : {std::pair<std::int64_t, std::int64_t>{0, 100}, {100, 250}}) {
    op_event step = host("ProfilerStep#" + std::to_string(b), b, e, 9);
    step.steps_of = 1;
    ev.push_back(step);
  }
  const auto a = averages_of(ev);
  CHECK(names(a) == std::vector<std::string>{"ProfilerStep*", "mm", "relu", "ProfilerStep"});
  const auto& step = row(a, "ProfilerStep*");
  CHECK(step.count == 4);
  CHECK(step.cpu_total_ns == 100 + 150 + 100 + 10);
  CHECK(step.self_cpu_ns == 70 + 140 + 90 + 10);
  CHECK(step.top_level);
  CHECK(row(a, "relu").top_level == false);  // the torch-trace step is still relu's parent

  // The session does the same with steps tracks (tid 2^24 + 1) and a step on a thread's track.
  static constexpr strata::site mm{"mm", "f", 1, layer::framework, strata::record_kind::scope};
  static constexpr strata::site relu{"relu", "f", 2, layer::framework, strata::record_kind::scope};
  static constexpr strata::site p0{"ProfilerStep#0", "f", 3, layer::framework, strata::record_kind::scope};
  static constexpr strata::site p1{"ProfilerStep#1", "f", 4, layer::framework, strata::record_kind::scope};
  static constexpr strata::site p9{"ProfilerStep#9", "f", 5, layer::framework, strata::record_kind::scope};
  strata::trace_data data;
  strata::thread_track steps, thread, other;
  steps.steps = true;
  steps.steps_of = 1;
  steps.tid = strata::steps_track_tid(1);
  steps.records = {{0, 100, &p0, 0}, {100, 250, &p1, 0}};
  thread.tid = 1;
  thread.records = {{10, 40, &mm, 0}, {120, 130, &mm, 0}};
  other.tid = 2;
  other.records = {{300, 400, &p9, 0}, {310, 320, &relu, 0}};
  data.threads = {steps, thread, other};
  const auto s = strata::key_averages(data);
  CHECK(names(s) == std::vector<std::string>{"ProfilerStep*", "mm", "relu"});
  CHECK(row(s, "ProfilerStep*").count == 3);
  CHECK(row(s, "ProfilerStep*").cpu_total_ns == 350);
  CHECK(row(s, "ProfilerStep*").self_cpu_ns == 70 + 140 + 90);
  CHECK(s.table().find("ProfilerStep#") == std::string::npos);
}

}  // namespace test_key_averages
