// The C API (strata/strata.h): ranges, names that are not literals, unbalanced calls, and the
// session calls' status codes. Called from C++ here; examples/c_engine.c is the C build.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "strata/strata.h"
#include "strata/detail/impl/c_api_state.hpp"
#include "support.hpp"

namespace {

// The C session's records, once strata_stop_and_export() has returned.
const strata::trace_data& c_session_data() { return strata::detail::c_api::c_session()->data(); }

const strata::thread_track& this_thread_track() {
  const auto* t = strata_test::track_of(c_session_data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  return *t;
}

}  // namespace

TEST_CASE("C API: nested ranges become nested scopes on the calling thread") {
  strata_test::temp_dir dir("c-api-nest");
  REQUIRE(strata_start(dir.path().c_str()) == STRATA_OK);
  strata_set_thread_name("c caller");
  strata_push("outer");
  strata_push_layer(STRATA_LAYER_FRAMEWORK, "aten::mm");
  strata_pop();
  strata_instant("mark");
  strata_counter("queue depth", 3.5);
  strata_pop();
  REQUIRE(strata_stop_and_export() == STRATA_OK);

  const strata::thread_track& t = this_thread_track();
  CHECK(t.name == "c caller");
  const auto outer = strata_test::named(t, "outer");
  const auto mm = strata_test::named(t, "aten::mm");
  REQUIRE(outer.size() == 1);
  REQUIRE(mm.size() == 1);
  CHECK(outer[0].layer() == strata::layer::user);
  CHECK(mm[0].layer() == strata::layer::framework);
  CHECK(strata_test::within(mm[0], outer[0]));
  CHECK(strata_test::named(t, "mark").size() == 1);
  CHECK(strata_test::counter_values(t, "queue depth") == std::vector<double>{3.5});
  CHECK(std::filesystem::exists(std::filesystem::path(dir.path()) / "trace.json"));
}

TEST_CASE("C API: a name is taken by its text, so the caller's buffer may change") {
  strata_test::temp_dir dir("c-api-names");
  REQUIRE(strata_start(dir.path().c_str()) == STRATA_OK);
  char name[32];
  for (int i = 0; i < 3; ++i) {
    std::snprintf(name, sizeof name, "layer %d", i);  // same address, new text each time
    strata_push(name);
    std::memset(name, 'x', sizeof name - 1);  // overwritten while the range is open
    name[sizeof name - 1] = '\0';
    strata_pop();
  }
  std::string heap = "from the heap";
  strata_push(heap.c_str());
  heap.assign(100, 'y');  // may move or reuse the storage
  strata_pop();
  strata_push(nullptr);  // the empty name
  strata_pop();
  REQUIRE(strata_stop_and_export() == STRATA_OK);

  const strata::thread_track& t = this_thread_track();
  CHECK(strata_test::named(t, "layer 0").size() == 1);
  CHECK(strata_test::named(t, "layer 1").size() == 1);
  CHECK(strata_test::named(t, "layer 2").size() == 1);
  CHECK(strata_test::named(t, "from the heap").size() == 1);
  CHECK(strata_test::named(t, "").size() == 1);
  CHECK(t.records.size() == 5);
}

TEST_CASE("C API: unbalanced calls are ignored and pairs stay matched") {
  strata_test::temp_dir dir("c-api-unbalanced");
  strata_push("opened before the session");
  REQUIRE(strata_start(dir.path().c_str()) == STRATA_OK);
  strata_push("inside");
  strata_pop();
  strata_pop();  // closes the range opened before start: not recorded
  strata_pop();  // nothing open: ignored
  strata_pop();
  strata_push("after the extra pops");
  strata_pop();
  strata_push("still open at stop");
  REQUIRE(strata_stop_and_export() == STRATA_OK);
  strata_pop();

  const strata::thread_track& t = this_thread_track();
  CHECK(strata_test::named(t, "inside").size() == 1);
  CHECK(strata_test::named(t, "after the extra pops").size() == 1);
  CHECK(strata_test::named(t, "opened before the session").empty());
  CHECK(strata_test::named(t, "still open at stop").empty());
  CHECK(t.records.size() == 2);
}

TEST_CASE("C API: nesting deeper than the per-thread stack keeps the outer ranges") {
  strata_test::temp_dir dir("c-api-deep");
  REQUIRE(strata_start(dir.path().c_str()) == STRATA_OK);
  for (int i = 0; i < 300; ++i) strata_push("deep");
  for (int i = 0; i < 300; ++i) strata_pop();
  strata_push("after the deep ones");
  strata_pop();
  REQUIRE(strata_stop_and_export() == STRATA_OK);

  const strata::thread_track& t = this_thread_track();
  CHECK(strata_test::named(t, "deep").size() == 256);
  CHECK(strata_test::named(t, "after the deep ones").size() == 1);
  CHECK(strata_test::scopes_nest(t.records));
}

TEST_CASE("C API: session calls return status codes") {
  strata_test::temp_dir dir("c-api-status");
  CHECK(strata_stop_and_export() == STRATA_ERROR_NOT_RUNNING);
  CHECK(strata_start("") == STRATA_ERROR_CONFIG);
  CHECK(strata_start(nullptr) == STRATA_ERROR_CONFIG);
  const std::string file = (std::filesystem::path(dir.path()) / "a file").string();
  strata_test::write_file(file, "x");
  CHECK(strata_start(file.c_str()) == STRATA_ERROR_CONFIG);  // not a directory
  REQUIRE(strata_start(dir.path().c_str()) == STRATA_OK);
  CHECK(strata_start(dir.path().c_str()) == STRATA_ERROR_RUNNING);
  strata_step();
  CHECK(strata_stop_and_export() == STRATA_OK);
  CHECK(strata_stop_and_export() == STRATA_ERROR_NOT_RUNNING);
}

namespace {

// The C session's output directory after strata_start_ex: `dir`/trace.json by default.
std::string output_in(const strata_test::temp_dir& dir, const char* leaf = "trace.json") {
  return (dir.path() / leaf).string();
}

std::string table_text(const char* sort_by = nullptr, int row_limit = 0) {
  const int n = strata_table(nullptr, 0, sort_by, row_limit);
  REQUIRE(n >= 0);
  std::string text(static_cast<std::size_t>(n) + 1, '\0');
  REQUIRE(strata_table(text.data(), text.size(), sort_by, row_limit) == n);
  text.resize(static_cast<std::size_t>(n));
  return text;
}

}  // namespace

TEST_CASE("C API: a schedule records exactly its steps, each window in a file of its own") {
  strata_test::temp_dir dir("c-api-schedule");
  const std::string output = output_in(dir);
  strata_config c = STRATA_CONFIG_INIT;
  c.output = output.c_str();
  // Step 0 skipped; then cycles of 1 wait, 1 warmup, 2 recorded: steps 3-4 and 7-8.
  c.schedule.skip_first = 1;
  c.schedule.wait = 1;
  c.schedule.warmup = 1;
  c.schedule.active = 2;
  c.schedule.repeat = 2;
  REQUIRE(strata_start_ex(&c) == STRATA_OK);
  char name[32];
  for (int step = 0; step < 11; ++step) {
    std::snprintf(name, sizeof name, "work %d", step);
    strata_push(name);
    strata_pop();
    strata_step();
  }
  REQUIRE(strata_stop_and_export() == STRATA_OK);

  const std::vector<std::string>& files = strata::detail::c_api::c_session()->trace_files();
  REQUIRE(files.size() == 2);
  CHECK(std::filesystem::path(files[0]).filename() == "trace_step3-4.json");
  CHECK(std::filesystem::path(files[1]).filename() == "trace_step7-8.json");
  CHECK_FALSE(std::filesystem::exists(output));  // the windows are the traces
  for (const auto& [file, first] : {std::pair{files[0], 3}, std::pair{files[1], 7}}) {
    const std::string trace = strata_test::read_file(file);
    CHECK(strata_test::lines_with(trace, "\"work ").size() == 2);
    CHECK(strata_test::lines_with(trace, "\"ProfilerStep#").size() == 2);
    for (int step : {first, first + 1}) {
      CHECK(strata_test::lines_with(trace, "\"work " + std::to_string(step) + "\"").size() == 1);
      CHECK(strata_test::lines_with(trace, "\"ProfilerStep#" + std::to_string(step) + "\"").size() == 1);
    }
  }
  // The last window is what strata_export and strata_table read.
  const std::string last = output_in(dir, "last.json");
  REQUIRE(strata_export(last.c_str()) == STRATA_OK);
  CHECK(strata_test::lines_with(strata_test::read_file(last), "\"work 8\"").size() == 1);
  CHECK(strata_test::lines_with(strata_test::read_file(last), "\"work 4\"").empty());
  CHECK(table_text().find("work 7") != std::string::npos);
}

TEST_CASE("C API: the table of the stopped session, snprintf-style") {
  strata_test::temp_dir dir("c-api-table");
  const std::string output = output_in(dir);
  strata_config c = STRATA_CONFIG_INIT;
  c.output = output.c_str();
  REQUIRE(strata_start_ex(&c) == STRATA_OK);
  for (int i = 0; i < 3; ++i) {
    strata_push("decode");
    strata_push_layer(STRATA_LAYER_FRAMEWORK, "aten::mm");
    strata_pop();
    strata_pop();
  }
  strata_push("embed");
  strata_pop();
  CHECK(strata_table(nullptr, 0, nullptr, 0) == -STRATA_ERROR_RUNNING);
  REQUIRE(strata_stop() == STRATA_OK);

  // The same text key_averages() gives a C++ caller.
  const std::string expected = strata::detail::c_api::c_session()->key_averages().table(
      {.sort_by = "self_cpu_time_total", .row_limit = -1});
  const std::string text = table_text();
  CHECK(text == expected);
  CHECK(text.find("Name") != std::string::npos);
  CHECK(text.find("Self CPU time total:") != std::string::npos);
  CHECK(strata_test::lines_with(text, "aten::mm").size() == 1);
  CHECK(strata_test::lines_with(text, "decode").size() == 1);
  CHECK(strata_test::lines_with(text, "embed").size() == 1);
  // Sorted by calls, one row: the first row is an op called three times.
  const std::string one = table_text("count", 1);
  CHECK(strata_test::lines_with(one, "embed").empty());
  CHECK(strata_test::lines_with(one, "aten::mm").size() + strata_test::lines_with(one, "decode").size() == 1);

  // A short buffer gets a NUL-terminated prefix; the return value is still the whole length.
  char small[16];
  std::memset(small, '#', sizeof small);
  CHECK(strata_table(small, sizeof small, nullptr, 0) == static_cast<int>(text.size()));
  CHECK(std::string(small) == text.substr(0, sizeof small - 1));
  CHECK(strata_table(small, 1, nullptr, 0) == static_cast<int>(text.size()));
  CHECK(small[0] == '\0');
  CHECK(strata_table(nullptr, 0, "loudest", 0) == -STRATA_ERROR_CONFIG);

  // The split workflow: export after the table, then a new session forgets both.
  REQUIRE(strata_export(nullptr) == STRATA_OK);
  CHECK(std::filesystem::exists(output));
  REQUIRE(strata_start_ex(&c) == STRATA_OK);
  CHECK(strata_table(nullptr, 0, nullptr, 0) == -STRATA_ERROR_RUNNING);
  REQUIRE(strata_stop() == STRATA_OK);
  CHECK(table_text().find("decode") == std::string::npos);
}

TEST_CASE("C API: the output's name chooses the format") {
  strata_test::temp_dir dir("c-api-format");
  const auto run_to = [&](const char* leaf) {
    const std::string output = output_in(dir, leaf);
    strata_config c = STRATA_CONFIG_INIT;
    c.output = output.c_str();
    REQUIRE(strata_start_ex(&c) == STRATA_OK);
    strata_push("formatted");
    strata_pop();
    REQUIRE(strata_stop_and_export() == STRATA_OK);
    return strata_test::read_file(output);
  };
  const std::string json = run_to("t.json");
  CHECK(strata_test::lines_with(json, "\"formatted\"").size() == 1);
  const std::string gz = run_to("t.json.gz");
  REQUIRE(gz.size() > 2);
  CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);  // gzip's magic
  CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);
  const std::string pftrace = run_to("t.pftrace");
  REQUIRE(!pftrace.empty());
  CHECK(pftrace[0] == '\x0a');  // Trace.packet, field 1, length-delimited
  CHECK(pftrace.find("formatted") != std::string::npos);
  CHECK(pftrace.find("traceEvents") == std::string::npos);
  // strata_export picks by its own path's name too.
  const std::string other = output_in(dir, "other.pftrace");
  REQUIRE(strata_export(other.c_str()) == STRATA_OK);
  CHECK(strata_test::read_file(other)[0] == '\x0a');
}

