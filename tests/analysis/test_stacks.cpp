// Collapsed stacks (strata/analysis/stacks.hpp): paths by containment per track, device kernels
// under the call that launched them, exact microseconds, escaping, the metric names, the
// atomic file, profiler::export_stacks and the saved-trace path. Every expected line is worked
// out by hand from the rules in docs/key-averages.md, "Flame graphs".
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "strata/analysis/stacks.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/profiler.hpp"
#include "strata/strata.h"
#include "strata/strata.hpp"

#if __has_include("report/trace_reader.hpp")
#include "report/trace_reader.hpp"
#define STRATA_TEST_HAS_READER 1
#endif

#include "support.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_stacks {

namespace {

using namespace strata_test;
using strata::layer;
using strata::op_event;

op_event ev(layer l, std::string name, std::int64_t b, std::int64_t e, std::uint64_t track, std::uint64_t corr = 0) {
  return {std::move(name), l, track, b, e, corr, {}};
}

std::vector<std::string> lines_of(const strata::collapsed_stacks& s) {
  std::vector<std::string> out;
  for (const auto& l : s.lines) out.push_back(l.stack + " " + std::to_string(l.value_us));
  return out;
}

// Two threads run forward → aten::mm → submit (runtime) twice each; every submit launches a
// kernel on the device track through its correlation id. Times in ns.
//   thread 1: forward [0, 10000]: aten::mm [1000, 4000] (submit [1500, 2500], id 1),
//                                 aten::mm [5000, 9000] (submit [5500, 7500], id 2)
//   thread 2: forward [0, 6000]:  aten::mm [500, 5500] (submit [1000, 2000], id 3)
//   device:   tensor_matmul [3000, 5000] id 1, [8000, 11000] id 2, [4000, 4500] id 3,
//             dma [12000, 13000] with no id
std::vector<op_event> two_threads() {
  return {
      ev(layer::framework, "forward", 0, 10000, 1),
      ev(layer::framework, "aten::mm", 1000, 4000, 1, 1),
      ev(layer::runtime, "submit", 1500, 2500, 1, 1),
      ev(layer::framework, "aten::mm", 5000, 9000, 1, 2),
      ev(layer::runtime, "submit", 5500, 7500, 1, 2),
      ev(layer::framework, "forward", 0, 6000, 2),
      ev(layer::framework, "aten::mm", 500, 5500, 2, 3),
      ev(layer::runtime, "submit", 1000, 2000, 2, 3),
      ev(layer::device, "tensor_matmul", 3000, 5000, 100, 1),
      ev(layer::device, "tensor_matmul", 8000, 11000, 100, 2),
      ev(layer::device, "tensor_matmul", 4000, 4500, 100, 3),
      ev(layer::device, "dma", 12000, 13000, 100),
  };
}

}  // namespace

TEST_CASE("stacks: self CPU time per nesting path, repeated paths summed over threads") {
  const auto s = strata::stacks(two_threads(), "self_cpu_time_total");
  // forward: 10000 - 3000 - 4000 = 3000 on thread 1, 6000 - 5000 = 1000 on thread 2.
  // aten::mm: 3000-1000 + 4000-2000 + 5000-1000 = 8000; submit: 1000 + 2000 + 1000 = 4000.
  CHECK(lines_of(s) == std::vector<std::string>{"forward 4", "forward;aten::mm 8", "forward;aten::mm;submit 4"});
  CHECK(s.text() == "forward 4\nforward;aten::mm 8\nforward;aten::mm;submit 4\n");
}

TEST_CASE("stacks: device time under op;runtime call;kernel, uncorrelated kernels at the root") {
  for (const char* metric : {"self_device_time_total", "self_cuda_time_total", "self_neuron_time_total"}) {
    const auto s = strata::stacks(two_threads(), metric);
    CHECK(lines_of(s) == std::vector<std::string>{"dma 1", "forward;aten::mm;submit;tensor_matmul 5"});
  }
}

