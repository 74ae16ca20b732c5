// strata::report::read_trace(): saved Chrome trace JSON (strata's and torch.profiler's Kineto) back into
// op_events. The documents are written out by hand; expected values are worked out by hand.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <zlib.h>

#include "strata/export/chrome_trace.hpp"
#include "report/trace_reader.hpp"
#include "support.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_trace_reader {

using strata::layer;
using namespace std::string_literals;  // "...\x00..."s keeps the bytes after a NUL

namespace {

strata::report::saved_trace read_text(const strata_test::temp_dir& dir, const std::string& json) {
  const auto path = dir / "trace.json";
  strata_test::write_file(path, json);
  return strata::report::read_trace(path);
}

const strata::average_row* row(const strata::averages& a, std::string_view name, bool device = false) {
  return a.find(name, device);
}

// What strata's writer produces, trimmed to what the reader uses.
const std::string strata_doc = R"j({"displayTimeUnit":"ns",
"otherData":{"strata_version":"0.1.0","clock_source":"tsc","overflow_policy":"drop_newest","dropped":0},
"strataThreads":[{"tid":11,"name":"main","recorded":4,"dropped":0,"exited":false}],
"traceEvents":[
{"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"proc"}},
{"ph":"M","name":"thread_name","pid":7,"tid":11,"args":{"name":"main"}},
{"ph":"X","cat":"framework","name":"aten::mm","pid":7,"tid":11,"ts":393930975.398,"dur":12.345,"args":{"correlation_id":42,"Input Dims":[[4, 8], [8, 16], []]}},
{"ph":"X","cat":"runtime","name":"submit","pid":7,"tid":11,"ts":393930976.000,"dur":0.001,"args":{"correlation_id":42}},
{"ph":"X","cat":"device","name":"matmul kernel","pid":7,"tid":12,"ts":393930977.000,"dur":5.000,"args":{"correlation_id":42}},
{"ph":"X","cat":"device.phase","name":"tile loop","pid":7,"tid":12,"ts":393930977.000,"dur":4.000,"args":{"correlation_id":42}},
{"ph":"X","cat":"device.engine","name":"matmul","pid":7,"tid":13,"ts":393930977.000,"dur":3.000,"args":{"cycles":2048,"correlation_id":42}},
{"ph":"X","cat":"user","name":"step","pid":8,"tid":11,"ts":0.000,"dur":1.000},
{"ph":"i","cat":"user","name":"tick","pid":7,"tid":11,"ts":393930977.500,"s":"t"},
{"ph":"C","cat":"device","name":"depth","pid":7,"tid":11,"ts":3.000,"args":{"value":null}},
{"ph":"i","s":"t","cat":"strata","name":"strata: 2 records lost (drop_newest)","pid":7,"tid":11,"ts":9.000,"args":{"lost":2}}
]}
)j";

}  // namespace

TEST_CASE("trace reader: microseconds as exact nanoseconds") {
  using strata::report::detail::parse_us_as_ns;
  CHECK(parse_us_as_ns("12.345") == 12345);
  CHECK(parse_us_as_ns("393930975398.123") == 393930975398123);
  CHECK(parse_us_as_ns("12") == 12000);
  CHECK(parse_us_as_ns("0.5") == 500);
  CHECK(parse_us_as_ns("-1.500") == -1500);
  CHECK(parse_us_as_ns("0.0004") == 0);  // below a nanosecond: rounded half away from zero
  CHECK(parse_us_as_ns("0.0005") == 1);
  CHECK(parse_us_as_ns("1.5e-3") == 2);
  CHECK(parse_us_as_ns("1E3") == 1000000);
  CHECK(parse_us_as_ns("9223372036854775.807") == std::numeric_limits<std::int64_t>::max());
  CHECK_FALSE(parse_us_as_ns("9223372036854775.808"));
  CHECK_FALSE(parse_us_as_ns("1e30"));
  CHECK_FALSE(parse_us_as_ns(""));
  CHECK_FALSE(parse_us_as_ns("."));
  CHECK_FALSE(parse_us_as_ns("1.2.3"));
  CHECK_FALSE(parse_us_as_ns("null"));
  CHECK_FALSE(parse_us_as_ns("1e"));
}

