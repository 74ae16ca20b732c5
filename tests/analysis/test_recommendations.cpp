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

strata::rank_analysis rank_of(std::int64_t rank, std::int64_t span, std::int64_t compute, std::int64_t communication,
                               std::int64_t overlap) {
  strata::rank_analysis a;
  a.rank = rank;
  a.kernels = 10;
  a.temporal.span_ns = span;
  a.temporal.compute_ns = compute;
  a.communication_ns = communication;
  a.overlap_ns = overlap;
  return a;
}

strata::straggler_row late_row(std::int64_t step, std::int64_t rank, std::int64_t median, std::int64_t max, bool straggler) {
  return {.step = step, .rank = rank, .collectives = 2, .median_late_ns = median, .max_late_ns = max, .straggler = straggler};
}

std::size_t count_rule(const std::vector<strata::recommendation>& v, std::string_view rule) {
  std::size_t n = 0;
  for (const auto& r : v) n += r.rule == rule;
  return n;
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
  strata::average_row wait = k;  // a collective: device time, but no FLOPs or bytes counted
  wait.name = "AllReduce (ring)";
  wait.flops = 0;
  wait.device_bytes = 0;
  wait.self_device_ns = wait.device_total_ns = 5000;
  t.rows = {k, fast, wait};
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
  k.device_bytes = 1;         // it counts its work (bytes), but no HBM peak is known: MBU 0
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

TEST_CASE("recommendations: a straggler saves what the other ranks wait, step by step") {
  strata::job_figures job;
  job.ranks = {rank_of(0, 1000, 1000, 0, 0), rank_of(1, 1000, 1000, 0, 0), rank_of(2, 1000, 1000, 0, 0)};
  // Step 1: rank 2 late 300 us against the median (the others beside it: 2); step 2: 50 us,
  // under the 100 us threshold; step 3: 200 us, and only rank 0 matched it beside rank 2.
  job.stragglers = {late_row(1, 0, 0, 0, false),           late_row(1, 1, -50'000, 0, false),
                    late_row(1, 2, 300'000, 400'000, true), late_row(2, 0, 0, 0, false),
                    late_row(2, 1, 0, 0, false),            late_row(2, 2, 50'000, 60'000, false),
                    late_row(3, 0, 10, 10, false),          late_row(3, 2, 200'000, 250'000, true)};
  const auto recs = strata::recommend({}, run_of(1000, 1000), {}, {}, job);
  REQUIRE(count_rule(recs, "stragglers") == 1);
  const strata::recommendation* r = find(recs, "stragglers");
  CHECK(r->saving_ns == 800'000);  // 300 us x 2 ranks + 200 us x 1 rank
  CHECK(r->rows == std::vector<std::string>{"rank 2"});
  CHECK(r->title == "Rank 2 starts its collectives 250.000us late: the other ranks wait for it");  // median of 300 and 200
  CHECK(r->detail.find("In steps 1 and 3, rank 2's collectives started a median 250.000us after their group's median "
                       "start (at most 400.000us late; a straggler is over 100.000us)") == 0);
  CHECK(r->detail.find("800.000us of waiting") != std::string::npos);
  // One straggler step and no step marked: said so.
  job.stragglers = {late_row(-1, 0, 0, 0, false), late_row(-1, 1, 150'000, 150'000, true)};
  const auto whole = strata::recommend({}, run_of(1000, 1000), {}, {}, job);
  r = find(whole, "stragglers");
  REQUIRE(r != nullptr);
  CHECK(r->saving_ns == 150'000);
  CHECK(r->rows == std::vector<std::string>{"rank 1"});
  CHECK(r->detail.find("Over the run (no ProfilerStep marked), rank 1's") == 0);
  // No rank flagged (stragglers_of applies the threshold): no rule.
  job.stragglers = {late_row(1, 0, 0, 0, false), late_row(1, 1, 90'000, 90'000, false)};
  CHECK(find(strata::recommend({}, run_of(1000, 1000), {}, {}, job), "stragglers") == nullptr);
}

TEST_CASE("recommendations: communication beside no compute, saving what overlap could hide") {
  strata::job_figures job;
  job.ranks = {rank_of(0, 1000, 300, 500, 100),   // 50% of the span, 20% overlapped: min(400, 200)
               rank_of(1, 1000, 300, 500, 250),   // 50% overlapped: at the threshold, no rule
               rank_of(2, 1000, 600, 190, 0),     // 19% of the span: under 20%, no rule
               rank_of(3, 1000, 0, 400, 0),       // nothing to overlap with: no saving, no rule
               rank_of(4, 1000, 900, 800, 300)};  // 37.5% overlapped: min(500, 600)
  const auto recs = strata::recommend({}, run_of(1000, 1000), {}, {}, job);
  REQUIRE(count_rule(recs, "communication_not_overlapped") == 2);
  CHECK(recs[0].rule == "communication_not_overlapped");
  CHECK(recs[0].rows == std::vector<std::string>{"rank 4"});
  CHECK(recs[0].saving_ns == 500);
  CHECK(recs[0].title == "Rank 4's communication runs beside no compute: 37.5% overlapped");
  CHECK(recs[1].rows == std::vector<std::string>{"rank 0"});
  CHECK(recs[1].saving_ns == 200);
  CHECK(recs[1].detail.find("Communication kernels run 0.500us on rank 0, 50.0% of its kernel span (1.000us); only "
                            "0.100us of that beside a compute kernel, while its compute runs 0.200us alone.") == 0);
  CHECK(recs[1].detail.find("could hide up to 0.200us") != std::string::npos);
  strata::recommendation_thresholds th;
  th.overlap_ranks = 1;
  const auto one = strata::recommend({}, run_of(1000, 1000), {}, th, job);
  REQUIRE(count_rule(one, "communication_not_overlapped") == 1);
  CHECK(find(one, "communication_not_overlapped")->rows == std::vector<std::string>{"rank 4"});
}

TEST_CASE("recommendations: the rules over ranks rank with the run's own by their saving") {
  strata::averages t;
  t.rows = {host_row("aten::mm", 500)};
  strata::job_figures job;
  job.ranks = {rank_of(0, 10'000, 3000, 5000, 0), rank_of(1, 10'000, 3000, 0, 0)};  // rank 0 saves 3000
  job.stragglers = {late_row(1, 0, 0, 0, false), late_row(1, 1, 200'000, 200'000, true)};  // 200 us x 1
  const auto recs = strata::recommend(t, run_of(10'000, 4000), {}, {}, job);  // dispatch-bound: 6000
  REQUIRE(recs.size() == 3);
  CHECK(recs[0].rule == "stragglers");
  CHECK(recs[0].saving_ns == 200'000);
  CHECK(recs[1].rule == "dispatch_bound");
  CHECK(recs[1].saving_ns == 6000);
  CHECK(recs[2].rule == "communication_not_overlapped");
  CHECK(recs[2].saving_ns == 3000);
  // Without the job's figures, only the run's own rule.
  const auto alone = strata::recommend(t, run_of(10'000, 4000));
  REQUIRE(alone.size() == 1);
  CHECK(alone[0].rule == "dispatch_bound");
}

}  // namespace test_recommendations
