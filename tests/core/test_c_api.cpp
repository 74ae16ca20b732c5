// The C API (strata/strata.h): ranges, names that are not literals, unbalanced calls, and the
// session calls' status codes. Called from C++ here; examples/c_engine.c is the C build.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "strata/impl/c_api_state.hpp"
#include "strata/strata.h"
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
  CHECK(outer[0].layer_of() == strata::layer::user);
  CHECK(mm[0].layer_of() == strata::layer::framework);
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
