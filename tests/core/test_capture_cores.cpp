// capture_cores: parsing "all", "0", "0,1,2-5" into a core_set, and every malformed form.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "strata/device.hpp"
#include "support.hpp"

using strata::core_set;

namespace {

std::string parse_error(std::string_view text) {
  try {
    core_set::parse(text);
  } catch (const strata::error& e) {
    return e.what();
  }
  return "<no error>";
}

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("capture_cores: the accepted forms") {
  SUBCASE("all") {
    const core_set s = core_set::parse("all");
    CHECK(s.is_all());
    CHECK(s.contains(0));
    CHECK(s.contains(core_set::max_core));
    CHECK_FALSE(s.contains(-1));
    CHECK_FALSE(s.contains(core_set::max_core + 1));
    CHECK(s == core_set::all());
  }
  SUBCASE("one index") {
    const core_set s = core_set::parse("0");
    CHECK_FALSE(s.is_all());
    CHECK(s.count() == 1);
    CHECK(s.contains(0));
    CHECK_FALSE(s.contains(1));
  }
  SUBCASE("a list with a range") {
    const core_set s = core_set::parse("0,1,2-5");
    CHECK(s.count() == 6);
    for (int c = 0; c <= 5; ++c) CHECK(s.contains(c));
    CHECK_FALSE(s.contains(6));
  }
  SUBCASE("ranges and indices in any order, overlapping") {
    const core_set s = core_set::parse("7,3-4,4-5,1");
    CHECK(s.count() == 5);
    CHECK(s.contains(1));
    CHECK_FALSE(s.contains(2));
    CHECK(s.contains(3));
    CHECK(s.contains(5));
    CHECK(s.contains(7));
  }
  SUBCASE("a one-core range, the largest index, leading zeros") {
    CHECK(core_set::parse("3-3").count() == 1);
    CHECK(core_set::parse("1023").contains(1023));
    CHECK(core_set::parse("007").contains(7));
  }
  SUBCASE("spaces and tabs around entries are ignored") {
    CHECK(core_set::parse(" 0, 2-3\t") == core_set::parse("0,2-3"));
    CHECK(core_set::parse("  all ").is_all());
  }
}

TEST_CASE("capture_cores: a malformed value names the bad entry and the accepted forms") {
  struct bad_case {
    const char* text;
    const char* quoted;  // how the message quotes the bad entry
  };
  const bad_case cases[] = {
      {"", "''"},          {"a", "'a'"},         {"3-1", "'3-1'"},     {"-1", "'-1'"},
      {"1-", "'1-'"},      {"1,,2", "''"},       {"1024", "'1024'"},   {"0-1024", "'0-1024'"},
      {"1,", "''"},        {"all,1", "'all'"},   {"2 - 5", "'2 - 5'"}, {"1-2-3", "'1-2-3'"},
      {"+1", "'+1'"},      {"99999999999999999999", "'99999999999999999999'"},
  };
  for (const bad_case& c : cases) {
    CAPTURE(c.text);
    const std::string m = parse_error(c.text);
    CHECK(has(m, "profiler_config::capture_cores: bad entry " + std::string(c.quoted)));
    CHECK(has(m, "accepted forms: \"all\""));
    CHECK(has(m, "\"0,1,2-5\""));
    CHECK(has(m, "from 0 to 1023"));
  }
  SUBCASE("the reason is specific") {
    CHECK(has(parse_error("3-1"), "low to high"));
    CHECK(has(parse_error("1024"), "above the largest"));
    CHECK(has(parse_error("1,,2"), "an empty entry"));
    CHECK(has(parse_error("1,,2"), "in \"1,,2\""));
  }
}

TEST_CASE("capture_cores: the profiler's constructor parses it") {
  strata_test::temp_dir dir("cores");
  auto config = strata_test::config_in(dir);
  SUBCASE("default: all") {
    strata::profiler prof(config);
    CHECK(prof.capture_cores().is_all());
  }
  SUBCASE("a list") {
    config.capture_cores = "1,3";
    strata::profiler prof(config);
    CHECK(prof.capture_cores().contains(3));
    CHECK_FALSE(prof.capture_cores().contains(2));
  }
  SUBCASE("malformed") {
    config.capture_cores = "0,x";
    CHECK_THROWS_WITH_AS(strata::profiler{config}, doctest::Contains("bad entry 'x'"),
                         strata::error);
  }
}
