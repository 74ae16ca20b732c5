// sim/kernel.hpp: every instruction computes real values, checked against a plain CPU
// reference; and two full kernels (row softmax, tiled matmul) against a CPU reference.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "strata/sim/neuron_core.hpp"

namespace sim = strata::sim;

namespace {

// Deterministic values in [-1, 1) without <random>'s implementation-defined distributions.
std::vector<float> pattern(std::size_t n, unsigned seed = 1) {
  std::vector<float> v(n);
  unsigned x = seed * 2654435761u + 12345u;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<float>((x >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return v;
}

std::vector<float> copy_out(const sim::tile& t) { return {t.values().begin(), t.values().end()}; }

void check_close(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol * std::max(1.0f, std::fabs(want[i])))) ++bad;
  CHECK(bad == 0);
}

constexpr std::size_t P = 64;
constexpr std::size_t F = 48;

}  // namespace

TEST_CASE("numerics: load and store copy regions between HBM and SBUF") {
  sim::neuron_core core{sim::core_generation::trn1};
  const auto data = pattern(200 * 100);
  auto x = core.upload("x", data, {200, 100});
  auto y = core.alloc_hbm("y", {200, 100});
  core.run("copy", [&](sim::kernel& k) {
    auto t = k.load(x, {70, 10}, {128, 50});
    CHECK(t.partitions() == 128);
    CHECK(t.free_size() == 50);
    CHECK(t.buffer() == sim::memory::sbuf);
    for (std::size_t p = 0; p < 128; ++p)
      for (std::size_t f = 0; f < 50; ++f) REQUIRE(t.at(p, f) == data[(70 + p) * 100 + 10 + f]);
    k.store(y, {1, 2}, t);
  });
  for (std::size_t r = 0; r < 200; ++r)
    for (std::size_t c = 0; c < 100; ++c) {
      const bool inside = r >= 1 && r < 129 && c >= 2 && c < 52;
      REQUIRE(y.at(r, c) == (inside ? data[(r - 1 + 70) * 100 + (c - 2 + 10)] : 0.0f));
    }
}

TEST_CASE("numerics: matmul is stationary^T @ moving, with and without accumulation") {
  constexpr std::size_t K = 96, M = 80, N = 200;
  sim::neuron_core core{sim::core_generation::trn1};
  const auto s = pattern(K * M, 2), m = pattern(K * N, 3);
  auto hs = core.upload("s", s, {K, M});
  auto hm = core.upload("m", m, {K, N});
  std::vector<float> want(M * N, 0.0f);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      double acc = 0;
      for (std::size_t k = 0; k < K; ++k) acc += double(s[k * M + i]) * m[k * N + j];
      want[i * N + j] = static_cast<float>(acc);
    }
  core.run("mm", [&](sim::kernel& k) {
    auto st = k.load(hs, {0, 0}, {K, M});
    auto mv = k.load(hm, {0, 0}, {K, N});
    auto out = k.matmul(st, mv);
    CHECK(out.buffer() == sim::memory::psum);
    CHECK(out.type() == sim::dtype::fp32);
    CHECK(out.partitions() == M);
    CHECK(out.free_size() == N);
    check_close(copy_out(out), want, 1e-4f);

    auto acc = k.psum_tile(M, N);
    k.matmul(acc, st, mv, true);
    k.matmul(acc, st, mv, true);
    std::vector<float> twice = want;
    for (auto& v : twice) v *= 2;
    check_close(copy_out(acc), twice, 1e-4f);
    k.matmul(acc, st, mv, false);  // replaces
    check_close(copy_out(acc), want, 1e-4f);
  });
}