TEST_CASE("trace reader: a strata trace") {
  strata_test::temp_dir dir("reader-strata");
  const auto t = read_text(dir, strata_doc);
  CHECK(t.format == "strata");
  CHECK(t.device_name == "NEURON");
  CHECK(t.records_lost == 0);
  // 2 metadata, instant, counter, the writer's lost-records instant, and the two parts of the
  // device execution (a phase, an engine instruction), whose time the execution carries.
  CHECK(t.skipped == 7);
  REQUIRE(t.events.size() == 4);

  const auto& mm = t.events[0];
  CHECK(mm.name == "aten::mm");
  CHECK(mm.layer == layer::framework);
  CHECK(mm.begin_ns == 393930975398);
  CHECK(mm.end_ns == 393930975398 + 12345);
  CHECK(mm.correlation_id == 42);
  CHECK(mm.input_shapes == "[[4, 8], [8, 16], []]");

  CHECK(t.events[1].layer == layer::runtime);
  CHECK(t.events[1].end_ns - t.events[1].begin_ns == 1);
  CHECK(t.events[1].input_shapes.empty());
  CHECK(t.events[2].layer == layer::device);
  CHECK(t.events[3].layer == layer::user);
  CHECK(t.events[3].correlation_id == 0);

  // Tracks are (pid, tid) pairs: (7,11), (7,11), (7,12), (8,11).
  CHECK(t.tracks == 3);
  CHECK(t.events[0].track == t.events[1].track);
  CHECK(t.events[2].track != t.events[0].track);
  CHECK(t.events[3].track != t.events[0].track);
  CHECK(t.events[3].track != t.events[2].track);

  SUBCASE("key_averages: the op owns the kernel, not the runtime submit inside it") {
    const auto avg = strata::report::key_averages(t, {.group_by_input_shape = true});
    CHECK(avg.device_name == "NEURON");
    const auto* op = row(avg, "aten::mm");
    REQUIRE(op != nullptr);
    CHECK(op->input_shapes == "[[4, 8], [8, 16], []]");
    CHECK(op->cpu_total_ns == 12345);
    CHECK(op->self_cpu_ns == 12344);
    CHECK(op->self_device_ns == 5000);
    CHECK(op->device_total_ns == 5000);
    REQUIRE(row(avg, "submit") != nullptr);
    CHECK(row(avg, "submit")->self_device_ns == 0);
    REQUIRE(row(avg, "matmul kernel", true) != nullptr);
    CHECK(row(avg, "matmul kernel", true)->self_device_ns == 5000);
  }
}

TEST_CASE("trace reader: records lost and the overflow policy reach the table") {
  strata_test::temp_dir dir("reader-lost");
  SUBCASE("the policies' names, as written now") {
    for (const auto& [name, policy] : {std::pair{"lossless", strata::overflow_policy::lossless},
                                       std::pair{"flight_recorder", strata::overflow_policy::flight_recorder}}) {
      const auto t = read_text(dir, std::string(R"({"otherData":{"strata_version":"0.1.0","overflow_policy":")") +
                                        name + R"(","dropped":1},"traceEvents":[]})");
      CHECK(t.overflow == policy);
    }
  }
  // A trace written before the policies were renamed names them drop_newest, overwrite_oldest.
  const auto t = read_text(dir, R"({"otherData":{"strata_version":"0.1.0","overflow_policy":"overwrite_oldest","dropped":44},
"traceEvents":[{"ph":"X","cat":"user","name":"a","pid":1,"tid":1,"ts":1.000,"dur":2.000}]})");
  CHECK(t.records_lost == 44);
  CHECK(t.overflow == strata::overflow_policy::flight_recorder);
  const auto avg = strata::report::key_averages(t);
  CHECK(avg.records_lost == 44);
  CHECK(avg.table().find("Records lost: 44 (flight_recorder); the times above undercount\n") !=
        std::string::npos);
}

