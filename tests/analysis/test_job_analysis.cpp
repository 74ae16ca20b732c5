// strata/analysis/job_analysis.hpp: HTA's analyses over small hand-built rank models; every
// expected figure is worked out by hand in the comments.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "strata/analysis/job_analysis.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_job_analysis {

using strata::kernel_category;

namespace {

strata::device_kernel kernel(std::uint32_t queue, kernel_category c, std::int64_t begin, std::int64_t end,
                             std::uint64_t correlation = 0, std::int32_t collective = -1) {
  return {.queue = queue, .category = c, .begin_ns = begin, .end_ns = end, .correlation_id = correlation,
          .collective = collective};
}

// Two queues: stream 7 runs compute kernels k1..k4, stream 9 one collective k5.
//   k1 [20,50) launched by c1 [0,10); k2 [60,80) by c2 [5,15); k3 [200,250) by c3 [100,110);
//   k4 [300,320) with no launch call; k5 [40,100) by c4 [20,25).
strata::rank_model one_rank() {
  strata::rank_model m;
  m.format = "kineto";
  m.rank = 3;
  m.world_size = 4;
  m.queues = {{"stream 7"}, {"stream 9"}};
  m.collectives = {{.name = "allreduce", .group = "0", .seq = 12}};
  m.kernels = {kernel(0, kernel_category::compute, 20, 50, 1), kernel(0, kernel_category::compute, 60, 80, 2),
               kernel(0, kernel_category::compute, 200, 250, 3), kernel(0, kernel_category::compute, 300, 320),
               kernel(1, kernel_category::communication, 40, 100, 4, 0)};
  m.launches = {{1, 0, 10, true}, {2, 5, 15, true}, {3, 100, 110, true}, {4, 20, 25, true}};
  return m;
}

strata::analysis_options small_thresholds() {
  strata::analysis_options o;
  o.kernel_wait_ns = 30;
  o.launch_outlier_ns = 9;
  o.delay_outlier_ns = 40;
  o.straggler_ns = 1000;
  return o;
}

}  // namespace

TEST_CASE("kernel categories follow HTA's name rules") {
  CHECK(strata::kernel_category_of("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)") == kernel_category::communication);
  CHECK(strata::kernel_category_of("void at::ncclKernel_x") == kernel_category::communication);
  CHECK(strata::kernel_category_of("hcclAllReduce") == kernel_category::communication);
  CHECK(strata::kernel_category_of("Memcpy DtoH (Device -> Pageable)") == kernel_category::memory);
  CHECK(strata::kernel_category_of("Memset (Device)") == kernel_category::memory);
  CHECK(strata::kernel_category_of("dma_load") == kernel_category::memory);
  CHECK(strata::kernel_category_of("void cudnn::bn_bw_1C11_kernel_new<float>") == kernel_category::compute);
  CHECK(strata::kernel_category_of("aten::matmul kernel 32x128,128x256") == kernel_category::compute);
  CHECK(strata::kernel_category_of("Context Sync") == kernel_category::other);
  CHECK(strata::kernel_category_of("Stream Wait Event") == kernel_category::other);
  CHECK(strata::kernel_category_of("cudaLaunchKernel") == kernel_category::other);
  CHECK(strata::kernel_category_of("a kernel named by its args", true) == kernel_category::communication);
}

TEST_CASE("temporal breakdown: idle, compute and non-compute time over the kernel span") {
  const strata::temporal_breakdown t = strata::temporal_breakdown_of(one_rank());
  // Busy: [20,100) [200,250) [300,320) = 80 + 50 + 20 = 150 of the span 20..320 = 300.
  CHECK(t.span_ns == 300);
  CHECK(t.idle_ns == 150);
  // Compute: 30 + 20 + 50 + 20 = 120; the rest of the busy time is the collective alone:
  // [50,60) and [80,100) = 30.
  CHECK(t.compute_ns == 120);
  CHECK(t.non_compute_ns == 30);
  CHECK(t.pct(t.idle_ns) == doctest::Approx(50.0));
  CHECK(t.pct(t.compute_ns) == doctest::Approx(40.0));

  SUBCASE("no kernels: all zero") {
    const strata::temporal_breakdown empty = strata::temporal_breakdown_of(strata::rank_model{});
    CHECK(empty.span_ns == 0);
    CHECK(empty.pct(empty.idle_ns) == 0.0);
  }
}

TEST_CASE("communication overlap: time a compute kernel runs during communication") {
  const auto [overlap, comm] = strata::communication_overlap_of(one_rank());
  // The collective [40,100) against compute [20,50) and [60,80): 10 + 20.
  CHECK(overlap == 30);
  CHECK(comm == 60);
  const strata::rank_analysis a = strata::analyze_rank(one_rank(), small_thresholds());
  CHECK(a.overlap_pct() == doctest::Approx(50.0));
}