TEST_CASE("C API: a snapshot while recording, and the session goes on") {
  strata_test::temp_dir dir("c-api-snapshot");
  const std::string output = output_in(dir);
  strata_config c = STRATA_CONFIG_INIT;
  c.output = output.c_str();
  REQUIRE(strata_start_ex(&c) == STRATA_OK);
  strata_push("before the snapshot");
  strata_pop();
  const std::string snap = output_in(dir, "snap.json");
  REQUIRE(strata_snapshot(snap.c_str()) == STRATA_OK);
  strata_push("after the snapshot");
  strata_pop();
  REQUIRE(strata_snapshot(nullptr) == STRATA_OK);  // a name of its own in the directory
  CHECK(strata_snapshot(output_in(dir, "snap.txt").c_str()) == STRATA_ERROR_CONFIG);
  REQUIRE(strata_stop_and_export() == STRATA_OK);

  const std::string taken = strata_test::read_file(snap);
  CHECK(strata_test::lines_with(taken, "\"before the snapshot\"").size() == 1);
  CHECK(strata_test::lines_with(taken, "\"after the snapshot\"").empty());
  std::size_t named_snapshots = 0;
  for (const std::string& e : dir.entries()) named_snapshots += e.starts_with("snapshot-");
  CHECK(named_snapshots == 1);
  const strata::thread_track& t = this_thread_track();  // the whole session
  CHECK(strata_test::named(t, "before the snapshot").size() == 1);
  CHECK(strata_test::named(t, "after the snapshot").size() == 1);
}

