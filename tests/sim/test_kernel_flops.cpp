// The simulator's kernels carry their work: each matmul's FLOPs (2·K·M·N), the HBM bytes the
// DMA queues moved, the core's peaks; recorded executions carry them as args.flops and
// args.bytes, and key_averages gives them to the device rows and to the op that launched them.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "strata/analysis/key_averages.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/profiler.hpp"
#include "strata/sim/neuron_core.hpp"
#include "strata/sim/record_execution.hpp"
#include "support.hpp"

namespace sim = strata::sim;

namespace kernel_flops_test {

// C[M, N] = A[K, M]^T B[K, N] tiled over K (128 a tile) and N (512 a tile), bf16 in, fp32 out.
constexpr std::size_t K = 256, M = 96, N = 1024;

sim::execution tiled_matmul(sim::neuron_core& core) {
  const std::vector<float> a(K * M, 0.5f), b(K * N, 0.25f);
  const sim::hbm_tensor ha = core.upload("a", a, {K, M}, sim::dtype::bf16);
  const sim::hbm_tensor hb = core.upload("b", b, {K, N}, sim::dtype::bf16);
  const sim::hbm_tensor hc = core.alloc_hbm("c", {M, N});
  return core.run("tiled_matmul", [&](sim::kernel& k) {
    for (std::size_t n = 0; n < N; n += 512) {
      sim::tile acc = k.psum_tile(M, 512);
      for (std::size_t kk = 0; kk < K; kk += 128) {
        const sim::tile st = k.load(ha, {kk, 0}, {128, M});
        const sim::tile mv = k.load(hb, {kk, n}, {128, 512});
        k.matmul(acc, st, mv, kk != 0);
      }
      k.store(hc, {0, n}, k.tensor_copy(acc));
    }
  });
}

// One stationary and one moving tile resident in SBUF, `count` full-size matmuls on them.
sim::execution resident_matmuls(sim::neuron_core& core, int count) {
  const std::vector<float> a(128 * 128, 1.0f), b(128 * 512, 1.0f);
  const sim::hbm_tensor ha = core.upload("a", a, {128, 128}, sim::dtype::bf16);
  const sim::hbm_tensor hb = core.upload("b", b, {128, 512}, sim::dtype::bf16);
  return core.run("resident", [&](sim::kernel& k) {
    const sim::tile st = k.load(ha, {0, 0}, {128, 128});
    const sim::tile mv = k.load(hb, {0, 0}, {128, 512});
    sim::tile acc = k.psum_tile(128, 512);
    for (int i = 0; i < count; ++i) k.matmul(acc, st, mv, i != 0);
  });
}

const strata::average_row* row(const strata::averages& a, std::string_view name, bool device) {
  for (const auto& r : a.rows)
    if (r.name == name && r.is_device == device) return &r;
  return nullptr;
}

}  // namespace kernel_flops_test

using namespace kernel_flops_test;

TEST_CASE("sim: a kernel's FLOPs are its matmuls' 2·K·M·N, its bytes what its DMAs moved") {
  sim::neuron_core core{sim::core_generation::trn1};
  const sim::execution ex = tiled_matmul(core);
  CHECK(ex.flops == 2ull * M * N * K);
  // Loads: every A tile once per N tile (bf16), all of B (bf16); the store: C in fp32.
  CHECK(ex.hbm_bytes == (N / 512) * K * M * 2 + K * N * 2 + M * N * 4);
  std::uint64_t matmul_flops = 0;
  for (const auto& in : ex.instructions) {
    if (in.name == "matmul") CHECK(in.flops == 2ull * 128 * M * 512);
    else CHECK(in.flops == 0);  // loads, stores, the PSUM copies
    matmul_flops += in.flops;
  }
  CHECK(matmul_flops == ex.flops);
}