TEST_CASE("trace reader: a Kineto trace puts kernel time on the cpu_op through External id") {
  strata_test::temp_dir dir("reader-kineto");
  const auto t = read_text(dir, R"j({"schemaVersion":1,"deviceProperties":[{"id":0,"name":"GPU"}],
"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":100,"tid":100,"ts":1000.000,"dur":100.000,"args":{"External id":1}},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":100,"tid":100,"ts":1010.000,"dur":20.000,"args":{"External id":5,"Input Dims":[[4, 8], [8, 16]],"Input type":["float","float"]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":1015.000,"dur":5.000,"args":{"External id":5,"correlation":77}},
{"ph":"X","cat":"kernel","name":"sgemm_kernel","pid":0,"tid":7,"ts":1030.000,"dur":4.000,"args":{"External id":5,"correlation":77,"device":0,"stream":7}},
{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":0,"tid":7,"ts":1040.000,"dur":1.000,"args":{"External id":9,"correlation":78}},
{"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#1","pid":0,"tid":7,"ts":1030.000,"dur":11.000,"args":{"External id":1}},
{"ph":"s","cat":"ac2g","id":77,"name":"ac2g","pid":100,"tid":100,"ts":1015.000},
{"ph":"f","cat":"ac2g","id":77,"name":"ac2g","pid":0,"tid":7,"ts":1030.000,"bp":"e"},
{"ph":"X","cat":"Trace","name":"PyTorch Profiler (0)","pid":"Spans","tid":"PyTorch Profiler","ts":1000.000,"dur":200.000}
],"traceName":"t.json"})j");
  CHECK(t.format == "kineto");
  CHECK(t.device_name == "CUDA");
  REQUIRE(t.events.size() == 5);  // no gpu_user_annotation, flow or Trace span
  CHECK(t.events[0].layer == layer::user);
  CHECK(t.events[0].correlation_id == 0);
  CHECK(t.events[1].layer == layer::framework);
  CHECK(t.events[1].correlation_id == 5);
  CHECK(t.events[1].input_shapes == "[[4, 8], [8, 16]]");
  CHECK(t.events[2].layer == layer::runtime);
  CHECK(t.events[2].correlation_id == 0);
  CHECK(t.events[3].layer == layer::device);
  CHECK(t.events[3].correlation_id == 5);
  CHECK(t.events[4].layer == layer::device);

  const auto avg = strata::report::key_averages(t);
  CHECK(avg.device_name == "CUDA");
  const auto* mm = row(avg, "aten::mm");
  REQUIRE(mm != nullptr);
  CHECK(mm->self_device_ns == 4000);  // Self CUDA of the op, as torch prints it
  CHECK(mm->device_total_ns == 4000);
  CHECK(mm->self_cpu_ns == 15000);
  REQUIRE(row(avg, "cudaLaunchKernel") != nullptr);
  CHECK(row(avg, "cudaLaunchKernel")->self_device_ns == 0);
  REQUIRE(row(avg, "ProfilerStep*") != nullptr);  // torch's folded name
  CHECK(row(avg, "ProfilerStep*")->device_total_ns == 4000);
  CHECK(avg.self_device_total_ns() == 5000);  // the kernel and the copy
  const std::string table = avg.table();
  CHECK(table.find("Self CUDA %") != std::string::npos);
  CHECK(table.find("Self CUDA time total: 5.000us") != std::string::npos);
}

