// Perfetto trace export: the events a hand-built session becomes (types, times, tracks),
// worked out by hand and read back with a small protobuf reader written here; atomic writes.
// check_perfetto_trace.py holds whole traces of real sessions against their JSON.
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "strata/export/perfetto_trace.hpp"
#include "strata/detail/session.hpp"
#include "support.hpp"

using strata::layer;
using strata::record_kind;
using strata_test::read_file;

// A named namespace: the export tests are compiled as one translation unit (a unity build),
// and test_chrome_trace.cpp has sites of the same names.
namespace perfetto_test {

// --- a protobuf reader, independent of the writer's encoder ---------------------------------

struct field {
  std::uint32_t number = 0;
  std::uint64_t value = 0;   // varint or fixed64
  std::string_view bytes;    // length-delimited
};

std::uint64_t read_varint(std::string_view s, std::size_t& i) {
  std::uint64_t v = 0;
  for (int shift = 0; i < s.size(); shift += 7) {
    const auto b = static_cast<unsigned char>(s[i++]);
    v |= std::uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return v;
  }
  FAIL("truncated varint");
  return v;
}

std::vector<field> fields_of(std::string_view s) {
  std::vector<field> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const std::uint64_t key = read_varint(s, i);
    field f;
    f.number = static_cast<std::uint32_t>(key >> 3);
    switch (key & 7) {
      case 0: f.value = read_varint(s, i); break;
      case 1:
        REQUIRE(i + 8 <= s.size());
        for (int b = 7; b >= 0; --b) f.value = (f.value << 8) | static_cast<unsigned char>(s[i + static_cast<std::size_t>(b)]);
        i += 8;
        break;
      case 2: {
        const std::uint64_t n = read_varint(s, i);
        REQUIRE(i + n <= s.size());
        f.bytes = s.substr(i, n);
        i += n;
        break;
      }
      default: FAIL("unexpected wire type"); return out;
    }
    out.push_back(f);
  }
  return out;
}

const field* find(const std::vector<field>& fs, std::uint32_t number) {
  for (const field& f : fs)
    if (f.number == number) return &f;
  return nullptr;
}

// One TrackEvent as the reader sees it: its sequence, type, time on the sequence's clock
// (the snapshot's anchor plus the deltas so far) and event name (interned or inline).
struct event {
  std::uint64_t sequence;
  std::uint64_t type;
  std::uint64_t ts;
  std::string name;
};

std::vector<event> events_of(std::string_view trace) {
  std::vector<event> out;
  std::uint64_t clock[64] = {};
  std::vector<std::pair<std::uint64_t, std::string>> names[64];  // (iid, name) by sequence
  for (const field& p : fields_of(trace)) {
    REQUIRE(p.number == 1);  // Trace.packet
    const auto pf = fields_of(p.bytes);
    const field* seq = find(pf, 10);
    if (seq == nullptr) continue;  // a track descriptor
    REQUIRE(seq->value < 64);
    if (const field* snapshot = find(pf, 6)) {
      for (const field& c : fields_of(snapshot->bytes)) {
        if (c.number != 1) continue;
        const auto cf = fields_of(c.bytes);
        if (find(cf, 1)->value == 64) clock[seq->value] = find(cf, 2)->value;
      }
      continue;
    }
    if (const field* interned = find(pf, 12))
      for (const field& table : fields_of(interned->bytes))
        if (table.number == 2) {  // event_names
          const auto ef = fields_of(table.bytes);
          names[seq->value].emplace_back(find(ef, 1)->value, std::string(find(ef, 2)->bytes));
        }
    const field* te = find(pf, 11);
    REQUIRE(te != nullptr);
    clock[seq->value] += find(pf, 8) != nullptr ? find(pf, 8)->value : 0;
    const auto ef = fields_of(te->bytes);
    std::string name;
    if (const field* iid = find(ef, 10)) {
      for (const auto& [id, n] : names[seq->value])
        if (id == iid->value) name = n;
    } else if (const field* inline_name = find(ef, 23)) {
      name = std::string(inline_name->bytes);
    }
    out.push_back({seq->value, find(ef, 9)->value, clock[seq->value], name});
  }
  return out;
}

constexpr std::uint64_t begin = 1, end = 2, instant = 3, counter = 4;

