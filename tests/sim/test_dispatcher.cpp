// dispatcher: eager aten ops and custom kernels on the simulated device: numerics against a CPU
// reference, compile once per (op, shapes), the correlation of each op with its runtime calls
// and device records, the key_averages device columns, and recorded input shapes.
// Runs the runtime's scheduler threads: built into threaded_tests (and for TSan).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/analysis/key_averages.hpp"
#include "strata/profiler.hpp"
#include "strata/sim/dispatcher.hpp"
#include "strata/sim/eager_ops.hpp"
#include "strata/detail/flows.hpp"
#include "support.hpp"

namespace sim = strata::sim;

namespace {

using strata_test::values;

// |got - want| <= atol + rtol * |want| everywhere.
void check_close(const std::vector<float>& got, const std::vector<float>& want, float rtol, float atol) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]))) ++bad;
  CHECK(bad == 0);
}

// CPU references, row-major.
std::vector<float> ref_binary(const std::vector<float>& a, const std::vector<float>& b, sim::shape2 s,
                              bool row_broadcast, float (*f)(float, float)) {
  std::vector<float> out(a.size());
  for (std::size_t r = 0; r < s.rows; ++r)
    for (std::size_t c = 0; c < s.cols; ++c)
      out[r * s.cols + c] = f(a[r * s.cols + c], row_broadcast ? b[r] : b[r * s.cols + c]);
  return out;
}

std::vector<float> ref_rows(const std::vector<float>& a, sim::shape2 s, bool take_max) {
  std::vector<float> out(s.rows);
  for (std::size_t r = 0; r < s.rows; ++r) {
    float acc = a[r * s.cols];
    for (std::size_t c = 1; c < s.cols; ++c) acc = take_max ? std::max(acc, a[r * s.cols + c]) : acc + a[r * s.cols + c];
    out[r] = acc;
  }
  return out;
}

template <class F>
std::vector<float> map(const std::vector<float>& a, F f) {
  std::vector<float> out(a.size());
  std::transform(a.begin(), a.end(), out.begin(), f);
  return out;
}

std::vector<float> ref_matmul(const std::vector<float>& a, const std::vector<float>& b, std::size_t m,
                              std::size_t k, std::size_t n) {
  std::vector<float> out(m * n, 0.0f);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::size_t p = 0; p < k; ++p) acc += static_cast<double>(a[i * k + p]) * b[p * n + j];
      out[i * n + j] = static_cast<float>(acc);
    }
  return out;
}

using strata_test::count_named;

// A softmax over rows written against the kernel API, in 128-row blocks.
void softmax_body(sim::kernel& k, std::span<const sim::hbm_tensor> in, std::span<const sim::hbm_tensor> out) {
  const auto& x = in[0];
  for (std::size_t r0 = 0; r0 < x.rows(); r0 += 128) {
    const std::size_t rb = std::min<std::size_t>(128, x.rows() - r0);
    sim::tile t = k.load(x, {r0, 0}, {rb, x.cols()});
    sim::tile neg = k.tensor_scalar(k.reduce(t, sim::alu::max), sim::alu::multiply, -1.0f);
    sim::tile e = k.activation(t, sim::act::exp, 1.0f, neg);
    sim::tile r = k.activation(k.reduce(e, sim::alu::add), sim::act::reciprocal);
    k.store(out[0], {r0, 0}, k.tensor_scalar(e, sim::alu::multiply, r));
  }
}

}  // namespace