TEST_CASE("sim: the peaks, per core, from AWS's figures") {
  const sim::core_params v2 = sim::params_for(sim::core_generation::trn1);
  CHECK(v2.peak_bf16_flops_per_s == 95e12);     // 190 TFLOPS per two-core chip
  CHECK(v2.peak_fp32_flops_per_s == 23.75e12);  // 47.5
  CHECK(v2.hbm_bytes_per_s_per_core() == 410e9);
  CHECK(v2.peak_flops_per_s(sim::dtype::fp32) == 23.75e12);
  const sim::core_params v3 = sim::params_for(sim::core_generation::trn2);
  CHECK(v3.peak_bf16_flops_per_s == 79e12);
  CHECK(v3.peak_fp32_flops_per_s == 22.625e12);  // 181 per eight-core chip
  CHECK(v3.hbm_bytes_per_s_per_core() == 362.5e9);
}

TEST_CASE("sim: a busy Tensor engine runs at the cost model's rate, close to the peak") {
  for (const auto g : {sim::core_generation::trn1, sim::core_generation::trn2}) {
    sim::neuron_core core{g};
    const sim::execution ex = resident_matmuls(core, 4);
    const sim::core_params p = sim::params_for(g);
    const double busy_s = static_cast<double>(ex.busy_ps_of({sim::engine_kind::tensor, 0})) * 1e-12;
    const double rate = static_cast<double>(ex.flops) / busy_s;
    // One 128-column moving row a cycle through 128×128 PEs: 2·128·128 FLOPs a Tensor cycle
    // (durations are whole picoseconds: 512 cycles at 2.4 GHz are 213,333 ps, not 213,333.3).
    CHECK(rate == doctest::Approx(2.0 * 128 * 128 * p.tensor_mhz * 1e6).epsilon(1e-5));
    const double share = rate / p.peak_bf16_flops_per_s;
    CHECK(share == doctest::Approx(g == sim::core_generation::trn1 ? 2.0 * 16384 * 2.8e9 / 95e12
                                                                   : 2.0 * 16384 * 2.4e9 / 79e12)
                       .epsilon(1e-5));
    CHECK(share > 0.95);
    CHECK(share <= 1.0);
  }
}

TEST_CASE("sim: recorded executions carry flops and bytes; the table gives them to the op") {
  sim::neuron_core core{sim::core_generation::trn1};
  const sim::execution ex = tiled_matmul(core);
  strata_test::temp_dir dir("kernel-flops");
  auto config = strata_test::config_in(dir);
  config.with_flops = true;
  strata::profiler prof(config);
  prof.start();
  const std::uint64_t id = strata::new_correlation_id();
  {
    static constexpr strata::site op{"aten::matmul", __FILE__, __LINE__, strata::layer::framework,
                                     strata::record_kind::scope};
    strata::scope s{&op, id};
    for (int launch = 0; launch < 2; ++launch)
      sim::record_execution(ex, {.core = 0, .start_ns = strata::clock::steady_ns() + launch * 1000000, .correlation_id = id});
  }
  prof.stop();
  const strata::averages a = prof.key_averages();
  const auto* kernel = row(a, "tiled_matmul", true);
  const auto* op = row(a, "aten::matmul", false);
  REQUIRE(kernel != nullptr);
  REQUIRE(op != nullptr);
  CHECK(kernel->count == 2);
  CHECK(kernel->flops == 2 * ex.flops);
  CHECK(kernel->device_bytes == 2 * ex.hbm_bytes);
  CHECK(op->flops == 2 * ex.flops);
  CHECK(op->device_bytes == 2 * ex.hbm_bytes);
  CHECK(a.peak_flops_per_s == 95e12);
  CHECK(a.peak_hbm_bytes_per_s == 410e9);
  // Engine instructions are parts of the execution: they add nothing.
  CHECK(row(a, "matmul", true) == nullptr);

  const auto written = prof.export_chrome_trace((dir.path() / "trace.json").string());
  static_cast<void>(written);
  const std::string trace = strata_test::read_file(dir.path() / "trace.json");
  CHECK(trace.find(fmt::format("\"flops\":{},\"bytes\":{}", ex.flops, ex.hbm_bytes)) != std::string::npos);
  CHECK(trace.find("\"peak_tflops\":95,\"peak_hbm_gbps\":410") != std::string::npos);
}