constexpr strata::site op_site{"op", "f.cpp", 1, layer::framework, record_kind::scope};
constexpr strata::site child_site{"child", "f.cpp", 2, layer::runtime, record_kind::scope};
constexpr strata::site tick_site{"tick", "f.cpp", 3, layer::user, record_kind::instant};
constexpr strata::site depth_site{"depth", "f.cpp", 4, layer::device, record_kind::counter};

// A session built by hand; its default calibration is steady_clock's (one tick is one ns).
strata::trace_data session(std::vector<strata::record> records) {
  strata::trace_data d;
  d.pid = 7;
  d.process_name = "proc";
  d.start_ticks = 500;
  d.stop_ticks = 9000;
  strata::thread_track t;
  t.tid = 11;
  t.name = "main";
  t.records = std::move(records);
  d.threads = {t};
  return d;
}

}  // namespace perfetto_test

using namespace perfetto_test;

TEST_CASE("perfetto trace: scopes become nested begin/end pairs at their exact nanoseconds") {
  strata_test::temp_dir dir;
  const auto d = session({{1000, 3500, &op_site, 0},
                          {1500, 2500, &child_site, 0},
                          {2000, 2000, &tick_site, 0},
                          {3000, std::bit_cast<std::uint64_t>(2.0), &depth_site, 0},
                          {4000, 4100, &op_site, 0}});
  const auto written = strata::write_perfetto_trace(d, dir / "t.pftrace");
  CHECK(written.path == dir / "t.pftrace");
  CHECK(written.bytes == std::filesystem::file_size(dir / "t.pftrace"));
  const auto events = events_of(read_file(dir / "t.pftrace"));
  // The child ends before its parent; the instant and counter lie in between; the second op
  // begins after the first has ended.
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> want = {
      {begin, 1000}, {begin, 1500}, {instant, 2000}, {end, 2500}, {counter, 3000},
      {end, 3500}, {begin, 4000}, {end, 4100}};
  REQUIRE(events.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(events[i].type == want[i].first);
    CHECK(events[i].ts == want[i].second);
    CHECK(events[i].sequence == 2);  // the first track's sequence
  }
  CHECK(events[0].name == "op");
  CHECK(events[1].name == "child");
  CHECK(events[2].name == "tick");
  CHECK(events[6].name == "op");
}

TEST_CASE("perfetto trace: a zero-length scope at its parent's end nests; a crossing scope is cut") {
  strata_test::temp_dir dir;
  SUBCASE("zero length at the parent's end stays inside it") {
    const auto d = session({{1000, 2000, &op_site, 0}, {2000, 2000, &child_site, 0}});
    strata::write_perfetto_trace(d, dir / "t.pftrace");
    const auto events = events_of(read_file(dir / "t.pftrace"));
    REQUIRE(events.size() == 4);
    CHECK(events[1].type == begin);
    CHECK(events[1].name == "child");
    CHECK(events[2].type == end);
    CHECK(events[3].type == end);
    CHECK(events[3].ts == 2000);
  }
  SUBCASE("a scope that begins at its predecessor's end follows it") {
    const auto d = session({{1000, 2000, &op_site, 0}, {2000, 2500, &child_site, 0}});
    strata::write_perfetto_trace(d, dir / "t.pftrace");
    const auto events = events_of(read_file(dir / "t.pftrace"));
    REQUIRE(events.size() == 4);
    CHECK(events[1].type == end);
    CHECK(events[1].ts == 2000);
    CHECK(events[2].type == begin);
    CHECK(events[2].name == "child");
  }
  SUBCASE("a scope crossing its parent's end ends with it") {
    const auto d = session({{1000, 2000, &op_site, 0}, {1500, 2600, &child_site, 0}});
    strata::write_perfetto_trace(d, dir / "t.pftrace");
    const auto events = events_of(read_file(dir / "t.pftrace"));
    REQUIRE(events.size() == 4);
    CHECK(events[2].type == end);
    CHECK(events[2].ts == 2000);
    CHECK(events[3].type == end);
    CHECK(events[3].ts == 2000);
  }
}

TEST_CASE("perfetto trace: lost records are an instant at the session's stop") {
  strata_test::temp_dir dir;
  auto d = session({{1000, 1200, &op_site, 0}});
  d.threads[0].lost = 3;
  strata::write_perfetto_trace(d, dir / "t.pftrace");
  const auto events = events_of(read_file(dir / "t.pftrace"));
  REQUIRE(events.size() == 3);
  CHECK(events[2].type == instant);
  CHECK(events[2].ts == 9000);
  CHECK(events[2].name == "strata: 3 records lost (lossless)");
}

