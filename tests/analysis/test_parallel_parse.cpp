// tools/report/parallel_parse.hpp: a trace's events parsed in pieces on two threads give exactly
// what one parser gives, wherever the pieces and chunks are cut (run under ThreadSanitizer too).
// The scanner's comma offsets are counted by hand; the rest holds the split parse against the
// serial one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <zlib.h>

#include "report/trace_reader.hpp"
#include "support.hpp"

// Named for this file: the test files of a program are compiled as one translation unit.
namespace test_parallel_parse {

using strata::report::saved_trace;
using strata::report::detail::split_options;

namespace {

/// A source that gives at most `most` bytes a read, so the parser's block, and the pieces after
/// it, end wherever the test wants.
class trickle_source {
 public:
  trickle_source(std::string_view bytes, std::size_t most) : rest_(bytes), most_(most) {}
  std::size_t read(char* into, std::size_t n) {
    n = std::min({n, most_, rest_.size()});
    std::copy_n(rest_.data(), n, into);
    rest_.remove_prefix(n);
    return n;
  }
  const std::string& failure() const noexcept { return failure_; }

 private:
  std::string_view rest_;
  std::size_t most_;
  std::string failure_;
};

std::vector<std::size_t> commas_of(std::string_view text, std::size_t block, const char** close) {
  strata::report::detail::element_scanner scanner;
  std::vector<std::size_t> commas;
  *close = nullptr;
  for (std::size_t at = 0; at < text.size() && *close == nullptr; at += block)
    *close = scanner.scan(text.data(), text.data() + at, text.data() + std::min(text.size(), at + block), commas);
  return commas;
}

/// What read_trace gives for `json`: serially (no split), or in pieces of `piece` bytes and
/// chunks of `chunk` bytes, on two threads, the source giving `most` bytes a read.
saved_trace read(const std::string& json, const split_options* split, std::size_t most = 1u << 16) {
  return strata::report::detail::read_trace_from([&] { return trickle_source(json, most); }, "'t.json'",
                                                 {.activity = true}, split);
}

/// The same in pieces, one pass, without the serial parse that follows a failure: a good
/// document must not need it.
saved_trace read_split(const std::string& json, const split_options& split, std::size_t most) {
  trickle_source source(json, most);
  std::optional<strata::report::detail::trace_builder> b =
      strata::report::detail::parse_trace(source, "'t.json'", std::nullopt, {.activity = true}, &split);
  REQUIRE(b.has_value());
  if (!b->needs_second_pass()) return b->finish();
  trickle_source again(json, most);
  b = strata::report::detail::parse_trace(again, "'t.json'", b->final_kineto(), {.activity = true}, &split);
  REQUIRE(b.has_value());
  return b->finish();
}

std::string error_of(const std::string& json, const split_options* split, std::size_t most = 1u << 16) {
  try {
    read(json, split, most);
  } catch (const strata::error& e) {
    return e.what();
  }
  return "no error";
}

void check_events(const std::vector<strata::op_event>& a, const std::vector<strata::op_event>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].layer == b[i].layer);
    CHECK(a[i].track == b[i].track);
    CHECK(a[i].begin_ns == b[i].begin_ns);
    CHECK(a[i].end_ns == b[i].end_ns);
    CHECK(a[i].correlation_id == b[i].correlation_id);
    CHECK(a[i].input_shapes == b[i].input_shapes);
    CHECK(a[i].steps_of == b[i].steps_of);
    CHECK(a[i].flops == b[i].flops);
    CHECK(a[i].device_bytes == b[i].device_bytes);
  }
}

void check_same(const saved_trace& a, const saved_trace& b) {
  check_events(a.events, b.events);
  check_events(a.activity, b.activity);
  REQUIRE(a.memory.size() == b.memory.size());
  for (std::size_t i = 0; i < a.memory.size(); ++i) {
    CHECK(a.memory[i].track == b.memory[i].track);
    CHECK(a.memory[i].ns == b.memory[i].ns);
    CHECK(a.memory[i].bytes == b.memory[i].bytes);
    CHECK(a.memory[i].on_device == b.memory[i].on_device);
  }
  CHECK(a.format == b.format);
  CHECK(a.device_name == b.device_name);
  CHECK(a.records_lost == b.records_lost);
  CHECK(a.tracks == b.tracks);
  CHECK(a.skipped == b.skipped);
  CHECK(a.rank == b.rank);
  REQUIRE(a.track_labels.size() == b.track_labels.size());
  for (std::size_t i = 0; i < a.track_labels.size(); ++i) {
    CHECK(a.track_labels[i].name == b.track_labels[i].name);
    CHECK(a.track_labels[i].group == b.track_labels[i].group);
    CHECK(a.track_labels[i].kind == b.track_labels[i].kind);
  }
  CHECK(strata::report::key_averages(a).table({}) == strata::report::key_averages(b).table({}));
}

