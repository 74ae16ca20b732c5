// runtime: compile-once programs, per-core queues served by scheduler threads, copies, wait and
// synchronize, and the correlation of an op with its runtime calls and device records.
// Multithreaded: also built for ThreadSanitizer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/analysis/key_averages.hpp"
#include "strata/device.hpp"
#include "strata/profiler.hpp"
#include "strata/scope.hpp"
#include "strata/sim/runtime.hpp"
#include "support.hpp"

namespace sim = strata::sim;

namespace {

constexpr sim::shape2 small{128, 64};

// y = relu(x), one tile.
void relu_body(sim::kernel& k, std::span<const sim::hbm_tensor> in, std::span<const sim::hbm_tensor> out) {
  k.store(out[0], {0, 0}, k.activation(k.load(in[0], {0, 0}, small), sim::act::relu));
}

std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 17) - 8.0f;
  return v;
}

// A core whose every DMA takes 50 ms of simulated time: long enough that what runs on two
// cores at once overlaps whatever the host's thread scheduling does.
sim::runtime_config slow_dma(std::uint32_t cores) {
  sim::core_params p = sim::params_for(sim::core_generation::trn1);
  p.dma_fixed_latency_ns = 50e6;
  return {.cores = cores, .params = p};
}

using strata_test::count_named;

}  // namespace

TEST_CASE("runtime: a program is compiled once per key and computes real values") {
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  sim::runtime rt;
  const auto data = ramp(small.rows * small.cols);
  auto x = rt.to_device(0, "x", data, small);
  auto y = rt.empty(0, "y", small);
  auto p1 = rt.load("relu[128x64]", "relu", relu_body, {small}, {small});
  auto p2 = rt.load("relu[128x64]", "relu", relu_body, {small}, {small});
  CHECK(p1 == p2);
  CHECK(p1->instructions() == 3);
  rt.wait(rt.submit(0, p1, {x}, {y}));
  const auto out = rt.to_host(y);
  prof.stop();

  REQUIRE(out.size() == data.size());
  for (std::size_t i = 0; i < data.size(); ++i) CHECK(out[i] == std::max(data[i], 0.0f));
  const auto st = rt.stats();
  CHECK(st.compiles == 1);
  CHECK(st.cache_hits == 1);
  CHECK(st.submissions == 1);
  CHECK(st.bytes_to_device == data.size() * 4);
  CHECK(st.bytes_to_host == data.size() * 4);
  const auto& d = prof.data();
  CHECK(count_named(d, "nrt::compile") == 1);
  CHECK(count_named(d, "nrt::load") == 2);
  CHECK(count_named(d, "nrt::execute") == 1);
  CHECK(count_named(d, "relu") == 1);  // the execution on the core's Kernel track
}

TEST_CASE("runtime: one core runs its queue in order; two cores run at the same time") {
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir, 4096));
  prof.start();
  sim::runtime rt(slow_dma(2));
  auto p = rt.load("relu", "relu", relu_body, {small}, {small});
  std::vector<sim::hbm_tensor> xs, ys;
  for (int i = 0; i < 3; ++i) {
    xs.push_back(rt.to_device(0, "x", ramp(small.rows * small.cols), small));
    ys.push_back(rt.empty(0, "y", small));
  }
  auto x1 = rt.to_device(1, "x", ramp(small.rows * small.cols), small);
  auto y1 = rt.empty(1, "y", small);

  std::vector<sim::submission> on0;
  for (int i = 0; i < 3; ++i) on0.push_back(rt.submit(0, p, {xs[i]}, {ys[i]}));
  const sim::submission on1 = rt.submit(1, p, {x1}, {y1});
  rt.synchronize();
  for (const auto& s : on0) CHECK(s.done());
  CHECK(on1.done());

  const std::int64_t duration = on0[0].device_end_ns() - on0[0].device_start_ns();
  CHECK(duration >= 100'000'000);  // a load and a store of 50 ms each
  for (int i = 1; i < 3; ++i) {
    CHECK(on0[i].device_start_ns() >= on0[i - 1].device_end_ns());  // one at a time, in order
    CHECK(on0[i].queue_wait_ns() > 0);  // queued behind the one before
  }
  // Core 1 started while core 0 was busy with its first submission.
  CHECK(on1.device_start_ns() < on0[0].device_end_ns());
  CHECK(on1.device_end_ns() > on0[0].device_start_ns());
  CHECK(rt.stats().queue_wait_ns > 0);
  prof.stop();
  // The two submissions queued behind core 0's first show their wait, on lanes of core 0.
  std::size_t waits = 0;
  for (const auto& t : prof.data().threads)
    for (const auto& r : t.records)
      if (std::string_view(r.site->name) == "queue wait") {
        ++waits;
        CHECK(t.pid == strata::device_pid(0));
        CHECK(t.name.rfind("Queue ", 0) == 0);
      }
  CHECK(waits == 2);
}

