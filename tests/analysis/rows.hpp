// tests/analysis/rows.hpp: finding the rows of a key_averages table in a test: a missing row
// fails the test with its name rather than reading past the table.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

#include "strata/analysis/averages.hpp"

namespace strata_test {

/// The row named `name` (a device row when `device`); fails the test when there is none.
inline const strata::average_row& row(const strata::averages& a, std::string_view name,
                                      bool device = false) {
  const strata::average_row* r = a.find(name, device);
  REQUIRE_MESSAGE(r != nullptr, "no row " << name);
  return *r;
}

/// The rows' names in the table's order.
inline std::vector<std::string> names(const strata::averages& a) {
  std::vector<std::string> out;
  for (const auto& r : a.rows) out.push_back(r.name);
  return out;
}

}  // namespace strata_test