TEST_CASE("trace reader: B/E pairs, the array form, and a plain Chrome trace") {
  strata_test::temp_dir dir("reader-be");
  const auto t = read_text(dir, R"([
{"ph":"B","cat":"framework","name":"outer","pid":1,"tid":1,"ts":0},
{"ph":"B","cat":"framework","name":"inner","pid":1,"tid":1,"ts":2},
{"ph":"E","pid":1,"tid":1,"ts":5},
{"ph":"E","pid":1,"tid":1,"ts":10},
{"ph":"E","pid":1,"tid":2,"ts":11},
{"ph":"B","cat":"framework","name":"never closed","pid":1,"tid":1,"ts":20}
])");
  CHECK(t.format == "chrome");
  REQUIRE(t.events.size() == 2);
  CHECK(t.events[0].name == "inner");
  CHECK(t.events[0].begin_ns == 2000);
  CHECK(t.events[0].end_ns == 5000);
  CHECK(t.events[1].name == "outer");
  CHECK(t.events[1].end_ns == 10000);
  CHECK(t.skipped == 2);  // the unmatched E and B
  CHECK(t.tracks == 1);   // the unmatched E's (1, 2) holds no event
  const auto avg = strata::report::key_averages(t);
  CHECK(row(avg, "outer")->self_cpu_ns == 7000);
}

namespace {
constexpr strata::site quoted{"quote \" backslash \\ slash /", "f.cpp", 1, layer::framework,
                              strata::record_kind::scope};
constexpr strata::site controls{"\x01\x02 tab\t newline\n \x1f end", "f.cpp", 2, layer::runtime,
                                strata::record_kind::scope};
constexpr strata::site utf8{"h\xc3\xa9llo \xe6\xbc\xa2\xe5\xad\x97 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf",
                            "f.cpp", 3, layer::device, strata::record_kind::scope};
constexpr strata::site injected{"\"},{\"ph\":\"X\",\"name\":\"injected", "f.cpp", 4, layer::user,
                                strata::record_kind::scope};
}  // namespace

TEST_CASE("trace reader: hostile names written by strata come back byte for byte") {
  strata::trace_data d;
  d.pid = 7;
  d.process_name = "proc";
  d.layers = strata::layer_set::all();
  strata::thread_track th;
  th.tid = 11;
  th.records = {{1000, 9000, &quoted, 3}, {2000, 3000, &controls, 3}, {4000, 4500, &injected, 0}};
  strata::thread_track dev;
  dev.tid = 12;
  dev.records = {{2500, 2750, &utf8, 3}};
  d.threads = {th, dev};
  strata_test::temp_dir dir("reader-hostile");
  strata::write_chrome_trace(d, dir / "trace.json");

  const auto t = strata::report::read_trace(dir / "trace.json");
  REQUIRE(t.events.size() == 4);
  CHECK(t.events[0].name == quoted.name);
  CHECK(t.events[1].name == controls.name);
  CHECK(t.events[2].name == injected.name);
  CHECK(t.events[3].name == utf8.name);

  // The saved trace gives the same rows as the session it was written from.
  const auto from_file = strata::report::key_averages(t);
  const auto from_session = strata::key_averages(d);
  CHECK(from_file.to_csv() == from_session.to_csv());

  SUBCASE("\\u escapes, surrogate pairs included, decode to UTF-8") {
    strata_test::temp_dir dir2("reader-escapes");
    const auto e = read_text(dir2, R"({"traceEvents":[{"ph":"X","name":"\u0001\u00e9\u6f22\ud83d\ude00\"\\\/","ts":0,"dur":1}]})");
    REQUIRE(e.events.size() == 1);
    CHECK(e.events[0].name == "\x01\xc3\xa9\xe6\xbc\xa2\xf0\x9f\x98\x80\"\\/");
  }
}