TEST_CASE("idle time per queue: host wait, kernel wait and other") {
  const std::vector<strata::queue_idle> q = strata::idle_time_of(one_rank(), small_thresholds());
  REQUIRE(q.size() == 2);
  CHECK(q[0].queue == "stream 7");
  CHECK(q[0].kernels == 4);
  // k1 -> k2: gap 10 < 30, and c2 began (5) before k1 ended (50): kernel wait.
  CHECK(q[0].kernel_wait_ns == 10);
  // k2 -> k3: c3 began (100) after k2 ended (80): host wait for the whole gap, 120.
  CHECK(q[0].host_wait_ns == 120);
  // k3 -> k4: no launch call, gap 50 >= 30: other.
  CHECK(q[0].other_ns == 50);
  CHECK(q[0].idle_ns() == 180);
  // One kernel: no gap.
  CHECK(q[1].kernels == 1);
  CHECK(q[1].idle_ns() == 0);

  SUBCASE("overlapping kernels of one queue leave no gap") {
    strata::rank_model m = one_rank();
    m.kernels[1].begin_ns = 45;  // k2 now begins before k1 ends
    const auto q2 = strata::idle_time_of(m, small_thresholds());
    CHECK(q2[0].kernel_wait_ns == 0);
  }
}

TEST_CASE("launch statistics: call, device and delay, and HTA's outliers") {
  const strata::launch_statistics l = strata::launch_statistics_of(one_rank(), small_thresholds());
  // k1..k3 and k5 have launch calls (k4 none): calls 10, 10, 10, 5; devices 30, 20, 50, 60;
  // delays 20-10 = 10, 60-15 = 45, 200-110 = 90, 40-25 = 15.
  CHECK(l.kernels == 4);
  CHECK(l.launch_ns_total == 35);
  CHECK(l.device_ns_total == 160);
  CHECK(l.delay_ns_total == 160);
  CHECK(l.launch_ns_max == 10);
  CHECK(l.delay_ns_max == 90);
  CHECK(l.launch_ns_median == 10);  // 5 10 10 10
  CHECK(l.delay_ns_median == 30);   // 10 15 45 90: (15 + 45) / 2
  CHECK(l.launch_outliers == 3);    // calls over 9
  CHECK(l.delay_outliers == 2);     // delays over 40
  CHECK(l.short_kernels == 0);

  SUBCASE("a kernel shorter than its (not outlying) launch call is short; a late start is no delay") {
    strata::rank_model m;
    m.queues = {{"q"}};
    m.kernels = {kernel(0, kernel_category::compute, 3, 5, 1)};  // began before its call ended
    m.launches = {{1, 0, 8, true}};
    const strata::launch_statistics s = strata::launch_statistics_of(m);
    CHECK(s.short_kernels == 1);
    CHECK(s.delay_ns_total == 0);
  }
  SUBCASE("calls that are not launches are not counted") {
    strata::rank_model m = one_rank();
    for (auto& c : m.launches) c.counted_launch = false;
    CHECK(strata::launch_statistics_of(m).kernels == 0);
  }
}

TEST_CASE("a Kineto trace's last ProfilerStep is left out, as HTA does") {
  strata::rank_model m = one_rank();
  m.steps = {{1, 0, 150}, {2, 150, 400}};
  strata::rank_model cut = m;
  strata::keep_complete_steps(cut);
  // Kept: kernels whose launch call began before 150 (k1, k2, k3 via c3 at 100, k5); k4 has no
  // call and began at 300.
  CHECK(cut.kernels.size() == 4);
  CHECK(cut.steps.size() == 1);
  strata::rank_model all = m;
  strata::keep_complete_steps(all, {.include_last_step = true});
  CHECK(all.kernels.size() == 5);
  strata::rank_model written_by_strata = m;
  written_by_strata.format = "strata";
  strata::keep_complete_steps(written_by_strata);
  CHECK(written_by_strata.kernels.size() == 5);
}

TEST_CASE("collective starts carry the wall clock, the step and a place when Seq is missing") {
  strata::rank_model m;
  m.base_time_ns = 1'000'000;
  m.queues = {{"Collective queue"}};
  m.collectives = {{.name = "allgather", .group = "tp"}, {.name = "allgather", .group = "tp"}};
  m.kernels = {kernel(0, kernel_category::communication, 700, 800, 0, 1),
               kernel(0, kernel_category::communication, 5, 50, 9, 0)};
  m.launches = {{9, 2, 4, true}};
  m.steps = {{4, 0, 600}};
  const auto c = strata::collective_starts_of(m);
  REQUIRE(c.size() == 2);
  CHECK(c[0].start_ns == 1'000'005);
  CHECK(c[0].seq == 0);
  CHECK(c[0].step == 4);   // its launch call began in step 4
  CHECK(c[1].seq == 1);
  CHECK(c[1].step == -1);  // no call, and it began after the step
  CHECK(c[1].group == "tp");
}