TEST_CASE("stacks: nanoseconds are summed per path before whole microseconds; zero lines are left out") {
  const std::vector<op_event> e = {
      ev(layer::framework, "a", 0, 600, 1), ev(layer::framework, "a", 1000, 1600, 1),  // 1200 ns: 1 µs
      ev(layer::framework, "b", 2000, 2999, 1),                                          // 999 ns: no line
  };
  CHECK(lines_of(strata::stacks(e, "self_cpu_time_total")) == std::vector<std::string>{"a 1"});
  CHECK(strata::stacks(std::vector<op_event>{}, "self_cpu_time_total").lines.empty());
}

TEST_CASE("stacks: recursion collapse and the parent rule of key_averages") {
  // f[0,10000] holds only f[1000,9000] (merged into it), which holds g[2000,4000]; h begins when
  // f ends (not a child); k ends when g ends (a child); a partial overlap is not nesting.
  const std::vector<op_event> e = {
      ev(layer::framework, "f", 0, 10000, 1),      ev(layer::framework, "f", 1000, 9000, 1),
      ev(layer::framework, "g", 2000, 4000, 1),    ev(layer::framework, "k", 3000, 4000, 1),
      ev(layer::framework, "h", 10000, 12000, 1),  ev(layer::framework, "p", 11000, 14000, 1),
  };
  CHECK(lines_of(strata::stacks(e, "self_cpu_time_total")) ==
        std::vector<std::string>{"f 8", "f;g 1", "f;g;k 1", "h 2", "p 3"});
}

TEST_CASE("stacks: a session's steps are no frames; torch's ProfilerStep#N frames fold into ProfilerStep*") {
  std::vector<op_event> e = {ev(layer::framework, "ProfilerStep#1", 0, 10000, 9), ev(layer::framework, "op", 1000, 3000, 1)};
  e[0].steps_of = 1;
  CHECK(lines_of(strata::stacks(e, "self_cpu_time_total")) == std::vector<std::string>{"op 2"});
  // torch's steps are ordinary events on the thread's track, parents of its ops.
  const std::vector<op_event> torch = {
      ev(layer::framework, "ProfilerStep#1", 0, 10000, 1), ev(layer::framework, "op", 1000, 3000, 1),
      ev(layer::framework, "ProfilerStep#2", 10000, 15000, 1), ev(layer::framework, "op", 11000, 15000, 1)};
  CHECK(lines_of(strata::stacks(torch, "self_cpu_time_total")) ==
        std::vector<std::string>{"ProfilerStep* 9", "ProfilerStep*;op 6"});
}

TEST_CASE("stacks: unknown metrics are refused with the accepted names") {
  CHECK_THROWS_WITH_AS(strata::stacks(two_threads(), "cpu_time_total"),
                       doctest::Contains("use self_cpu_time_total or self_device_time_total"), strata::error);
  CHECK_THROWS_AS(strata::stack_metric_named("self_gpu_time_total"), strata::error);
  CHECK(strata::stack_metric_named("self_privateuse1_time_total") == strata::stack_metric::self_device_time_total);
}

TEST_CASE("stacks: frame names that would break the format are escaped") {
  CHECK(strata::escape_stack_frame("a;b") == "a\\x3bb");
  CHECK(strata::escape_stack_frame("line\nbreak\ttab\r") == "line\\x0abreak\\x09tab\\x0d");
  CHECK(strata::escape_stack_frame(std::string("nul\0del\x7f", 8)) == "nul\\x00del\\x7f");
  CHECK(strata::escape_stack_frame("block 12") == "block_12");
  CHECK(strata::escape_stack_frame("ratio 1.5") == "ratio_1.5");
  CHECK(strata::escape_stack_frame("x 1 2") == "x 1_2");
  CHECK(strata::escape_stack_frame("v2 12a") == "v2 12a");
  CHECK(strata::escape_stack_frame("aten::add (x) 3 ") == "aten::add (x) 3 ");
  CHECK(strata::escape_stack_frame("") == "[unnamed]");
  CHECK(strata::escape_stack_frame("caf\xc3\xa9 \xe2\x86\x92 ok") == "caf\xc3\xa9 \xe2\x86\x92 ok");  // UTF-8 kept
  CHECK(strata::escape_stack_frame("bad\xff\xc3(") == "bad\\xff\\xc3(");                              // not UTF-8
  CHECK(strata::escape_stack_frame("\xed\xa0\x80") == "\\xed\\xa0\\x80");                              // a surrogate
  CHECK(strata::escape_stack_frame("\"quoted\" <tag>") == "\"quoted\" <tag>");

  const std::vector<op_event> e = {ev(layer::framework, "outer;x", 0, 5000, 1), ev(layer::framework, "step 3", 1000, 3000, 1)};
  CHECK(strata::stacks(e, "self_cpu_time_total").text() == "outer\\x3bx 3\nouter\\x3bx;step_3 2\n");
}