TEST_CASE("trace reader: errors name the file and what is wrong") {
  strata_test::temp_dir dir("reader-errors");
  const auto message = [&](const std::string& json) -> std::string {
    try {
      read_text(dir, json);
    } catch (const strata::error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string file = "'" + (dir / "trace.json").string() + "'";

  SUBCASE("missing file") {
    try {
      strata::report::read_trace(dir / "missing.json");
      FAIL("no error");
    } catch (const strata::error& e) {
      CHECK(std::string(e.what()) ==
            "strata: cannot read trace '" + (dir / "missing.json").string() + "': no such file");
    }
    CHECK_THROWS_AS(strata::report::read_trace(dir.path()), strata::error);
  }
  SUBCASE("invalid JSON") {
    CHECK(message("{\"traceEvents\":[\n{\"ph\":}]}") ==
          "strata: trace " + file + " is not valid JSON: line 2: expected value");
    CHECK(message("").find("is not valid JSON") != std::string::npos);
    CHECK(message("{\"traceEvents\":[]} trailing").find("is not valid JSON") != std::string::npos);
  }
  SUBCASE("no traceEvents array") {
    CHECK(message("{\"otherData\":{}}") ==
          "strata: trace " + file + " has no traceEvents array: not a Chrome trace JSON");
    CHECK(message("{}").find("has no traceEvents array") != std::string::npos);
    CHECK(message("{\"traceEvents\":{\"a\":1}}") == "strata: trace " + file + ": traceEvents is not an array");
    CHECK(message("{\"traceEvents\":5}") == "strata: trace " + file + ": traceEvents is not an array");
  }
  SUBCASE("an event without a usable ts or dur") {
    CHECK(message(R"({"traceEvents":[{"ph":"M"},{"ph":"X","name":"a","ts":"soon","dur":1}]})") ==
          "strata: trace " + file + ", traceEvents[1]: ts is missing or not a number of microseconds");
    CHECK(message(R"({"traceEvents":[{"ph":"X","name":"a","ts":1}]})").find("traceEvents[0]: dur") !=
          std::string::npos);
    CHECK(message(R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":-1}]})").find("dur") !=
          std::string::npos);
  }
  SUBCASE("nesting deep enough to exhaust the parser's stack") {
    const std::string deep = "{\"traceEvents\":\n" + std::string(100000, '[') + std::string(100000, ']') + "}";
    CHECK(message(deep) == "strata: trace " + file +
                               " is not a trace: values nest more than 256 levels deep (line 2)");
    // 256 levels are fine, brackets inside strings do not count.
    const std::string ok = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"[[[{{\\\"\",\"ts\":0,\"dur\":1,"
                           "\"args\":{\"Input Dims\":" + std::string(252, '[') + std::string(252, ']') + "}}]}";
    CHECK(read_text(dir, ok).events.at(0).name == "[[[{{\"");
  }
  SUBCASE("traceEvents that is an object, even an empty one, is not an array") {
    CHECK(message("{\"traceEvents\":{}}") == "strata: trace " + file + ": traceEvents is not an array");
    CHECK(message("[]").find("has no traceEvents array") != std::string::npos);
  }
  SUBCASE("hostile documents: truncated, binary, not UTF-8, huge numbers") {
    CHECK(message(R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":1},{"ph":"X","na)") ==
          "strata: trace " + file + " is not valid JSON: line 1: unterminated string");
    CHECK(message("\x7f\x45\x4c\x46\x02\x01\x00\x00"s) ==
          "strata: trace " + file + " is not valid JSON: line 1: expected value");
    CHECK(message("{\"traceEvents\":[\x00]}"s).find("is not valid JSON") != std::string::npos);
    CHECK(message("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"\xff\",\"ts\":1,\"dur\":1}]}") ==
          "strata: trace " + file + " is not valid JSON: line 1: a string is not valid UTF-8");
    CHECK(message(R"({"traceEvents":[{"ph":"X","name":"a","ts":1e400,"dur":1}]})") ==
          "strata: trace " + file + " is not valid JSON: line 1: number too big");
    CHECK(message(R"({"traceEvents":[{"ph":"X","name":"a","ts":99999999999999999999,"dur":1}]})") ==
          "strata: trace " + file + ", traceEvents[0]: ts is missing or not a number of microseconds");
    CHECK(message("\n\n  ") == "strata: trace " + file + " is not valid JSON: line 3: the document is empty");
  }
  SUBCASE("an empty traceEvents array is an empty trace") {
    const auto t = read_text(dir, R"({"traceEvents":[]})");
    CHECK(t.events.empty());
    CHECK(strata::report::key_averages(t).table().empty());
  }
}

TEST_CASE("trace reader: from a stream") {
  std::istringstream in(strata_doc);
  const auto t = strata::report::read_trace(in, "memory");
  CHECK(t.events.size() == 4);
  std::istringstream bad("?");
  CHECK_THROWS_WITH_AS(strata::report::read_trace(bad, "memory"),
                       "strata: trace memory is not valid JSON: line 1: expected value",
                       strata::error);
}

TEST_CASE("trace reader: facts that come after the events still decide the rules") {
  strata_test::temp_dir dir("reader-late");
  SUBCASE("otherData after traceEvents: a strata trace, its lost records counted") {
    const auto t = read_text(dir, R"({"traceEvents":[
{"ph":"X","cat":"device.phase","name":"part","pid":1,"tid":1,"ts":0,"dur":1},
{"ph":"X","cat":"framework","name":"op","pid":1,"tid":1,"ts":0,"dur":2}],
"otherData":{"dropped":3,"strata_version":"0.1.0"}})");
    CHECK(t.format == "strata");
    CHECK(t.records_lost == 3);
    REQUIRE(t.events.size() == 1);
    CHECK(t.events[0].name == "op");
  }
  SUBCASE("a Kineto category after other events: every event is read with Kineto's rules") {
    // Read with strata's rules, the first event would be a user op and the kernel's
    // correlation_id would count; with Kineto's, gpu_user_annotation is not an op and the
    // kernel's id is its External id.
    const auto t = read_text(dir, R"([
{"ph":"X","cat":"gpu_user_annotation","name":"span","pid":0,"tid":7,"ts":0,"dur":9},
{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"External id":5,"correlation_id":6}}
])");
    CHECK(t.format == "kineto");
    CHECK(t.device_name == "CUDA");
    REQUIRE(t.events.size() == 1);
    CHECK(t.events[0].name == "k");
    CHECK(t.events[0].correlation_id == 5);
    CHECK(t.skipped == 1);
  }
}

