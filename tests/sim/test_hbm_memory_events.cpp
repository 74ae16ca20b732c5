// The simulator's HBM as memory events: every HBM tensor's allocation and free is a NEURON
// memory event of its core, so the recorded peak equals the core's own accounting, and an eager
// op's output counts in that op's NEURON memory.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "strata/analysis/key_averages.hpp"
#include "strata/analysis/memory.hpp"
#include "strata/profiler.hpp"
#include "strata/sim.hpp"
#include "support.hpp"

namespace sim = strata::sim;

namespace {

strata::profiler_config memory_config(const strata_test::temp_dir& dir) {
  strata::profiler_config c = strata_test::config_in(dir);
  c.profile_memory = true;
  return c;
}

const strata::device_memory* neuron(const strata::memory_profile& m, int index) {
  for (const auto& d : m.devices)
    if (d.device.type == strata::device_type::neuron && d.device.index == index) return &d;
  return nullptr;
}

}  // namespace

TEST_CASE("sim HBM: the recorded peak is the core's own") {
  strata_test::temp_dir dir("sim-hbm-memory");
  strata::profiler prof(memory_config(dir));
  prof.start();
  std::uint64_t core_peak = 0;
  {
    sim::neuron_core core{sim::core_generation::trn1};
    const std::vector<float> data(128 * 512, 1.0f);
    sim::hbm_tensor x = core.upload("x", data, {128, 512});           // 256 KiB
    std::optional<sim::hbm_tensor> tmp = core.alloc_hbm("tmp", {128, 1024});  // 512 KiB
    tmp.reset();                                                     // back to 256 KiB
    sim::hbm_tensor y = core.alloc_hbm("y", {128, 512});              // 512 KiB
    core.run("relu", [&](sim::kernel& k) {
      k.store(y, {0, 0}, k.activation(k.load(x, {0, 0}, {128, 512}), sim::act::relu));
    });
    core_peak = core.hbm_peak();
    CHECK(core.memory_index() == 0);
  }
  prof.stop();
  CHECK(core_peak == 768 * 1024);
  const strata::memory_profile m = strata::read_memory(prof.data());
  const strata::device_memory* d = neuron(m, 0);
  REQUIRE(d != nullptr);
  CHECK(d->peak_allocated == static_cast<std::int64_t>(core_peak));
  CHECK(d->allocated_at_end == 0);  // every tensor went with the core
  CHECK(m.leaks.empty());
  CHECK(m.unpaired_frees == 0);
  CHECK(m.events.size() == 6);
}

TEST_CASE("sim HBM: a runtime's cores are NEURON:<core>, its trial compiles record nothing") {
  strata_test::temp_dir dir("sim-hbm-runtime");
  strata::profiler prof(memory_config(dir));
  prof.start();
  std::uint64_t peak1 = 0;
  {
    sim::runtime rt({.cores = 2});
    const sim::device dev{&rt, 1};
    const std::vector<float> data(128 * 256, 2.0f);
    const sim::tensor a = sim::tensor::from_host(dev, data, {128, 256});
    const sim::tensor b = sim::tensor::from_host(dev, data, {128, 256});
    const sim::tensor c = sim::add(a, b);
    CHECK(c.to_host()[0] == 4.0f);
    rt.synchronize();
    peak1 = rt.hbm_peak(1);
    CHECK(rt.hbm_peak(0) == 0);
  }
  prof.stop();
  const strata::memory_profile m = strata::read_memory(prof.data());
  for (const auto& e : m.events) CHECK(e.device.index == 1);
  const strata::device_memory* d = neuron(m, 1);
  REQUIRE(d != nullptr);
  CHECK(d->peak_allocated == static_cast<std::int64_t>(peak1));
  CHECK(d->peak_allocated == 3 * 128 * 256 * 4);
  // The output is allocated by the eager op: its NEURON memory.
  const strata::averages table = prof.key_averages();
  for (const auto& r : table.rows)
    if (r.name == "aten::add") CHECK(r.device_memory_usage == 128 * 256 * 4);
}