TEST_CASE("eager ops compute what a CPU reference computes") {
  sim::runtime rt;
  const sim::device dev{&rt, 0};
  const sim::shape2 s{200, 48};  // two row blocks: 128 + 72
  const auto av = values(s.rows * s.cols, 1);
  auto bv = values(s.rows * s.cols, 2);
  for (auto& f : bv) f = std::fabs(f) + 0.5f;  // a divisor away from 0
  auto cv = values(s.rows, 3);
  for (auto& f : cv) f = std::fabs(f) + 0.5f;
  const auto a = sim::tensor::from_host(dev, av, s, "a");
  const auto b = sim::tensor::from_host(dev, bv, s, "b");
  const auto c = sim::tensor::from_host(dev, cv, {s.rows, 1}, "c");  // [rows, 1]
  // Element-wise ops run the same float operation as the reference: exact.
  SUBCASE("tensor-tensor and row broadcast") {
    const auto plus = [](float x, float y) { return x + y; };
    const auto minus = [](float x, float y) { return x - y; };
    const auto times = [](float x, float y) { return x * y; };
    const auto over = [](float x, float y) { return x / y; };
    check_close(sim::add(a, b).to_host(), ref_binary(av, bv, s, false, plus), 0, 0);
    check_close(sim::sub(a, b).to_host(), ref_binary(av, bv, s, false, minus), 0, 0);
    check_close(sim::mul(a, b).to_host(), ref_binary(av, bv, s, false, times), 0, 0);
    check_close(sim::div(a, b).to_host(), ref_binary(av, bv, s, false, over), 0, 0);
    check_close(sim::add(a, c).to_host(), ref_binary(av, cv, s, true, plus), 0, 0);
    check_close(sim::sub(a, c).to_host(), ref_binary(av, cv, s, true, minus), 0, 0);
    check_close(sim::mul(a, c).to_host(), ref_binary(av, cv, s, true, times), 0, 0);
    check_close(sim::div(a, c).to_host(), ref_binary(av, cv, s, true, over), 0, 0);
  }
  SUBCASE("scalars and activations") {
    check_close(sim::mul(a, 0.25f).to_host(), map(av, [](float x) { return x * 0.25f; }), 0, 0);
    check_close(sim::add(a, 1e-5f).to_host(), map(av, [](float x) { return x + 1e-5f; }), 0, 0);
    check_close(sim::relu(a).to_host(), map(av, [](float x) { return std::max(x, 0.0f); }), 0, 0);
    // Library functions: within a few ulp of std's.
    check_close(sim::exp(a).to_host(), map(av, [](float x) { return std::exp(x); }), 1e-6f, 0);
    check_close(sim::rsqrt(b).to_host(), map(bv, [](float x) { return 1.0f / std::sqrt(x); }), 1e-6f, 0);
    check_close(sim::gelu(a).to_host(), map(av, [](float x) {
                  const double k = std::sqrt(2.0 / 3.14159265358979323846);
                  return static_cast<float>(0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x))));
                }), 1e-5f, 1e-6f);
  }
  SUBCASE("row reductions, keepdim") {
    const auto m = sim::max(a);
    CHECK(m.shape() == sim::shape2{s.rows, 1});
    check_close(m.to_host(), ref_rows(av, s, true), 0, 0);
    check_close(sim::sum(a).to_host(), ref_rows(av, s, false), 0, 0);  // same order of adds
  }
  SUBCASE("matmul with M, K and N over one tile") {
    const std::size_t m = 160, k = 260, n = 520;  // M: 128 + 32, K: 128 + 128 + 4, N: 512 + 8
    const auto xv = values(m * k, 4), wv = values(k * n, 5);
    const auto x = sim::tensor::from_host(dev, xv, {m, k});
    const auto w = sim::tensor::from_host(dev, wv, {k, n});
    const auto y = sim::matmul(x, w);
    CHECK(y.shape() == sim::shape2{m, n});
    // fp32 sums of 260 products of |x| < 4 in another order than the double reference.
    check_close(y.to_host(), ref_matmul(xv, wv, m, k, n), 1e-4f, 1e-4f);
  }
  SUBCASE("errors") {
    const auto wrong = sim::tensor::from_host(dev, values(s.rows * 2, 6), {s.rows, 2});
    CHECK_THROWS_AS(sim::add(a, wrong), strata::error);
    CHECK_THROWS_AS(sim::matmul(a, a), strata::error);
    CHECK_THROWS_AS(sim::sum(a, 0), strata::error);
    CHECK_THROWS_AS(sim::exp(sim::tensor{}), strata::error);
    CHECK_THROWS_AS(sim::dispatcher::instance().call("custom::nothing", {a}), strata::error);
  }
}

