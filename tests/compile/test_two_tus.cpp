// Two translation units that include strata link into one program and share its globals: one
// registry, one state word, one intern table, so a profiler started anywhere sees both.
#include <doctest/doctest.h>

#include "strata/strata.hpp"
#include "support.hpp"
#include "two_tus.hpp"

TEST_CASE("two translation units share strata's globals") {
  CHECK(two_tus::registry_in_a() == two_tus::registry_in_b());
  CHECK(two_tus::registry_in_a() == &strata::detail::registry::instance());
  CHECK(two_tus::state_in_a() == two_tus::state_in_b());
  CHECK(two_tus::interned_in_a() == two_tus::interned_in_b());
}

TEST_CASE("a profiler started in a third translation unit records both") {
  strata_test::temp_dir dir("two-tus");
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  two_tus::record_in_a();
  two_tus::record_in_b();
  prof.stop();
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  REQUIRE(t->records.size() == 4);
  CHECK(strata_test::name_of(t->records[0]) == "from translation unit a");
  CHECK(strata_test::name_of(t->records[1]) == "dynamic from a");
  CHECK(strata_test::name_of(t->records[2]) == "from translation unit b");
  CHECK(strata_test::name_of(t->records[3]) == "dynamic from b");
}