TEST_CASE("C API: instants and counters on any layer; the configured layers only") {
  strata_test::temp_dir dir("c-api-layers");
  const std::string output = output_in(dir);
  strata_config c = STRATA_CONFIG_INIT;
  c.output = output.c_str();
  c.layers = STRATA_LAYER_BIT(STRATA_LAYER_FRAMEWORK) | STRATA_LAYER_BIT(STRATA_LAYER_RUNTIME);
  REQUIRE(strata_start_ex(&c) == STRATA_OK);
  strata_instant_layer(STRATA_LAYER_FRAMEWORK, "dispatched");
  strata_counter_layer(STRATA_LAYER_RUNTIME, "queue depth", 2.0);
  strata_counter_layer(STRATA_LAYER_RUNTIME, "queue depth", 5.0);
  strata_instant("user mark");         // the user layer is not captured
  strata_counter("user counter", 1.0);
  strata_push("user range");
  strata_push_layer(STRATA_LAYER_RUNTIME, "execute");
  strata_pop();
  strata_pop();
  REQUIRE(strata_stop_and_export() == STRATA_OK);

  const strata::thread_track& t = this_thread_track();
  const auto dispatched = strata_test::named(t, "dispatched");
  REQUIRE(dispatched.size() == 1);
  CHECK(dispatched[0].layer() == strata::layer::framework);
  CHECK(dispatched[0].site->kind == strata::record_kind::instant);
  CHECK(strata_test::counter_values(t, "queue depth") == std::vector<double>{2.0, 5.0});
  CHECK(strata_test::named(t, "queue depth")[0].layer() == strata::layer::runtime);
  CHECK(strata_test::named(t, "execute").size() == 1);
  CHECK(strata_test::named(t, "user mark").empty());
  CHECK(strata_test::named(t, "user counter").empty());
  CHECK(strata_test::named(t, "user range").empty());
  CHECK(t.records.size() == 4);
}

