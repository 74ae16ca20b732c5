// shape: a tensor's dimensions as an inline value.
#include <doctest/doctest.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "strata/args/shape.hpp"

TEST_CASE("a shape holds its dimensions inline") {
  static_assert(std::is_trivially_copyable_v<strata::shape>);
  const strata::shape s{4, 8, 2};
  CHECK(s.rank() == 3);
  CHECK(s[0] == 4);
  CHECK(s[2] == 2);
  CHECK(s.numel() == 64);
  CHECK(std::vector<std::int64_t>(s.begin(), s.end()) == std::vector<std::int64_t>{4, 8, 2});

  const strata::shape scalar;
  CHECK(scalar.rank() == 0);
  CHECK(scalar.numel() == 1);

  const std::vector<std::int64_t> dims{4, 8, 2};
  CHECK(strata::shape(dims) == s);
  CHECK_FALSE(strata::shape{4, 8} == s);
  CHECK_FALSE(strata::shape{4, 8, 3} == s);
}

TEST_CASE("a shape of more than max_rank dimensions is an error that says the limit") {
  const std::vector<std::int64_t> nine(9, 1);
  CHECK_THROWS_WITH_AS(strata::shape{std::span<const std::int64_t>(nine)},
                       "strata: shape: 9 dimensions, at most 8 are supported", strata::error);
  const std::vector<std::int64_t> eight(8, 2);
  CHECK(strata::shape(eight).numel() == 256);
}