TEST_CASE("numerics: transpose swaps partitions and free into PSUM") {
  sim::neuron_core core{sim::core_generation::trn2};
  const auto d = pattern(P * F, 4);
  auto x = core.upload("x", d, {P, F});
  core.run("t", [&](sim::kernel& k) {
    auto t = k.transpose(k.load(x, {0, 0}, {P, F}));
    CHECK(t.buffer() == sim::memory::psum);
    REQUIRE(t.partitions() == F);
    REQUIRE(t.free_size() == P);
    for (std::size_t p = 0; p < P; ++p)
      for (std::size_t f = 0; f < F; ++f) REQUIRE(t.at(f, p) == d[p * F + f]);
  });
}

TEST_CASE("numerics: activation computes func(x * scale + bias) for every function") {
  sim::neuron_core core{sim::core_generation::trn1};
  const auto d = pattern(P * F, 5);
  std::vector<float> positive(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) positive[i] = std::fabs(d[i]) + 0.5f;
  auto x = core.upload("x", d, {P, F});
  auto xp = core.upload("xp", positive, {P, F});
  const auto bias = pattern(P, 6);
  std::vector<float> bias_pos(bias);
  for (auto& v : bias_pos) v = std::fabs(v);
  auto hb = core.upload("b", bias, {P, 1});
  auto hbp = core.upload("bp", bias_pos, {P, 1});

  auto ref = [](sim::act f, float v) -> float {
    const double x = v;
    switch (f) {
      case sim::act::identity: return v;
      case sim::act::exp: return static_cast<float>(std::exp(x));
      case sim::act::tanh: return static_cast<float>(std::tanh(x));
      case sim::act::gelu:
        return static_cast<float>(0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))));
      case sim::act::relu: return v > 0 ? v : 0.0f;
      case sim::act::sigmoid: return static_cast<float>(1 / (1 + std::exp(-x)));
      case sim::act::square: return static_cast<float>(x * x);
      case sim::act::rsqrt: return static_cast<float>(1 / std::sqrt(x));
      case sim::act::reciprocal: return static_cast<float>(1 / x);
    }
    return 0;
  };
  const sim::act all[] = {sim::act::identity, sim::act::exp,    sim::act::tanh,
                          sim::act::gelu,     sim::act::relu,   sim::act::sigmoid,
                          sim::act::square,   sim::act::rsqrt,  sim::act::reciprocal};
  core.run("act", [&](sim::kernel& k) {
    auto t = k.load(x, {0, 0}, {P, F});
    auto tp = k.load(xp, {0, 0}, {P, F});
    auto b = k.load(hb, {0, 0}, {P, 1});
    auto bp = k.load(hbp, {0, 0}, {P, 1});
    for (auto f : all) {
      CAPTURE(sim::to_string(f));
      const bool needs_positive = f == sim::act::rsqrt || f == sim::act::reciprocal;
      const auto& src = needs_positive ? positive : d;
      // Per-partition bias tile.
      const auto& bsrc = needs_positive ? bias_pos : bias;
      auto out = k.activation(needs_positive ? tp : t, f, 0.5f, needs_positive ? bp : b);
      std::vector<float> want(src.size());
      for (std::size_t p = 0; p < P; ++p)
        for (std::size_t q = 0; q < F; ++q) want[p * F + q] = ref(f, src[p * F + q] * 0.5f + bsrc[p]);
      check_close(copy_out(out), want, 1e-5f);
      // Constant bias.
      auto out2 = k.activation(needs_positive ? tp : t, f, 2.0f, 0.25f);
      for (std::size_t i = 0; i < src.size(); ++i) want[i] = ref(f, src[i] * 2.0f + 0.25f);
      check_close(copy_out(out2), want, 1e-5f);
    }
  });
}