TEST_CASE("C API: a flight recorder keeps each thread's newest records") {
  strata_test::temp_dir dir("c-api-flight");
  const std::string output = output_in(dir);
  strata_config c = STRATA_CONFIG_INIT;
  c.output = output.c_str();
  c.flight_recorder = 4;
  REQUIRE(strata_start_ex(&c) == STRATA_OK);
  char name[16];
  for (int i = 0; i < 10; ++i) {
    std::snprintf(name, sizeof name, "r%d", i);
    strata_push(name);
    strata_pop();
  }
  REQUIRE(strata_stop_and_export() == STRATA_OK);
  const strata::thread_track& t = this_thread_track();
  // A flight recorder of 4 keeps exactly the newest 4, as a C++ one does.
  REQUIRE(t.records.size() == 4);
  for (int i = 6; i < 10; ++i) CHECK(strata_test::named(t, "r" + std::to_string(i)).size() == 1);
  CHECK(strata::detail::c_api::c_session()->stats().dropped == 6);
}

TEST_CASE("C API: preallocate makes a session's memory ready at the start, or none of it") {
  strata_test::temp_dir dir("c-api-preallocate");
  const std::string output = output_in(dir);
  constexpr std::size_t block = std::size_t{64} << 10;
  strata_config c = STRATA_CONFIG_INIT;
  c.output = output.c_str();
  c.memory_limit = 256 * block;  // 16 MiB
  // Made ready in the start call: the figure is there when it returns.
  SUBCASE("0: the default, all of a limit below it") {
    REQUIRE(strata_start_ex(&c) == STRATA_OK);
    CHECK(strata::detail::c_api::c_session()->stats().memory.peak == 256 * block);
  }
  SUBCASE("a size") {
    c.preallocate = 40 * block;
    REQUIRE(strata_start_ex(&c) == STRATA_OK);
    CHECK(strata::detail::c_api::c_session()->stats().memory.peak == 40 * block);
  }
  SUBCASE("STRATA_PREALLOCATE_NONE: a few blocks, which the session's writer tops up to an eighth") {
    c.preallocate = STRATA_PREALLOCATE_NONE;
    REQUIRE(strata_start_ex(&c) == STRATA_OK);
    CHECK(strata::detail::c_api::c_session()->stats().memory.peak <= 32 * block);
  }
  REQUIRE(strata_stop() == STRATA_OK);
}

