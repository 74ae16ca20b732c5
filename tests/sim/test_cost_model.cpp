// sim/cost_model.hpp: cycles and picoseconds of single instructions, against numbers worked out
// by hand from the rules in docs/simulator.md.
#include <doctest/doctest.h>

#include "strata/sim/cost_model.hpp"
#include "strata/sim/engine.hpp"

namespace sim = strata::sim;

TEST_CASE("cost model: a matmul costs max(N, 64) Tensor cycles, 4x for fp32") {
  CHECK(sim::matmul_cycles(512, sim::dtype::bf16) == 512);
  CHECK(sim::matmul_cycles(128, sim::dtype::bf16) == 128);
  CHECK(sim::matmul_cycles(64, sim::dtype::bf16) == 64);
  CHECK(sim::matmul_cycles(1, sim::dtype::bf16) == 64);
  CHECK(sim::matmul_cycles(512, sim::dtype::fp32) == 2048);
  CHECK(sim::matmul_cycles(10, sim::dtype::fp32) == 256);
  // A transpose of a [P, F] tile is a matmul whose moving tile is a P x P identity.
  CHECK(sim::transpose_cycles(128, sim::dtype::bf16) == 128);
  CHECK(sim::transpose_cycles(32, sim::dtype::fp32) == 256);

  sim::cost_params c;
  c.matmul_min_cycles = 100;
  c.fp32_matmul_factor = 2;
  CHECK(sim::matmul_cycles(50, sim::dtype::fp32, c) == 200);
}

TEST_CASE("cost model: Vector/Scalar cost N per input, plus overhead and PSUM bubble") {
  sim::stream_access a;
  a.free_size = 512;
  CHECK(sim::stream_cycles(a) == 512);
  a.tensor_inputs = 2;  // tensor_tensor
  CHECK(sim::stream_cycles(a) == 1024);
  a.tensor_inputs = 1;
  a.dependent = true;  // reads what the engine's previous instruction wrote
  CHECK(sim::stream_cycles(a) == 612);
  a.dependent = false;
  a.reads_psum = true;
  CHECK(sim::stream_cycles(a) == 572);
  a.reads_psum = false;
  a.free_size = 64;  // small: below 128
  CHECK(sim::stream_cycles(a) == 164);
  a.free_size = 128;  // not small
  CHECK(sim::stream_cycles(a) == 128);
  // The overhead is charged once even when both reasons apply.
  a.free_size = 64;
  a.tensor_inputs = 2;
  a.dependent = true;
  a.reads_psum = true;
  CHECK(sim::stream_cycles(a) == 128 + 100 + 60);
}

TEST_CASE("cost model: cycles to picoseconds at the engine clock") {
  CHECK(sim::cycles_to_ps(1120, 1120) == 1000000);  // 1 us
  CHECK(sim::cycles_to_ps(1400, 1400) == 1000000);
  CHECK(sim::cycles_to_ps(512, 2800) == 182857);    // 182857.14 ps
  CHECK(sim::cycles_to_ps(2048, 2800) == 731429);   // 731428.57 ps
  CHECK(sim::cycles_to_ps(572, 1120) == 510714);    // 510714.29 ps
  CHECK(sim::cycles_to_ps(0, 1400) == 0);
}

TEST_CASE("cost model: a DMA costs fixed latency + bytes / queue bandwidth") {
  const auto v2 = sim::params_for(sim::core_generation::trn1);
  const auto v3 = sim::params_for(sim::core_generation::trn2);
  // 128 x 512 fp32 = 262144 bytes at 27 GiB/s: 2^18 / (27 * 2^30) s = 1 / 110592 s.
  CHECK(sim::dma_ps(262144, v2) == 2000000 + 9042245);
  CHECK(sim::dma_ps(262144, v3) == 600000 + 9042245);
  CHECK(sim::dma_ps(0, v2) == 2000000);
}

TEST_CASE("engine ids: track names and a stable track order") {
  CHECK(sim::engine_id{sim::engine_kind::tensor, 0}.track_name() == "Tensor");
  CHECK(sim::engine_id{sim::engine_kind::vector, 0}.track_name() == "Vector");
  CHECK(sim::engine_id{sim::engine_kind::scalar, 0}.track_name() == "Scalar");
  CHECK(sim::engine_id{sim::engine_kind::gpsimd, 0}.track_name() == "GpSimd");
  CHECK(sim::engine_id{sim::engine_kind::sync, 0}.track_name() == "Sync");
  CHECK(sim::engine_id::dma_queue(3).track_name() == "DMA queue 3");
  CHECK(sim::engine_id{sim::engine_kind::tensor, 0}.track_index() == 0);
  CHECK(sim::engine_id{sim::engine_kind::sync, 0}.track_index() == 4);
  CHECK(sim::engine_id::dma_queue(0).track_index() == 5);
  CHECK(sim::engine_id::dma_queue(15).track_index() == 20);
}
