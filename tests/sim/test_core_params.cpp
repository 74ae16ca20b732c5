// sim/core_params.hpp: the figures of both generations (sources: docs/simulator.md).
#include <doctest/doctest.h>

#include "strata/sim/core_params.hpp"

namespace sim = strata::sim;

TEST_CASE("core_params: NeuronCore-v2 (trn1) figures") {
  constexpr auto p = sim::params_for(sim::core_generation::trn1);
  CHECK(p.core_name == "NeuronCore-v2");
  CHECK(p.tensor_mhz == 2800);
  CHECK(p.vector_mhz == 1120);
  CHECK(p.scalar_mhz == 1400);
  CHECK(p.gpsimd_mhz == 1400);
  CHECK(p.pe_rows == 128);
  CHECK(p.pe_columns == 128);
  CHECK(p.lanes == 128);
  CHECK(p.partitions == 128);
  CHECK(p.sbuf_bytes_per_partition == 192 * 1024);
  CHECK(p.sbuf_bytes() == 24ull * 1024 * 1024);
  CHECK(p.psum_bytes_per_partition == 16 * 1024);
  CHECK(p.psum_bytes() == 2ull * 1024 * 1024);
  CHECK(p.psum_banks == 8);
  CHECK(p.psum_bank_bytes_per_partition() == 2048);
  CHECK(p.max_moving_free == 512);
  CHECK(p.max_stationary_free == 128);
  CHECK(p.dma_queues == 16);
  CHECK(p.dma_queue_bytes_per_s == 27.0 * 1024 * 1024 * 1024);
  CHECK(p.hbm_bytes_per_s == 820e9);
  CHECK(p.cores_per_device == 2);
}

TEST_CASE("core_params: NeuronCore-v3 (trn2) figures") {
  constexpr auto p = sim::params_for(sim::core_generation::trn2);
  CHECK(p.core_name == "NeuronCore-v3");
  CHECK(p.tensor_mhz == 2400);
  CHECK(p.vector_mhz == 960);
  CHECK(p.scalar_mhz == 1200);
  CHECK(p.gpsimd_mhz == 1200);
  CHECK(p.sbuf_bytes_per_partition == 224 * 1024);
  CHECK(p.sbuf_bytes() == 28ull * 1024 * 1024);
  CHECK(p.psum_bytes() == 2ull * 1024 * 1024);
  CHECK(p.psum_bank_bytes_per_partition() == 2048);
  CHECK(p.dma_queues == 16);
  CHECK(p.dma_fixed_latency_ns == 600.0);
  CHECK(p.hbm_bytes_per_s == 2.9e12);
  CHECK(p.cores_per_device == 8);
}

TEST_CASE("parse_core_generation: trn1 and trn2, anything else is an error") {
  CHECK(sim::parse_core_generation("trn1") == sim::core_generation::trn1);
  CHECK(sim::parse_core_generation("trn2") == sim::core_generation::trn2);
  CHECK(sim::to_string(sim::core_generation::trn2) == "trn2");
  CHECK_THROWS_WITH_AS(sim::parse_core_generation("trn3"),
                       "strata: sim: unknown core generation 'trn3': expected trn1 "
                       "(NeuronCore-v2) or trn2 (NeuronCore-v3)",
                       strata::error);
  CHECK_THROWS_AS(sim::parse_core_generation(""), strata::error);
  CHECK_THROWS_AS(sim::parse_core_generation("TRN1"), strata::error);
}
