// sim/scheduler.hpp through sim/kernel.hpp: engines run in parallel, each in issue order, and
// wait on data dependencies; timelines are deterministic. Expected times are built from the
// cost model's rules (docs/simulator.md), never from a clock.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "strata/sim/neuron_core.hpp"

namespace sim = strata::sim;

namespace {

constexpr auto v2 = sim::params_for(sim::core_generation::trn1);

std::int64_t ps(std::uint64_t cycles, std::uint32_t mhz) { return sim::cycles_to_ps(cycles, mhz); }

bool depends(const sim::executed_instruction& i, std::uint32_t on) {
  return std::find(i.depends_on.begin(), i.depends_on.end(), on) != i.depends_on.end();
}

const sim::engine_id tensor{sim::engine_kind::tensor, 0};
const sim::engine_id vector{sim::engine_kind::vector, 0};
const sim::engine_id scalar{sim::engine_kind::scalar, 0};
const sim::engine_id gpsimd{sim::engine_kind::gpsimd, 0};

}  // namespace

TEST_CASE("timing: an independent Vector op overlaps a matmul, a dependent one waits for it") {
  sim::neuron_core core{sim::core_generation::trn1};
  const auto ex = core.run("overlap", [&](sim::kernel& k) {
    auto st = k.memset(128, 128, 1.0f);         // 0: GpSimd
    auto mv = k.memset(128, 512, 1.0f);         // 1: GpSimd
    auto v = k.memset(128, 512, 3.0f);          // 2: GpSimd
    auto mm = k.matmul(st, mv);                 // 3: Tensor, needs 0 and 1
    auto x = k.tensor_scalar(v, sim::alu::multiply, 2.0f);  // 4: Vector, needs 2 only
    auto y = k.activation(mm, sim::act::identity);          // 5: Scalar, needs 3
  });
  REQUIRE(ex.instructions.size() == 6);
  const auto& i = ex.instructions;
  // GpSimd runs the three memsets back to back.
  CHECK(i[0].engine == gpsimd);
  CHECK(i[0].start_ps == 0);
  CHECK(i[0].end_ps == ps(128, 1400));
  CHECK(i[1].start_ps == i[0].end_ps);
  CHECK(i[1].end_ps == i[1].start_ps + ps(512, 1400));
  CHECK(i[2].start_ps == i[1].end_ps);
  // The matmul (fp32: 4 x 512 Tensor cycles) starts when its moving tile is written.
  CHECK(i[3].engine == tensor);
  CHECK(i[3].name == "matmul");
  CHECK(i[3].cycles == 2048);
  CHECK(i[3].start_ps == i[1].end_ps);
  CHECK(i[3].end_ps == i[3].start_ps + ps(2048, 2800));
  CHECK(depends(i[3], 0));
  CHECK(depends(i[3], 1));
  // The independent Vector op runs during the matmul.
  CHECK(i[4].engine == vector);
  CHECK(i[4].start_ps == i[2].end_ps);
  CHECK(i[4].end_ps == i[4].start_ps + ps(512, 1120));
  CHECK(i[4].start_ps < i[3].end_ps);
  CHECK(i[4].end_ps > i[3].start_ps);
  CHECK_FALSE(depends(i[4], 3));
  // The dependent Scalar op starts exactly when the matmul ends; reading PSUM costs the bubble.
  CHECK(i[5].engine == scalar);
  CHECK(i[5].name == "activation(identity)");
  CHECK(i[5].start_ps == i[3].end_ps);
  CHECK(i[5].cycles == 512 + 60);
  CHECK(i[5].end_ps == i[5].start_ps + ps(572, 1400));
  CHECK(i[5].depends_on == std::vector<std::uint32_t>{3});
  CHECK(ex.duration_ps == i[5].end_ps);
  CHECK(ex.busy_ps_of(tensor) == ps(2048, 2800));
  CHECK(ex.busy_ps_of(gpsimd) == ps(128, 1400) + 2 * ps(512, 1400));
  CHECK(ex.busy_ps_of(sim::engine_id{sim::engine_kind::sync, 0}) == 0);
}