TEST_CASE("eager ops compile once per op and shapes") {
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir, 4096));
  prof.start();
  sim::runtime_stats st;
  {
    sim::runtime rt;
    const sim::device dev{&rt, 0};
    const auto x = sim::tensor::from_host(dev, values(128 * 64, 7), {128, 64});
    const auto y = sim::tensor::from_host(dev, values(256 * 64, 8), {256, 64});
    static_cast<void>(sim::exp(x));
    static_cast<void>(sim::exp(x));  // same op, same shape: cached
    CHECK(rt.stats().compiles == 1);
    static_cast<void>(sim::exp(y));  // a new shape compiles again
    static_cast<void>(sim::mul(x, 2.0f));
    static_cast<void>(sim::mul(x, 3.0f));  // the scalar is part of the program
    rt.synchronize();
    st = rt.stats();
  }
  prof.stop();
  CHECK(st.compiles == 4);
  CHECK(st.cache_hits == 1);
  CHECK(st.submissions == 5);
  CHECK(count_named(prof.data(), "nrt::compile") == 4);
  CHECK(count_named(prof.data(), "aten::exp") == 3);
  CHECK(count_named(prof.data(), "aten::mul") == 2);
  // The kernels read as kernels: op, "kernel", the input shapes (and a baked-in scalar), never
  // as the op with torch's Input Shapes brackets.
  CHECK(count_named(prof.data(), "aten::exp kernel 128x64") == 2);
  CHECK(count_named(prof.data(), "aten::exp kernel 256x64") == 1);
  CHECK(count_named(prof.data(), "aten::mul kernel 128x64 scalar 2") == 1);
  CHECK(count_named(prof.data(), "aten::mul kernel 128x64 scalar 3") == 1);
}

TEST_CASE("custom kernels dispatch like aten ops") {
  auto& d = sim::dispatcher::instance();
  d.register_kernel("custom::softmax", softmax_body, [](std::span<const sim::shape2> in) { return in[0]; });
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir, 4096));
  prof.start();
  const sim::shape2 s{200, 40};
  const auto xv = values(s.rows * s.cols, 9);
  std::vector<float> got;
  sim::runtime_stats st;
  {
    sim::runtime rt;
    const sim::device dev{&rt, 0};
    const auto x = sim::tensor::from_host(dev, xv, s);
    static_cast<void>(d.call("custom::softmax", {x}));
    got = d.call("custom::softmax", {x}).to_host();
    st = rt.stats();
  }
  prof.stop();
  std::vector<float> want(xv.size());
  for (std::size_t r = 0; r < s.rows; ++r) {
    float m = xv[r * s.cols];
    for (std::size_t c = 0; c < s.cols; ++c) m = std::max(m, xv[r * s.cols + c]);
    double sum = 0;
    for (std::size_t c = 0; c < s.cols; ++c) sum += std::exp(xv[r * s.cols + c] - m);
    for (std::size_t c = 0; c < s.cols; ++c)
      want[r * s.cols + c] = static_cast<float>(std::exp(xv[r * s.cols + c] - m) / sum);
  }
  check_close(got, want, 1e-5f, 1e-7f);
  CHECK(st.compiles == 1);
  CHECK(st.submissions == 2);
  std::size_t with_id = 0;
  for (const auto& t : prof.data().threads)
    for (const auto& r : t.records)
      if (std::string_view(r.site->name) == "custom::softmax") {
        CHECK(r.layer() == strata::layer::framework);
        with_id += r.payload != 0;
      }
  CHECK(with_id == 2);
}

