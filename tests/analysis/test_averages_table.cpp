// The key_averages() table, CSV and JSON. Expected tables are written out by hand from torch's
// layout rules (docs/key-averages.md): every column right-aligned in 12 (the name column in
// min(longest name + 4, max_name_column_width)), two spaces after every column.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "strata/analysis/averages.hpp"
#include "strata/analysis/key_averages.hpp"
#include "strata/error.hpp"
#include "strata/detail/table_format.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_averages_table {

namespace {

using strata::layer;
using strata::op_event;

std::string lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& l : v) s += l + "\n";
  return s;
}

constexpr std::int64_t us = 1000;

op_event host(std::string name, std::int64_t b, std::int64_t e, std::uint64_t corr = 0) {
  return {std::move(name), layer::framework, 1, b * us, e * us, corr, {}};
}
op_event kernel(std::string name, std::int64_t b, std::int64_t e, std::uint64_t corr) {
  return {std::move(name), layer::device, 2, b * us, e * us, corr, {}};
}

const std::string long_kernel =
    "void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min_kernel_cuda>";

// One thread of a small model (times in us), with kernels launched by addmm and clamp_min.
strata::averages model(bool with_kernels, std::string device_name = "NEURON") {
  std::vector<op_event> ev = {
      host("model_inference", 0, 500), host("aten::linear", 10, 310), host("aten::t", 20, 40),
      host("aten::transpose", 25, 35), host("aten::addmm", 50, 300, 1), host("aten::relu", 320, 420),
      host("aten::clamp_min", 330, 410, 3), host("aten::linear", 430, 490), host("aten::t", 432, 440),
      host("aten::transpose", 433, 438), host("aten::addmm", 445, 488, 2)};
  if (with_kernels) {
    ev.push_back(kernel("volta_sgemm_128x64_nn", 100, 300, 1));
    ev.push_back(kernel("volta_sgemm_128x64_nn", 450, 480, 2));
    ev.push_back(kernel(long_kernel, 340, 352, 3));
  }
  return strata::key_averages(std::span<const op_event>(ev), {.device_name = device_name});
}

strata::average_row make_row(std::string name, std::uint64_t count, std::int64_t self_cpu,
                             std::int64_t cpu_total, std::int64_t self_dev = 0,
                             std::int64_t dev_total = 0, bool device = false) {
  strata::average_row r;
  r.name = std::move(name);
  r.count = count;
  r.self_cpu_ns = self_cpu;
  r.cpu_total_ns = cpu_total;
  r.self_device_ns = self_dev;
  r.device_total_ns = dev_total;
  r.is_device = device;
  return r;
}

const std::string sep7 =
    "-------------------  ------------  ------------  ------------  ------------  ------------  ------------  ";
const std::string sep11 =
    "-------------------------------------------------------  ------------  ------------  ------------  "
    "------------  ------------  ------------  ------------  ------------  ------------  ------------  ";
const std::string cuda_header =
    "                                                   Name    Self CPU %      Self CPU   CPU total %     "
    "CPU total  CPU time avg     Self CUDA   Self CUDA %    CUDA total  CUDA time avg    # of Calls  ";

}  // namespace

TEST_CASE("table: CPU only, sorted by cpu_time_total") {
  CHECK(model(false).table({.sort_by = "cpu_time_total"}) == lines({
      sep7,
      "               Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  ",
      sep7,
      "    model_inference         8.00%      40.000us       100.00%     500.000us     500.000us             1  ",
      "       aten::linear         7.80%      39.000us        72.00%     360.000us     180.000us             2  ",
      "        aten::addmm        58.60%     293.000us        58.60%     293.000us     146.500us             2  ",
      "         aten::relu         4.00%      20.000us        20.00%     100.000us     100.000us             1  ",
      "    aten::clamp_min        16.00%      80.000us        16.00%      80.000us      80.000us             1  ",
      "            aten::t         2.60%      13.000us         5.60%      28.000us      14.000us             2  ",
      "    aten::transpose         3.00%      15.000us         3.00%      15.000us       7.500us             2  ",
      sep7,
      "Self CPU time total: 500.000us"}));
}

