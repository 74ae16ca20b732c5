// key_averages() with memory and FLOPs: torch's attribution of allocations and frees to ops
// (self and total), the [memory] row, FLOPs summed per row, and the table's memory and FLOPs
// columns (tests/data/torch holds tables torch 1.13.1 printed; the rest is worked out by hand
// from docs/key-averages.md#memory).
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "strata/analysis/averages.hpp"
#include "strata/analysis/key_averages.hpp"
#include "strata/detail/table_format.hpp"

#include "analysis/rows.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_memory_flops {

namespace {

using strata::layer;
using strata::memory_event;
using strata::op_event;

op_event op(std::string name, std::int64_t b, std::int64_t e, std::uint64_t track = 1, std::uint64_t flops = 0) {
  op_event ev{std::move(name), layer::framework, track, b, e, 0, {}};
  ev.flops = flops;
  return ev;
}

using strata_test::names;
using strata_test::row;

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(STRATA_TEST_DATA) + "/torch/" + name);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("memory: an allocation counts in the ops of its track that hold its time; self is less the children's") {
  // Track 1: outer [0, 100] holds inner [10, 50] and inner2 [50, 80] (which begins where inner
  // ends: a sibling). Track 2: other [0, 200]. Track 3 has no ops.
  const std::vector<op_event> ev = {op("outer", 0, 100), op("inner", 10, 50), op("inner2", 50, 80),
                                    op("other", 0, 200, 2)};
  const std::vector<memory_event> mem = {
      {1, 5, 1000, false},   // outer, outside its children
      {1, 20, 200, false},   // inner
      {1, 60, -500, false},  // a free in inner2
      {1, 70, 64, true},     // device memory in inner2
      {2, 20, 11, false},    // other's track: not outer's, though outer holds the time
      {1, 150, 7, false},    // no op of track 1 holds it: the [memory] row
      {3, 30, 5, false},     // a track without ops: the [memory] row
      {3, 40, -2, true},
  };
  const auto a = strata::key_averages(ev, mem, {.profile_memory = true});
  CHECK(a.profile_memory);
  CHECK_FALSE(a.with_flops);
  CHECK(row(a, "outer").cpu_memory_usage == 1000 + 200 - 500);
  CHECK(row(a, "outer").self_cpu_memory_usage == 1000);
  CHECK(row(a, "outer").device_memory_usage == 64);
  CHECK(row(a, "outer").self_device_memory_usage == 0);
  CHECK(row(a, "inner").cpu_memory_usage == 200);
  CHECK(row(a, "inner").self_cpu_memory_usage == 200);
  CHECK(row(a, "inner2").cpu_memory_usage == -500);
  CHECK(row(a, "inner2").self_cpu_memory_usage == -500);
  CHECK(row(a, "inner2").self_device_memory_usage == 64);
  CHECK(row(a, "other").cpu_memory_usage == 11);
  CHECK(row(a, "other").self_cpu_memory_usage == 11);
  // [memory]: one call per event no op holds, placed where the first of them (t = 30) falls.
  CHECK(names(a) == std::vector<std::string>{"other", "outer", "inner", "[memory]", "inner2"});
  const auto& loose = row(a, "[memory]");
  CHECK(loose.count == 3);
  CHECK(loose.cpu_memory_usage == 12);
  CHECK(loose.self_cpu_memory_usage == 12);
  CHECK(loose.device_memory_usage == -2);
  CHECK(loose.self_device_memory_usage == -2);
  CHECK(loose.cpu_total_ns == 0);
  CHECK(loose.top_level);
  // The times are those without memory.
  const auto plain = strata::key_averages(ev);
  CHECK(names(plain) == std::vector<std::string>{"other", "outer", "inner", "inner2"});
  CHECK(row(plain, "outer").self_cpu_ns == row(a, "outer").self_cpu_ns);
  CHECK(row(plain, "outer").cpu_memory_usage == 0);
}

