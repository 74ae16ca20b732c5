// scope and the STRATA_* macros: what one thread records, and when it records nothing.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "support.hpp"

using strata::layer;
using strata::record_kind;
using strata_test::name_of;
using strata_test::within;

namespace {

// Runs `body` in a session of a fresh profiler and returns the calling thread's records.
template <class Body>
std::vector<strata::record> record_on_this_thread(Body&& body, strata::layer_set layers = strata::layer_set::all()) {
  strata_test::temp_dir dir("scope");
  auto config = strata_test::config_in(dir);
  config.layers = layers;
  strata::profiler prof(config);
  prof.start();
  body();
  prof.stop();
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  return t != nullptr ? t->records : std::vector<strata::record>{};
}

void throw_from_depth_three() {
  STRATA_SCOPE("depth 1");
  {
    STRATA_SCOPE("depth 2");
    {
      STRATA_SCOPE("depth 3");
      throw std::runtime_error("thrown through three scopes");
    }
  }
}

}  // namespace

TEST_CASE("a scope records one interval pointing at its call site") {
  int line = 0;
  const auto rs = record_on_this_thread([&] {
    line = __LINE__ + 1;
    STRATA_SCOPE("alpha");
  });
  REQUIRE(rs.size() == 1);
  const auto& r = rs[0];
  CHECK(name_of(r) == "alpha");
  CHECK(r.kind() == record_kind::scope);
  CHECK(r.layer() == layer::user);
  CHECK(r.begin != 0);
  CHECK(r.begin <= r.end);
  CHECK(r.payload == 0);
  CHECK(std::string_view(r.site->file).ends_with("test_scope.cpp"));
  CHECK(r.site->line == static_cast<std::uint32_t>(line));
}

TEST_CASE("scopes nest: the parent comes first and contains its children") {
  const auto rs = record_on_this_thread([] {
    STRATA_SCOPE_LAYER(layer::framework, "parent");
    { STRATA_SCOPE_LAYER(layer::runtime, "first child"); }
    {
      STRATA_SCOPE_LAYER(layer::device, "second child");
      STRATA_SCOPE("grandchild");
    }
  });
  REQUIRE(rs.size() == 4);
  CHECK(name_of(rs[0]) == "parent");
  CHECK(name_of(rs[1]) == "first child");
  CHECK(name_of(rs[2]) == "second child");
  CHECK(name_of(rs[3]) == "grandchild");
  CHECK(rs[0].layer() == layer::framework);
  CHECK(rs[1].layer() == layer::runtime);
  CHECK(rs[2].layer() == layer::device);
  CHECK(rs[3].layer() == layer::user);
  CHECK(within(rs[1], rs[0]));
  CHECK(within(rs[2], rs[0]));
  CHECK(within(rs[3], rs[2]));
  CHECK(rs[1].end <= rs[2].begin);  // siblings do not overlap
  CHECK(strata_test::scopes_nest(rs));
}

TEST_CASE("two scopes in one block, even on one line, are distinct") {
  const auto rs = record_on_this_thread([] {
    STRATA_SCOPE("same line a"); STRATA_SCOPE("same line b");
  });
  REQUIRE(rs.size() == 2);
  CHECK(name_of(rs[0]) == "same line a");
  CHECK(name_of(rs[1]) == "same line b");
  CHECK(rs[0].site != rs[1].site);
  CHECK(rs[0].site->line == rs[1].site->line);
  CHECK(within(rs[1], rs[0]));
}

TEST_CASE("a call site keeps one descriptor across executions") {
  const auto rs = record_on_this_thread([] {
    for (int i = 0; i < 3; ++i) {
      STRATA_SCOPE("loop body");
    }
  });
  REQUIRE(rs.size() == 3);
  CHECK(rs[0].site == rs[1].site);
  CHECK(rs[1].site == rs[2].site);
  CHECK(rs[0].end <= rs[1].begin);
  CHECK(rs[1].end <= rs[2].begin);
}

TEST_CASE("an exception thrown through scopes closes each of them") {
  const auto rs = record_on_this_thread([] {
    try {
      throw_from_depth_three();
    } catch (const std::runtime_error&) {
      STRATA_INSTANT("caught");
    }
  });
  REQUIRE(rs.size() == 4);
  CHECK(name_of(rs[0]) == "depth 1");
  CHECK(name_of(rs[1]) == "depth 2");
  CHECK(name_of(rs[2]) == "depth 3");
  CHECK(name_of(rs[3]) == "caught");
  CHECK(within(rs[1], rs[0]));
  CHECK(within(rs[2], rs[1]));
  CHECK(rs[3].kind() == record_kind::instant);
  CHECK(rs[3].begin >= rs[0].end);  // unwinding closed the scopes before the handler ran
}

