// graph: capture of eager-API calls on placeholders and their compile into one fused program;
// eager and compiled give the same numbers with far fewer dispatches.
// Runs the runtime's scheduler threads: built into threaded_tests (and for TSan).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/profiler.hpp"
#include "strata/sim/eager_ops.hpp"
#include "strata/sim/graph.hpp"
#include "support.hpp"

namespace sim = strata::sim;

namespace {

using strata_test::values;

// The same functions run eagerly on device tensors and captured on placeholders.
sim::tensor softmax(const sim::tensor& x) {
  const sim::tensor e = sim::exp(sim::sub(x, sim::max(x)));
  return sim::div(e, sim::sum(e));
}

sim::tensor rms_norm(const sim::tensor& x) {
  const sim::tensor ms = sim::mul(sim::sum(sim::mul(x, x)), 1.0f / static_cast<float>(x.cols()));
  return sim::mul(x, sim::rsqrt(sim::add(ms, 1e-6f)));
}

sim::tensor mlp(const sim::tensor& x, const sim::tensor& w1, const sim::tensor& w2) {
  return sim::matmul(sim::gelu(sim::matmul(x, w1)), w2);
}

// Framework-layer records on host threads, by name.
std::size_t framework_records(const strata::trace_data& d, std::string_view prefix) {
  std::size_t n = 0;
  for (const auto& t : d.threads)
    for (const auto& r : t.records)
      if (t.pid == 0 && r.layer() == strata::layer::framework &&
          std::string_view(r.site->name).substr(0, prefix.size()) == prefix)
        ++n;
  return n;
}

}  // namespace

TEST_CASE("graph: softmax eager and compiled: equal numbers, 5 dispatches against 1") {
  const sim::shape2 s{200, 64};
  const auto xv = values(s.rows * s.cols, 21);
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir, 8192));
  std::vector<float> eager, compiled;
  sim::runtime_stats after_eager, after_compiled;
  std::size_t eager_ops = 0, graph_ops = 0;
  prof.start();
  {
    sim::runtime rt;
    const sim::device dev{&rt, 0};
    const auto x = sim::tensor::from_host(dev, xv, s);
    eager = softmax(x).to_host();
    after_eager = rt.stats();

    sim::graph g = sim::graph::capture("softmax", {s}, [](const std::vector<sim::tensor>& in) { return softmax(in[0]); });
    CHECK(g.node_count() == 6);  // the input and five ops
    CHECK(rt.stats().submissions == after_eager.submissions);  // capturing submits nothing
    const sim::compiled_graph c = g.compile(dev);
    compiled = c.run({x})[0].to_host();
    after_compiled = rt.stats();
  }
  prof.stop();
  eager_ops = framework_records(prof.data(), "aten::");
  graph_ops = framework_records(prof.data(), "CompiledGraph[softmax]");

  // The compiled kernel runs the very instructions of the eager kernels on each element, in
  // the same order: the numbers are bitwise equal (tolerance 0).
  REQUIRE(eager.size() == compiled.size());
  CHECK(eager == compiled);
  double row0 = 0;
  for (std::size_t c = 0; c < s.cols; ++c) row0 += compiled[c];
  CHECK(row0 == doctest::Approx(1.0).epsilon(1e-5));

  CHECK(after_eager.submissions == 5);
  CHECK(after_eager.compiles == 5);
  CHECK(after_compiled.submissions - after_eager.submissions == 1);
  CHECK(after_compiled.compiles - after_eager.compiles == 1);
  CHECK(eager_ops == 5);
  CHECK(graph_ops == 1);
}

TEST_CASE("graph: RMSNorm and a GELU MLP match their eager versions") {
  sim::runtime rt;
  const sim::device dev{&rt, 0};
  SUBCASE("RMSNorm (row reductions, scalars, row broadcast)") {
    const sim::shape2 s{300, 96};
    const auto xv = values(s.rows * s.cols, 22);
    const auto x = sim::tensor::from_host(dev, xv, s);
    const auto eager = rms_norm(x).to_host();
    const auto before = rt.stats().submissions;
    const auto c = sim::graph::capture("rms_norm", {s}, [](const auto& in) { return rms_norm(in[0]); }).compile(dev);
    const auto compiled = c.run({x})[0].to_host();
    CHECK(rt.stats().submissions - before == 1);
    CHECK(eager == compiled);  // the same instructions: tolerance 0
    for (std::size_t r = 0; r < s.rows; r += 37) {
      double ms = 0;
      for (std::size_t i = 0; i < s.cols; ++i) ms += double(xv[r * s.cols + i]) * xv[r * s.cols + i];
      const double inv = 1.0 / std::sqrt(ms / double(s.cols) + 1e-6);
      for (std::size_t i = 0; i < s.cols; ++i)
        CHECK(compiled[r * s.cols + i] == doctest::Approx(xv[r * s.cols + i] * inv).epsilon(1e-5));
    }
  }
  SUBCASE("GELU MLP (matmul in a graph, K of the second matmul computed)") {
    const std::size_t m = 160, d = 64, h = 128;
    const auto x = sim::tensor::from_host(dev, values(m * d, 23), {m, d});
    const auto w1 = sim::tensor::from_host(dev, values(d * h, 24), {d, h});
    const auto w2 = sim::tensor::from_host(dev, values(h * d, 25), {h, d});
    const auto eager = mlp(x, w1, w2).to_host();
    const auto g = sim::graph::capture("mlp", {{m, d}, {d, h}, {h, d}},
                                       [](const auto& in) { return mlp(in[0], in[1], in[2]); });
    const auto compiled = g.compile(dev).run({x, w1, w2})[0].to_host();
    REQUIRE(eager.size() == compiled.size());
    // Same tiling of K (one chunk each) and the same accumulation: equal within fp32 noise.
    std::size_t bad = 0;
    for (std::size_t i = 0; i < eager.size(); ++i)
      if (std::fabs(eager[i] - compiled[i]) > 1e-4f + 1e-5f * std::fabs(eager[i])) ++bad;
    CHECK(bad == 0);
  }
}

TEST_CASE("graph: one compile per structure and shapes; errors say what to change") {
  sim::runtime rt;
  const sim::device dev{&rt, 0};
  const auto x = sim::tensor::from_host(dev, values(128 * 32, 26), {128, 32});
  const auto g = sim::graph::capture("relu", {{128, 32}}, [](const auto& in) { return sim::relu(in[0]); });
  const auto c1 = g.compile(dev);
  const auto c2 = g.compile(dev);
  CHECK(c1.program() == c2.program());
  CHECK(rt.stats().compiles == 1);
  static_cast<void>(c1.run({x}));
  static_cast<void>(c2.run({x}));
  rt.synchronize();
  CHECK(rt.stats().submissions == 2);

  sim::graph empty("nothing");
  static_cast<void>(empty.input({128, 32}));
  CHECK_THROWS_WITH_AS(empty.compile(dev), "strata: sim: graph 'nothing': no outputs: mark the results with graph::output()", strata::error);
  sim::graph mixed("mixed");
  const auto p = mixed.input({128, 32});
  CHECK_THROWS_AS(sim::add(p, x), strata::error);  // a device tensor inside a capture
  CHECK_THROWS_AS(p.to_host(), strata::error);
  CHECK_THROWS_AS(c1.run({x, x}), strata::error);
}