// A Kineto trace whose events hold what a cut could fall inside: strings with `},{`, `]`, commas
// and escaped quotes and backslashes, nested args objects and arrays, Input Dims, elements that
// are not objects, B/E pairs, metadata, a memory event, a name longer than a 64-byte block.
const std::string tricky = R"j({"schemaVersion":1,"distributedInfo":{"rank":3},
"traceEvents":[
  {"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"main \"thread\" },{"}},
  {"ph":"X","cat":"cpu_op","name":"aten::odd},{\"name\":\"x\"},{","pid":1,"tid":2,"ts":10.5,"dur":4,
   "args":{"External id":7,"Input Dims":[[4, 8], [], [2]],"nested":{"a":[1,{"b":"]},["}],"c":"\\"}}},
  7, "a string ],{ element", [1, [2, {"ph":"X"}]], null,
  {"ph":"B","cat":"user_annotation","name":"span \\ with a backslash","pid":1,"tid":2,"ts":11},
  {"ph":"X","cat":"kernel","name":"a kernel name that is longer than one sixty-four byte block, },{ inside","pid":0,"tid":7,"ts":12,"dur":2,"args":{"External id":7,"note":"one \" quote, ]},{ then"}},
  {"ph":"i","s":"t","name":"[memory]","pid":1,"tid":2,"ts":12.5,"args":{"Bytes":4096,"Device Type":1,"Total Allocated":4096}},
  {"ph":"E","cat":"user_annotation","pid":1,"tid":2,"ts":15.25},
  {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":3,"ts":20,"dur":1.001,"args":{"External id":8,"Input Dims":[[1]]}},
  {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":2,"ts":30,"dur":2,"args":{"External id":9,"Input Dims":[]}}
],
"traceName":"t.json, with ], { and \" in it"}
)j";

// A strata trace that says so only after its events, whose first op has a category only
// Kineto writes: read twice, the second time with strata's rules. A steps track, B/E, a device
// execution with its engine instruction (activity).
const std::string strata_late = R"j({"traceEvents":[
{"ph":"M","name":"thread_name","pid":7,"tid":11,"args":{"name":"main"}},
{"ph":"X","cat":"cpu_op","name":"first","pid":7,"tid":11,"ts":1,"dur":1},
{"ph":"M","name":"thread_name","pid":7,"tid":90,"args":{"name":"steps","steps_of":11}},
{"ph":"X","cat":"user","name":"ProfilerStep#1","pid":7,"tid":90,"ts":0,"dur":100},
{"ph":"X","cat":"framework","name":"aten::mm","pid":7,"tid":11,"ts":10,"dur":20,"args":{"correlation_id":42,"flops":1000}},
{"ph":"B","cat":"runtime","name":"submit","pid":7,"tid":11,"ts":12},
{"ph":"E","pid":7,"tid":11,"ts":13},
{"ph":"X","cat":"device","name":"matmul kernel","pid":7,"tid":12,"ts":14,"dur":5,"args":{"correlation_id":42,"bytes":4096}},
{"ph":"X","cat":"device.engine","name":"matmul","pid":7,"tid":13,"ts":14,"dur":3}
],
"otherData":{"strata_version":"0.1.0","dropped":3,"overflow_policy":"drop_newest"}}
)j";

}  // namespace