TEST_CASE("instants and counters") {
  SUBCASE("an instant is a point inside its enclosing scope") {
    const auto rs = record_on_this_thread([] {
      STRATA_SCOPE("around");
      STRATA_INSTANT_LAYER(layer::runtime, "tick");
    });
    REQUIRE(rs.size() == 2);
    CHECK(name_of(rs[1]) == "tick");
    CHECK(rs[1].kind() == record_kind::instant);
    CHECK(rs[1].layer() == layer::runtime);
    CHECK(rs[1].begin == rs[1].end);
    CHECK(rs[0].begin <= rs[1].begin);
    CHECK(rs[1].begin <= rs[0].end);
  }
  SUBCASE("counters keep their values bit for bit") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const auto rs = record_on_this_thread([&] {
      STRATA_COUNTER("half", 0.5);
      STRATA_COUNTER("int", 3);
      STRATA_COUNTER_LAYER(layer::device, "negative zero", -0.0);
      STRATA_COUNTER("nan", nan);
      STRATA_COUNTER("inf", std::numeric_limits<double>::infinity());
      STRATA_COUNTER("huge", 1e300);
    });
    REQUIRE(rs.size() == 6);
    for (const auto& r : rs) CHECK(r.kind() == record_kind::counter);
    CHECK(rs[0].counter_value() == 0.5);
    CHECK(rs[1].counter_value() == 3.0);
    CHECK(rs[2].counter_value() == 0.0);
    CHECK(std::signbit(rs[2].counter_value()));
    CHECK(rs[2].layer() == layer::device);
    CHECK(std::isnan(rs[3].counter_value()));
    CHECK(std::isinf(rs[4].counter_value()));
    CHECK(rs[5].counter_value() == 1e300);
  }
}

TEST_CASE("layers not captured produce no records and evaluate no arguments") {
  int evaluated = 0;
  const auto name = [&] {
    ++evaluated;
    return std::string("uncaptured dynamic name");
  };
  const auto rs = record_on_this_thread(
      [&] {
        STRATA_SCOPE("user scope");
        STRATA_SCOPE_LAYER(layer::runtime, "runtime scope");
        STRATA_SCOPE_DYNAMIC(layer::device, name());
        STRATA_INSTANT("user instant");
        STRATA_INSTANT_DYNAMIC(layer::user, name());
        STRATA_COUNTER("user counter", ++evaluated);
        strata::scope manual{strata::intern(layer::runtime, "manual")};
        CHECK_FALSE(manual.active());
        STRATA_SCOPE_LAYER(layer::framework, "captured");
      },
      strata::layer_set{layer::framework});
  CHECK(evaluated == 0);
  REQUIRE(rs.size() == 1);
  CHECK(name_of(rs[0]) == "captured");
}

TEST_CASE("nothing is recorded outside a session") {
  strata_test::temp_dir dir("outside");
  strata::profiler prof(strata_test::config_in(dir));
  int evaluated = 0;
  const auto outside = [&] {
    STRATA_SCOPE("outside");
    STRATA_COUNTER("outside counter", ++evaluated);
    STRATA_INSTANT_DYNAMIC(layer::user, std::to_string(++evaluated));
  };
  outside();  // before start
  prof.start();
  { STRATA_SCOPE("inside"); }
  prof.stop();
  outside();  // after stop
  CHECK(evaluated == 0);
  CHECK(prof.data().recorded() == 1);
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  REQUIRE(t->records.size() == 1);
  CHECK(name_of(t->records[0]) == "inside");
}

TEST_CASE("a scope still open at stop() is not recorded") {
  strata_test::temp_dir dir("open");
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  {
    STRATA_SCOPE("open across stop");
    { STRATA_SCOPE("closed before stop"); }
    prof.stop();
  }
  REQUIRE(prof.data().recorded() == 1);
  CHECK(name_of(prof.data().threads.at(0).records.at(0)) == "closed before stop");
}

TEST_CASE("a scope open across stop() and the next start() belongs to neither session") {
  strata_test::temp_dir dir("straddle");
  strata::profiler first(strata_test::config_in(dir));
  strata::profiler second(strata_test::config_in(dir));
  first.start();
  {
    STRATA_SCOPE("opened in the first session");
    { STRATA_SCOPE("inside the first session"); }
    first.stop();
    second.start();
    { STRATA_SCOPE("inside the second session"); }
  }  // closes while the second session records, into this thread's new buffer
  second.stop();
  REQUIRE(first.data().recorded() == 1);
  CHECK(name_of(first.data().threads.at(0).records.at(0)) == "inside the first session");
  REQUIRE(second.data().recorded() == 1);
  CHECK(name_of(second.data().threads.at(0).records.at(0)) == "inside the second session");
  CHECK(second.data().lost() == 0);
}

TEST_CASE("the scope class works without the macros") {
  static constexpr strata::site where{"manual scope", __FILE__, __LINE__, layer::framework,
                                      record_kind::scope};
  const auto rs = record_on_this_thread([] {
    strata::scope s{&where, 41};
    CHECK(s.active());
    s.set_payload(42);  // a correlation id known only after the scope opened
  });
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].site == &where);
  CHECK(rs[0].payload == 42);
}
