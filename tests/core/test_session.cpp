// session: the order of a track's records and a session's totals.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "strata/detail/session.hpp"

using strata::layer;
using strata::record_kind;

namespace {

constexpr strata::site parent{"parent", "f.cpp", 1, layer::user, record_kind::scope};
constexpr strata::site child{"child", "f.cpp", 2, layer::user, record_kind::scope};
constexpr strata::site mark{"mark", "f.cpp", 3, layer::user, record_kind::instant};
constexpr strata::site level{"level", "f.cpp", 4, layer::user, record_kind::counter};

std::vector<const strata::site*> order_of(std::vector<strata::record> rs) {
  std::stable_sort(rs.begin(), rs.end(), strata::detail::record_order);
  std::vector<const strata::site*> out;
  for (const auto& r : rs) out.push_back(r.site);
  return out;
}

}  // namespace

TEST_CASE("record order: oldest first; on a shared tick the parent, then children, then points") {
  SUBCASE("different ticks: by begin") {
    CHECK(order_of({{30, 40, &child, 0}, {10, 50, &parent, 0}, {20, 20, &mark, 0}}) ==
          std::vector<const strata::site*>{&parent, &mark, &child});
  }
  SUBCASE("a parent and child opened on the same tick: the longer first") {
    // A child closes first, so it reaches the buffer first.
    CHECK(order_of({{5, 10, &child, 0}, {5, 20, &parent, 0}}) ==
          std::vector<const strata::site*>{&parent, &child});
  }
  SUBCASE("scopes before instants and counters of the same tick; those keep their order") {
    CHECK(order_of({{5, 5, &mark, 0}, {5, 0, &level, 0}, {5, 10, &child, 0}, {5, 20, &parent, 0}}) ==
          std::vector<const strata::site*>{&parent, &child, &mark, &level});
    CHECK(order_of({{5, 0, &level, 0}, {5, 5, &mark, 0}}) ==
          std::vector<const strata::site*>{&level, &mark});
  }
}

TEST_CASE("trace_data totals sum over threads") {
  strata::trace_data d;
  CHECK(d.recorded() == 0);
  CHECK(d.lost() == 0);
  d.threads.resize(2);
  d.threads[0].records.resize(3);
  d.threads[0].lost = 4;
  d.threads[1].records.resize(5);
  d.threads[1].lost = 6;
  CHECK(d.recorded() == 8);
  CHECK(d.lost() == 10);
}