TEST_CASE("every device record is reached from a framework op, by id and by flows") {
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir, 8192));
  prof.start();
  {
    sim::runtime rt;
    const sim::device dev{&rt, 0};
    const auto x = sim::tensor::from_host(dev, values(200 * 32, 10), {200, 32});
    const auto m = sim::max(x);
    const auto e = sim::exp(sim::sub(x, m));
    const auto y = sim::div(e, sim::sum(e));
    const auto w = sim::tensor::from_host(dev, values(32 * 16, 11), {32, 16});
    static_cast<void>(sim::matmul(y, w).to_host());
  }
  prof.stop();
  const auto& d = prof.data();

  std::map<std::uint64_t, std::string> framework_ids;  // id -> op
  for (const auto& t : d.threads)
    for (const auto& r : t.records)
      if (t.pid == 0 && r.layer() == strata::layer::framework && r.payload != 0)
        framework_ids[r.payload] = r.site->name;
  CHECK(framework_ids.size() == 6);
  std::size_t device_records = 0;
  for (const auto& t : d.threads) {
    if (t.pid == 0) continue;
    for (const auto& r : t.records) {
      // Counter samples (SBUF used, ...) belong to the core, not to one op; the queue lanes
      // are the runtime's.
      if (r.kind() == strata::record_kind::counter) continue;
      if (r.site->category != nullptr && std::string_view(r.site->category) == "runtime.queue") continue;
      ++device_records;
      CHECK(framework_ids.count(r.payload) == 1);
    }
  }
  CHECK(device_records > 6 * 3);

  // Each op: one chain op -> nrt::submit -> nrt::execute, then an arrow to a device track.
  const auto flows = strata::detail::correlation_flows(d);
  std::map<std::uint64_t, std::vector<const strata::detail::flow_point*>> by_flow;
  for (const auto& f : flows) by_flow[f.id].push_back(&f);
  const auto& rec = [&](const strata::detail::flow_point* f) -> const strata::record& {
    return d.threads[f->thread].records[f->record];
  };
  std::map<std::uint64_t, std::vector<std::string>> chains;
  std::set<std::uint64_t> reached_device;
  for (const auto& [id, points] : by_flow) {
    const auto& first = rec(points.front());
    if (points.size() == 2 && d.threads[points[1]->thread].pid != 0) {
      // To a device track, from the runtime call that launched the work: the kernel starts
      // when submitted (an idle core) or when the core is free (then nrt::execute may have
      // begun before it).
      const std::string_view from = first.site->name;
      CHECK((from == "nrt::submit" || from == "nrt::execute"));
      reached_device.insert(points[1]->correlation_id);
    } else if (first.layer() == strata::layer::framework) {
      for (const auto* p : points) {
        CHECK(d.threads[p->thread].pid == 0);  // queue waits are not part of the path
        chains[p->correlation_id].push_back(rec(p).site->name);
      }
    }
  }
  for (const auto& entry : framework_ids) {
    const std::uint64_t id = entry.first;
    const std::string& op = entry.second;  // not a structured binding: CAPTURE's lambda names it
    CAPTURE(op);
    CHECK(chains[id] == std::vector<std::string>{op, "nrt::submit", "nrt::execute"});
    CHECK(reached_device.count(id) == 1);
  }
}