TEST_CASE("C API: a rank of a distributed job says so in its traces") {
  strata_test::temp_dir dir("c-api-rank");
  const auto run_to = [&](const char* leaf, int world_size, int rank, int local_rank_plus_one, const char* backend) {
    const std::string output = output_in(dir, leaf);
    strata_config c = STRATA_CONFIG_INIT;
    c.output = output.c_str();
    c.world_size = world_size;
    c.rank = rank;
    c.local_rank_plus_one = local_rank_plus_one;
    c.backend = backend;
    REQUIRE(strata_start_ex(&c) == STRATA_OK);
    strata_push("ranked");
    strata_pop();
    REQUIRE(strata_stop_and_export() == STRATA_OK);
    return strata_test::read_file(output);
  };
  const std::string json = run_to("r.json", 4, 3, 2, "ccom");
  CHECK(json.find("\"distributedInfo\":{\"backend\":\"ccom\",\"rank\": 3,\"world_size\":4,\"local_rank\":1,") !=
        std::string::npos);
  CHECK(run_to("r.pftrace", 4, 3, 0, nullptr).find("rank 3: ") != std::string::npos);
  CHECK(run_to("rank0.json", 2, 0, 0, nullptr).find("\"rank\": 0,\"world_size\":2,\"pg_count\"") != std::string::npos);

  strata_config bad = STRATA_CONFIG_INIT;
  const std::string output = output_in(dir, "bad.json");
  bad.output = output.c_str();
  bad.world_size = 2;
  bad.rank = 2;
  CHECK(strata_start_ex(&bad) == STRATA_ERROR_CONFIG);  // a rank not below the world size
  bad.rank = -1;
  CHECK(strata_start_ex(&bad) == STRATA_ERROR_CONFIG);
  bad.world_size = -2;
  bad.rank = 0;
  CHECK(strata_start_ex(&bad) == STRATA_ERROR_CONFIG);
}

