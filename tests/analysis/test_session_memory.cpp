// A session's own memory events: frees paired with their allocations (across threads too),
// unpaired frees counted, totals and peaks per device, leaks, the memory columns of the
// session's key_averages (torch's rule: the innermost op open on the thread), the Chrome
// trace's [memory] instants and counters, and export_memory_timeline. Every figure below is
// worked out by hand from the program in `run_program`.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "strata/analysis/key_averages.hpp"
#include "strata/analysis/memory.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/profiler.hpp"
#include "strata/strata.hpp"
#include "support.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_session_memory {

namespace {

using strata::device_type;
using strata::layer;

alignas(64) char host_a[512], host_b[2048], host_c[64], host_e[4096], never_allocated[16];
alignas(64) char neuron_d[8192];

/// The program, with what each op allocates (CPU unless said):
///   aten::linear {                                      total 1000, self 0; NEURON 4096, self 0
///     aten::empty { alloc a 300 }                       300, self 300
///     aten::addmm { reserve NEURON:0 1 MiB; alloc b 1000; alloc NEURON:0 d 4096;
///                   free a (-300); free never_allocated (unpaired) }   700, self 700; NEURON 4096
///   }
///   free b (-1000); alloc c 50 (a leak)                 [memory]: -950, 2 calls
///   thread 2: producer { alloc e 2000 }                 2000
///   consumer { free e (-2000) }                         -2000
/// CPU allocated over time: 300 1300 1000 0 50 2050 50 (peak 2050, in producer);
/// NEURON:0: 4096 (peak, in aten::addmm), reserved 1 MiB; leaks: d (4096 on NEURON:0), c (50).
strata::profiler& run_program(strata::profiler& prof) {
  using strata_test::let_time_pass;  // between events whose order in time the figures rely on
  prof.start();
  {
    STRATA_SCOPE_LAYER(layer::framework, "aten::linear");
    {
      STRATA_SCOPE_LAYER(layer::framework, "aten::empty");
      let_time_pass();
      STRATA_ALLOC(host_a, 300);
      let_time_pass();
    }
    {
      STRATA_SCOPE_LAYER(layer::framework, "aten::addmm");
      let_time_pass();
      STRATA_RESERVE(device_type::neuron, 0, 1 << 20);
      let_time_pass();
      STRATA_ALLOC(host_b, 1000);
      let_time_pass();
      STRATA_ALLOC_DEVICE(device_type::neuron, 0, neuron_d, 4096);
      let_time_pass();
      STRATA_FREE(host_a);
      let_time_pass();
      STRATA_FREE(never_allocated);
      let_time_pass();
    }
  }
  let_time_pass();
  STRATA_FREE(host_b);
  let_time_pass();
  STRATA_ALLOC(host_c, 50);
  let_time_pass();
  std::thread producer([] {
    STRATA_SCOPE_LAYER(layer::framework, "producer");
    let_time_pass();
    STRATA_ALLOC(host_e, 2000);
    let_time_pass();
  });
  producer.join();
  {
    STRATA_SCOPE_LAYER(layer::framework, "consumer");
    let_time_pass();
    STRATA_FREE(host_e);
    let_time_pass();
  }
  prof.stop();
  return prof;
}

strata::profiler_config memory_config(const strata_test::temp_dir& dir) {
  strata::profiler_config c = strata_test::config_in(dir);
  c.profile_memory = true;
  return c;
}

const strata::average_row& row(const strata::averages& a, std::string_view name) {
  for (const auto& r : a.rows)
    if (r.name == name) return r;
  FAIL("no row " << name);
  return a.rows.front();
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t count_of(std::string_view text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::uint64_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

}  // namespace

TEST_CASE("session memory: frees paired by address, across threads; totals, peaks and leaks") {
  strata_test::temp_dir dir("session-memory");
  strata::profiler prof(memory_config(dir));
  const strata::memory_profile m = strata::read_memory(run_program(prof).data());

  CHECK(m.unpaired_frees == 1);
  // reserve, alloc a, b, d, free a, free b, alloc c, alloc e, free e: the unpaired free is left out
  REQUIRE(m.events.size() == 9);
  std::vector<std::int64_t> cpu_totals, bytes;
  for (const auto& e : m.events) {
    if (e.device.type == device_type::cpu) cpu_totals.push_back(e.total_allocated);
    bytes.push_back(e.bytes);
  }
  CHECK(cpu_totals == std::vector<std::int64_t>{300, 1300, 1000, 0, 50, 2050, 50});
  CHECK(bytes == std::vector<std::int64_t>{300, 1 << 20, 1000, 4096, -300, -1000, 50, 2000, -2000});
  // The free of e, on another thread than its allocation, has its size.
  CHECK(m.events.back().address == addr(host_e));
  CHECK(m.events.back().track != m.events[m.events.size() - 2].track);
  // The NEURON allocation sees the reservation made before it.
  CHECK(m.events[3].device.type == device_type::neuron);
  CHECK(m.events[3].total_reserved == (1 << 20));
  CHECK(m.events[3].total_allocated == 4096);

  REQUIRE(m.devices.size() == 2);
  CHECK(m.devices[0].device.type == device_type::cpu);
  CHECK(m.devices[0].peak_allocated == 2050);
  CHECK(m.devices[0].op_at_peak == "producer");
  CHECK(m.devices[0].allocated_at_end == 50);
  CHECK(m.devices[1].device.type == device_type::neuron);
  CHECK(m.devices[1].device.index == 0);
  CHECK(m.devices[1].peak_allocated == 4096);
  CHECK(m.devices[1].op_at_peak == "aten::addmm");
  CHECK(m.devices[1].peak_reserved == (1 << 20));

  REQUIRE(m.leaks.size() == 2);
  CHECK(m.leaks[0].address == addr(neuron_d));
  CHECK(m.leaks[0].bytes == 4096);
  CHECK(m.leaks[1].address == addr(host_c));
  CHECK(m.leaks[1].bytes == 50);
  CHECK(m.leaked_bytes() == 4146);
}

TEST_CASE("session memory: key_averages gives torch's memory columns") {
  strata_test::temp_dir dir("session-memory-table");
  strata::profiler prof(memory_config(dir));
  run_program(prof);
  // profile_memory in the config: the profiler's table has the columns without being asked.
  const strata::averages a = prof.key_averages();
  CHECK(a.profile_memory);
  CHECK(row(a, "aten::linear").cpu_memory_usage == 1000);
  CHECK(row(a, "aten::linear").self_cpu_memory_usage == 0);
  CHECK(row(a, "aten::linear").device_memory_usage == 4096);
  CHECK(row(a, "aten::linear").self_device_memory_usage == 0);
  CHECK(row(a, "aten::empty").cpu_memory_usage == 300);
  CHECK(row(a, "aten::empty").self_cpu_memory_usage == 300);
  CHECK(row(a, "aten::addmm").cpu_memory_usage == 700);
  CHECK(row(a, "aten::addmm").self_cpu_memory_usage == 700);
  CHECK(row(a, "aten::addmm").device_memory_usage == 4096);
  CHECK(row(a, "aten::addmm").self_device_memory_usage == 4096);
  CHECK(row(a, "producer").self_cpu_memory_usage == 2000);
  CHECK(row(a, "consumer").self_cpu_memory_usage == -2000);
  CHECK(row(a, "[memory]").count == 2);
  CHECK(row(a, "[memory]").cpu_memory_usage == -950);
  CHECK(row(a, "[memory]").self_cpu_memory_usage == -950);
  const std::string table = a.table();
  CHECK(table.find("Self CPU Mem") != std::string::npos);
  CHECK(table.find("Self NEURON Mem") != std::string::npos);
  CHECK(table.find("[memory]") != std::string::npos);

  // The same events as op_events and memory_events give the same rows (the streaming reader
  // and the op_event version follow one rule).
  const strata::trace_data& data = prof.data();
  std::vector<strata::op_event> ops;
  for (std::size_t t = 0; t < data.threads.size(); ++t)
    for (const auto& r : data.threads[t].records)
      if (r.kind() == strata::record_kind::scope)
        ops.push_back({r.site->name, r.layer(), t, data.ns_of(data.threads[t], r.begin), data.ns_of(data.threads[t], r.end)});
  std::vector<strata::memory_event> mem;
  for (const auto& e : strata::read_memory(data).events)
    if (e.op != strata::memory_op::reserve)
      mem.push_back({e.track, e.ns, e.bytes, !strata::is_host_memory(e.device.type)});
  const strata::averages b = strata::key_averages(ops, mem, {.profile_memory = true});
  for (const char* name : {"aten::linear", "aten::empty", "aten::addmm", "producer", "consumer", "[memory]"}) {
    CAPTURE(name);
    CHECK(row(b, name).cpu_memory_usage == row(a, name).cpu_memory_usage);
    CHECK(row(b, name).self_cpu_memory_usage == row(a, name).self_cpu_memory_usage);
    CHECK(row(b, name).device_memory_usage == row(a, name).device_memory_usage);
    CHECK(row(b, name).count == row(a, name).count);
  }

  SUBCASE("without profile_memory the columns stay empty") {
    const strata::averages plain = strata::key_averages(data);
    CHECK_FALSE(plain.profile_memory);
    CHECK(row(plain, "aten::addmm").cpu_memory_usage == 0);
    for (const auto& r : plain.rows) CHECK(r.name != "[memory]");
  }
}

TEST_CASE("session memory: a step holds the memory its ops do not") {
  strata_test::temp_dir dir("session-memory-steps");
  strata::profiler_config c = memory_config(dir);
  c.schedule = strata::schedule{.wait = 0, .warmup = 0, .active = 2, .repeat = 1};
  c.on_trace_ready = [](strata::profiler&) {};
  strata::profiler prof(c);
  prof.start();
  for (int i = 0; i < 2; ++i) {
    {
      STRATA_SCOPE_LAYER(layer::framework, "aten::mul");
      strata_test::let_time_pass();
      STRATA_ALLOC(host_a + i, 64);
      strata_test::let_time_pass();
    }
    strata_test::let_time_pass();
    STRATA_ALLOC(host_b + i, 8);  // in the step, in no op
    strata_test::let_time_pass();
    prof.step();
  }
  prof.stop();
  const strata::averages a = prof.key_averages();
  CHECK(row(a, "aten::mul").cpu_memory_usage == 128);
  // Each step (folded into torch's ProfilerStep* row): its op's 64 and its own 8.
  CHECK(row(a, "ProfilerStep*").cpu_memory_usage == 144);
  CHECK(row(a, "ProfilerStep*").self_cpu_memory_usage == 16);
  for (const auto& r : a.rows) CHECK(r.name != "[memory]");
}

TEST_CASE("session memory: the Chrome trace's [memory] instants, counters and leaks") {
  strata_test::temp_dir dir("session-memory-chrome");
  strata::profiler prof(memory_config(dir));
  run_program(prof);
  const std::string text = slurp(prof.export_chrome_trace(dir / "trace.json").path);
  CHECK(count_of(text, "\"name\":\"[memory]\"") == 8);  // the reservation is a counter only
  CHECK(count_of(text, "\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\"") == 8);
  CHECK(text.find("\"args\":{\"Device Type\":0,\"Device Id\":-1,\"Addr\":" + std::to_string(addr(host_a)) +
                  ",\"Bytes\":-300,\"Total Allocated\":1000,\"Total Reserved\":0}") != std::string::npos);
  CHECK(text.find("\"args\":{\"Device Type\":20,\"Device Id\":0,\"Addr\":" + std::to_string(addr(neuron_d)) +
                  ",\"Bytes\":4096,\"Total Allocated\":4096,\"Total Reserved\":1048576}") != std::string::npos);
  CHECK(count_of(text, "\"name\":\"Allocated CPU\"") == 7);
  CHECK(count_of(text, "\"name\":\"Allocated NEURON:0\"") == 1);
  CHECK(count_of(text, "\"name\":\"Reserved NEURON:0\"") == 1);
  CHECK(text.find("\"memory_events\":9,\"memory_unpaired_frees\":1,\"memory_leaks\":2,\"memory_leaked_bytes\":4146") !=
        std::string::npos);
  CHECK(text.find("\"strataMemoryLeaks\":[{\"Device Type\":20,\"Device Id\":0,\"Addr\":" + std::to_string(addr(neuron_d)) +
                  ",\"Bytes\":4096,") != std::string::npos);
}

TEST_CASE("session memory: export_memory_timeline") {
  strata_test::temp_dir dir("session-memory-timeline");
  strata::profiler prof(memory_config(dir));
  run_program(prof);
  const std::vector<std::string> rows = {"300,0,0,0",          "300,0,0,1048576",    "1300,0,0,1048576",
                                         "1300,0,4096,1048576", "1000,0,4096,1048576", "0,0,4096,1048576",
                                         "50,0,4096,1048576",   "2050,0,4096,1048576", "50,0,4096,1048576"};
  SUBCASE("csv: a header, then the allocated and reserved bytes of each device per time") {
    const auto written = prof.export_memory_timeline((dir / "memory.csv").string());
    CHECK(written.events == 9);
    std::istringstream in(slurp(dir / "memory.csv"));
    std::string line;
    std::getline(in, line);
    CHECK(line == "time_ns,CPU allocated,CPU reserved,NEURON:0 allocated,NEURON:0 reserved");
    std::vector<std::string> got;
    std::int64_t last = 0;
    while (std::getline(in, line)) {
      const auto comma = line.find(',');
      const std::int64_t t = std::stoll(line.substr(0, comma));
      CHECK(t >= last);
      last = t;
      got.push_back(line.substr(comma + 1));
    }
    CHECK(got == rows);
    const std::string peak = slurp(dir / "memory.csv.peak.json");
    CHECK(peak.find("{\"device\":\"CPU\",\"device_type\":0,\"device_index\":-1,\"peak_allocated\":2050,") != std::string::npos);
    CHECK(peak.find("\"op_at_peak\":\"producer\"") != std::string::npos);
    CHECK(peak.find("\"op_at_peak\":\"aten::addmm\",\"peak_reserved\":1048576") != std::string::npos);
    CHECK(peak.find("\"unpaired_frees\":1}") != std::string::npos);
  }
  SUBCASE("json: torch's [times, sizes] shape") {
    prof.export_memory_timeline((dir / "memory.json").string());
    const std::string text = slurp(dir / "memory.json");
    REQUIRE(text.size() > 4);
    CHECK(text.substr(0, 2) == "[[");
    std::string sizes;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::string r = rows[i];
      for (std::size_t at = r.find(','); at != std::string::npos; at = r.find(',', at + 2)) r.replace(at, 1, ", ");
      sizes += (i == 0 ? "[" : ", [") + r + "]";
    }
    CHECK(text.find("], [" + sizes + "]]\n") != std::string::npos);
  }
  SUBCASE("a bad path: a clear error, nothing left behind") {
    CHECK_THROWS_AS(prof.export_memory_timeline((dir / "no-such-dir" / "memory.json").string()), strata::error);
    CHECK_THROWS_WITH_AS(prof.export_memory_timeline((dir / "memory.txt").string()),
                         doctest::Contains("use a name ending in .json or .csv"), strata::error);
    CHECK_FALSE(std::filesystem::exists(dir / "memory.txt"));
    CHECK_FALSE(std::filesystem::exists(dir / "no-such-dir"));
  }
}

}  // namespace test_session_memory