TEST_CASE("stacks: every microsecond of key_averages' self times is on one line, per leaf name") {
  // Random trees on three tracks (children inside their parent, siblings apart; equal
  // intervals and shared ends among them), whole microseconds, correlation ids on ops and
  // runtime calls with kernels: the lines ending in a frame sum to that name's self time in
  // the table. (Partly overlapping siblings can give a parent a negative self time, which
  // no line can hold: docs/key-averages.md, "Flame graphs".)
  std::mt19937 rng(7);
  std::vector<op_event> e;
  const auto grow = [&](auto& self, std::int64_t b, std::int64_t end, std::uint64_t track, int depth) -> void {
    const auto l = rng() % 4 == 0 ? layer::runtime : layer::framework;
    e.push_back(ev(l, "op" + std::to_string(rng() % 4), b * 1000, end * 1000, track, rng() % 3 == 0 ? 1 + rng() % 30 : 0));
    if (depth == 0) return;
    for (std::int64_t at = b; at < end;) {
      const std::int64_t len = std::min<std::int64_t>(end - at, 1 + static_cast<std::int64_t>(rng() % 20));
      if (rng() % 3 != 0) self(self, at, at + len, track, depth - 1);
      at += len + static_cast<std::int64_t>(rng() % 3);
    }
  };
  for (std::uint64_t track = 0; track < 3; ++track)
    for (std::int64_t at = 0; at < 300; at += 60) grow(grow, at, at + 50, track, 3);
  for (std::uint64_t c = 1; c <= 30; ++c)
    e.push_back(ev(layer::device, "k" + std::to_string(c % 3), 0, static_cast<std::int64_t>(c) * 1000, 50, c));
  const auto table = strata::key_averages(e);
  for (const auto& [metric, device] : {std::pair{"self_cpu_time_total", false}, std::pair{"self_device_time_total", true}}) {
    std::map<std::string, std::int64_t> by_leaf;
    for (const auto& l : strata::stacks(e, metric).lines)
      by_leaf[l.stack.substr(l.stack.rfind(';') + 1)] += static_cast<std::int64_t>(l.value_us) * 1000;
    std::map<std::string, std::int64_t> want;
    for (const auto& r : table.rows) {
      const std::int64_t v = device ? (r.is_device ? r.self_device_ns : 0) : r.self_cpu_ns;
      if (v != 0) want[r.name] += v;
    }
    CHECK(by_leaf == want);
  }
}

namespace {
constexpr strata::site fwd_site{"forward", __FILE__, __LINE__, layer::framework, strata::record_kind::scope};
constexpr strata::site mm_site{"aten::mm", __FILE__, __LINE__, layer::framework, strata::record_kind::scope};
constexpr strata::site submit_site{"submit", __FILE__, __LINE__, layer::runtime, strata::record_kind::scope};
constexpr strata::site kernel_site{"tensor_matmul", __FILE__, __LINE__, layer::device, strata::record_kind::scope};
constexpr strata::site mark_site{"mark", __FILE__, __LINE__, layer::user, strata::record_kind::instant};

// two_threads() as a session holds it (steady clock: one tick per ns).
strata::trace_data session() {
  strata::trace_data data;
  strata::thread_track t1;
  t1.tid = 11;
  t1.records = {{0, 10000, &fwd_site, 0},      {1000, 4000, &mm_site, 1},  {1500, 2500, &submit_site, 1},
                {2000, 2000, &mark_site, 0},   {5000, 9000, &mm_site, 2},  {5500, 7500, &submit_site, 2}};
  strata::thread_track t2;
  t2.tid = 12;
  t2.records = {{0, 6000, &fwd_site, 0}, {500, 5500, &mm_site, 3}, {1000, 2000, &submit_site, 3}};
  strata::thread_track device;
  device.tid = 1;
  device.pid = 1000;
  device.process_name = "NeuronCore 0";
  device.timestamps_in_ns = true;
  device.records = {{3000, 5000, &kernel_site, 1}, {8000, 11000, &kernel_site, 2}, {4000, 4500, &kernel_site, 3}};
  data.threads = {t1, t2, device};
  return data;
}
}  // namespace