TEST_CASE("C API: each error code says what happened") {
  strata_test::temp_dir dir("c-api-errors");
  const std::string output = output_in(dir);
  auto& state = strata::detail::c_api::c_state();

  SUBCASE("no session yet: nothing to stop, export, snapshot or tabulate") {
    state.session.reset();
    CHECK(strata_stop() == STRATA_ERROR_NOT_RUNNING);
    CHECK(strata_stop_and_export() == STRATA_ERROR_NOT_RUNNING);
    CHECK(strata_export(nullptr) == STRATA_ERROR_NO_TRACE);
    CHECK(strata_snapshot(nullptr) == STRATA_ERROR_NOT_RUNNING);
    CHECK(strata_table(nullptr, 0, nullptr, 0) == -STRATA_ERROR_NO_TRACE);
  }
  SUBCASE("a bad configuration field") {
    const auto start_with = [&](auto&& set) {
      strata_config c = STRATA_CONFIG_INIT;
      c.output = output.c_str();
      set(c);
      return strata_start_ex(&c);
    };
    CHECK(start_with([](strata_config& c) { c.output = "trace.txt"; }) == STRATA_ERROR_CONFIG);
    CHECK(start_with([](strata_config& c) { c.layers = 0x10; }) == STRATA_ERROR_CONFIG);
    CHECK(start_with([](strata_config& c) { c.memory_limit = 100; }) == STRATA_ERROR_CONFIG);
    CHECK(start_with([](strata_config& c) { c.flight_recorder = 3; }) == STRATA_ERROR_CONFIG);
    CHECK(start_with([](strata_config& c) { c.schedule.wait = -1; }) == STRATA_ERROR_CONFIG);
    CHECK(start_with([](strata_config& c) { c.schedule.wait = 2; }) == STRATA_ERROR_CONFIG);  // active 0
    const std::string under_a_file = (dir.path() / "a file" / "trace.json").string();
    strata_test::write_file(dir.path() / "a file", "x");
    CHECK(start_with([&](strata_config& c) { c.output = under_a_file.c_str(); }) == STRATA_ERROR_CONFIG);
    CHECK(strata_stop() == STRATA_ERROR_NOT_RUNNING);  // none of them started
  }
  SUBCASE("a C++ profiler records: the C session is refused as running") {
    strata::profiler other(strata_test::config_in(dir));
    other.start();
    CHECK(strata_start(dir.path().c_str()) == STRATA_ERROR_RUNNING);
    strata_config c = STRATA_CONFIG_INIT;
    c.output = output.c_str();
    CHECK(strata_start_ex(&c) == STRATA_ERROR_RUNNING);
    CHECK(strata_stop() == STRATA_ERROR_NOT_RUNNING);
    other.stop();
    REQUIRE(strata_start_ex(&c) == STRATA_OK);
    CHECK(strata_stop() == STRATA_OK);
  }
  SUBCASE("the C session records: start, export and on-demand captures are refused") {
    REQUIRE(strata_start(dir.path().c_str()) == STRATA_OK);
    CHECK(strata_start(dir.path().c_str()) == STRATA_ERROR_RUNNING);
    CHECK(strata_export(nullptr) == STRATA_ERROR_RUNNING);
    CHECK(strata_request_capture(5, 0) == STRATA_ERROR_RUNNING);
    CHECK(strata_request_capture(-1, 0) == STRATA_ERROR_CONFIG);
    CHECK(strata_request_capture(5, 100) == STRATA_ERROR_CONFIG);  // steps or duration, not both
    REQUIRE(strata_stop() == STRATA_OK);
    CHECK(strata_stop() == STRATA_ERROR_NOT_RUNNING);
    CHECK(strata_export(output_in(dir, "t.csv").c_str()) == STRATA_ERROR_CONFIG);
    const std::string blocked = (dir.path() / "a file" / "t.json").string();
    strata_test::write_file(dir.path() / "a file", "x");
    CHECK(strata_export(blocked.c_str()) == STRATA_ERROR_EXPORT);
    CHECK(strata_export(nullptr) == STRATA_OK);
  }
}