TEST_CASE("memory: both ends of an op hold; recursion and steps") {
  SUBCASE("an allocation at an op's begin and one at its end are its own; one where two siblings meet is both's") {
    const std::vector<op_event> ev = {op("outer", 0, 100), op("a", 10, 50), op("b", 50, 80)};
    const std::vector<memory_event> mem = {{1, 0, 1, false}, {1, 100, 2, false}, {1, 50, 30, false}};
    const auto r = strata::key_averages(ev, mem, {});
    CHECK(row(r, "outer").cpu_memory_usage == 33);
    CHECK(row(r, "a").cpu_memory_usage == 30);
    CHECK(row(r, "b").cpu_memory_usage == 30);
    CHECK(row(r, "outer").self_cpu_memory_usage == 33 - 60);  // torch's figure: counted in both
  }
  SUBCASE("a child merged into its same-named parent leaves the parent its whole interval") {
    const std::vector<op_event> ev = {op("f", 0, 100), op("f", 10, 90), op("g", 20, 30)};
    const std::vector<memory_event> mem = {{1, 5, 100, false}, {1, 15, 10, false}, {1, 25, 1, false}};
    const auto r = strata::key_averages(ev, mem, {});
    CHECK(row(r, "f").count == 1);
    CHECK(row(r, "f").cpu_memory_usage == 111);
    CHECK(row(r, "f").self_cpu_memory_usage == 110);
    CHECK(row(r, "g").self_cpu_memory_usage == 1);
  }
  SUBCASE("a step holds its thread's memory; its self is what no top-level op of the thread holds") {
    std::vector<op_event> ev = {op("mm", 10, 50)};
    op_event step = op("ProfilerStep#1", 0, 100, 9);
    step.steps_of = 1;
    ev.push_back(step);
    const std::vector<memory_event> mem = {{1, 20, 64, false}, {1, 70, 8, false}, {1, 70, 4, true},
                                           {1, 150, 1, false}};
    const auto r = strata::key_averages(ev, mem, {});
    CHECK(row(r, "ProfilerStep*").cpu_memory_usage == 72);
    CHECK(row(r, "ProfilerStep*").self_cpu_memory_usage == 8);
    CHECK(row(r, "ProfilerStep*").device_memory_usage == 4);
    CHECK(row(r, "ProfilerStep*").self_device_memory_usage == 4);
    CHECK(row(r, "mm").self_cpu_memory_usage == 64);
    CHECK(row(r, "[memory]").count == 1);  // t = 150: after the step
    CHECK(row(r, "[memory]").cpu_memory_usage == 1);
  }
}

TEST_CASE("flops: summed per row over its events") {
  const std::vector<op_event> ev = {op("mm", 0, 10, 1, 1000), op("mm", 20, 30, 1, 24), op("relu", 40, 50)};
  const auto a = strata::key_averages(ev, {}, {.with_flops = true});
  CHECK(a.with_flops);
  CHECK(row(a, "mm").flops == 1024);
  CHECK(row(a, "relu").flops == 0);
}

TEST_CASE("table: torch's memory formatting and FLOPs units") {
  using strata::detail::format_memory;
  CHECK(format_memory(0) == "0 b");
  CHECK(format_memory(300) == "300 b");
  CHECK(format_memory(-4) == "-4 b");
  CHECK(format_memory(1023) == "1023 b");
  CHECK(format_memory(1024) == "1.00 Kb");
  CHECK(format_memory(-1024) == "-1.00 Kb");
  CHECK(format_memory(983040) == "960.00 Kb");
  CHECK(format_memory(-982016) == "-959.00 Kb");
  CHECK(format_memory(1048575) == "1024.00 Kb");
  CHECK(format_memory(1048576) == "1.00 Mb");
  CHECK(format_memory(1073741823) == "1024.00 Mb");
  CHECK(format_memory(-1073741824) == "-1.00 Gb");
  CHECK(format_memory(5368709121) == "5.00 Gb");
  using strata::detail::flops_unit_of;
  CHECK(flops_unit_of(1).header == "FLOPs");
  CHECK(flops_unit_of(999).header == "FLOPs");
  CHECK(flops_unit_of(1000).header == "KFLOPs");
  CHECK(flops_unit_of(999999).header == "KFLOPs");
  CHECK(flops_unit_of(125829120).header == "MFLOPs");
  CHECK(flops_unit_of(1000000000000000ull).header == "PFLOPs");
  CHECK(flops_unit_of(1000000000000000000ull).header == "PFLOPs");  // no unit past PFLOPs
  CHECK(flops_unit_of(125829120).scale == doctest::Approx(1e-6));
}