TEST_CASE("stacks: a session's records give the op_event lines") {
  const strata::trace_data data = session();
  CHECK(lines_of(strata::stacks(data, "self_cpu_time_total")) ==
        std::vector<std::string>{"forward 4", "forward;aten::mm 8", "forward;aten::mm;submit 4"});
  CHECK(lines_of(strata::stacks(data, "self_device_time_total")) ==
        std::vector<std::string>{"forward;aten::mm;submit;tensor_matmul 5"});
}

TEST_CASE("stacks: write_stacks writes atomically and refuses paths it cannot write") {
  const temp_dir dir;
  const auto path = dir / "out.folded";
  const auto r = strata::write_stacks(strata::stacks(session(), "self_cpu_time_total"), path);
  CHECK(r.events == 3);
  CHECK(read_file(path) == "forward 4\nforward;aten::mm 8\nforward;aten::mm;submit 4\n");
  CHECK(r.bytes == read_file(path).size());
  CHECK_THROWS_WITH_AS(strata::write_stacks({}, dir / "missing" / "out.folded"),
                       doctest::Contains("cannot write"), strata::error);
  CHECK_THROWS_WITH_AS(strata::write_stacks({}, dir.path()), doctest::Contains("it is a directory"), strata::error);
  CHECK(entries(dir.path()) == std::vector<std::string>{"out.folded"});  // no temporary file left
}

TEST_CASE("stacks: profiler::export_stacks of a real session") {
  const temp_dir dir;
  strata::profiler prof(config_in(dir));
  prof.start();
  const auto run = [] {
    STRATA_SCOPE("forward");
    for (int i = 0; i < 3; ++i) {
      STRATA_SCOPE("aten::mm");
      volatile double x = 0;
      for (int k = 0; k < 20000; ++k) x = x + k;
    }
  };
  std::thread other(run);
  run();
  other.join();
  CHECK_THROWS_WITH_AS(prof.export_stacks((dir / "early.folded").string()),
                       doctest::Contains("call stop() first"), strata::error);
  prof.stop();
  CHECK_THROWS_WITH_AS(prof.export_stacks((dir / "x.folded").string(), "total"),
                       doctest::Contains("self_cpu_time_total"), strata::error);
  const auto r = prof.export_stacks((dir / "s.folded").string());
  const std::string text = read_file(r.path);
  // Both threads' forward;aten::mm sum into one line; the busy loop takes well over 1 µs.
  CHECK(lines_with(text, "forward;aten::mm ").size() == 1);
  CHECK(text.find("aten::mm;") == std::string::npos);
  CHECK(!std::filesystem::exists(dir / "x.folded"));
  CHECK(!std::filesystem::exists(dir / "early.folded"));
}

TEST_CASE("stacks: strata_export_stacks, the C API's export") {
  const temp_dir dir;
  const std::string output = (dir / "trace.json").string();
  strata_config c = STRATA_CONFIG_INIT;
  c.output = output.c_str();
  REQUIRE(strata_start_ex(&c) == STRATA_OK);
  const std::string path = (dir / "c.folded").string();
  CHECK(strata_export_stacks(path.c_str(), nullptr) == STRATA_ERROR_RUNNING);
  strata_push("outer");
  strata_push("inner");
  volatile double x = 0;
  for (int k = 0; k < 20000; ++k) x = x + k;
  strata_pop();
  strata_pop();
  REQUIRE(strata_stop() == STRATA_OK);
  CHECK(strata_export_stacks(path.c_str(), "self_gpu_time_total") == STRATA_ERROR_CONFIG);
  CHECK(strata_export_stacks(nullptr, nullptr) == STRATA_ERROR_CONFIG);
  CHECK(strata_export_stacks((dir / "no" / "c.folded").string().c_str(), nullptr) == STRATA_ERROR_EXPORT);
  CHECK(entries(dir.path()).empty());
  REQUIRE(strata_export_stacks(path.c_str(), "self_cpu_time_total") == STRATA_OK);
  CHECK(lines_with(read_file(path), "outer;inner ").size() == 1);
  CHECK(strata_export_stacks(path.c_str(), "self_device_time_total") == STRATA_OK);
  CHECK(read_file(path).empty());  // no device records: no line
}

