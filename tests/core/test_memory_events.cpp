// Memory events on the record path: the packing of a memory record, recorded only when the
// session profiles memory and captures the layer, through the macros and the C API.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "strata/profiler.hpp"
#include "strata/strata.h"
#include "strata/strata.hpp"
#include "support.hpp"

namespace {

std::vector<strata::record> memory_records(const strata::trace_data& data) {
  std::vector<strata::record> out;
  for (const auto& t : data.threads)
    for (const auto& r : t.records)
      if (r.kind() == strata::record_kind::memory) out.push_back(r);
  return out;
}

}  // namespace

TEST_CASE("memory fields: what a memory record's payload packs") {
  using strata::memory_fields;
  SUBCASE("an allocation on a Neuron core") {
    const memory_fields f{strata::memory_op::alloc, {strata::device_type::neuron, 3}, 123456789};
    const memory_fields back = memory_fields::unpack(f.pack());
    CHECK(back.op == strata::memory_op::alloc);
    CHECK(back.device.type == strata::device_type::neuron);
    CHECK(back.device.index == 3);
    CHECK(back.bytes == 123456789);
  }
  SUBCASE("host memory: device index -1; a negative reservation keeps its sign") {
    const memory_fields f{strata::memory_op::reserve, {strata::device_type::cpu, -1}, -4096};
    const memory_fields back = memory_fields::unpack(f.pack());
    CHECK(back.op == strata::memory_op::reserve);
    CHECK(back.device.type == strata::device_type::cpu);
    CHECK(back.device.index == -1);
    CHECK(back.bytes == -4096);
  }
  SUBCASE("sizes past 48 bits are clamped, never wrapped") {
    const memory_fields f{strata::memory_op::alloc, {}, std::int64_t{1} << 50};
    CHECK(memory_fields::unpack(f.pack()).bytes == memory_fields::max_bytes);
    CHECK(memory_fields::unpack(memory_fields{strata::memory_op::alloc, {}, memory_fields::max_bytes}.pack()).bytes ==
          (std::int64_t{1} << 47) - 1);
  }
  CHECK(static_cast<int>(strata::device_type::neuron) == 20);  // torch's PrivateUse1
}

TEST_CASE("memory events: recorded only when the session profiles memory") {
  strata_test::temp_dir dir("memory-events");
  alignas(64) static char arena[256];
  SUBCASE("profile_memory off: nothing") {
    strata::profiler prof(strata_test::config_in(dir));
    prof.start();
    STRATA_ALLOC(arena, 64);
    STRATA_FREE(arena);
    prof.stop();
    CHECK(memory_records(prof.data()).empty());
    CHECK_FALSE(prof.data().profile_memory);
  }
  SUBCASE("profile_memory on: one record per call, in order, with address and fields") {
    strata::profiler_config c = strata_test::config_in(dir);
    c.profile_memory = true;
    strata::profiler prof(c);
    prof.start();
    STRATA_ALLOC(arena, 64);
    STRATA_ALLOC_DEVICE(strata::device_type::neuron, 1, arena + 64, 1000);
    STRATA_RESERVE(strata::device_type::neuron, 1, 1 << 20);
    STRATA_FREE_DEVICE(strata::device_type::neuron, 1, arena + 64);
    STRATA_FREE(arena);
    prof.stop();
    CHECK(prof.data().profile_memory);
    const std::vector<strata::record> r = memory_records(prof.data());
    REQUIRE(r.size() == 5);
    CHECK(r[0].end == reinterpret_cast<std::uintptr_t>(arena));
    CHECK(r[0].memory().op == strata::memory_op::alloc);
    CHECK(r[0].memory().bytes == 64);
    CHECK(r[0].memory().device.type == strata::device_type::cpu);
    CHECK(r[0].memory().device.index == -1);
    CHECK(r[1].end == reinterpret_cast<std::uintptr_t>(arena + 64));
    CHECK(r[1].memory().device.type == strata::device_type::neuron);
    CHECK(r[1].memory().device.index == 1);
    CHECK(r[1].memory().bytes == 1000);
    CHECK(r[2].memory().op == strata::memory_op::reserve);
    CHECK(r[2].memory().bytes == (1 << 20));
    CHECK(r[3].memory().op == strata::memory_op::free);
    CHECK(r[3].memory().bytes == 0);
    CHECK(r[4].memory().op == strata::memory_op::free);
    for (std::size_t i = 1; i < r.size(); ++i) CHECK(r[i - 1].begin <= r[i].begin);
    CHECK(r[0].layer() == strata::layer::user);
  }
  SUBCASE("a layer the session does not capture: nothing") {
    strata::profiler_config c = strata_test::config_in(dir);
    c.profile_memory = true;
    c.layers = strata::layer_set{strata::layer::framework};
    strata::profiler prof(c);
    prof.start();
    STRATA_ALLOC(arena, 64);  // user layer
    strata::record_alloc(arena + 64, 32, {}, strata::layer::framework);
    prof.stop();
    const std::vector<strata::record> r = memory_records(prof.data());
    REQUIRE(r.size() == 1);
    CHECK(r[0].layer() == strata::layer::framework);
    CHECK(r[0].memory().bytes == 32);
  }
  SUBCASE("the C API") {
    strata::profiler_config c = strata_test::config_in(dir);
    c.profile_memory = true;
    strata::profiler prof(c);
    prof.start();
    strata_alloc(arena, 48);
    strata_alloc_device(STRATA_DEVICE_NEURON, 0, arena + 64, 96);
    strata_reserve_device(STRATA_DEVICE_NEURON, 0, -512);
    strata_free_device(STRATA_DEVICE_NEURON, 0, arena + 64);
    strata_free(arena);
    prof.stop();
    const std::vector<strata::record> r = memory_records(prof.data());
    REQUIRE(r.size() == 5);
    CHECK(r[0].memory().bytes == 48);
    CHECK(r[1].memory().device.type == strata::device_type::neuron);
    CHECK(r[1].memory().device.index == 0);
    CHECK(r[2].memory().bytes == -512);
    CHECK(r[3].end == reinterpret_cast<std::uintptr_t>(arena + 64));
    CHECK(r[4].memory().op == strata::memory_op::free);
  }
  SUBCASE("no session: nothing, and a later session does not see it") {
    STRATA_ALLOC(arena, 64);
    strata::profiler_config c = strata_test::config_in(dir);
    c.profile_memory = true;
    strata::profiler prof(c);
    prof.start();
    prof.stop();
    CHECK(memory_records(prof.data()).empty());
  }
}