TEST_CASE("table: the memory and FLOPs columns are torch's, text for text") {
  // tests/data/torch/memory.*: the ops and [memory] events of make_fixtures.py (microseconds,
  // one thread), and the tables torch 1.13.1 printed for them with profile_memory and
  // with_flops, sorted by each key.
  constexpr std::int64_t us = 1000;
  constexpr std::uint64_t linear_flops = 2ull * 480 * 256 * 512;
  const std::vector<op_event> ev = {
      op("aten::linear", 10 * us, 110 * us),    op("aten::t", 12 * us, 18 * us),
      op("aten::transpose", 13 * us, 17 * us),  op("aten::as_strided", 14 * us, 15 * us),
      op("aten::addmm", 20 * us, 100 * us, 1, linear_flops),
      op("aten::expand", 24 * us, 26 * us),     op("aten::copy_", 30 * us, 60 * us),
      op("aten::gelu", 120 * us, 150 * us),     op("aten::linear", 160 * us, 260 * us),
      op("aten::t", 162 * us, 168 * us),        op("aten::transpose", 163 * us, 167 * us),
      op("aten::addmm", 170 * us, 250 * us, 1, linear_flops),
      op("aten::copy_", 180 * us, 200 * us)};
  const std::vector<memory_event> mem = {
      {1, 5 * us, 1024, false},     {1, 12 * us, 300, false},     {1, 22 * us, 983040, false},
      {1, 70 * us, 2048, true},     {1, 125 * us, 983040, false}, {1, 172 * us, 491520, false},
      {1, 255 * us, -983040, false}, {1, 270 * us, -983040, false}, {1, 280 * us, -2048, true}};
  const auto a = strata::key_averages(ev, mem, {.device_name = "CUDA", .profile_memory = true, .with_flops = true});
  for (const char* key : {"self_cpu_memory_usage", "cpu_memory_usage", "self_cuda_memory_usage",
                          "cuda_memory_usage", "flops", "count"}) {
    CAPTURE(key);
    CHECK(a.table({.sort_by = key, .row_limit = -1}) == read_fixture(std::string("memory.") + key + ".txt"));
  }
  // The device aliases of the sort keys.
  CHECK(a.table({.sort_by = "self_device_memory_usage", .row_limit = -1}) ==
        a.table({.sort_by = "self_cuda_memory_usage", .row_limit = -1}));
  CHECK(a.table({.sort_by = "neuron_memory_usage", .row_limit = -1}) ==
        a.table({.sort_by = "cuda_memory_usage", .row_limit = -1}));

  // Without the options, the columns are not printed, though the rows hold the figures.
  strata::averages off = a;
  off.profile_memory = false;
  off.with_flops = false;
  const std::string text = off.table();
  CHECK(text.find("CPU Mem") == std::string::npos);
  CHECK(text.find("FLOPs") == std::string::npos);
  CHECK(row(off, "aten::addmm").flops == 2 * linear_flops);
}

TEST_CASE("table: when torch leaves the device memory and FLOPs columns out") {
  // Device memory columns need a row with self device memory > 0; the FLOPs column a row with
  // FLOPs. A row without any prints "--". (The same events in microseconds through torch's
  // _parse_kineto_results and table() print this text.)
  const std::vector<op_event> ev = {op("mm", 0, 1000, 1, 999), op("relu", 2000, 3000)};
  const std::vector<memory_event> mem = {{1, 500, -64, true}, {1, 2500, 2048, false}};
  const auto a = strata::key_averages(ev, mem, {.profile_memory = true, .with_flops = true});
  const std::string want =
      "--------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
      "    Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg       CPU Mem  Self CPU Mem    # of Calls   Total FLOPs  \n"
      "--------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
      "      mm        50.00%       1.000us        50.00%       1.000us       1.000us           0 b           0 b             1       999.000  \n"
      "    relu        50.00%       1.000us        50.00%       1.000us       1.000us       2.00 Kb       2.00 Kb             1            --  \n"
      "--------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
      "Self CPU time total: 2.000us\n";
  CHECK(a.table() == want);
  // No FLOPs anywhere: no column, with_flops or not.
  const auto none = strata::key_averages(std::vector<op_event>{op("relu", 0, 10)}, {}, {.with_flops = true});
  CHECK(none.table().find("FLOPs") == std::string::npos);
}

TEST_CASE("csv and json: the memory and FLOPs fields") {
  const std::vector<op_event> ev = {op("mm", 0, 1000, 1, 4096)};
  const std::vector<memory_event> mem = {{1, 10, 512, false}, {1, 20, -128, true}};
  const auto a = strata::key_averages(ev, mem, {.profile_memory = true});
  const std::string csv = a.to_csv();
  CHECK(csv.substr(0, csv.find('\n')).ends_with(",Top Level,CPU Mem,Self CPU Mem,NEURON Mem,Self NEURON Mem,Total FLOPs,Device Bytes,TFLOP/s,MFU %,MBU %"));
  CHECK(csv.find(",1,0,1,512,512,-128,-128,4096,0,,,\n") != std::string::npos);
  const std::string json = a.to_json();
  CHECK(json.find("\"profile_memory\":true,\"with_flops\":false") != std::string::npos);
  CHECK(json.find("\"cpu_memory_usage\":512,\"self_cpu_memory_usage\":512,\"device_memory_usage\":-128,"
                  "\"self_device_memory_usage\":-128,\"flops\":4096,") != std::string::npos);
}

}  // namespace test_memory_flops