TEST_CASE("stacks: a real session's kernels under op;runtime call;kernel, exact device time") {
  // Two threads each dispatch aten::mm three times (a framework scope with a fresh correlation
  // id, holding a runtime submit with the same id), and each submission's kernel is appended
  // to a device track: 2 + 3 µs per kernel pair, so 6 pairs give exactly 30 µs.
  static constexpr strata::site mm{"aten::mm", __FILE__, __LINE__, layer::framework, strata::record_kind::scope};
  static constexpr strata::site submit{"nrt::submit", __FILE__, __LINE__, layer::runtime, strata::record_kind::scope};
  static constexpr strata::site forward{"forward", __FILE__, __LINE__, layer::framework, strata::record_kind::scope};
  const temp_dir dir;
  strata::profiler prof(config_in(dir));
  prof.start();
  const strata::site* kernel = strata::intern(layer::device, "tensor_matmul");
  const auto run = [&](std::uint32_t engine) {
    strata::scope f{&forward};
    for (int i = 0; i < 3; ++i) {
      const std::uint64_t id = strata::new_correlation_id();
      strata::scope op{&mm, id};
      strata::scope call{&submit, id};
      const auto t = static_cast<std::uint64_t>(strata::clock::steady_ns());
      const strata::record k[] = {{t + 100, t + 2100, kernel, id}, {t + 3000, t + 6000, kernel, id}};
      strata::append_device_records({.core = 0, .core_name = "NeuronCore 0", .track = engine, .track_name = "Tensor"}, k);
    }
  };
  std::thread other(run, 1u);
  run(0u);
  other.join();
  prof.stop();
  const auto r = prof.export_stacks((dir / "device.folded").string(), "self_device_time_total");
  CHECK(read_file(r.path) == "forward;aten::mm;nrt::submit;tensor_matmul 30\n");
  const auto cpu = strata::stacks(prof.data(), "self_cpu_time_total");
  for (const auto& l : cpu.lines) CHECK(l.stack.find("tensor_matmul") == std::string::npos);
}

#if defined(STRATA_TEST_HAS_READER)
TEST_CASE("stacks: a saved strata trace gives the session's own lines") {
  const temp_dir dir;
  const strata::trace_data data = session();
  strata::write_chrome_trace(data, dir / "trace.json");
  const auto saved = strata::report::read_trace(dir / "trace.json");
  for (const char* metric : {"self_cpu_time_total", "self_device_time_total"})
    CHECK(strata::stacks(std::span<const op_event>(saved.events), metric).lines == strata::stacks(data, metric).lines);
}
#endif

#if defined(STRATA_TEST_HAS_READER) && defined(STRATA_TEST_DATA)
TEST_CASE("stacks: torch's own trace gives torch's own per-event self CPU times under torch's nesting") {
  // tests/data/torch/make_stacks_fixture.py: torch 1.13.1's events, their int(self_cpu_time_total)
  // summed per path of torch's own cpu_parent chain; and torch's export_stacks of the same run.
  const std::filesystem::path data = STRATA_TEST_DATA;
  const auto saved = strata::report::read_trace(data / "torch" / "stacks.json");
  const auto s = strata::stacks(std::span<const op_event>(saved.events), "self_cpu_time_total");
  CHECK(s.text() == read_file(data / "torch" / "stacks.self_cpu_time_total.folded"));
  // torch's export_stacks has Python frames instead of op names, one line per event: the same
  // time in all.
  std::uint64_t ours = 0, torchs = 0;
  for (const auto& l : s.lines) ours += l.value_us;
  for (const std::string& line : lines_with(read_file(data / "torch" / "stacks.torch_export_stacks.folded"), " "))
    torchs += std::stoull(line.substr(line.rfind(' ') + 1));
  CHECK(ours == torchs);
  CHECK(ours == 1353);
}
#endif

}  // namespace test_stacks