TEST_CASE("perfetto trace: written atomically; an unwritable path raises and leaves nothing") {
  strata_test::temp_dir dir;
  const auto d = session({{1000, 1200, &op_site, 0}});
  strata::write_perfetto_trace(d, dir / "t.pftrace");
  const std::string first = read_file(dir / "t.pftrace");
  strata::write_perfetto_trace(d, dir / "t.pftrace");  // replaces the file
  CHECK(read_file(dir / "t.pftrace") == first);
  CHECK(dir.entries() == std::vector<std::string>{"t.pftrace"});
  CHECK_THROWS_AS(strata::write_perfetto_trace(d, dir / "missing" / "t.pftrace"), strata::error);
  // Written by several threads, the file is made beside the flow pass and the others wait
  // for it: they stop, and the error is raised the same.
  for (unsigned threads : {2u, 3u})
    CHECK_THROWS_AS(strata::write_perfetto_trace(d, dir / "missing" / "t.pftrace", {.threads = threads}), strata::error);
  CHECK(dir.entries() == std::vector<std::string>{"t.pftrace"});
}

namespace perfetto_test {

// The first clock snapshot of a trace: {clock id: (timestamp, incremental)} and the primary
// trace clock.
struct snapshot {
  std::vector<std::tuple<std::uint64_t, std::uint64_t, bool>> clocks;
  std::uint64_t primary = 0;
};

snapshot first_snapshot(std::string_view trace) {
  snapshot out;
  for (const field& p : fields_of(trace)) {
    const auto pf = fields_of(p.bytes);
    const field* s = find(pf, 6);
    if (s == nullptr) continue;
    for (const field& c : fields_of(s->bytes)) {
      if (c.number == 2) out.primary = c.value;
      if (c.number != 1) continue;
      const auto cf = fields_of(c.bytes);
      const field* incremental = find(cf, 3);
      out.clocks.emplace_back(find(cf, 1)->value, find(cf, 2)->value, incremental != nullptr && incremental->value != 0);
    }
    return out;
  }
  FAIL("no clock snapshot");
  return out;
}

}  // namespace perfetto_test

