// Recommendations (strata/analysis/recommendations.hpp): each rule fires at its threshold and
// not below it, with the saving its rule gives (docs/report.md, "Recommendations"), worked out
// by hand; records lost come first, then the savings largest first, then memory peaks.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "strata/analysis/recommendations.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_recommendations {

namespace {

strata::activity run_of(std::int64_t wall, std::int64_t device_busy) {
  strata::activity a;
  a.begin_ns = 0;
  a.end_ns = wall;
  a.bins = 1;
  a.device_busy_ns = device_busy;
  strata::activity_track host;
  host.label = {"main", "p", strata::track_kind::host};
  strata::activity_track dev;
  dev.label = {"Kernel", "core", strata::track_kind::device};
  dev.busy_ns = device_busy;
  a.tracks = {host, dev};
  return a;
}

strata::average_row host_row(std::string name, std::int64_t self_cpu) {
  strata::average_row r;
  r.name = std::move(name);
  r.count = 1;
  r.self_cpu_ns = r.cpu_total_ns = self_cpu;
  return r;
}

const strata::recommendation* find(const std::vector<strata::recommendation>& v, std::string_view rule) {
  for (const auto& r : v)
    if (r.rule == rule) return &r;
  return nullptr;
}

}  // namespace

TEST_CASE("recommendations: dispatch-bound below half the wall time, saving the device's idle time") {
  strata::averages t;
  t.rows = {host_row("aten::add", 300), host_row("aten::mm", 500), host_row("ProfilerStep*", 900)};
  const auto idle = strata::recommend(t, run_of(1000, 499));
  const strata::recommendation* r = find(idle, "dispatch_bound");
  REQUIRE(r != nullptr);
  CHECK(r->saving_ns == 501);
  CHECK(r->rows == std::vector<std::string>{"aten::mm", "aten::add"});  // most host time first, steps left out
  CHECK(r->detail.find("49.9%") != std::string::npos);
  CHECK(find(strata::recommend(t, run_of(1000, 500)), "dispatch_bound") == nullptr);
  // No device at all: no rule about it.
  strata::activity host_only = run_of(1000, 0);
  host_only.tracks.pop_back();
  CHECK(find(strata::recommend(t, host_only), "dispatch_bound") == nullptr);
}

TEST_CASE("recommendations: low utilisation saves what reaching half the better peak would") {
  strata::averages t;
  t.peak_flops_per_s = 1e12;     // 1 TFLOP/s
  t.peak_hbm_bytes_per_s = 1e11; // 100 GB/s
  strata::average_row k;
  k.name = "kernel";
  k.is_device = true;
  k.count = 2;
  k.self_device_ns = k.device_total_ns = 1000;
  k.flops = 100;          // 1e11 FLOP/s: MFU 10%
  k.device_bytes = 20000; // 2e10 B/s: MBU 20%, the better one
  strata::average_row fast = k;
  fast.name = "fast";
  fast.device_bytes = 50000;  // MBU 50%: at the threshold, no recommendation
  t.rows = {k, fast};
  const auto recs = strata::recommend(t, run_of(1000, 1000));
  const strata::recommendation* r = find(recs, "low_utilization");
  REQUIRE(r != nullptr);
  CHECK(r->rows == std::vector<std::string>{"kernel"});
  CHECK(r->saving_ns == 600);  // 1000 * (1 - 0.2 / 0.5)
  int low = 0;
  for (const auto& x : recs) low += x.rule == "low_utilization";
  CHECK(low == 1);
  // Without peaks the rule cannot say anything.
  t.peak_flops_per_s = t.peak_hbm_bytes_per_s = 0;
  CHECK(find(strata::recommend(t, run_of(1000, 1000)), "low_utilization") == nullptr);
}

TEST_CASE("recommendations: one engine saturated while the median engine idles") {
  strata::averages t;
  strata::activity a = run_of(1000, 1000);
  for (auto [name, busy] : {std::pair{"Vector", 900}, std::pair{"Scalar", 200}, std::pair{"Tensor", 50}, std::pair{"GpSimd", 0}}) {
    strata::activity_track e;
    e.label = {name, "core", strata::track_kind::engine};
    e.busy_ns = busy;
    a.tracks.push_back(e);
  }
  const auto recs = strata::recommend(t, a);
  const strata::recommendation* r = find(recs, "engine_imbalance");
  REQUIRE(r != nullptr);  // Vector 90% >= 60%; the median (index 2 of 4: Tensor) 5% < 10%
  CHECK(r->saving_ns == 700);  // down to the second busiest, Scalar
  CHECK(r->rows == std::vector<std::string>{"Vector", "Scalar"});
  a.tracks[4].busy_ns = 100;  // Tensor now at 10%: not idle
  CHECK(find(strata::recommend(t, a), "engine_imbalance") == nullptr);
}

TEST_CASE("recommendations: records lost first, then savings largest first, then memory peaks") {
  strata::averages t;
  t.records_lost = 12;
  t.peak_flops_per_s = 1e12;
  strata::average_row k;
  k.name = "kernel";
  k.is_device = true;
  k.count = 1;
  k.self_device_ns = 100000;  // no FLOPs: MFU 0, the whole time could go: saving 100000 > idle 900
  t.rows = {host_row("op", 10), k};
  const std::vector<strata::memory_peak> peaks = {{"NEURON:0", 4096, 500, "aten::empty"}};
  const auto recs = strata::recommend(t, run_of(1000, 100), peaks);
  REQUIRE(recs.size() == 4);
  CHECK(recs[0].rule == "records_lost");
  CHECK(recs[0].saving_ns == -1);
  CHECK(recs[1].rule == "low_utilization");
  CHECK(recs[1].saving_ns == 100000);
  CHECK(recs[2].rule == "dispatch_bound");
  CHECK(recs[2].saving_ns == 900);
  CHECK(recs[3].rule == "memory_peak");
  CHECK(recs[3].rows == std::vector<std::string>{"aten::empty"});
  CHECK(recs[3].title.find("4.00 KiB") != std::string::npos);
}

}  // namespace test_recommendations