TEST_CASE("timing: an engine runs its instructions in issue order; a dependent one pays 100") {
  sim::neuron_core core{sim::core_generation::trn1};
  const auto ex = core.run("chain", [&](sim::kernel& k) {
    auto a = k.memset(128, 512, 1.0f);                     // 0
    auto b = k.memset(128, 512, 2.0f);                     // 1
    auto x = k.tensor_scalar(a, sim::alu::add, 1.0f);      // 2: independent of 3's input
    auto y = k.tensor_scalar(x, sim::alu::add, 1.0f);      // 3: reads 2's output
    auto z = k.tensor_scalar(b, sim::alu::add, 1.0f);      // 4: does not
  });
  const auto& i = ex.instructions;
  CHECK(i[2].cycles == 512);
  CHECK(i[3].cycles == 612);
  CHECK(i[4].cycles == 512);
  CHECK(i[3].start_ps == i[2].end_ps);
  CHECK(i[4].start_ps == i[3].end_ps);  // b was ready long before: the engine was not
  CHECK_FALSE(depends(i[4], 3));
}

TEST_CASE("timing: writing a tile waits for its readers (WAR) and previous writer (WAW)") {
  sim::neuron_core core{sim::core_generation::trn1};
  const auto ex = core.run("war", [&](sim::kernel& k) {
    auto st = k.memset(128, 128, 1.0f, sim::dtype::bf16);  // 0
    auto mv = k.memset(128, 512, 1.0f, sim::dtype::bf16);  // 1
    auto acc = k.psum_tile(128, 512);
    k.matmul(acc, st, mv);                      // 2
    auto c = k.tensor_copy(acc);                // 3: Vector reads acc
    k.matmul(acc, st, mv);                      // 4: must not overwrite acc before 3 is done
  });
  const auto& i = ex.instructions;
  CHECK(i[2].cycles == 512);  // bf16
  CHECK(i[3].start_ps == i[2].end_ps);
  CHECK(i[3].cycles == 512 + 60);
  CHECK(i[4].start_ps == i[3].end_ps);
  CHECK(depends(i[4], 3));
  CHECK(depends(i[4], 2));
}

TEST_CASE("timing: DMA queues run loads in parallel, round-robin or on the queue asked for") {
  sim::neuron_core core{sim::core_generation::trn1};
  auto x = core.alloc_hbm("x", {512, 512});
  auto y = core.alloc_hbm("y", {512, 512});
  const auto ex = core.run("dma", [&](sim::kernel& k) {
    auto a = k.load(x, {0, 0}, {128, 512});    // 0: queue 0
    auto b = k.load(x, {128, 0}, {128, 512});  // 1: queue 1
    auto c = k.load(x, {256, 0}, {128, 512}, 7);  // 2: queue 7
    k.store(y, {0, 0}, a);                     // 3: queue 2, after 0
    auto d = k.load(y, {64, 0}, {128, 512});   // 4: queue 3, reads what 3 wrote
    auto e = k.load(y, {256, 0}, {128, 512});  // 5: queue 4, region 3 did not touch
  });
  const auto& i = ex.instructions;
  const auto t = sim::dma_ps(128 * 512 * 4, v2);
  CHECK(i[0].engine == sim::engine_id::dma_queue(0));
  CHECK(i[1].engine == sim::engine_id::dma_queue(1));
  CHECK(i[2].engine == sim::engine_id::dma_queue(7));
  CHECK(i[3].engine == sim::engine_id::dma_queue(2));
  CHECK(i[4].engine == sim::engine_id::dma_queue(3));
  for (int n : {0, 1, 2}) {
    CHECK(i[n].start_ps == 0);
    CHECK(i[n].end_ps == t);
    CHECK(i[n].bytes == 128 * 512 * 4);
    CHECK(i[n].name == "load");
  }
  CHECK(i[3].name == "store");
  CHECK(i[3].start_ps == t);
  CHECK(depends(i[3], 0));
  CHECK(i[4].start_ps == i[3].end_ps);  // HBM read after write
  CHECK(depends(i[4], 3));
  CHECK(i[5].start_ps == 0);
  CHECK(i[5].depends_on.empty());
  CHECK(ex.busy_ps_of(sim::engine_id::dma_queue(7)) == t);
  CHECK(ex.busy.size() == 6);
  CHECK(ex.busy.front().engine == sim::engine_id::dma_queue(0));
}

