// strata::merge_averages(): several traces' tables as one. Expected sums worked out by hand.
#include <doctest/doctest.h>

#include <vector>

#include "strata/analysis/merge_averages.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_merge_averages {

namespace {

strata::average_row merge_row(std::string name, bool device, std::uint64_t count, std::int64_t self_cpu,
                              std::int64_t total, std::int64_t self_device = 0, bool top = true,
                              std::string shapes = "") {
  strata::average_row r;
  r.name = std::move(name);
  r.input_shapes = std::move(shapes);
  r.is_device = device;
  r.top_level = top;
  r.count = count;
  r.self_cpu_ns = self_cpu;
  r.cpu_total_ns = total;
  r.self_device_ns = self_device;
  r.device_total_ns = self_device;
  return r;
}

}  // namespace

TEST_CASE("merge_averages: rows of the same key add up, in order of first appearance") {
  strata::averages rank0, rank1;
  rank0.rows = {merge_row("step", false, 2, 100, 300), merge_row("aten::mm", false, 3, 60, 60, 0, false),
                merge_row("gemm", true, 3, 0, 0, 90)};
  rank1.rows = {merge_row("aten::add", false, 1, 5, 5), merge_row("aten::mm", false, 1, 20, 20, 0, true),
                merge_row("aten::mm", true, 1, 0, 0, 7), merge_row("step", false, 1, 50, 80)};
  rank1.records_lost = 4;
  rank1.overflow = strata::overflow_policy::flight_recorder;
  const std::vector parts{rank0, rank1};
  const strata::averages all = strata::merge_averages(parts);

  REQUIRE(all.rows.size() == 5);
  CHECK(all.rows[0].name == "step");
  CHECK(all.rows[0].count == 3);
  CHECK(all.rows[0].self_cpu_ns == 150);
  CHECK(all.rows[0].cpu_total_ns == 380);
  CHECK(all.rows[1].name == "aten::mm");
  CHECK_FALSE(all.rows[1].is_device);
  CHECK(all.rows[1].count == 4);
  CHECK(all.rows[1].self_cpu_ns == 80);
  CHECK_FALSE(all.rows[1].top_level);  // as it first appeared
  CHECK(all.rows[2].name == "gemm");
  CHECK(all.rows[2].self_device_ns == 90);
  CHECK(all.rows[3].name == "aten::add");
  CHECK(all.rows[4].name == "aten::mm");  // a kernel of the same name is its own row
  CHECK(all.rows[4].is_device);
  CHECK(all.self_cpu_total_ns() == 235);
  CHECK(all.self_device_total_ns() == 97);
  CHECK(all.records_lost == 4);
  CHECK(all.overflow == strata::overflow_policy::flight_recorder);
  CHECK(all.device_name == "NEURON");
}

TEST_CASE("merge_averages: input shapes are part of the key; device labels that differ") {
  strata::averages a, b;
  a.rows = {merge_row("aten::mm", false, 1, 10, 10, 0, true, "[[2, 2]]")};
  b.rows = {merge_row("aten::mm", false, 1, 20, 20, 0, true, "[[4, 4]]"),
            merge_row("aten::mm", false, 1, 30, 30, 0, true, "[[2, 2]]")};
  b.device_name = "CUDA";
  const std::vector parts{a, b};
  const auto all = strata::merge_averages(parts);
  REQUIRE(all.rows.size() == 2);
  CHECK(all.rows[0].count == 2);
  CHECK(all.rows[0].self_cpu_ns == 40);
  CHECK(all.rows[1].input_shapes == "[[4, 4]]");
  CHECK(all.device_name == "DEVICE");
  CHECK(strata::merge_averages({}).rows.empty());
}

TEST_CASE("merge_averages: memory and FLOPs add up; their columns show when any part shows them") {
  strata::averages a, b;
  a.rows = {merge_row("aten::mm", false, 1, 10, 10)};
  a.rows[0].cpu_memory_usage = 1024;
  a.rows[0].self_cpu_memory_usage = 512;
  a.rows[0].device_memory_usage = -64;
  a.rows[0].self_device_memory_usage = -64;
  a.rows[0].flops = 1000;
  a.profile_memory = true;
  b.rows = {merge_row("aten::mm", false, 2, 20, 20)};
  b.rows[0].cpu_memory_usage = -24;
  b.rows[0].self_cpu_memory_usage = -24;
  b.rows[0].device_memory_usage = 128;
  b.rows[0].self_device_memory_usage = 100;
  b.rows[0].flops = 24;
  b.with_flops = true;
  const std::vector parts{a, b};
  const strata::averages all = strata::merge_averages(parts);
  REQUIRE(all.rows.size() == 1);
  CHECK(all.rows[0].count == 3);
  CHECK(all.rows[0].cpu_memory_usage == 1000);
  CHECK(all.rows[0].self_cpu_memory_usage == 488);
  CHECK(all.rows[0].device_memory_usage == 64);
  CHECK(all.rows[0].self_device_memory_usage == 36);
  CHECK(all.rows[0].flops == 1024);
  CHECK(all.profile_memory);
  CHECK(all.with_flops);
}

}  // namespace test_merge_averages