TEST_CASE("perfetto trace: the clock snapshot relates every clock trace_processor uses to the trace clock") {
  strata_test::temp_dir dir;
  auto d = session({{1000, 1200, &op_site, 0}});
  using clock = std::tuple<std::uint64_t, std::uint64_t, bool>;
  SUBCASE("BOOTTIME known: MONOTONIC is the trace clock, BOOTTIME and REALTIME are related to it") {
    d.boot_time_ns = 250;           // BOOTTIME = steady ns + 250 (the machine slept 250 ns)
    d.base_time_ns = 1'000'000'000; // REALTIME = steady ns + 1 s
    strata::write_perfetto_trace(d, dir / "t.pftrace");
    const snapshot s = first_snapshot(read_file(dir / "t.pftrace"));
    CHECK(s.primary == 3);  // BUILTIN_CLOCK_MONOTONIC
    // Clock 64 (incremental), MONOTONIC, BOOTTIME, REALTIME, all at the first record's 1000 ns.
    CHECK(s.clocks == std::vector<clock>{{64, 1000, true}, {3, 1000, false}, {6, 1250, false}, {1, 1'000'001'000, false}});
  }
  SUBCASE("BOOTTIME not known: the file's own clock (TRACE_FILE) is the trace clock") {
    strata::write_perfetto_trace(d, dir / "t.pftrace");
    const snapshot s = first_snapshot(read_file(dir / "t.pftrace"));
    CHECK(s.primary == 11);  // BUILTIN_CLOCK_TRACE_FILE: trace_processor then assumes BOOTTIME aligned
    CHECK(s.clocks == std::vector<clock>{{64, 1000, true}, {11, 1000, false}, {3, 1000, false}});
  }
}

namespace perfetto_test {

// The TrackEvents of a trace, each as its fields, in file order.
std::vector<std::vector<field>> track_events_of(std::string_view trace) {
  std::vector<std::vector<field>> out;
  for (const field& p : fields_of(trace))
    if (const auto pf = fields_of(p.bytes); const field* te = find(pf, 11)) out.push_back(fields_of(te->bytes));
  return out;
}

std::vector<std::uint64_t> all_of(const std::vector<field>& fs, std::uint32_t number) {
  std::vector<std::uint64_t> out;
  for (const field& f : fs)
    if (f.number == number) out.push_back(f.value);
  return out;
}

}  // namespace perfetto_test

TEST_CASE("perfetto trace: counters sampled at an event's instant ride in its packet") {
  strata_test::temp_dir dir;
  const auto d = session({{1000, 3000, &op_site, 0},
                          {1000, std::bit_cast<std::uint64_t>(2.0), &depth_site, 0},
                          {1500, 1500, &tick_site, 0},
                          {1500, std::bit_cast<std::uint64_t>(2.5), &depth_site, 0},
                          {1500, std::bit_cast<std::uint64_t>(-3.0), &depth_site, 0},
                          {2000, std::bit_cast<std::uint64_t>(4.0), &depth_site, 0}});
  strata::write_perfetto_trace(d, dir / "t.pftrace");
  const auto events = track_events_of(read_file(dir / "t.pftrace"));
  // The op's begin carries 2; the tick carries 2.5 (a double) and -3; the sample at 2000 has
  // no event of its own instant and is a counter event; then the op's end.
  REQUIRE(events.size() == 4);
  const auto& op = events[0];
  CHECK(find(op, 9)->value == begin);
  REQUIRE(all_of(op, 31).size() == 1);                  // extra_counter_track_uuids
  CHECK(all_of(op, 12) == std::vector<std::uint64_t>{2});  // extra_counter_values
  const auto& tick = events[1];
  CHECK(find(tick, 9)->value == instant);
  CHECK(all_of(tick, 31) == all_of(op, 31));           // the same counter track
  CHECK(all_of(tick, 12) == std::vector<std::uint64_t>{static_cast<std::uint64_t>(std::int64_t{-3})});
  CHECK(all_of(tick, 45) == all_of(op, 31));           // extra_double_counter_track_uuids
  CHECK(all_of(tick, 46) == std::vector<std::uint64_t>{std::bit_cast<std::uint64_t>(2.5)});
  CHECK(find(events[2], 9)->value == counter);
  CHECK(find(events[2], 30)->value == 4);
  CHECK(find(events[2], 11)->value == all_of(op, 31)[0]);
  CHECK(find(events[3], 9)->value == end);
}

TEST_CASE("perfetto trace: a flow id is reused once its flow has ended, never while it runs") {
  strata_test::temp_dir dir;
  std::vector<strata::record> records;
  SUBCASE("paths one after another share one id") {
    for (std::uint64_t c = 1; c <= 300; ++c) {
      const std::uint64_t t = 1000 * c;
      records.push_back({t, t + 500, &op_site, c});
      records.push_back({t + 100, t + 200, &child_site, c});
    }
    auto d = session(records);
    d.stop_ticks = 400000;
    strata::write_perfetto_trace(d, dir / "t.pftrace");
    std::vector<std::uint64_t> starts, ends;
    for (const auto& e : track_events_of(read_file(dir / "t.pftrace"))) {
      for (std::uint64_t id : all_of(e, 36)) starts.push_back(id);  // flow_ids (varint)
      for (std::uint64_t id : all_of(e, 42)) ends.push_back(id);    // terminating_flow_ids
    }
    CHECK(starts == std::vector<std::uint64_t>(300, 1));
    CHECK(ends == std::vector<std::uint64_t>(300, 1));
  }
  SUBCASE("a flow that begins while another runs takes another id") {
    // Path 1: op [1000, 9000] -> child at 4000; path 2 inside it: op [2000, 3000] -> child at 2500.
    auto d = session({{1000, 9000, &op_site, 1},
                      {2000, 3000, &op_site, 2},
                      {2500, 2600, &child_site, 2},
                      {4000, 4100, &child_site, 1}});
    strata::write_perfetto_trace(d, dir / "t.pftrace");
    const auto events = track_events_of(read_file(dir / "t.pftrace"));
    std::vector<std::uint64_t> starts, ends;
    for (const auto& e : events) {
      for (std::uint64_t id : all_of(e, 36)) starts.push_back(id);
      for (std::uint64_t id : all_of(e, 42)) ends.push_back(id);
    }
    REQUIRE(starts.size() == 2);
    REQUIRE(ends.size() == 2);
    CHECK(starts[0] != starts[1]);
    CHECK(ends == std::vector<std::uint64_t>{starts[1], starts[0]});  // path 2 ends first
  }
}

namespace perfetto_test {

// Worker threads 0..n-1 (tid 20 + k), worker k with ops(k) ops, each holding a child and
// followed by an instant and a counter sample; worker 1 with a scope around everything if asked.
template <class Ops>
strata::trace_data workers(std::uint64_t n, Ops ops, bool scope_around_worker_1 = false) {
  strata::trace_data d = session({});
  d.threads.clear();
  for (std::uint64_t k = 0; k < n; ++k) {
    strata::thread_track t;
    t.tid = 20 + k;
    t.name = "worker " + std::to_string(k);
    t.sort_index = static_cast<std::uint32_t>(k);
    if (k == 1 && scope_around_worker_1) t.records.push_back({500, 100000, &op_site, 0});
    for (std::uint64_t i = 0; i < static_cast<std::uint64_t>(ops(k)); ++i) {
      const std::uint64_t at = 1000 + 100 * i;
      t.records.push_back({at, at + 50, &op_site, k * 1000 + i + 1});
      t.records.push_back({at + 10, at + 20, &child_site, k * 1000 + i + 1});
      t.records.push_back({at + 30, at + 30, &tick_site, 0});
      t.records.push_back({at + 30, std::bit_cast<std::uint64_t>(1.0 * static_cast<double>(i)), &depth_site, 0});
    }
    d.threads.push_back(t);
  }
  d.stop_ticks = 200000;
  return d;
}

// Each sequence's events (type, time, name), in file order.
using events_by_sequence = std::map<std::uint64_t, std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string>>>;
events_by_sequence by_sequence(const std::vector<event>& events) {
  events_by_sequence out;
  for (const event& e : events) out[e.sequence].emplace_back(e.type, e.ts, e.name);
  return out;
}

}  // namespace perfetto_test

TEST_CASE("perfetto trace: written by several threads, each track's events are the same") {
  strata_test::temp_dir dir;
  const strata::trace_data d = workers(5, [](std::uint64_t k) { return 100 * (k + 1); });
  const auto one = strata::write_perfetto_trace(d, dir / "one.pftrace", {.threads = 1});
  const auto three = strata::write_perfetto_trace(d, dir / "three.pftrace", {.threads = 3});
  CHECK(three.events >= one.events);  // a shared counter track may be described by each thread
  const auto want = by_sequence(events_of(read_file(dir / "one.pftrace")));
  CHECK(want.size() == 5);
  CHECK(by_sequence(events_of(read_file(dir / "three.pftrace"))) == want);
}

TEST_CASE("perfetto trace: a long track is cut into sequences where no slice is open, and reads the same") {
  strata_test::temp_dir dir;
  // Worker 1 has a scope around everything it does: no place to cut it.
  const strata::trace_data d = workers(2, [](std::uint64_t) { return std::uint64_t{100}; }, true);
  strata::write_perfetto_trace(d, dir / "whole.pftrace", {.threads = 2, .records_per_sequence = 0});
  strata::write_perfetto_trace(d, dir / "cut.pftrace", {.threads = 2, .records_per_sequence = 16});
  strata::write_perfetto_trace(d, dir / "cut3.pftrace", {.threads = 3, .records_per_sequence = 16});
  // One thread does not cut: the spans would only cost their sequences' first packets.
  strata::write_perfetto_trace(d, dir / "one.pftrace", {.threads = 1, .records_per_sequence = 16});
  const events_by_sequence whole = by_sequence(events_of(read_file(dir / "whole.pftrace")));
  const events_by_sequence cut = by_sequence(events_of(read_file(dir / "cut.pftrace")));
  REQUIRE(whole.size() == 2);
  // Worker 0: a span of about 16 records from each cut, each starting at an op (the first
  // record that begins after all before it ended); worker 1: one sequence, the last.
  REQUIRE(cut.size() >= 20);
  CHECK(cut.rbegin()->second == whole.at(3));
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string>> joined;
  std::uint64_t previous_end = 0;
  for (auto it = cut.begin(); std::next(it) != cut.end(); ++it) {
    const auto& events = it->second;
    REQUIRE(!events.empty());
    CHECK(std::get<0>(events.front()) == begin);
    CHECK(std::get<2>(events.front()) == "op");
    CHECK(std::get<1>(events.front()) > previous_end);  // wholly after the span before it
    previous_end = std::get<1>(events.back());
    joined.insert(joined.end(), events.begin(), events.end());
  }
  CHECK(joined == whole.at(2));
  // Which thread writes which span changes nothing in it.
  CHECK(by_sequence(events_of(read_file(dir / "cut3.pftrace"))) == cut);
  CHECK(by_sequence(events_of(read_file(dir / "one.pftrace"))) == whole);
}
