// decimal.hpp: numbers written by hand give exactly the text {fmt} gives.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include <fmt/format.h>

#include "strata/export/chrome_trace.hpp"

namespace {

std::string decimal(std::uint64_t v) {
  char text[strata::detail::max_decimal_chars];
  return {text, strata::detail::write_decimal(text, v)};
}

std::string decimal_us(std::int64_t ns) {
  char text[strata::detail::max_us_chars];
  return {text, strata::detail::write_us(text, ns)};
}

std::string number(double v) {
  char text[strata::detail::max_json_number_chars];
  return {text, strata::detail::write_json_number(text, v)};
}

// What the exporter wrote with {fmt} before: "{}.{:03}" of the magnitude, after a sign.
std::string us_by_fmt(std::int64_t ns) {
  const std::uint64_t m = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  return fmt::format("{}{}.{:03}", ns < 0 ? "-" : "", m / 1000, m % 1000);
}

}  // namespace

TEST_CASE("decimal: integers at every digit count and block edge") {
  for (std::uint64_t v = 0; v < 20000; ++v) REQUIRE(decimal(v) == fmt::format("{}", v));
  std::uint64_t p = 1;
  for (int digits = 1; digits <= 19; ++digits, p *= 10) {
    for (const std::uint64_t v : {p - 1, p, p + 1, 2 * p - 1, 9 * p + p - 1})
      CHECK(decimal(v) == fmt::format("{}", v));
  }
  CHECK(decimal(std::numeric_limits<std::uint64_t>::max()) == "18446744073709551615");
  std::mt19937_64 rng(1);
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t v = rng() >> (rng() % 64);
    REQUIRE(decimal(v) == fmt::format("{}", v));
  }
}

TEST_CASE("decimal: microseconds with three decimals, alone and from a track's writer") {
  CHECK(decimal_us(0) == "0.000");
  CHECK(decimal_us(-1500) == "-1.500");
  CHECK(decimal_us(std::numeric_limits<std::int64_t>::min()) == "-9223372036854775.808");
  CHECK(decimal_us(std::numeric_limits<std::int64_t>::max()) == "9223372036854775.807");
  strata::detail::us_writer track;
  const auto tracked = [&](std::int64_t ns) {
    char text[strata::detail::us_writer::max_chars];
    return std::string(text, track(text, ns));
  };
  std::mt19937_64 rng(2);
  std::int64_t t = 23087007495852;  // a steady_clock reading after six hours
  for (int i = 0; i < 50000; ++i) {
    // Mostly small steps (the cached leading digits), sometimes a jump or a sign change.
    const auto k = rng() % 100;
    if (k == 0) t = static_cast<std::int64_t>(rng() >> (rng() % 64));
    else if (k == 1) t = -t;
    else if (k == 2) t = static_cast<std::int64_t>(rng() % 100000000);
    else t += static_cast<std::int64_t>(rng() % 20000);
    REQUIRE(decimal_us(t) == us_by_fmt(t));
    REQUIRE(tracked(t) == us_by_fmt(t));
  }
}

TEST_CASE("decimal: doubles as {fmt}'s shortest round trip") {
  const double values[] = {0.0, -0.0, 1.0, -3.0, 0.5, 0.1, 1e15, 999999999999999.0, 1e16,
                           9007199254740992.0, 9007199254740991.0, -9007199254740991.0,
                           123456.789, 1e-7, 5e-324, 1.7976931348623157e308, 100.0, 1e21,
                           -1e300, 2.5e-5, 0.0001, 42.0, 4503599627370496.5};
  for (const double v : values) CHECK(number(v) == fmt::format("{}", v));
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20000; ++i) {
    const double whole = static_cast<double>(static_cast<std::int64_t>(rng() >> (rng() % 64)));
    REQUIRE(number(whole) == fmt::format("{}", whole));
    REQUIRE(number(-whole) == fmt::format("{}", -whole));
    const double any = std::bit_cast<double>(rng());
    if (std::isfinite(any)) REQUIRE(number(any) == fmt::format("{}", any));
  }
}
