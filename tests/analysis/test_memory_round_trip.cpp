// A session's memory events through its Chrome trace and back (strata-report's reader): the
// [memory] instants strata writes give the same memory columns as the session's own table.
#include <doctest/doctest.h>

#include <string>
#include <thread>

#include "strata/analysis/key_averages.hpp"
#include "strata/profiler.hpp"
#include "strata/strata.hpp"
#include "report/trace_reader.hpp"
#include "support.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_memory_round_trip {

namespace {

alignas(64) char block_a[256], block_b[256], block_c[256], device_block[1024];

}  // namespace

TEST_CASE("memory round trip: strata's trace read back gives the session's memory columns") {
  strata_test::temp_dir dir("memory-round-trip");
  strata::profiler_config c = strata_test::config_in(dir);
  c.profile_memory = true;
  strata::profiler prof(c);
  prof.start();
  using strata_test::let_time_pass;  // between events whose order in time the figures rely on
  {
    STRATA_SCOPE_LAYER(strata::layer::framework, "aten::conv2d");
    {
      STRATA_SCOPE_LAYER(strata::layer::framework, "aten::empty");
      let_time_pass();
      STRATA_ALLOC(block_a, 200);
      STRATA_ALLOC_DEVICE(strata::device_type::neuron, 0, device_block, 1000);
      let_time_pass();
    }
    let_time_pass();
    STRATA_ALLOC(block_b, 30);
    STRATA_FREE(block_a);
    let_time_pass();
  }
  std::thread other([] {
    STRATA_SCOPE_LAYER(strata::layer::framework, "aten::relu");
    let_time_pass();
    STRATA_ALLOC(block_c, 7);
    STRATA_FREE_DEVICE(strata::device_type::neuron, 0, device_block);
    let_time_pass();
  });
  other.join();
  let_time_pass();
  STRATA_FREE(block_b);
  prof.stop();
  const strata::averages own = prof.key_averages();
  const auto saved = strata::report::read_trace(prof.export_chrome_trace((dir / "trace.json").string()).path);
  CHECK(saved.memory.size() == 7);
  const strata::averages read = strata::report::key_averages(saved);
  CHECK(read.profile_memory);
  for (const char* name : {"aten::conv2d", "aten::empty", "aten::relu", "[memory]"}) {
    CAPTURE(name);
    const strata::average_row* a = nullptr;
    const strata::average_row* b = nullptr;
    for (const auto& r : own.rows)
      if (r.name == name) a = &r;
    for (const auto& r : read.rows)
      if (r.name == name) b = &r;
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    CHECK(a->count == b->count);
    CHECK(a->cpu_memory_usage == b->cpu_memory_usage);
    CHECK(a->self_cpu_memory_usage == b->self_cpu_memory_usage);
    CHECK(a->device_memory_usage == b->device_memory_usage);
    CHECK(a->self_device_memory_usage == b->self_device_memory_usage);
  }
  // By hand: conv2d holds 200 + 30 - 200 on the host and 1000 on NEURON:0; relu 7 and -1000.
  for (const auto& r : read.rows) {
    if (r.name == "aten::conv2d") {
      CHECK(r.cpu_memory_usage == 30);
      CHECK(r.self_cpu_memory_usage == -170);
      CHECK(r.device_memory_usage == 1000);
    }
    if (r.name == "aten::relu") {
      CHECK(r.cpu_memory_usage == 7);
      CHECK(r.device_memory_usage == -1000);
    }
    if (r.name == "[memory]") CHECK(r.cpu_memory_usage == -30);
  }
  // The table prints the memory columns of both.
  CHECK(own.table().find("Self NEURON Mem") != std::string::npos);
  CHECK(read.table().find("Self NEURON Mem") != std::string::npos);
}

}  // namespace test_memory_round_trip
