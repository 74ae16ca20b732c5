// intern: one descriptor per distinct run-time name, shared by every thread and call site.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "strata/detail/intern.hpp"
#include "support.hpp"

using strata::layer;
using strata::record_kind;

TEST_CASE("intern: the same name gives the same site, distinct names distinct sites") {
  const strata::site* a = strata::intern(layer::runtime, "intern test: load");
  CHECK(a == strata::intern(layer::runtime, "intern test: load"));
  CHECK(a == strata::intern(layer::runtime, std::string("intern test: ") + "load"));

  SUBCASE("a different name") {
    CHECK(a != strata::intern(layer::runtime, "intern test: load2"));
    CHECK(a != strata::intern(layer::runtime, "intern test: loa"));
  }
  SUBCASE("the same name on another layer or as another kind") {
    CHECK(a != strata::intern(layer::framework, "intern test: load"));
    CHECK(a != strata::intern(layer::runtime, "intern test: load", record_kind::instant));
    CHECK(a != strata::intern(layer::runtime, "intern test: load", record_kind::counter));
  }
  SUBCASE("the site describes the name") {
    CHECK(std::string_view(a->name) == "intern test: load");
    CHECK(a->layer == layer::runtime);
    CHECK(a->kind == record_kind::scope);
    CHECK(std::string_view(a->file).empty());
    CHECK(a->line == 0);
  }
}

TEST_CASE("intern: the name is copied, not referenced") {
  std::string name = "intern test: mutable buffer";
  const strata::site* s = strata::intern(layer::user, name);
  name.assign("something else entirely, long enough to reallocate the buffer");
  CHECK(std::string_view(s->name) == "intern test: mutable buffer");
  CHECK(strata::intern(layer::user, "intern test: mutable buffer") == s);
}

TEST_CASE("intern: the thread's cache and the shared table agree") {
  const std::string name = "intern test: cached";
  const strata::site* cached = strata::detail::intern_cached(layer::device, record_kind::scope, name);
  CHECK(cached == strata::intern(layer::device, name));
  CHECK(cached == strata::detail::intern_cached(layer::device, record_kind::scope, name));
  CHECK(cached != strata::detail::intern_cached(layer::device, record_kind::instant, name));
}

TEST_CASE("dynamic scopes and instants record interned sites") {
  strata_test::temp_dir dir("intern");
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  for (int i = 0; i < 9; ++i) {
    // A temporary std::string, longer than the small-string buffer so ASan sees a dangling use.
    STRATA_SCOPE_DYNAMIC(layer::runtime, "dynamic scope name number " + std::to_string(i % 3));
  }
  STRATA_INSTANT_DYNAMIC(layer::user, std::string("dynamic instant with a heap-allocated name"));
  prof.stop();

  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  REQUIRE(t->records.size() == 10);
  std::set<const strata::site*> sites;
  for (std::size_t i = 0; i < 9; ++i) {
    const auto& r = t->records[i];
    CHECK(r.kind() == record_kind::scope);
    CHECK(r.site == strata::intern(layer::runtime, "dynamic scope name number " + std::to_string(i % 3)));
    sites.insert(r.site);
  }
  CHECK(sites.size() == 3);
  const auto& instant = t->records[9];
  CHECK(instant.kind() == record_kind::instant);
  CHECK(instant.site == strata::intern(layer::user, "dynamic instant with a heap-allocated name",
                                        record_kind::instant));
}