namespace {

// 120 distinct literals, adjacent in the binary's read-only data like a real engine's names.
#define STRATA_TEST_NAMES(p)                                                                       \
  p "0", p "1", p "2", p "3", p "4", p "5", p "6", p "7", p "8", p "9", p "10", p "11"
#define STRATA_TEST_NAMES_10(p)                                                                    \
  STRATA_TEST_NAMES(p "a"), STRATA_TEST_NAMES(p "b"), STRATA_TEST_NAMES(p "c"),                    \
      STRATA_TEST_NAMES(p "d"), STRATA_TEST_NAMES(p "e"), STRATA_TEST_NAMES(p "f"),                \
      STRATA_TEST_NAMES(p "g"), STRATA_TEST_NAMES(p "h"), STRATA_TEST_NAMES(p "i"),                \
      STRATA_TEST_NAMES(p "j")
const char* const engine_names[] = {STRATA_TEST_NAMES_10("op ")};
static_assert(sizeof engine_names / sizeof engine_names[0] == 120);

std::uint64_t slow_lookups() { return strata::detail::c_api::tl_names.slow_lookups; }

}  // namespace

TEST_CASE("C API: names seen before never go back to the slow look-up") {
  strata_test::temp_dir dir("c-api-cache");
  REQUIRE(strata_start(dir.path().c_str()) == STRATA_OK);

  SUBCASE("two short adjacent literals that shared a slot of the direct-mapped cache") {
    // "rope" and "attention" 5 bytes apart: one slot of the old cache, each push evicting the
    // other.
    alignas(8) static const char names[] = "rope\0attention";
    const char* rope = names;
    const char* attention = names + 5;
    REQUIRE((reinterpret_cast<std::uintptr_t>(rope) >> 3 & 63) ==
            (reinterpret_cast<std::uintptr_t>(attention) >> 3 & 63));  // as the old cache was keyed
    strata_push(rope);
    strata_pop();
    strata_push(attention);
    strata_pop();
    const std::uint64_t before = slow_lookups();
    for (int i = 0; i < 100; ++i) {
      strata_push(rope);
      strata_push(attention);
      strata_pop();
      strata_pop();
    }
    CHECK(slow_lookups() == before);
  }
  SUBCASE("120 literals, on two layers") {
    // On a thread of its own, whose cache starts empty: this thread's holds the names of the
    // tests before, and 240 more could crowd a set past its ways (where one may be dropped).
    std::uint64_t first_pass = 0, second_pass = 0;
    std::thread([&] {
      const std::uint64_t start = slow_lookups();
      for (const char* name : engine_names) {
        strata_push(name);
        strata_pop();
        strata_push_layer(STRATA_LAYER_FRAMEWORK, name);
        strata_pop();
      }
      first_pass = slow_lookups() - start;
      const std::uint64_t before = slow_lookups();
      for (int pass = 0; pass < 10; ++pass) {
        for (const char* name : engine_names) {
          strata_push(name);
          strata_push_layer(STRATA_LAYER_FRAMEWORK, name);
          strata_pop();
          strata_pop();
        }
      }
      second_pass = slow_lookups() - before;
    }).join();
    CHECK(first_pass == 240);  // once each
    CHECK(second_pass == 0);
  }
  SUBCASE("a reused buffer is checked by its text: a new text is a slow look-up") {
    char buffer[16] = "first";
    strata_push(buffer);
    strata_pop();
    const std::uint64_t before = slow_lookups();
    strata_push(buffer);  // same address, same text: a hit
    strata_pop();
    CHECK(slow_lookups() == before);
    std::strcpy(buffer, "second");
    strata_push(buffer);
    strata_pop();
    CHECK(slow_lookups() == before + 1);
  }
  REQUIRE(strata_stop_and_export() == STRATA_OK);
}