TEST_CASE("parallel parse: the scanner finds the commas between elements, not those in strings or values") {
  // Offsets counted by hand: 11, 13 and 22 are the commas between elements; 35 the closing bracket.
  const std::string text = R"j({"a":"},{"},7,"x\"],{",[1,{"b":2}] ]rest)j";
  for (const std::size_t block : {std::size_t{1}, std::size_t{2}, std::size_t{5}, text.size()}) {
    CAPTURE(block);
    const char* close = nullptr;
    CHECK(commas_of(text, block, &close) == std::vector<std::size_t>{11, 13, 22});
    REQUIRE(close != nullptr);
    CHECK(close - text.data() == 35);
  }
  // 64 bytes at a time: a string over the block's end, `},{` and brackets in it, a comma at 63.
  const std::string a60(60, 'a');
  const std::string wide = "{\"" + a60 + "\"}" + "," + "\"" + a60 + "},{" + a60 + "\"" + "," + "[" + "]" + "]";
  // {" is 2 bytes, 60 a's, "} 2: the comma is at 64. The string after it: 1 + 60 + 3 + 60 + 1 = 125
  // bytes, so the next comma is at 65 + 125 = 190, then [] and the closing bracket at 193.
  for (const std::size_t block : {std::size_t{1}, std::size_t{64}, std::size_t{100}, wide.size()}) {
    CAPTURE(block);
    const char* close = nullptr;
    CHECK(commas_of(wide, block, &close) == std::vector<std::size_t>{64, 190});
    REQUIRE(close != nullptr);
    CHECK(close - wide.data() == 193);
  }
  // Escapes in a block of 64: `\\` ends the escape, `\"` does not end the string.
  const std::string escapes = "[\"\\\\\",\"\\\",\"," + std::string(60, ' ') + "1,2]";
  // Counted in the whole text (the scanner is given it after the opening bracket, one less):
  // 0 '[', 1 '"', 2-3 '\\', 4 '"', 5 ',', 6 '"', 7-8 '\"', 9 ',', 10 '"', 11 ',' then 60 spaces
  // (12..71), 72 '1', 73 ',', 74 '2', 75 ']'.
  const char* close = nullptr;
  CHECK(commas_of(std::string_view(escapes).substr(1), 64, &close) == std::vector<std::size_t>{4, 10, 72});
  REQUIRE(close != nullptr);
  CHECK(close - escapes.data() - 1 == 74);
}

TEST_CASE("parallel parse: pieces and chunks cut anywhere give the serial result") {
  const saved_trace serial = read(tricky, nullptr);
  // What the serial reader makes of it, worked out by hand: the three X ops, the B/E span, the
  // memory event; the 7, the string, the array and null are skipped, with the metadata event.
  REQUIRE(serial.events.size() == 5);
  CHECK(serial.events[0].name == "aten::odd},{\"name\":\"x\"},{");
  CHECK(serial.events[0].input_shapes == "[[4, 8], [], [2]]");
  CHECK(serial.events[0].begin_ns == 10'500);
  CHECK(serial.events[1].name == "a kernel name that is longer than one sixty-four byte block, },{ inside");
  CHECK(serial.events[2].name == "span \\ with a backslash");
  CHECK(serial.events[2].end_ns == 15'250);
  CHECK(serial.skipped == 5);
  CHECK(serial.memory.size() == 1);
  CHECK(serial.rank == 3);
  CHECK(serial.track_labels[0].name == "main \"thread\" },{");
  for (const std::size_t most : {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{1} << 16}) {
    for (std::size_t piece = 1; piece <= tricky.size() + 1; piece += piece < 80 ? 1 : 37) {
      for (const std::size_t chunk : {std::size_t{1}, std::size_t{90}, std::size_t{1} << 20}) {
        CAPTURE(most);
        CAPTURE(piece);
        CAPTURE(chunk);
        const split_options split{.piece_bytes = piece, .chunk_bytes = chunk, .parallel_bytes = 0, .threads = 2};
        check_same(read_split(tricky, split, most), serial);
      }
    }
  }
}

TEST_CASE("parallel parse: a trace read twice, in pieces both times") {
  const saved_trace serial = read(strata_late, nullptr);
  // By hand: five ops with strata's rules (first, the step, aten::mm, submit, the kernel); the
  // two thread names and the engine instruction skipped, the instruction kept as activity.
  CHECK(serial.format == "strata");
  CHECK(serial.records_lost == 3);
  CHECK(serial.events.size() == 5);
  CHECK(serial.skipped == 3);
  CHECK(serial.activity.size() == 1);
  trickle_source source(strata_late, 1u << 16);
  CHECK(strata::report::detail::parse_trace(source, "'t.json'", std::nullopt)->needs_second_pass());
  for (const std::size_t most : {std::size_t{1}, std::size_t{64}, std::size_t{1} << 16}) {
    for (std::size_t piece = 1; piece <= strata_late.size() + 1; piece += piece < 40 ? 1 : 29) {
      CAPTURE(most);
      CAPTURE(piece);
      const split_options split{.piece_bytes = piece, .chunk_bytes = 60, .parallel_bytes = 0, .threads = 2};
      check_same(read_split(strata_late, split, most), serial);
    }
  }
}

TEST_CASE("parallel parse: an empty array, one element, and a document too small to split") {
  const split_options split{.piece_bytes = 4, .chunk_bytes = 1, .parallel_bytes = 0, .threads = 2};
  for (const std::string& doc : {std::string(R"({"traceEvents":[ ]})"), std::string(R"({"traceEvents":[]})"),
                                std::string(R"([{"ph":"X","name":"a","ts":1,"dur":2}])"),
                                std::string(R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2}],"x":[1,2]})")}) {
    CAPTURE(doc);
    const saved_trace serial = read(doc, nullptr);
    for (const std::size_t most : {std::size_t{1}, std::size_t{3}, std::size_t{1} << 16})
      check_same(read_split(doc, split, most), serial);
    // The default options leave a document this small to one parser.
    const split_options defaults;
    check_same(read(doc, &defaults), serial);
  }
}