TEST_CASE("numerics: tensor_tensor, tensor_scalar and reduce against the CPU") {
  sim::neuron_core core{sim::core_generation::trn1};
  const auto a = pattern(P * F, 7), b = pattern(P * F, 8), s = pattern(P, 9);
  std::vector<float> bnz(b);
  for (auto& v : bnz) v = std::fabs(v) + 0.25f;  // divisors away from zero
  auto ha = core.upload("a", a, {P, F});
  auto hb = core.upload("b", bnz, {P, F});
  auto hs = core.upload("s", s, {P, 1});
  auto cpu = [](sim::alu op, float x, float y) {
    switch (op) {
      case sim::alu::add: return x + y;
      case sim::alu::subtract: return x - y;
      case sim::alu::multiply: return x * y;
      case sim::alu::divide: return x / y;
      case sim::alu::max: return x > y ? x : y;
      case sim::alu::min: return x < y ? x : y;
    }
    return 0.0f;
  };
  const sim::alu ops[] = {sim::alu::add, sim::alu::subtract, sim::alu::multiply,
                          sim::alu::divide, sim::alu::max, sim::alu::min};
  core.run("vector", [&](sim::kernel& k) {
    auto ta = k.load(ha, {0, 0}, {P, F});
    auto tb = k.load(hb, {0, 0}, {P, F});
    auto ts = k.load(hs, {0, 0}, {P, 1});
    for (auto op : ops) {
      CAPTURE(sim::to_string(op));
      std::vector<float> want(P * F);
      for (std::size_t i = 0; i < want.size(); ++i) want[i] = cpu(op, a[i], bnz[i]);
      check_close(copy_out(k.tensor_tensor(ta, tb, op)), want, 0);
      for (std::size_t i = 0; i < want.size(); ++i) want[i] = cpu(op, a[i], 0.75f);
      check_close(copy_out(k.tensor_scalar(ta, op, 0.75f)), want, 0);
      for (std::size_t p = 0; p < P; ++p)
        for (std::size_t f = 0; f < F; ++f) want[p * F + f] = cpu(op, a[p * F + f], s[p]);
      check_close(copy_out(k.tensor_scalar(ta, op, ts)), want, 0);
    }
    for (auto op : {sim::alu::add, sim::alu::max, sim::alu::min}) {
      CAPTURE(sim::to_string(op));
      auto r = k.reduce(ta, op);
      REQUIRE(r.partitions() == P);
      REQUIRE(r.free_size() == 1);
      for (std::size_t p = 0; p < P; ++p) {
        float acc = a[p * F];
        for (std::size_t f = 1; f < F; ++f) acc = cpu(op, acc, a[p * F + f]);
        CHECK(r.at(p, 0) == doctest::Approx(acc).epsilon(1e-6));
      }
    }
  });
}

TEST_CASE("numerics: tensor_copy, memset and iota") {
  sim::neuron_core core{sim::core_generation::trn1};
  const auto a = pattern(P * F, 10);
  auto ha = core.upload("a", a, {P, F});
  core.run("misc", [&](sim::kernel& k) {
    auto t = k.load(ha, {0, 0}, {P, F});
    auto c = k.tensor_copy(k.transpose(t), sim::engine_kind::scalar, sim::dtype::bf16);
    CHECK(c.buffer() == sim::memory::sbuf);
    CHECK(c.type() == sim::dtype::bf16);
    for (std::size_t p = 0; p < P; ++p)
      for (std::size_t f = 0; f < F; ++f) REQUIRE(c.at(f, p) == a[p * F + f]);
    auto m = k.memset(3, 5, 2.5f);
    for (float v : m.values()) CHECK(v == 2.5f);
    auto i = k.iota(4, 6, 1.0f, 10.0f, 2.0f);
    for (std::size_t p = 0; p < 4; ++p)
      for (std::size_t f = 0; f < 6; ++f) CHECK(i.at(p, f) == 1.0f + 10.0f * p + 2.0f * f);
  });
}