TEST_CASE("stragglers: starts against the group's median, per step and rank") {
  // Group "0", Seq 1: ranks 0, 1, 2 start at 1000, 1100, 5000 (median 1100); Seq 2: 2000, 2000,
  // 2500 (median 2000). Seq 3 only on rank 0: not matched.
  std::vector<strata::rank_analysis> ranks(3);
  const std::int64_t seq1[] = {1000, 1100, 5000};
  const std::int64_t seq2[] = {2000, 2000, 2500};
  for (int r = 0; r < 3; ++r) {
    ranks[static_cast<std::size_t>(r)].rank = r;
    ranks[static_cast<std::size_t>(r)].collectives = {{"0", "allreduce", 1, 7, seq1[r]}, {"0", "allreduce", 2, 7, seq2[r]}};
  }
  ranks[0].collectives.push_back({"0", "allreduce", 3, 7, 9000});
  const auto rows = strata::stragglers_of(ranks, small_thresholds());
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].rank == 0);
  CHECK(rows[0].collectives == 2);
  CHECK(rows[0].median_late_ns == -50);  // -100 and 0
  CHECK(rows[0].max_late_ns == 0);
  CHECK(!rows[0].straggler);
  CHECK(rows[1].median_late_ns == 0);
  CHECK(rows[2].step == 7);
  CHECK(rows[2].median_late_ns == 2200);  // 3900 and 500
  CHECK(rows[2].max_late_ns == 3900);
  CHECK(rows[2].straggler);  // over 1000
}

TEST_CASE("analyze_rank: the whole map step on one model") {
  const strata::rank_analysis a = strata::analyze_rank(one_rank(), small_thresholds());
  CHECK(a.rank == 3);
  CHECK(!a.rank_assumed);
  CHECK(a.world_size == 4);
  CHECK(a.kernels == 5);
  CHECK(a.temporal.idle_ns == 150);
  CHECK(a.queues.size() == 2);
  CHECK(a.launch.kernels == 4);
  REQUIRE(a.collectives.size() == 1);
  CHECK(a.collectives[0].seq == 12);
  CHECK(a.collectives[0].start_ns == 40);  // no base time: the trace's own clock
  strata::rank_model no_rank = one_rank();
  no_rank.rank.reset();
  CHECK(strata::analyze_rank(no_rank).rank_assumed);
}

TEST_CASE("HTA's rounding: begins up, ends down to whole microseconds") {
  strata::rank_model m;
  m.queues = {{"q"}};
  // [1.2, 3.7) us becomes [2, 3); [5.1, 5.9) us, within one microsecond, becomes [6, 5).
  m.kernels = {kernel(0, kernel_category::compute, 1200, 3700, 1), kernel(0, kernel_category::compute, 5100, 5900)};
  m.launches = {{1, 500, 1000, true}};
  m.steps = {{0, 1, 9999}};
  strata::round_to_whole_us(m);
  CHECK(m.kernels[0].begin_ns == 2000);
  CHECK(m.kernels[0].end_ns == 3000);
  CHECK(m.kernels[1].begin_ns == 6000);
  CHECK(m.kernels[1].end_ns == 5000);
  CHECK(m.launches[0].begin_ns == 1000);
  CHECK(m.launches[0].end_ns == 1000);
  CHECK(m.steps[0].begin_ns == 1000);
  CHECK(m.steps[0].end_ns == 9000);
  // As in HTA, the inverted span counts against the busy time: [2,3) + [6,5) = 0 busy of 2..5.
  const strata::temporal_breakdown t = strata::temporal_breakdown_of(m);
  CHECK(t.span_ns == 3000);
  CHECK(t.idle_ns == 3000);
  CHECK(strata::analyze_rank(m, {.include_last_step = true, .hta_rounding = true}).temporal.span_ns == 3000);
}

TEST_CASE("collectives a group's rank never ran are found when the whole group is there") {
  std::vector<strata::rank_analysis> ranks(3);
  for (int r = 0; r < 3; ++r) ranks[static_cast<std::size_t>(r)].rank = r;
  const auto start = [](std::int64_t seq, std::vector<std::int64_t> group) {
    strata::collective_start c{.group = "tp", .name = "allgather", .seq = seq};
    c.seq_given = true;
    c.group_ranks = std::move(group);
    return c;
  };
  // Group tp is ranks 0 and 1: Seq 4 ran on both, Seq 5 on rank 0 only. Group dp (0, 1, 7) has
  // rank 7 outside the job's traces: nothing is said of it.
  ranks[0].collectives = {start(4, {0, 1}), start(5, {0, 1})};
  ranks[1].collectives = {start(4, {0, 1})};
  ranks[2].collectives = {start(9, {0, 2, 7})};
  ranks[2].collectives[0].group = "dp";
  const auto u = strata::unmatched_collectives_of(ranks);
  REQUIRE(u.size() == 1);
  CHECK(u[0].group == "tp");
  CHECK(u[0].seq == 5);
  CHECK(u[0].ran_on == std::vector<std::int64_t>{0});
  CHECK(u[0].missing_on == std::vector<std::int64_t>{1});
  // A place (no Seq) is not matched this way: one missing collective would shift every later one.
  ranks[0].collectives[1].seq_given = false;
  CHECK(strata::unmatched_collectives_of(ranks).empty());
}

}  // namespace test_job_analysis