TEST_CASE("timing: a tile waits for the space it reuses to be read for the last time") {
  sim::neuron_core core{sim::core_generation::trn1};
  // 128 x 24576 fp32 = 96 KiB per partition: two such tiles fill the 192 KiB SBUF partition.
  auto x = core.alloc_hbm("x", {128, 3 * 24576});
  auto y = core.alloc_hbm("y", {128, 3 * 24576});
  const auto ex = core.run("reuse", [&](sim::kernel& k) {
    {
      auto a = k.load(x, {0, 0}, {128, 24576});      // 0
      auto b = k.load(x, {0, 24576}, {128, 24576});  // 1
      k.store(y, {0, 0}, a);                         // 2
      k.store(y, {0, 24576}, b);                     // 3
    }
    auto c = k.load(x, {0, 2 * 24576}, {128, 24576});  // 4: needs a's or b's space
  });
  const auto& i = ex.instructions;
  CHECK(i[4].start_ps >= std::min(i[2].end_ps, i[3].end_ps));
  CHECK(i[4].start_ps > 0);
  // The SBUF counter never exceeds the capacity.
  for (const auto& s : ex.counter(sim::counter_names::sbuf_used))
    CHECK(s.value <= static_cast<double>(v2.sbuf_bytes()));
}

TEST_CASE("timing: phases nest and span the instructions issued inside them") {
  sim::neuron_core core{sim::core_generation::trn1};
  const auto ex = core.run("phases", [&](sim::kernel& k) {
    auto outer = k.phase("outer");
    auto a = k.memset(128, 512, 1.0f);  // 0
    {
      auto inner = k.phase("inner");
      auto b = k.tensor_scalar(a, sim::alu::add, 1.0f);  // 1
      auto c = k.activation(a, sim::act::exp);           // 2
    }
    { auto empty = k.phase("empty"); }
  });
  REQUIRE(ex.phases.size() == 3);
  const auto& o = ex.phases[0];
  const auto& in = ex.phases[1];
  const auto& e = ex.phases[2];
  CHECK(o.name == "outer");
  CHECK(o.depth == 0);
  CHECK(o.parent == -1);
  CHECK(o.instruction_count == 3);
  CHECK(o.start_ps == 0);
  CHECK(o.end_ps == std::max(ex.instructions[1].end_ps, ex.instructions[2].end_ps));
  CHECK(in.name == "inner");
  CHECK(in.depth == 1);
  CHECK(in.parent == 0);
  CHECK(in.instruction_count == 2);
  CHECK(in.start_ps == ex.instructions[0].end_ps);
  CHECK(in.end_ps == o.end_ps);
  CHECK(e.instruction_count == 0);
  CHECK(e.start_ps == e.end_ps);
  CHECK(e.start_ps == o.end_ps);
  CHECK(ex.instructions[0].phase == 0);
  CHECK(ex.instructions[1].phase == 1);
  CHECK(ex.instructions[2].phase == 1);
}