TEST_CASE("table: recursion double-counts CPU total, so CPU total % can pass 100%") {
  const std::vector<op_event> ev = {host("aten::foo", 0, 100), host("aten::foo", 10, 50),
                                    host("aten::bar", 60, 90)};
  const std::string sep =
      "-------------  ------------  ------------  ------------  ------------  ------------  ------------  ";
  CHECK(strata::key_averages(std::span<const op_event>(ev)).table() == lines({
      sep,
      "         Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  ",
      sep,
      "    aten::foo        70.00%      70.000us       140.00%     140.000us      70.000us             2  ",
      "    aten::bar        30.00%      30.000us        30.00%      30.000us      30.000us             1  ",
      sep,
      "Self CPU time total: 100.000us"}));
}

TEST_CASE("table: device columns, device rows and the device footer") {
  const std::vector<std::string> body = {
      "                                            aten::addmm        58.60%     293.000us        58.60%     293.000us     146.500us     230.000us        95.04%     230.000us     115.000us             2  ",
      "                                  volta_sgemm_128x64_nn         0.00%       0.000us         0.00%       0.000us       0.000us     230.000us        95.04%     230.000us     115.000us             2  ",
      "                                        aten::clamp_min        16.00%      80.000us        16.00%      80.000us      80.000us      12.000us         4.96%      12.000us      12.000us             1  ",
      "void at::native::vectorized_elementwise_kernel<4, at...         0.00%       0.000us         0.00%       0.000us       0.000us      12.000us         4.96%      12.000us      12.000us             1  ",
      "                                        model_inference         8.00%      40.000us       100.00%     500.000us     500.000us       0.000us         0.00%     242.000us     242.000us             1  ",
      "                                           aten::linear         7.80%      39.000us        72.00%     360.000us     180.000us       0.000us         0.00%     230.000us     115.000us             2  ",
      "                                                aten::t         2.60%      13.000us         5.60%      28.000us      14.000us       0.000us         0.00%       0.000us       0.000us             2  ",
      "                                        aten::transpose         3.00%      15.000us         3.00%      15.000us       7.500us       0.000us         0.00%       0.000us       0.000us             2  ",
      "                                             aten::relu         4.00%      20.000us        20.00%     100.000us     100.000us       0.000us         0.00%      12.000us      12.000us             1  "};
  // In this model addmm and clamp_min own their kernels directly (no runtime event between).
  std::vector<std::string> expected = {sep11, cuda_header, sep11};
  expected.insert(expected.end(), body.begin(), body.end());
  expected.insert(expected.end(), {sep11, "Self CPU time total: 500.000us", "Self CUDA time total: 242.000us"});

  const auto cuda = model(true, "CUDA");
  CHECK(cuda.table({.sort_by = "self_cuda_time_total"}) == lines(expected));
  CHECK(cuda.table({.sort_by = "self_device_time_total"}) == lines(expected));

  SUBCASE("NEURON labels overflow their 12 columns; row_limit counts data rows") {
    // "Self NEURON %" is 13 wide and "NEURON time avg" 15: each pushes the rest right.
    const std::string header = std::string(51, ' ') + "Name  " + "  Self CPU %  " + "    Self CPU  " +
                               " CPU total %  " + "   CPU total  " + "CPU time avg  " +
                               " Self NEURON  " + "Self NEURON %  " + "NEURON total  " +
                               "NEURON time avg  " + "  # of Calls  ";
    CHECK(model(true).table({.sort_by = "self_neuron_time_total", .row_limit = 3}) ==
          lines({sep11, header, sep11, body[0], body[1], body[2], sep11,
                 "Self CPU time total: 500.000us", "Self NEURON time total: 242.000us"}));
  }
}

