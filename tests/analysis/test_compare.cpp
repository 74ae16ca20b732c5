// strata::compare(): two key_averages() results matched per op, with B/A ratios. Expected
// tables are written out by hand (every column right-aligned, at least 12 wide, two spaces after).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "strata/analysis/compare.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_compare {

namespace {

constexpr std::int64_t us = 1000;

strata::average_row make_row(std::string name, std::uint64_t count, std::int64_t self_cpu,
                             std::int64_t cpu_total, std::int64_t dev_total = 0, bool device = false) {
  strata::average_row r;
  r.name = std::move(name);
  r.count = count;
  r.self_cpu_ns = self_cpu;
  r.cpu_total_ns = cpu_total;
  r.device_total_ns = dev_total;
  r.self_device_ns = device ? dev_total : 0;
  r.is_device = device;
  return r;
}

std::string lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& l : v) s += l + "\n";
  return s;
}

}  // namespace

TEST_CASE("compare: rows matched by key, A's order first, then ops only B has") {
  strata::averages a, b;
  a.rows = {make_row("mm", 2, 100 * us, 300 * us), make_row("relu", 1, 50 * us, 50 * us)};
  b.rows = {make_row("gelu", 1, 40 * us, 40 * us), make_row("mm", 1, 50 * us, 150 * us)};
  const auto c = strata::compare(a, b);
  REQUIRE(c.rows.size() == 3);
  CHECK(c.rows[0].name == "mm");
  CHECK(c.rows[0].a->count == 2);
  CHECK(c.rows[0].b->count == 1);
  CHECK(c.rows[1].name == "relu");
  CHECK_FALSE(c.rows[1].b.has_value());
  CHECK(c.rows[2].name == "gelu");
  CHECK_FALSE(c.rows[2].a.has_value());
  CHECK(strata::ratio_b_over_a(300, 150) == 0.5);
  CHECK_FALSE(strata::ratio_b_over_a(0, 10).has_value());

  const std::string sep = "--------  ------------  ------------  ------------  ------------  ------------  "
                          "------------  ------------  ------------  -------------  ";
  CHECK(c.table() == lines({
      sep,
      std::string("    Name  ") + "     Calls A  " + "     Calls B  " + "   Calls B/A  " + "  Self CPU A  " +
          "  Self CPU B  " + "Self CPU B/A  " + " CPU total A  " + " CPU total B  " + "CPU total B/A  ",
      sep,
      std::string("      mm  ") + "           2  " + "           1  " + "       0.50x  " + "   100.000us  " +
          "    50.000us  " + "       0.50x  " + "   300.000us  " + "   150.000us  " + "        0.50x  ",
      std::string("    relu  ") + "           1  " + "           -  " + "          --  " + "    50.000us  " +
          "           -  " + "          --  " + "    50.000us  " + "           -  " + "           --  ",
      std::string("    gelu  ") + "           -  " + "           1  " + "          --  " + "           -  " +
          "    40.000us  " + "          --  " + "           -  " + "    40.000us  " + "           --  ",
      sep}));
}

TEST_CASE("compare: device totals, labels, a zero baseline, and a host op and a kernel of one name") {
  strata::averages a, b;
  a.rows = {make_row("op", 1, 10 * us, 10 * us, 0), make_row("op", 1, 0, 0, 4 * us, true)};
  b.rows = {make_row("op", 2, 10 * us, 30 * us, 2 * us), make_row("op", 1, 0, 0, 2 * us, true)};
  const auto c = strata::compare(a, b, {.label_a = "eager", .label_b = "nki"});
  REQUIRE(c.rows.size() == 2);  // host op and device op stay apart
  CHECK_FALSE(c.rows[0].is_device);
  CHECK(c.rows[1].is_device);
  const std::string t = c.table({.time_unit = "us"});
  // Headers are at least 12 wide and never overflow: "NEURON total nki/eager" is 22.
  CHECK(t.find("   Calls eager  ") != std::string::npos);
  CHECK(t.find("  NEURON total nki/eager  \n") != std::string::npos);
  // Host op: device total 0 -> 2 us has no ratio; CPU total 10 -> 30 us is 3.00x.
  const auto pad = [](std::size_t n, const char* text) { return std::string(n, ' ') + text + "  "; };
  // Widths: 6, 12, 12, 15, 14, 12, 18, 15, 13, 19, 18, 16, 22.
  const std::string host_row = pad(4, "op") + pad(11, "1") + pad(11, "2") + pad(10, "2.00x") +
                               pad(6, "10.000us") + pad(4, "10.000us") + pad(13, "1.00x") +
                               pad(7, "10.000us") + pad(5, "30.000us") + pad(14, "3.00x") +
                               pad(11, "0.000us") + pad(9, "2.000us") + pad(20, "--");
  const std::string device_row = pad(4, "op") + pad(11, "1") + pad(11, "1") + pad(10, "1.00x") +
                                 pad(7, "0.000us") + pad(5, "0.000us") + pad(16, "--") +
                                 pad(8, "0.000us") + pad(6, "0.000us") + pad(17, "--") +
                                 pad(11, "4.000us") + pad(9, "2.000us") + pad(17, "0.50x");
  CHECK(t.find("\n" + host_row + "\n" + device_row + "\n") != std::string::npos);
}

TEST_CASE("compare: csv and json") {
  strata::averages a, b;
  a.rows = {make_row("mm", 2, 100, 300, 40)};
  b.rows = {make_row("mm", 1, 50, 150, 0), make_row("x,\"y\"", 1, 5, 5)};
  const auto c = strata::compare(a, b);
  CHECK(c.to_csv() ==
        "Name,Input Shapes,Is Device,Calls A,Calls B,Calls B/A,Self CPU A,Self CPU B,Self CPU B/A,"
        "CPU total A,CPU total B,CPU total B/A,Device total A,Device total B,Device total B/A\n"
        "\"mm\",\"\",0,2,1,0.5,100,50,0.5,300,150,0.5,40,0,0\n"
        "\"x,\"\"y\"\"\",\"\",0,,1,,,5,,,5,,,0,\n");
  CHECK(c.to_json() ==
        "[\n{\"name\":\"mm\",\"input_shapes\":\"\",\"is_device\":false,"
        "\"count_a\":2,\"count_b\":1,\"count_ratio\":0.5,"
        "\"self_cpu_time_total_ns_a\":100,\"self_cpu_time_total_ns_b\":50,\"self_cpu_time_total_ns_ratio\":0.5,"
        "\"cpu_time_total_ns_a\":300,\"cpu_time_total_ns_b\":150,\"cpu_time_total_ns_ratio\":0.5,"
        "\"device_time_total_ns_a\":40,\"device_time_total_ns_b\":0,\"device_time_total_ns_ratio\":0},\n"
        "{\"name\":\"x,\\\"y\\\"\",\"input_shapes\":\"\",\"is_device\":false,"
        "\"count_a\":null,\"count_b\":1,\"count_ratio\":null,"
        "\"self_cpu_time_total_ns_a\":null,\"self_cpu_time_total_ns_b\":5,\"self_cpu_time_total_ns_ratio\":null,"
        "\"cpu_time_total_ns_a\":null,\"cpu_time_total_ns_b\":5,\"cpu_time_total_ns_ratio\":null,"
        "\"device_time_total_ns_a\":null,\"device_time_total_ns_b\":0,\"device_time_total_ns_ratio\":null}]\n");
}

}  // namespace test_compare
