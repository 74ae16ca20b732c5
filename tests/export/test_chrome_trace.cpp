// Chrome trace export: the exact bytes for a hand-built session, and what a real session's
// trace says about losses, counters and failures.
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "strata/export/chrome_trace.hpp"
#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "support.hpp"
#include "write_limit.hpp"

using strata::layer;
using strata::record_kind;
using strata_test::lines_with;
using strata_test::read_file;

namespace {

std::string us(std::int64_t ns) {
  fmt::memory_buffer out;
  strata::detail::append_us(out, ns);
  return fmt::to_string(out);
}

constexpr strata::site op{"op \"quoted\"", "f.cpp", 1, layer::framework, record_kind::scope};
constexpr strata::site child{"child", "f.cpp", 2, layer::runtime, record_kind::scope};
constexpr strata::site tick{"tick", "f.cpp", 3, layer::user, record_kind::instant};
constexpr strata::site depth{"depth", "f.cpp", 4, layer::device, record_kind::counter};
constexpr strata::site nan_counter{"nan", "f.cpp", 5, layer::device, record_kind::counter};

// Digits, a point, exactly three digits: microseconds that keep nanoseconds.
bool three_decimals(std::string_view s) {
  const auto point = s.find('.');
  if (point == 0 || point == std::string_view::npos || s.size() - point != 4) return false;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (i != point && (s[i] < '0' || s[i] > '9')) return false;
  return true;
}

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

// A session built by hand. Its default clock calibration is steady_clock's: one tick is one ns.
strata::trace_data hand_built_session() {
  strata::trace_data d;
  d.pid = 7;
  d.process_name = "proc";
  d.layers = {layer::user, layer::framework};
  d.buffer_capacity = 8;
  d.start_ticks = 500;
  d.stop_ticks = 9000;
  strata::thread_track main_thread;
  main_thread.tid = 11;
  main_thread.sort_index = 0;
  main_thread.name = "main";
  main_thread.records = {{1000, 3500, &op, 42},
                         {1500, 2500, &child, 0},
                         {2000, 2000, &tick, 0},
                         {3000, bits(0.5), &depth, 0},
                         {3200, bits(std::numeric_limits<double>::quiet_NaN()), &nan_counter, 0}};
  main_thread.lost = 2;
  strata::thread_track unnamed;
  unnamed.tid = 12;
  unnamed.sort_index = 1;
  unnamed.exited = true;
  unnamed.records = {{4000, 4000, &tick, 9}};
  d.threads = {main_thread, unnamed};
  return d;
}

}  // namespace

TEST_CASE("chrome trace: nanoseconds are written as microseconds with three decimals") {
  CHECK(us(0) == "0.000");
  CHECK(us(1) == "0.001");
  CHECK(us(999) == "0.999");
  CHECK(us(1000) == "1.000");
  CHECK(us(1234567) == "1234.567");
  CHECK(us(-1) == "-0.001");
  CHECK(us(-1500) == "-1.500");
  CHECK(us(393930975398123) == "393930975398.123");
}

TEST_CASE("chrome trace: the exact file for a hand-built session") {
  strata_test::temp_dir dir("trace-exact");
  const auto path = dir / "trace.json";
  const auto result = strata::write_chrome_trace(hand_built_session(), path);

  const std::string expected =
      "{\"displayTimeUnit\":\"ns\",\n"
      "\"otherData\":{\"strata_version\":\"" STRATA_VERSION_STRING "\",\"clock_source\":\"steady_clock\","
      "\"ns_per_tick\":1,\"overflow_policy\":\"lossless\",\"buffer_capacity\":8,\"recorded\":6,"
      "\"dropped\":2,\"threads\":2,\"layers\":\"framework,user\",\"session_start_us\":0.500,"
      "\"session_stop_us\":9.000},\n"
      "\"strataThreads\":[{\"pid\":7,\"tid\":11,\"name\":\"main\",\"recorded\":5,\"dropped\":2,\"exited\":false},"
      "{\"pid\":7,\"tid\":12,\"name\":\"\",\"recorded\":1,\"dropped\":0,\"exited\":true}],\n"
      "\"traceEvents\":[\n"
      R"({"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"proc"}},)" "\n"
      R"({"ph":"M","name":"thread_name","pid":7,"tid":11,"args":{"name":"main"}},)" "\n"
      R"({"ph":"M","name":"thread_sort_index","pid":7,"tid":11,"args":{"sort_index":0}},)" "\n"
      R"({"ph":"M","name":"thread_name","pid":7,"tid":12,"args":{"name":"thread 12"}},)" "\n"
      R"({"ph":"M","name":"thread_sort_index","pid":7,"tid":12,"args":{"sort_index":1}},)" "\n"
      R"({"ph":"X","cat":"framework","name":"op \"quoted\"","pid":7,"tid":11,"ts":1.000,"dur":2.500,"args":{"correlation_id":42}},)" "\n"
      R"({"ph":"X","cat":"runtime","name":"child","pid":7,"tid":11,"ts":1.500,"dur":1.000},)" "\n"
      R"({"ph":"i","cat":"user","name":"tick","pid":7,"tid":11,"ts":2.000,"s":"t"},)" "\n"
      R"({"ph":"C","cat":"device","name":"depth","pid":7,"tid":11,"ts":3.000,"args":{"value":0.5}},)" "\n"
      R"({"ph":"C","cat":"device","name":"nan","pid":7,"tid":11,"ts":3.200,"args":{"value":null}},)" "\n"
      R"j({"ph":"i","s":"t","cat":"strata","name":"strata: 2 records lost (lossless)","pid":7,"tid":11,"ts":9.000,"args":{"lost":2}},)j" "\n"
      R"({"ph":"i","cat":"user","name":"tick","pid":7,"tid":12,"ts":4.000,"s":"t","args":{"correlation_id":9}})" "\n"
      "]}\n";

  const std::string written = read_file(path);
  CHECK(written == expected);
  CHECK(result.path == path);
  CHECK(result.events == 12);  // 5 metadata, 6 records, 1 lost-records instant
  CHECK(result.bytes == expected.size());
  CHECK(dir.entries() == std::vector<std::string>{"trace.json"});
}