TEST_CASE("parallel parse: a bad document gives the serial parse's error, wherever it is cut") {
  std::vector<std::string> bad = {
      R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2},]})",       // a comma before the bracket
      R"({"traceEvents":[,{"ph":"X","name":"a","ts":1,"dur":2}]})",       // a comma after it
      R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2} {"ph":"X"}]})",  // no comma
      R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2},{"ph":"X","name":"b","ts":"x","dur":1}]})",
      R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2},{"ph":"X","name":"b\"},{","ts":1,"dur":-1}]})",
      "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"\xff\",\"ts\":1,\"dur\":2}]}",  // not UTF-8
      R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2}]} trailing)",
      R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2}],})",
      R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2})",           // ends inside the array
      R"({"traceEvents":[{"ph":"X","name":"a\)",                           // inside an escape
      std::string(R"({"traceEvents":[1,)") + std::string(300, '[') + std::string(300, ']') + "]}",  // too deep
  };
  // Cut short anywhere, the tricky trace is bad too.
  for (std::size_t n = 20; n + 2 < tricky.size(); n += 41) bad.push_back(tricky.substr(0, n));
  for (const std::string& doc : bad) {
    CAPTURE(doc);
    const std::string serial = error_of(doc, nullptr);
    CHECK(serial != "no error");
    for (const std::size_t piece : {std::size_t{1}, std::size_t{5}, std::size_t{30}, std::size_t{1} << 20}) {
      for (const std::size_t most : {std::size_t{1}, std::size_t{8}, std::size_t{1} << 16}) {
        const split_options split{.piece_bytes = piece, .chunk_bytes = 9, .parallel_bytes = 0, .threads = 2};
        CAPTURE(piece);
        CAPTURE(most);
        CHECK(error_of(doc, &split, most) == serial);
      }
    }
  }
}

TEST_CASE("parallel parse: a trace file larger than the threshold, plain and gzip-compressed") {
  // Over 4 MiB of events, so read_trace(path) splits it with its default options.
  std::string doc = R"({"traceEvents":[)";
  const std::string ops[] = {"aten::mm", R"(aten::softmax \"},{\" x)", "aten::a_name_longer_than_fifteen_bytes"};
  for (int i = 0; doc.size() < (std::size_t{9} << 19); ++i) {
    if (i > 0) doc += ",\n";
    doc += R"({"ph":"X","cat":"cpu_op","name":")" + ops[i % 3] + R"(","pid":1,"tid":)" + std::to_string(i % 4) +
           R"(,"ts":)" + std::to_string(i * 3) + R"(.5,"dur":2,"args":{"External id":)" + std::to_string(i) +
           R"(,"Input Dims":[[)" + std::to_string(i % 5) + "]]}}";
  }
  doc += "]}";
  const saved_trace serial = strata::report::read_trace_bytes(doc);
  strata_test::temp_dir dir("parallel-parse");
  strata_test::write_file(dir / "big.json", doc);
  check_same(strata::report::read_trace(dir / "big.json"), serial);
  {
    gzFile gz = gzopen((dir / "big.json.gz").c_str(), "wb1");
    REQUIRE(gz != nullptr);
    REQUIRE(gzwrite(gz, doc.data(), static_cast<unsigned>(doc.size())) == static_cast<int>(doc.size()));
    REQUIRE(gzclose(gz) == Z_OK);
  }
  check_same(strata::report::read_trace(dir / "big.json.gz"), serial);
  // Cut inside an event past the first piece: the error of one parser, line and all.
  strata_test::write_file(dir / "cut.json", std::string_view(doc).substr(0, doc.size() - 1000));
  std::string serial_error, split_error;
  try {
    strata::report::read_trace_bytes(std::string_view(doc).substr(0, doc.size() - 1000), "'" + (dir / "cut.json").string() + "'");
  } catch (const strata::error& e) {
    serial_error = e.what();
  }
  try {
    strata::report::read_trace(dir / "cut.json");
  } catch (const strata::error& e) {
    split_error = e.what();
  }
  CHECK(serial_error.find("is not valid JSON: line ") != std::string::npos);
  CHECK(split_error == serial_error);
}

}  // namespace test_parallel_parse