TEST_CASE("table: header text and top_level_events_only; device rows count as top level") {
  const std::string equals(195, '=');  // 55 + 10 * 12 + 10 * 2
  CHECK(model(true, "CUDA").table({.top_level_events_only = true, .header = "My header"}) == lines({
      equals, "My header", equals, "This report only display top-level ops statistics",
      sep11, cuda_header, sep11,
      "                                        model_inference         8.00%      40.000us       100.00%     500.000us     500.000us       0.000us         0.00%     242.000us     242.000us             1  ",
      "                                  volta_sgemm_128x64_nn         0.00%       0.000us         0.00%       0.000us       0.000us     230.000us        95.04%     230.000us     115.000us             2  ",
      "void at::native::vectorized_elementwise_kernel<4, at...         0.00%       0.000us         0.00%       0.000us       0.000us      12.000us         4.96%      12.000us      12.000us             1  ",
      sep11, "Self CPU time total: 500.000us", "Self CUDA time total: 242.000us"}));
}

TEST_CASE("table: time_unit forces the unit; rounding is the double's") {
  // 146.5 us is 0.1465 ms, whose double lies just below: 0.146ms.
  CHECK(model(false).table({.sort_by = "self_cpu_time_total", .row_limit = 3, .time_unit = "ms"}) == lines({
      sep7,
      "               Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  ",
      sep7,
      "        aten::addmm        58.60%       0.293ms        58.60%       0.293ms       0.146ms             2  ",
      "    aten::clamp_min        16.00%       0.080ms        16.00%       0.080ms       0.080ms             1  ",
      "    model_inference         8.00%       0.040ms       100.00%       0.500ms       0.500ms             1  ",
      sep7,
      "Self CPU time total: 0.500ms"}));

  strata::averages big;
  big.rows = {make_row("a", 1, 12345678900, 12345678900)};
  const std::string sep = "-----  ------------  ------------  ------------  ------------  ------------  ------------  ";
  const std::string header = " Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  ";
  SUBCASE("us: a wide cell overflows instead of being cut") {
    CHECK(big.table({.time_unit = "us"}) == lines({
        sep, header, sep,
        "    a       100.00%  12345678.900us       100.00%  12345678.900us  12345678.900us             1  ",
        sep, "Self CPU time total: 12345678.900us"}));
  }
  SUBCASE("automatic: seconds from 1e6 us; an unknown unit is automatic too") {
    const std::string expected = lines({
        sep, header, sep,
        "    a       100.00%       12.346s       100.00%       12.346s       12.346s             1  ",
        sep, "Self CPU time total: 12.346s"});
    CHECK(big.table() == expected);
    CHECK(big.table({.time_unit = "minutes"}) == expected);
    CHECK(big.table({.time_unit = "s"}) == expected);
  }
  SUBCASE("the thresholds") {
    CHECK(strata::detail::format_time_ns(999'900, "") == "999.900us");
    CHECK(strata::detail::format_time_ns(1'000'000, "") == "1.000ms");
    CHECK(strata::detail::format_time_ns(1'234'500, "") == "1.234ms");
    CHECK(strata::detail::format_time_ns(2'500'000'000, "") == "2.500s");
    CHECK(strata::detail::format_time_ns(0, "") == "0.000us");
    CHECK(strata::detail::format_time_ns(999'999.6, "") == "1000.000us");
    CHECK(strata::detail::format_time_ns(1, "") == "0.001us");
    CHECK(strata::detail::format_time_ns(1'500, "s") == "0.000s");
  }
}

TEST_CASE("table: percentages are NaN when their total is 0") {
  strata::averages a;
  a.device_name = "CUDA";
  a.rows = {make_row("volta_sgemm_128x64_nn", 2, 0, 0, 230'000, 230'000, true),
            make_row("elementwise_kernel", 3, 0, 0, 1'234'500, 1'234'500, true)};
  const std::string sep =
      "-------------------------  ------------  ------------  ------------  ------------  ------------  "
      "------------  ------------  ------------  ------------  ------------  ";
  CHECK(a.table() == lines({
      sep,
      "                     Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg     Self CUDA   Self CUDA %    CUDA total  CUDA time avg    # of Calls  ",
      sep,
      "    volta_sgemm_128x64_nn           NaN       0.000us           NaN       0.000us       0.000us     230.000us        15.71%     230.000us     115.000us             2  ",
      "       elementwise_kernel           NaN       0.000us           NaN       0.000us       0.000us       1.234ms        84.29%       1.234ms     411.500us             3  ",
      sep,
      "Self CPU time total: 0.000us",
      "Self CUDA time total: 1.464ms"}));
}

TEST_CASE("table: long names are cut with ...") {
  strata::averages a;
  a.rows = {make_row("abcdef", 1, 1000, 1000), make_row("abcdefghij", 1, 3000, 3000)};
  const std::string tail_header = "  Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  ";
  const std::string tail_sep = "------------  ------------  ------------  ------------  ------------  ------------  ";
  SUBCASE("cut at max_name_column_width - 3 characters") {
    CHECK(a.table({.max_name_column_width = 10}) == lines({
        "----------  " + tail_sep,
        "      Name  " + tail_header,
        "----------  " + tail_sep,
        "    abcdef        25.00%       1.000us        25.00%       1.000us       1.000us             1  ",
        "abcdefg...        75.00%       3.000us        75.00%       3.000us       3.000us             1  ",
        "----------  " + tail_sep,
        "Self CPU time total: 4.000us"}));
  }
  SUBCASE("0: never cut") {
    CHECK(a.table({.max_name_column_width = 0}) == lines({
        "--------------  " + tail_sep,
        "          Name  " + tail_header,
        "--------------  " + tail_sep,
        "        abcdef        25.00%       1.000us        25.00%       1.000us       1.000us             1  ",
        "    abcdefghij        75.00%       3.000us        75.00%       3.000us       3.000us             1  ",
        "--------------  " + tail_sep,
        "Self CPU time total: 4.000us"}));
  }
  SUBCASE("default 55: a 52-character name is already cut, a 51-character one is not") {
    const std::string n51(51, 'x'), n52(52, 'y');
    strata::averages b;
    b.rows = {make_row(n51, 1, 1000, 1000), make_row(n52, 1, 1000, 1000)};
    const std::string t = b.table();
    CHECK(t.find("\n    " + n51 + "        50.00%") != std::string::npos);
    CHECK(t.find("\n" + n52 + "...") != std::string::npos);
  }
}

TEST_CASE("table: the Input Shapes column when grouped by shape") {
  const std::vector<op_event> ev = {{"mm", layer::framework, 1, 0, 10 * us, 0, "[[2, 3]]"},
                                    {"mm", layer::framework, 1, 20 * us, 40 * us, 0, "[[4]]"},
                                    {"mm", layer::framework, 1, 50 * us, 80 * us, 0, "[[2, 3]]"}};
  const auto a = strata::key_averages(std::span<const op_event>(ev), {.group_by_input_shape = true});
  const std::string sep = "------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ";
  CHECK(a.table() == lines({
      sep,
      "  Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  Input Shapes  ",
      sep,
      "    mm        66.67%      40.000us        66.67%      40.000us      20.000us             2      [[2, 3]]  ",
      "    mm        33.33%      20.000us        33.33%      20.000us      20.000us             1         [[4]]  ",
      sep,
      "Self CPU time total: 60.000us"}));
  // Cut hard, without "...", at max_shapes_column_width.
  CHECK(a.table({.max_shapes_column_width = 6}).find("           2  [[2, 3  \n") != std::string::npos);
  // Not grouped: no column.
  CHECK(strata::key_averages(std::span<const op_event>(ev)).table().find("Input Shapes") == std::string::npos);
}

TEST_CASE("table: row_limit, empty input, lost records") {
  strata::averages a;
  a.rows = {make_row("a", 1, 1000, 1000), make_row("b", 1, 3000, 3000)};
  const std::string sep = "-----  ------------  ------------  ------------  ------------  ------------  ------------  ";
  const std::string header = " Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  ";
  SUBCASE("0 rows: header and footer only") {
    CHECK(a.table({.row_limit = 0}) == lines({sep, header, sep, sep, "Self CPU time total: 4.000us"}));
  }
  SUBCASE("negative: all rows") {
    CHECK(a.table({.row_limit = -1}) == lines({sep, header, sep,
        "    a        25.00%       1.000us        25.00%       1.000us       1.000us             1  ",
        "    b        75.00%       3.000us        75.00%       3.000us       3.000us             1  ",
        sep, "Self CPU time total: 4.000us"}));
  }
  SUBCASE("records lost: a footer line with the count and the policy") {
    a.records_lost = 5;
    CHECK(a.table({.row_limit = 0}) == lines({sep, header, sep, sep, "Self CPU time total: 4.000us",
                                              "Records lost: 5 (lossless); the times above undercount"}));
    a.overflow = strata::overflow_policy::flight_recorder;
    CHECK(a.table({.row_limit = 0}).ends_with("Records lost: 5 (flight_recorder); the times above undercount\n"));
  }
  SUBCASE("no rows: the empty string, as torch") {
    CHECK(strata::averages{}.table().empty());
    CHECK(strata::averages{}.table({.sort_by = "count"}).empty());
  }
  SUBCASE("no rows: an unknown sort key is still an error, naming the known ones") {
    CHECK_THROWS_WITH_AS(strata::averages{}.table({.sort_by = "bytes"}),
                         doctest::Contains("unknown sort_by key 'bytes': use self_cpu_time_total"),
                         strata::error);
    CHECK_THROWS_AS(strata::averages{}.sorted("bytes"), strata::error);
    CHECK_THROWS_AS(strata::check_sort_key("bytes"), strata::error);
    CHECK_NOTHROW(strata::check_sort_key("flops"));
    CHECK_NOTHROW(strata::check_sort_key("self_cuda_memory_usage"));
    CHECK_NOTHROW(strata::check_sort_key("self_neuron_time_total"));
  }
}

TEST_CASE("table: sort keys, largest first, stable on ties") {
  strata::averages a;
  a.rows = {make_row("a", 1, 50, 100, 0, 30), make_row("b", 4, 10, 200, 5, 5),
            make_row("c", 2, 30, 60, 20, 80)};
  const auto order = [&](std::string_view key) {
    std::string s;
    for (const auto& r : a.sorted(key)) s += r.name;
    return s;
  };
  CHECK(order("") == "abc");
  CHECK(order("self_cpu_time_total") == "acb");
  CHECK(order("cpu_time_total") == "bac");
  CHECK(order("cpu_time") == "abc");       // averages 100, 50, 30
  CHECK(order("self_device_time_total") == "cba");
  CHECK(order("device_time_total") == "cab");
  CHECK(order("device_time") == "cab");    // averages 30, 1.25, 40
  CHECK(order("count") == "bca");
  CHECK(order("self_cuda_time_total") == "cba");
  CHECK(order("xpu_time_total") == "cab");
  CHECK(order("self_privateuse1_time_total") == "cba");
  CHECK(order("neuron_time") == "cab");
  CHECK_THROWS_AS(order("npu_time_total"), strata::error);
  CHECK_THROWS_AS(a.table({.sort_by = "cpu_memory"}), strata::error);

  strata::averages ties;
  ties.rows = {make_row("x", 1, 5, 5), make_row("y", 2, 7, 7), make_row("z", 1, 5, 5)};
  std::string s;
  for (const auto& r : ties.sorted("self_cpu_time_total")) s += r.name;
  CHECK(s == "yxz");
}

TEST_CASE("csv: the table's columns in nanoseconds, names quoted") {
  strata::averages a;
  a.rows = {make_row("op, \"x\"", 2, 300, 1000, 0, 250), make_row("k", 1, 0, 0, 250, 250, true)};
  CHECK(a.to_csv() ==
        "Name,Input Shapes,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,Self NEURON,"
        "Self NEURON %,NEURON total,NEURON time avg,# of Calls,Is Device,Top Level,"
        "CPU Mem,Self CPU Mem,NEURON Mem,Self NEURON Mem,Total FLOPs,Device Bytes,TFLOP/s,MFU %,MBU %\n"
        "\"op, \"\"x\"\"\",\"\",100.00,300,333.33,1000,500,0,0.00,250,125,2,0,1,0,0,0,0,0,0,,,\n"
        "\"k\",\"\",0.00,0,0.00,0,0,250,100.00,250,250,1,1,1,0,0,0,0,0,0,,,\n");
  strata::averages host_only;
  host_only.rows = {make_row("idle", 3, 0, 10)};
  CHECK(host_only.to_csv().ends_with("\"idle\",\"\",NaN,0,NaN,10,3.3333333333333335,0,NaN,0,0,3,0,1,0,0,0,0,0,0,,,\n"));
}

TEST_CASE("json: an object with the totals and one object per row") {
  strata::averages a;
  a.records_lost = 4;
  a.rows = {make_row("op, \"x\"", 2, 300, 1000, 0, 250), make_row("k", 1, 0, 0, 250, 250, true)};
  CHECK(a.to_json() ==
        "{\"device_name\":\"NEURON\",\"records_lost\":4,\"self_cpu_time_total_ns\":300,"
        "\"self_device_time_total_ns\":250,\"profile_memory\":false,\"with_flops\":false,"
        "\"peak_tflops\":null,\"peak_hbm_gbps\":null,\"rows\":[\n"
        "{\"name\":\"op, \\\"x\\\"\",\"input_shapes\":\"\",\"is_device\":false,\"top_level\":true,"
        "\"count\":2,\"self_cpu_time_total_ns\":300,\"cpu_time_total_ns\":1000,\"cpu_time_avg_ns\":500,"
        "\"self_device_time_total_ns\":0,\"device_time_total_ns\":250,\"device_time_avg_ns\":125,"
        "\"cpu_memory_usage\":0,\"self_cpu_memory_usage\":0,\"device_memory_usage\":0,"
        "\"self_device_memory_usage\":0,\"flops\":0,"
        "\"device_bytes\":0,\"tflops_per_s\":null,\"mfu\":null,\"mbu\":null},\n"
        "{\"name\":\"k\",\"input_shapes\":\"\",\"is_device\":true,\"top_level\":true,"
        "\"count\":1,\"self_cpu_time_total_ns\":0,\"cpu_time_total_ns\":0,\"cpu_time_avg_ns\":0,"
        "\"self_device_time_total_ns\":250,\"device_time_total_ns\":250,\"device_time_avg_ns\":250,"
        "\"cpu_memory_usage\":0,\"self_cpu_memory_usage\":0,\"device_memory_usage\":0,"
        "\"self_device_memory_usage\":0,\"flops\":0,"
        "\"device_bytes\":0,\"tflops_per_s\":null,\"mfu\":null,\"mbu\":null}]}\n");
  strata::averages odd;
  odd.rows = {make_row("bad\xff\n", 1, 1, 1)};
  CHECK(odd.to_json().find("\"name\":\"bad\xef\xbf\xbd\\n\"") != std::string::npos);
  CHECK(strata::averages{}.to_json() ==
        "{\"device_name\":\"NEURON\",\"records_lost\":0,\"self_cpu_time_total_ns\":0,"
        "\"self_device_time_total_ns\":0,\"profile_memory\":false,\"with_flops\":false,"
        "\"peak_tflops\":null,\"peak_hbm_gbps\":null,\"rows\":[]}\n");
}

}  // namespace test_averages_table