TEST_CASE("trace reader: from memory, and values of every JSON type where text is expected") {
  const auto t = strata::report::read_trace_bytes(R"({"traceEvents":[
{"ph":"X","name":null,"pid":true,"tid":[1],"ts":"1.5","dur":2,"args":{"correlation_id":"7","Input Dims":[[1,{"a":2}],"",[]]}},
{"ph":"X","name":"dup","name":"second","ts":0,"ts":"x","dur":1,"args":{"Input Dims":"scalar"}},
5, [1, 2], "text"
]})");
  REQUIRE(t.events.size() == 2);
  CHECK(t.events[0].name == "null");  // a literal keeps its text, as before
  CHECK(t.events[0].begin_ns == 1500);
  CHECK(t.events[0].correlation_id == 7);
  CHECK(t.events[0].input_shapes == "[[1, [2]], [], []]");
  CHECK(t.events[1].name == "dup");  // the first of a repeated key
  CHECK(t.events[1].input_shapes == "scalar");
  CHECK(t.events[0].track != t.events[1].track);
  CHECK(t.skipped == 3);  // the entries that are not objects
}

namespace {
void write_gzip(const std::filesystem::path& path, const std::string& text, std::size_t keep = std::string::npos) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  gzFile f = gzopen(tmp.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  REQUIRE(gzclose(f) == Z_OK);
  std::ifstream in(tmp, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::filesystem::remove(tmp);
  strata_test::write_file(path, bytes.substr(0, keep));
}
}  // namespace

TEST_CASE("trace reader: gzip-compressed traces, recognised by their magic bytes") {
  strata_test::temp_dir dir("reader-gzip");
  const auto plain = strata::report::read_trace_bytes(strata_doc);
  SUBCASE("a .json.gz reads as the same trace") {
    write_gzip(dir / "trace.json.gz", strata_doc);
    const auto t = strata::report::read_trace(dir / "trace.json.gz");
    CHECK(t.format == "strata");
    CHECK(strata::report::key_averages(t).to_csv() == strata::report::key_averages(plain).to_csv());
  }
  SUBCASE("whatever the name") {
    write_gzip(dir / "trace.json", strata_doc);
    CHECK(strata::report::read_trace(dir / "trace.json").events.size() == plain.events.size());
  }
  SUBCASE("a truncated or corrupt gzip file is refused, naming the file") {
    const std::string file = "'" + (dir / "cut.json.gz").string() + "'";
    write_gzip(dir / "cut.json.gz", strata_doc, 40);
    CHECK_THROWS_WITH_AS(strata::report::read_trace(dir / "cut.json.gz"),
                         ("strata: cannot read trace " + file + ": its gzip data ends early (truncated?)").c_str(),
                         strata::error);
    strata_test::write_file(dir / "cut.json.gz", "\x1f\x8b\x08\x00 not deflate data at all"s);
    try {
      strata::report::read_trace(dir / "cut.json.gz");
      FAIL("no error");
    } catch (const strata::error& e) {
      CHECK(std::string(e.what()).starts_with("strata: cannot read trace " + file + ": its gzip data"));
    }
  }
}

TEST_CASE("trace reader: a steps track is read back as the steps of its thread") {
  static constexpr strata::site outer{"outer", "f", 1, layer::user, strata::record_kind::scope};
  static constexpr strata::site inner{"inner", "f", 2, layer::user, strata::record_kind::scope};
  static constexpr strata::site step0{"ProfilerStep#0", "f", 3, layer::framework, strata::record_kind::scope};
  static constexpr strata::site step1{"ProfilerStep#1", "f", 4, layer::framework, strata::record_kind::scope};
  strata::trace_data d;
  d.pid = 7;
  d.process_name = "proc";
  d.layers = strata::layer_set::all();
  strata::thread_track steps, th;
  steps.steps = true;
  steps.steps_of = 11;
  steps.tid = strata::steps_track_tid(11);
  steps.name = "main steps";
  steps.records = {{1000, 5000, &step0, 0}, {5000, 9000, &step1, 0}};
  th.tid = 11;
  th.name = "main";
  th.records = {{2000, 7000, &outer, 0}, {3000, 4000, &inner, 0}};  // outer spans the boundary
  d.threads = {steps, th};
  strata_test::temp_dir dir("reader-steps");
  strata::write_chrome_trace(d, dir / "trace.json");

  const auto t = strata::report::read_trace(dir / "trace.json");
  REQUIRE(t.events.size() == 4);
  CHECK(t.tracks == 2);
  for (const auto& e : t.events) {
    CAPTURE(e.name);
    const bool is_step = e.name.rfind("ProfilerStep#", 0) == 0;
    CHECK((e.steps_of != strata::op_event::not_a_step) == is_step);
    if (is_step) CHECK(e.steps_of == t.events[2].track);  // the thread's track
  }
  // The same rows as the session: each step's self time is what outer leaves of it.
  const auto from_file = strata::report::key_averages(t);
  CHECK(from_file.to_csv() == strata::key_averages(d).to_csv());
  REQUIRE(row(from_file, "ProfilerStep*") != nullptr);  // both steps, folded
  CHECK(row(from_file, "ProfilerStep*")->count == 2);
  CHECK(row(from_file, "ProfilerStep*")->self_cpu_ns == 1000 + 2000);
  CHECK(row(from_file, "outer")->self_cpu_ns == 4000);
}

TEST_CASE("trace reader: Kineto's [memory] instants and args.flops") {
  strata_test::temp_dir dir("reader-memory");
  // One thread (100, 100): linear [1000, 1100] holds addmm [1010, 1090] (flops 2048); a
  // [memory] event in addmm (960 Kb), one in linear outside it (a free), a CUDA one (Device
  // Type 1) in addmm, one on another thread (100, 101) with no ops, and one after every op.
  const auto t = read_text(dir, R"j({"schemaVersion":1,"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":100,"tid":100,"ts":1000,"dur":100,"args":{"External id":1}},
{"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":100,"tid":100,"ts":1010,"dur":80,"args":{"External id":2,"flops":2048}},
{"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":100,"tid":100,"ts":1020,"args":{"Device Type":0,"Device Id":-1,"Addr":94000,"Bytes":983040,"Total Allocated":983040,"Total Reserved":0}},
{"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":100,"tid":100,"ts":1030,"args":{"Device Type":1,"Device Id":0,"Addr":7,"Bytes":512,"Total Allocated":512,"Total Reserved":2097152}},
{"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":100,"tid":100,"ts":1095.5,"args":{"Device Type":0,"Device Id":-1,"Addr":94000,"Bytes":-4096,"Total Allocated":0,"Total Reserved":0}},
{"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":100,"tid":101,"ts":1050,"args":{"Device Type":2,"Device Id":-1,"Addr":1,"Bytes":300,"Total Allocated":300,"Total Reserved":0}},
{"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":100,"tid":100,"ts":1200,"args":{"Device Type":0,"Device Id":-1,"Addr":1,"Bytes":-300,"Total Allocated":0,"Total Reserved":0}}
]})j");
  REQUIRE(t.memory.size() == 5);
  CHECK(t.memory[0].ns == 1020000);
  CHECK(t.memory[0].bytes == 983040);
  CHECK_FALSE(t.memory[0].on_device);
  CHECK(t.memory[1].on_device);  // CUDA
  CHECK(t.memory[2].ns == 1095500);
  CHECK(t.memory[2].bytes == -4096);
  CHECK(t.memory[0].track == t.events[0].track);
  CHECK(t.memory[3].track != t.events[0].track);
  CHECK_FALSE(t.memory[3].on_device);  // MKLDNN is host memory, as torch counts it
  CHECK(t.events[1].flops == 2048);
  CHECK(t.events[0].flops == 0);
  CHECK(t.has_flops());
  CHECK(t.skipped == 0);  // the [memory] events are used

  // The trace's memory and FLOPs make the columns appear.
  const auto avg = strata::report::key_averages(t);
  CHECK(avg.profile_memory);
  CHECK(avg.with_flops);
  CHECK(row(avg, "aten::addmm")->self_cpu_memory_usage == 983040);
  CHECK(row(avg, "aten::addmm")->self_device_memory_usage == 512);
  CHECK(row(avg, "aten::addmm")->flops == 2048);
  CHECK(row(avg, "aten::linear")->cpu_memory_usage == 983040 - 4096);
  CHECK(row(avg, "aten::linear")->self_cpu_memory_usage == -4096);
  REQUIRE(row(avg, "[memory]") != nullptr);
  CHECK(row(avg, "[memory]")->count == 2);
  CHECK(row(avg, "[memory]")->cpu_memory_usage == 0);
  const std::string table = avg.table();
  CHECK(table.find("Self CPU Mem") != std::string::npos);
  CHECK(table.find("Self CUDA Mem") != std::string::npos);
  CHECK(table.find("Total KFLOPs") != std::string::npos);

  // Without [memory] events and FLOPs, no such columns unless asked for.
  const auto plain = read_text(dir, R"j({"schemaVersion":1,"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":0,"dur":5}]})j");
  CHECK(plain.memory.empty());
  CHECK_FALSE(strata::report::key_averages(plain).profile_memory);
  CHECK(strata::report::key_averages(plain).table().find("CPU Mem") == std::string::npos);
  const auto forced = strata::report::key_averages(plain, {.profile_memory = true});
  CHECK(forced.table().find("           0 b           0 b") != std::string::npos);

  // A [memory] event without a usable Bytes or ts is an error naming the event.
  CHECK_THROWS_WITH_AS(read_text(dir, R"j({"traceEvents":[
{"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":5,"args":{"Bytes":"lots"}}]})j"),
                       doctest::Contains("traceEvents[0]: a [memory] event needs ts"), strata::error);
}

}  // namespace test_trace_reader