TEST_CASE("chrome trace: an empty session is still a complete file") {
  strata_test::temp_dir dir("trace-empty");
  strata::trace_data d;
  d.pid = 3;
  d.process_name = "empty";
  const auto result = strata::write_chrome_trace(d, dir / "trace.json");
  CHECK(read_file(dir / "trace.json") ==
        "{\"displayTimeUnit\":\"ns\",\n"
        "\"otherData\":{\"strata_version\":\"" STRATA_VERSION_STRING "\",\"clock_source\":\"steady_clock\","
        "\"ns_per_tick\":1,\"overflow_policy\":\"lossless\",\"buffer_capacity\":0,\"recorded\":0,"
        "\"dropped\":0,\"threads\":0,\"layers\":\"\",\"session_start_us\":0.000,"
        "\"session_stop_us\":0.000},\n"
        "\"strataThreads\":[],\n"
        "\"traceEvents\":[\n"
        R"({"ph":"M","name":"process_name","pid":3,"tid":0,"args":{"name":"empty"}})" "\n"
        "]}\n");
  CHECK(result.events == 1);
}

TEST_CASE("chrome trace: a recorded session") {
  strata_test::temp_dir dir("trace-session");
  auto config = strata_test::config_in(dir, 64);
  strata::profiler prof(config);
  prof.start();
  {
    STRATA_SCOPE_LAYER(layer::framework, "outer");
    { STRATA_SCOPE("inner"); }
    STRATA_INSTANT("mark");
    STRATA_COUNTER("nan counter", std::numeric_limits<double>::quiet_NaN());
    STRATA_COUNTER("inf counter", -std::numeric_limits<double>::infinity());
    STRATA_COUNTER("finite counter", 2.25);
  }
  prof.stop();
  const auto result = prof.export_chrome_trace();
  const std::string text = read_file(std::filesystem::path(config.output_dir) / "trace.json");

  CHECK(result.path == std::filesystem::path(config.output_dir) / "trace.json");
  CHECK(result.events == 1 + 2 + 6);
  CHECK(result.bytes == std::filesystem::file_size(result.path));
  CHECK(strata_test::entries(config.output_dir) == std::vector<std::string>{"trace.json"});

  SUBCASE("scopes carry ts and dur in microseconds with three decimals") {
    const auto xs = lines_with(text, "\"ph\":\"X\"");
    REQUIRE(xs.size() == 2);
    CHECK(xs[0].starts_with(R"({"ph":"X","cat":"framework","name":"outer","pid":)"));  // parent first
    CHECK(xs[1].starts_with(R"({"ph":"X","cat":"user","name":"inner","pid":)"));
    for (const auto& line : xs) {
      CAPTURE(line);
      const auto ts = line.find(",\"ts\":");
      const auto dur = line.find(",\"dur\":");
      REQUIRE(ts != std::string::npos);
      REQUIRE(dur != std::string::npos);
      CHECK(three_decimals(std::string_view(line).substr(ts + 6, dur - ts - 6)));
      const auto close = line.find('}', dur);
      REQUIRE(close != std::string::npos);
      CHECK(three_decimals(std::string_view(line).substr(dur + 7, close - dur - 7)));
    }
  }
  SUBCASE("the thread and process are named") {
    CHECK(lines_with(text, R"("name":"process_name","pid":)" + std::to_string(::getpid()) +
                               R"(,"tid":0,"args":{"name":"strata-tests"}})")
              .size() == 1);
    CHECK(lines_with(text, R"("name":"thread_name","pid":)" + std::to_string(::getpid()) +
                               ",\"tid\":" + std::to_string(strata_test::os_tid()))
              .size() == 1);
  }
  SUBCASE("non-finite counters are null, finite ones numbers") {
    const auto nan_line = lines_with(text, "\"name\":\"nan counter\"");
    const auto inf_line = lines_with(text, "\"name\":\"inf counter\"");
    const auto finite_line = lines_with(text, "\"name\":\"finite counter\"");
    REQUIRE(nan_line.size() == 1);
    REQUIRE(inf_line.size() == 1);
    REQUIRE(finite_line.size() == 1);
    CHECK(nan_line[0].find(R"("args":{"value":null}})") != std::string::npos);
    CHECK(inf_line[0].find(R"("args":{"value":null}})") != std::string::npos);
    CHECK(finite_line[0].find(R"("args":{"value":2.25}})") != std::string::npos);
  }
  SUBCASE("nothing was lost") {
    CHECK(text.find("\"dropped\":0,") != std::string::npos);
    CHECK(lines_with(text, "records lost").empty());
  }
}