TEST_CASE("timing: counters sample SBUF, PSUM and HBM use and DMA bandwidth") {
  sim::neuron_core core{sim::core_generation::trn1};
  auto x = core.alloc_hbm("x", {128, 512});
  auto y = core.alloc_hbm("y", {128, 512});
  CHECK(core.hbm_used() == 2 * 128 * 512 * 4);
  const auto ex = core.run("counters", [&](sim::kernel& k) {
    auto t = k.load(x, {0, 0}, {128, 512});   // 0
    auto p = k.transpose(k.load(x, {0, 0}, {128, 128}));  // 1 and 2
    k.store(y, {0, 0}, t);                    // 3
  });
  const auto& i = ex.instructions;
  const auto sbuf = ex.counter(sim::counter_names::sbuf_used);
  REQUIRE(sbuf.size() >= 3);
  CHECK(sbuf.front().t_ps == 0);
  // Both loads start at 0: their tiles, over 128 partitions, from then on.
  CHECK(sbuf.front().value == (512 + 128) * 4 * 128);
  double peak = 0;
  for (const auto& s : sbuf) peak = std::max(peak, s.value);
  CHECK(peak == sbuf.front().value);
  CHECK(sbuf.back().value == 0);
  CHECK(sbuf.back().t_ps == i[3].end_ps);  // the stored tile is freed when the store ends

  const auto psum = ex.counter(sim::counter_names::psum_used);
  REQUIRE(psum.size() == 3);
  CHECK(psum[1].t_ps == i[2].start_ps);
  CHECK(psum[1].value == 2048.0 * 128);  // one whole bank
  CHECK(psum[2].value == 0);

  const auto hbm = ex.counter(sim::counter_names::hbm_used);
  REQUIRE(hbm.size() == 2);
  CHECK(hbm[0].value == 2 * 128 * 512 * 4);
  CHECK(hbm[1].t_ps == ex.duration_ps);

  const auto bw = ex.counter(sim::counter_names::dma_bandwidth);
  REQUIRE(bw.size() >= 3);
  CHECK(bw[0].t_ps == 0);
  const double one = 128.0 * 512 * 4 * 1000 / static_cast<double>(i[0].duration_ps());
  const double two = 128.0 * 128 * 4 * 1000 / static_cast<double>(i[1].duration_ps());
  CHECK(bw[0].value == doctest::Approx(one + two));
  CHECK(bw[1].t_ps == i[1].end_ps);  // the small load ends first
  CHECK(bw[1].value == doctest::Approx(one));
  CHECK(bw.back().value == 0);
  for (std::size_t n = 1; n < ex.counters.size(); ++n)
    CHECK(ex.counters[n - 1].t_ps <= ex.counters[n].t_ps);
}

namespace {

sim::execution mixed_kernel(sim::core_generation g) {
  sim::neuron_core core{g};
  std::vector<float> d(256 * 512);
  for (std::size_t n = 0; n < d.size(); ++n) d[n] = static_cast<float>(n % 97) / 97.0f;
  auto x = core.upload("x", d, {256, 512});
  auto y = core.alloc_hbm("y", {256, 512});
  return core.run("mixed", [&](sim::kernel& k) {
    for (std::size_t r0 = 0; r0 < 256; r0 += 128) {
      auto ph = k.phase("block");
      auto t = k.load(x, {r0, 0}, {128, 512});
      auto w = k.load(x, {r0, 0}, {128, 128});
      auto p = k.matmul(w, t);
      auto s = k.activation(p, sim::act::gelu, 0.5f);
      auto m = k.reduce(s, sim::alu::max);
      k.store(y, {r0, 0}, k.tensor_scalar(s, sim::alu::subtract, m));
    }
  });
}

}  // namespace

TEST_CASE("timing: the same kernel gives the same timeline on every run") {
  for (auto g : {sim::core_generation::trn1, sim::core_generation::trn2}) {
    const auto a = mixed_kernel(g);
    const auto b = mixed_kernel(g);
    CHECK(a.duration_ps == b.duration_ps);
    REQUIRE(a.instructions.size() == b.instructions.size());
    for (std::size_t n = 0; n < a.instructions.size(); ++n) {
      CHECK(a.instructions[n].start_ps == b.instructions[n].start_ps);
      CHECK(a.instructions[n].end_ps == b.instructions[n].end_ps);
      CHECK(a.instructions[n].engine == b.instructions[n].engine);
      CHECK(a.instructions[n].depends_on == b.instructions[n].depends_on);
    }
    REQUIRE(a.counters.size() == b.counters.size());
    for (std::size_t n = 0; n < a.counters.size(); ++n) {
      CHECK(a.counters[n].t_ps == b.counters[n].t_ps);
      CHECK(a.counters[n].value == b.counters[n].value);
    }
  }
  // Trn2's engines are clocked lower, its DMA latency is shorter: the timelines differ.
  CHECK(mixed_kernel(sim::core_generation::trn1).duration_ps !=
        mixed_kernel(sim::core_generation::trn2).duration_ps);
}