namespace {

// Row softmax: for each 128-row block, max, exp(x - max) with the row sum, 1 / sum, scale.
sim::execution softmax(sim::neuron_core& core, const sim::hbm_tensor& x, const sim::hbm_tensor& y) {
  return core.run("softmax", [&](sim::kernel& k) {
    for (std::size_t r0 = 0; r0 < x.rows(); r0 += 128) {
      auto block = k.phase("row block");
      sim::tile t = [&] {
        auto ph = k.phase("load");
        return k.load(x, {r0, 0}, {128, x.cols()});
      }();
      auto ph = k.phase("compute");
      auto m = k.reduce(t, sim::alu::max);
      auto neg_m = k.tensor_scalar(m, sim::alu::multiply, -1.0f);
      auto e = k.activation(t, sim::act::exp, 1.0f, neg_m);
      auto sum = k.reduce(e, sim::alu::add);
      auto inv = k.activation(sum, sim::act::reciprocal);
      auto out = k.tensor_scalar(e, sim::alu::multiply, inv);
      k.store(y, {r0, 0}, out);
    }
  });
}

}  // namespace

TEST_CASE("kernel: row softmax over 256 x 512 matches the CPU within 1e-6 absolute") {
  constexpr std::size_t R = 256, C = 512;
  const auto d = pattern(R * C, 11);
  std::vector<float> scaled(d);
  for (auto& v : scaled) v *= 4.0f;
  sim::neuron_core core{sim::core_generation::trn1};
  auto x = core.upload("x", scaled, {R, C});
  auto y = core.alloc_hbm("y", {R, C});
  const auto ex = softmax(core, x, y);
  std::size_t bad = 0;
  for (std::size_t r = 0; r < R; ++r) {
    double mx = scaled[r * C], sum = 0;
    for (std::size_t c = 0; c < C; ++c) mx = std::max(mx, double(scaled[r * C + c]));
    for (std::size_t c = 0; c < C; ++c) sum += std::exp(scaled[r * C + c] - mx);
    for (std::size_t c = 0; c < C; ++c)
      if (std::fabs(y.at(r, c) - std::exp(scaled[r * C + c] - mx) / sum) > 1e-6) ++bad;
  }
  CHECK(bad == 0);
  CHECK(ex.kernel_name == "softmax");
  CHECK(ex.instructions.size() == 2 * 8);
  CHECK(ex.duration_ps > 0);
}

TEST_CASE("kernel: tiled matmul 256 x 256 x 256 matches the CPU within 1e-4 relative") {
  constexpr std::size_t M = 256, K = 256, N = 256, T = 128;
  const auto a = pattern(M * K, 12), b = pattern(K * N, 13);
  std::vector<float> at(K * M);  // stationary operands hold the contraction dim in partitions
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t k = 0; k < K; ++k) at[k * M + i] = a[i * K + k];
  sim::neuron_core core{sim::core_generation::trn2};
  auto hat = core.upload("a_t", at, {K, M}, sim::dtype::bf16);
  auto hb = core.upload("b", b, {K, N}, sim::dtype::bf16);
  auto hc = core.alloc_hbm("c", {M, N});
  const auto ex = core.run("matmul", [&](sim::kernel& k) {
    for (std::size_t m0 = 0; m0 < M; m0 += T) {
      auto acc = k.psum_tile(T, N);
      for (std::size_t k0 = 0; k0 < K; k0 += T) {
        auto st = k.load(hat, {k0, m0}, {T, T});
        auto mv = k.load(hb, {k0, 0}, {T, N});
        k.matmul(acc, st, mv, k0 > 0);
      }
      k.store(hc, {m0, 0}, k.tensor_copy(acc));
    }
  });
  std::size_t bad = 0;
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      double want = 0;
      for (std::size_t k = 0; k < K; ++k) want += double(a[i * K + k]) * b[k * N + j];
      if (std::fabs(hc.at(i, j) - want) > 1e-4 * std::max(1.0, std::fabs(want))) ++bad;
    }
  CHECK(bad == 0);
  std::size_t matmuls = 0;
  for (const auto& ins : ex.instructions) matmuls += ins.name == "matmul";
  CHECK(matmuls == 4);
}