TEST_CASE("chrome trace: lost records show as an instant on the thread's track") {
  strata_test::temp_dir dir("trace-lost");
  SUBCASE("lossless past the memory limit, spilling off: two blocks kept, 6 lost") {
    auto config = strata_test::config_in(dir);
    config.memory_limit = std::size_t{1} << 16;  // one block besides the thread's current one
    config.spill = false;
    strata::profiler prof(config);
    prof.start();
    for (int i = 0; i < 2 * 2048 + 6; ++i) STRATA_INSTANT("flood");
    prof.stop();
    prof.export_chrome_trace();
    const std::string text = read_file(std::filesystem::path(config.output_dir) / "trace.json");
    const auto lost = lines_with(text, "records lost");
    REQUIRE(lost.size() == 1);
    CHECK(lost[0] == R"j({"ph":"i","s":"t","cat":"strata","name":"strata: 6 records lost (lossless)","pid":)j" +
                         std::to_string(::getpid()) + ",\"tid\":" + std::to_string(strata_test::os_tid()) +
                         ",\"ts\":" + us(prof.data().clock.to_ns(prof.data().stop_ticks)) +
                         R"(,"args":{"lost":6}})");
    CHECK(lines_with(text, "\"name\":\"flood\"").size() == 2 * 2048);
    CHECK(text.find("\"recorded\":4096,\"dropped\":6,") != std::string::npos);
  }
  SUBCASE("flight recorder: capacity 4, 10 instants, 4 kept, 6 lost") {
    auto config = strata_test::config_in(dir, 4, strata::overflow_policy::flight_recorder);
    strata::profiler prof(config);
    prof.start();
    for (int i = 0; i < 10; ++i) STRATA_INSTANT("flood");
    prof.stop();
    prof.export_chrome_trace();
    const std::string text = read_file(std::filesystem::path(config.output_dir) / "trace.json");
    const auto lost = lines_with(text, "records lost");
    REQUIRE(lost.size() == 1);
    CHECK(lost[0].find(R"j("name":"strata: 6 records lost (flight_recorder)")j") != std::string::npos);
    CHECK(lost[0].find(R"("args":{"lost":6}})") != std::string::npos);
    CHECK(lines_with(text, "\"name\":\"flood\"").size() == 4);
    CHECK(text.find("\"overflow_policy\":\"flight_recorder\"") != std::string::npos);
  }
}

TEST_CASE("chrome trace: a failed export raises strata::error and leaves no partial file") {
  strata_test::temp_dir dir("trace-fail");
  auto config = strata_test::config_in(dir, 4096);
  strata::profiler prof(config);
  prof.start();
  for (int i = 0; i < 2000; ++i) STRATA_SCOPE("enough scopes to pass the writer's flush threshold");
  prof.stop();

  SUBCASE("a path below a regular file") {
    strata_test::write_file(dir / "a_file", "x");
    CHECK_THROWS_AS(prof.export_chrome_trace(dir / "a_file" / "trace.json"), strata::error);
  }
  SUBCASE("the disk fills up half way: the previous trace stays whole") {
    const auto path = std::filesystem::path(config.output_dir) / "trace.json";
    strata_test::write_file(path, "previous trace");
    {
      strata_test::write_limit limit(10000);
      CHECK_THROWS_AS(prof.export_chrome_trace(), strata::error);
    }
    CHECK(read_file(path) == "previous trace");
    CHECK(strata_test::entries(config.output_dir) == std::vector<std::string>{"trace.json"});
    // With room again, the same session exports completely.
    const auto result = prof.export_chrome_trace();
    CHECK(result.events == 1 + 2 + 2000);
    CHECK(read_file(path).ends_with("\n]}\n"));
  }
}
