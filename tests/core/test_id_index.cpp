// id_index: dense first-seen indices, the same whether ids come from a counter or not.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <unordered_map>

#include "strata/detail/id_index.hpp"

TEST_CASE("id_index: indices count from 0 in first-seen order") {
  strata::detail::id_index ids;
  CHECK(ids.find_or_add(7) == std::pair<std::uint32_t, bool>{0, true});
  CHECK(ids.find_or_add(9) == std::pair<std::uint32_t, bool>{1, true});
  CHECK(ids.find_or_add(7) == std::pair<std::uint32_t, bool>{0, false});
  CHECK(ids.find_or_add(3) == std::pair<std::uint32_t, bool>{2, true});  // below the first id
  CHECK(ids.find_or_add(std::uint64_t{1} << 60) == std::pair<std::uint32_t, bool>{3, true});
  CHECK(ids.find_or_add(9) == std::pair<std::uint32_t, bool>{1, false});
}

TEST_CASE("id_index: counters, stragglers, far ids and ids the window grows over") {
  std::mt19937_64 rng(4);
  for (int round = 0; round < 50; ++round) {
    strata::detail::id_index ids;
    std::unordered_map<std::uint64_t, std::uint32_t> expected;
    const std::uint64_t base = 1 + rng() % 1000000;
    std::uint64_t next = base;
    for (int i = 0; i < 20000; ++i) {
      std::uint64_t id = 0;
      switch (rng() % 10) {
        case 0: case 1: case 2: case 3: case 4: case 5: id = next++; break;       // a counter
        case 6: case 7: id = base + rng() % (next - base + 50000); break;           // ahead of it
        case 8: id = 1 + rng() % (base + 10); break;                                // below the base
        default: id = rng() | 1; break;                                             // anywhere
      }
      if (round % 3 == 0) id = rng() % 3 != 0 ? (rng() | 1) : 1 + rng() % 100;  // no counter
      const auto [it, fresh] = expected.try_emplace(id, static_cast<std::uint32_t>(expected.size()));
      const auto got = ids.find_or_add(id);
      REQUIRE(got.first == it->second);
      REQUIRE(got.second == fresh);
    }
  }
}
