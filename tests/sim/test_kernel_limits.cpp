// sim/kernel.hpp: NKI's tile limits and memory capacities raise strata::error naming the
// instruction and the limit.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "strata/sim/neuron_core.hpp"

namespace sim = strata::sim;

namespace {

// The message of the strata::error `f` raises inside a kernel, or "" when it raises none.
template <class F>
std::string error_of(F&& f, sim::core_generation g = sim::core_generation::trn1,
                     sim::shape2 shape = {512, 1024}, sim::dtype type = sim::dtype::fp32) {
  sim::neuron_core core{g};
  auto x = core.alloc_hbm("x", shape, type);
  try {
    core.run("limits", [&](sim::kernel& k) { f(k, x); });
  } catch (const strata::error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("limits: partition dimension at most 128") {
  CHECK(error_of([](sim::kernel& k, auto& x) { (void)k.load(x, {0, 0}, {129, 4}); }) ==
        "strata: sim: load: partition dimension 129 exceeds 128 (must be 1..128)");
  CHECK(error_of([](sim::kernel& k, auto&) { (void)k.memset(200, 4, 0.0f); }) ==
        "strata: sim: memset: partition dimension 200 exceeds 128 (must be 1..128)");
  CHECK(error_of([](sim::kernel& k, auto&) { (void)k.psum_tile(0, 4); }) ==
        "strata: sim: psum_tile: partition dimension 0 exceeds 128 (must be 1..128)");
}

TEST_CASE("limits: matmul tile sizes, contraction and output shape") {
  CHECK(error_of([](sim::kernel& k, auto&) {
          auto st = k.memset(128, 129, 1.0f);
          auto mv = k.memset(128, 512, 1.0f);
          (void)k.matmul(st, mv);
        }) == "strata: sim: matmul: stationary free size 129 exceeds 128");
  CHECK(error_of([](sim::kernel& k, auto&) {
          auto st = k.memset(128, 128, 1.0f);
          auto mv = k.memset(128, 513, 1.0f);
          (void)k.matmul(st, mv);
        }) == "strata: sim: matmul: moving free size 513 exceeds 512 (one PSUM bank of fp32)");
  CHECK(error_of([](sim::kernel& k, auto&) {
          auto st = k.memset(64, 128, 1.0f);
          auto mv = k.memset(128, 512, 1.0f);
          (void)k.matmul(st, mv);
        }) == "strata: sim: matmul: contraction mismatch: stationary has 64 partitions, moving 128");
  CHECK(error_of([](sim::kernel& k, auto&) {
          auto st = k.memset(128, 128, 1.0f);
          auto mv = k.memset(128, 256, 1.0f);
          auto out = k.psum_tile(128, 512);
          k.matmul(out, st, mv);
        }) == "strata: sim: matmul: output tile is [128, 512], the product is [128, 256] "
              "(stationary free x moving free)");
  CHECK(error_of([](sim::kernel& k, auto&) {
          auto st = k.memset(128, 128, 1.0f);
          auto mv = k.memset(128, 256, 1.0f);
          auto out = k.memset(128, 256, 0.0f);
          k.matmul(out, st, mv);
        }) == "strata: sim: matmul: the output tile must be in PSUM (the Tensor engine writes PSUM)");
  CHECK(error_of([](sim::kernel& k, auto&) {
          auto st = k.memset(128, 128, 1.0f);
          auto p = k.transpose(st);
          auto mv = k.memset(128, 256, 1.0f);
          (void)k.matmul(p, mv);
        }) == "strata: sim: matmul: stationary and moving tiles must be in SBUF (the Tensor "
              "engine reads SBUF)");
}

TEST_CASE("limits: PSUM tiles fit one 2 KiB bank per partition; 8 banks") {
  CHECK(error_of([](sim::kernel& k, auto&) { (void)k.psum_tile(128, 513); }) ==
        "strata: sim: psum_tile: PSUM tile of free size 513 needs 2052 bytes per partition, "
        "more than one PSUM bank (2 KiB, i.e. 512 fp32)");
  CHECK(error_of([](sim::kernel& k, auto&) {
          sim::tile banks[8];
          for (auto& b : banks) b = k.psum_tile(128, 16);
          (void)k.psum_tile(128, 16);
        }) == "strata: sim: psum_tile: PSUM overflow: 18 KiB per partition needed, 16 KiB "
              "available (16 KiB held by live tiles)");
  // Freed banks are reusable.
  CHECK(error_of([](sim::kernel& k, auto&) {
          for (int n = 0; n < 20; ++n) (void)k.psum_tile(128, 512);
        }) == "");
}

TEST_CASE("limits: SBUF overflow names the instruction and both sizes") {
  CHECK(error_of([](sim::kernel& k, auto& x) { (void)k.load(x, {0, 0}, {128, 51200}); },
                 sim::core_generation::trn1, {128, 51200}) ==
        "strata: sim: load: SBUF overflow: 200 KiB per partition needed, 192 KiB available "
        "(0 KiB held by live tiles)");
  // Trn2 has 224 KiB per partition: the same load fits.
  CHECK(error_of([](sim::kernel& k, auto& x) { (void)k.load(x, {0, 0}, {128, 51200}); },
                 sim::core_generation::trn2, {128, 51200}) == "");
  CHECK(error_of([](sim::kernel& k, auto& x) {
          auto a = k.load(x, {0, 0}, {128, 32768});  // 128 KiB
          auto b = k.tensor_scalar(a, sim::alu::add, 1.0f);
        }, sim::core_generation::trn1, {128, 32768}) == "strata: sim: tensor_scalar: SBUF overflow: 256 KiB per partition needed, 192 KiB "
              "available (128 KiB held by live tiles)");
}

TEST_CASE("limits: shapes of Vector and Scalar operands") {
  CHECK(error_of([](sim::kernel& k, auto&) {
          auto a = k.memset(128, 64, 1.0f);
          auto b = k.memset(128, 32, 1.0f);
          (void)k.tensor_tensor(a, b, sim::alu::add);
        }) == "strata: sim: tensor_tensor: shape mismatch: [128, 64] and [128, 32]");
  CHECK(error_of([](sim::kernel& k, auto&) {
          auto a = k.memset(128, 64, 1.0f);
          auto b = k.memset(64, 1, 1.0f);
          (void)k.activation(a, sim::act::exp, 1.0f, b);
        }) == "strata: sim: activation: the bias must be [128, 1] (one value per partition), "
              "got [64, 1]");
  CHECK(error_of([](sim::kernel& k, auto&) {
          auto a = k.memset(128, 64, 1.0f);
          auto s = k.memset(128, 2, 1.0f);
          (void)k.tensor_scalar(a, sim::alu::add, s);
        }) == "strata: sim: tensor_scalar: the operand must be [128, 1] (one value per "
              "partition), got [128, 2]");
  CHECK(error_of([](sim::kernel& k, auto&) {
          auto a = k.memset(128, 64, 1.0f);
          (void)k.reduce(a, sim::alu::divide);
        }) == "strata: sim: reduce: alu::divide is not a reduction: use add, max or min");
  // 65537 bf16 elements fit a 224 KiB partition but not the Vector engine's access pattern.
  CHECK(error_of([](sim::kernel& k, auto& x) {
          auto a = k.load(x, {0, 0}, {1, 65537});
          (void)k.tensor_scalar(a, sim::alu::add, 1.0f);
        }, sim::core_generation::trn2, {1, 65537}, sim::dtype::bf16) ==
        "strata: sim: tensor_scalar: free size 65537 exceeds 65536 for a SBUF operand");
}

TEST_CASE("limits: transpose, DMA regions, queues and stale tiles") {
  CHECK(error_of([](sim::kernel& k, auto&) {
          auto a = k.memset(64, 200, 1.0f);
          (void)k.transpose(a);
        }) == "strata: sim: transpose: free size 200 exceeds 128 (it becomes the output's "
              "partition dimension)");
  CHECK(error_of([](sim::kernel& k, auto& x) { (void)k.load(x, {500, 0}, {128, 4}); }) ==
        "strata: sim: load: region rows [500, 628) x cols [0, 4) is outside HBM tensor 'x' "
        "[512, 1024]");
  CHECK(error_of([](sim::kernel& k, auto& x) { (void)k.load(x, {0, 0}, {128, 4}, 16); }) ==
        "strata: sim: load: DMA queue 16 does not exist (16 queues: 0..15)");
  CHECK(error_of([](sim::kernel& k, auto& x) {
          auto a = k.memset(128, 64, 1.0f);
          k.store(x, {0, 0}, k.transpose(a));
        }) == "strata: sim: store: the source tile is in PSUM; DMA moves SBUF <-> HBM here: copy "
              "it to SBUF first (tensor_copy)");
  CHECK(error_of([](sim::kernel& k, auto&) {
          auto a = k.memset(128, 64, 1.0f);
          auto b = std::move(a);
          (void)k.reduce(a, sim::alu::add);  // NOLINT: use after move on purpose
        }) == "strata: sim: reduce: the input tile is empty (moved from or default-made)");

  sim::neuron_core core{sim::core_generation::trn1};
  sim::tile kept;
  core.run("first", [&](sim::kernel& k) { kept = k.memset(4, 4, 1.0f); });
  CHECK(kept.valid());
  CHECK_THROWS_WITH_AS(core.run("second", [&](sim::kernel& k) { (void)k.reduce(kept, sim::alu::add); }),
                       "strata: sim: reduce: the input tile belongs to another kernel run",
                       strata::error);
}

TEST_CASE("limits: upload checks its data against its shape") {
  sim::neuron_core core{sim::core_generation::trn1};
  std::vector<float> d(10);
  CHECK_THROWS_WITH_AS(core.upload("x", d, {3, 4}),
                       "strata: sim: upload: 'x' has 10 values, shape [3, 4] needs 12",
                       strata::error);
}
