// strata::report::trace_files() and key_averages_of_files(): several saved traces, read on two threads
// (run under ThreadSanitizer too). Expected values worked out by hand.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "report/trace_set.hpp"
#include "support.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_trace_set {

namespace {

/// A trace of one user scope `name`, `us` microseconds long.
std::string one_scope_trace(const std::string& name, int us) {
  return R"({"traceEvents":[{"ph":"X","cat":"user","name":")" + name + R"(","pid":1,"tid":1,"ts":0,"dur":)" +
         std::to_string(us) + "}]}";
}

}  // namespace

TEST_CASE("trace set: a directory stands for its trace files, in name order") {
  strata_test::temp_dir dir("trace-set-dir");
  std::filesystem::create_directories(dir / "ranks" / "nested");
  strata_test::write_file(dir / "ranks" / "b.pt.trace.json.gz", "x");
  strata_test::write_file(dir / "ranks" / "a.json", "x");
  strata_test::write_file(dir / "ranks" / "notes.txt", "x");
  strata_test::write_file(dir / "ranks" / "nested" / "c.json", "x");
  const std::vector<std::filesystem::path> given{dir / "ranks", dir / "missing.json"};
  const auto files = strata::report::trace_files(given);
  REQUIRE(files.size() == 3);
  CHECK(files[0] == dir / "ranks" / "a.json");
  CHECK(files[1] == dir / "ranks" / "b.pt.trace.json.gz");
  CHECK(files[2] == dir / "missing.json");  // read_trace() will say what is wrong with it

  std::filesystem::create_directories(dir / "empty");
  const std::vector<std::filesystem::path> empty{dir / "empty"};
  CHECK_THROWS_WITH_AS(strata::report::trace_files(empty),
                       ("strata: directory '" + (dir / "empty").string() +
                        "' holds no trace files (*.json, *.json.gz)").c_str(),
                       strata::error);
}

TEST_CASE("trace set: files read on two threads come back in the order given") {
  strata_test::temp_dir dir("trace-set-read");
  std::vector<std::filesystem::path> files;
  for (int i = 0; i < 9; ++i) {
    files.push_back(dir / ("rank" + std::to_string(i) + ".json"));
    strata_test::write_file(files.back(), one_scope_trace("scope " + std::to_string(i), i + 1));
  }
  for (unsigned threads : {1u, 2u, 16u}) {
    CAPTURE(threads);
    const auto parts = strata::report::key_averages_of_files(files, {}, threads);
    REQUIRE(parts.size() == files.size());
    for (std::size_t i = 0; i < parts.size(); ++i) {
      CHECK(parts[i].path == files[i]);
      REQUIRE(parts[i].table.rows.size() == 1);
      CHECK(parts[i].table.rows[0].name == "scope " + std::to_string(i));
      CHECK(parts[i].table.rows[0].cpu_total_ns == static_cast<std::int64_t>(i + 1) * 1000);
    }
  }

  SUBCASE("the first file that fails, in the order given, is the error") {
    strata_test::write_file(files[3], "{");
    strata_test::write_file(files[6], "[]");
    try {
      strata::report::key_averages_of_files(files, {}, 2);
      FAIL("no error");
    } catch (const strata::error& e) {
      CHECK(std::string(e.what()).find("'" + files[3].string() + "'") != std::string::npos);
    }
  }
}

}  // namespace test_trace_set