TEST_CASE("runtime: an op's correlation id reaches its runtime calls and device records") {
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir, 4096));
  prof.start();
  std::uint64_t id = 0;
  std::int64_t device_ns = 0;
  {
    sim::runtime rt;
    auto x = rt.to_device(0, "x", ramp(small.rows * small.cols), small);
    auto y = rt.empty(0, "y", small);
    id = strata::new_correlation_id();
    {
      strata::scope op(strata::intern(strata::layer::framework, "aten::relu"), id);
      auto p = rt.load("relu", "relu", relu_body, {small}, {small});
      const auto sub = rt.submit(0, p, {x}, {y}, id);
      rt.wait(sub);
      device_ns = sub.device_end_ns() - sub.device_start_ns();
    }
  }
  prof.stop();
  const auto& d = prof.data();
  std::vector<std::string> host_names, core_names;
  for (const auto& t : d.threads)
    for (const auto& r : t.records) {
      if (r.payload != id) continue;
      (t.pid == 0 ? host_names : core_names).push_back(r.site->name);
    }
  std::sort(host_names.begin(), host_names.end());
  std::sort(core_names.begin(), core_names.end());
  CHECK(host_names == std::vector<std::string>{"aten::relu", "nrt::execute", "nrt::submit", "nrt::wait"});
  // The execution and its three instructions; on an idle core it did not wait in a queue.
  CHECK(core_names == std::vector<std::string>{"activation(relu)", "load", "relu", "store"});

  const auto avg = strata::key_averages(d);
  for (const auto& row : avg.rows) {
    if (row.name == "aten::relu") {
      CHECK(row.self_device_ns == device_ns);
      CHECK(row.device_total_ns == device_ns);
    }
    if (row.name == "nrt::submit" || row.name == "nrt::execute") CHECK(row.self_device_ns == 0);
  }
}

TEST_CASE("runtime: capture_cores keeps only the chosen cores' device records") {
  strata_test::temp_dir dir;
  auto config = strata_test::config_in(dir, 4096);
  config.capture_cores = "1";
  strata::profiler prof(config);
  prof.start();
  {
    sim::runtime rt({.cores = 2});
    auto p = rt.load("relu", "relu", relu_body, {small}, {small});
    for (std::uint32_t c = 0; c < 2; ++c) {
      auto x = rt.to_device(c, "x", ramp(small.rows * small.cols), small);
      auto y = rt.empty(c, "y", small);
      rt.wait(rt.submit(c, p, {x}, {y}));
    }
  }
  prof.stop();
  bool core1 = false;
  for (const auto& t : prof.data().threads) {
    CHECK(t.pid != strata::device_pid(0));
    core1 = core1 || t.pid == strata::device_pid(1);
  }
  CHECK(core1);
  CHECK(count_named(prof.data(), "nrt::execute") == 2);  // the runtime layer still sees both
}

TEST_CASE("runtime: errors") {
  sim::runtime rt({.cores = 2});
  auto p = rt.load("relu", "relu", relu_body, {small}, {small});
  auto x = rt.to_device(0, "x", ramp(small.rows * small.cols), small);
  auto y = rt.empty(0, "y", small);
  auto y1 = rt.empty(1, "y1", small);
  auto wrong = rt.empty(0, "wrong", {128, 32});

  CHECK_THROWS_WITH_AS(rt.submit(2, p, {x}, {y}), "strata: sim: submit: core 2 does not exist (the runtime has 2)", strata::error);
  CHECK_THROWS_WITH_AS(rt.submit(0, p, {x}, {y1}), "strata: sim: submit: program 'relu': output 0 is not a tensor of core 0", strata::error);
  CHECK_THROWS_WITH_AS(rt.submit(0, p, {x}, {wrong}), "strata: sim: submit: program 'relu': output 0 is [128, 32], compiled for [128, 64]", strata::error);
  CHECK_THROWS_WITH_AS(rt.submit(0, p, {x, x}, {y}), "strata: sim: submit: program 'relu' takes 1 inputs, got 2", strata::error);
  CHECK_THROWS_AS(sim::runtime({.cores = 0}), strata::error);

  SUBCASE("a kernel that breaks a limit fails at compile time") {
    const auto too_big = [](sim::kernel& k, std::span<const sim::hbm_tensor> in, std::span<const sim::hbm_tensor>) {
      static_cast<void>(k.load(in[0], {0, 0}, {256, 64}));  // 256 partitions
    };
    CHECK_THROWS_AS(rt.load("too big", "too_big", too_big, {{256, 64}}, {}), strata::error);
    CHECK(rt.stats().compiles == 1);  // not cached
  }
  SUBCASE("a failure while running reaches wait(); the core goes on") {
    const auto picky = [](sim::kernel& k, std::span<const sim::hbm_tensor> in, std::span<const sim::hbm_tensor> out) {
      if (in[0].at(0, 0) != 0.0f) throw strata::error("picky: nonzero input");
      k.store(out[0], {0, 0}, k.load(in[0], {0, 0}, small));
    };
    auto q = rt.load("picky", "picky", picky, {small}, {small});  // compiles on zeros
    const auto failed = rt.submit(0, q, {x}, {y});
    CHECK_THROWS_WITH_AS(rt.wait(failed), "strata: picky: nonzero input", strata::error);
    CHECK(failed.done());
    auto zeros = rt.empty(0, "zeros", small);
    rt.wait(rt.submit(0, q, {zeros}, {y}));
  }
}