TEST_CASE("key_averages: an op's Self NEURON is its kernel's simulated duration") {
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir, 4096));
  prof.start();
  {
    sim::runtime rt;  // trn1
    const sim::device dev{&rt, 0};
    const auto x = sim::tensor::from_host(dev, values(128 * 64, 12), {128, 64});
    static_cast<void>(sim::exp(x).to_host());
  }
  prof.stop();
  // aten::exp on [128, 64] fp32 is three instructions, each waiting for the one before
  // (docs/simulator.md, "Cost model", trn1 figures):
  //   load  HBM -> SBUF, 128 * 64 * 4 = 32768 bytes on one DMA queue:
  //         2 us fixed latency + 32768 B / 27 GiB/s = 2 000 000 + 1 130 281 = 3 130 281 ps
  //   activation(exp) on Scalar: N = 64 < 128, so 64 + 100 overhead = 164 cycles at 1400 MHz
  //         = 164e6 / 1400 = 117 143 ps
  //   store SBUF -> HBM, same bytes: 3 130 281 ps
  // = 6 377 705 ps, 6378 ns rounded to the nearest ns.
  const std::int64_t dma_ps = std::llround(2000.0 * 1e3 + 32768.0 * 1e12 / (27.0 * 1024 * 1024 * 1024));
  const std::int64_t act_ps = std::llround(164.0 * 1e6 / 1400.0);
  CHECK(dma_ps == 3'130'281);
  CHECK(act_ps == 117'143);
  const std::int64_t expected_ns = (2 * dma_ps + act_ps + 500) / 1000;
  CHECK(expected_ns == 6378);

  const auto avg = strata::key_averages(prof.data());
  bool exp_row = false, submit_row = false, kernel_row = false;
  for (const auto& row : avg.rows) {
    if (row.name == "aten::exp" && !row.is_device) {
      exp_row = true;
      CHECK(row.count == 1);
      CHECK(row.self_device_ns == expected_ns);
      CHECK(row.device_total_ns == expected_ns);
    }
    if (row.name == "aten::exp kernel 128x64" && row.is_device) {  // the kernel itself
      kernel_row = true;
      CHECK(row.self_device_ns == expected_ns);
    }
    if (row.name == "nrt::submit") {
      submit_row = true;
      CHECK(row.self_device_ns == 0);
    }
  }
  CHECK(exp_row);
  CHECK(submit_row);
  CHECK(kernel_row);
}

TEST_CASE("record_shapes: framework ops carry their input shapes") {
  strata_test::temp_dir dir;
  auto config = strata_test::config_in(dir, 4096);
  config.record_shapes = true;
  strata::profiler prof(config);
  prof.start();
  {
    sim::runtime rt;
    const sim::device dev{&rt, 0};
    const auto x = sim::tensor::from_host(dev, values(128 * 64, 13), {128, 64});
    const auto s = sim::tensor::from_host(dev, values(128, 14), {128, 1});
    const auto x2 = sim::tensor::from_host(dev, values(256 * 64, 15), {256, 64});
    const auto s2 = sim::tensor::from_host(dev, values(256, 16), {256, 1});
    static_cast<void>(sim::div(x, s));
    static_cast<void>(sim::div(x, s));
    static_cast<void>(sim::div(x2, s2));
    static_cast<void>(sim::mul(x, 0.5f).to_host());
  }
  prof.stop();
  std::vector<std::string> div_shapes;
  std::string mul_shapes;
  for (const auto& t : prof.data().threads)
    for (const auto& r : t.records) {
      const std::string_view n = r.site->name;
      if (n == "aten::div") div_shapes.push_back(r.site->input_shapes ? r.site->input_shapes : "");
      if (n == "aten::mul") mul_shapes = r.site->input_shapes ? r.site->input_shapes : "";
    }
  CHECK(div_shapes == std::vector<std::string>{"[[128, 64], [128, 1]]", "[[128, 64], [128, 1]]",
                                               "[[256, 64], [256, 1]]"});
  CHECK(mul_shapes == "[[128, 64], []]");  // the scalar is a non-tensor input, as in torch

  const auto avg = strata::key_averages(prof.data(), {.group_by_input_shape = true});
  std::map<std::string, std::uint64_t> div_rows;
  for (const auto& row : avg.rows)
    if (row.name == "aten::div") div_rows[row.input_shapes] = static_cast<std::uint64_t>(row.count);
  CHECK(div_rows == std::map<std::string, std::uint64_t>{{"[[128, 64], [128, 1]]", 2}, {"[[256, 64], [256, 1]]", 1}});
}
