// track_reader: a thread's records read back from the spill file block by block come in the
// order a sort of all of them gives (record_order), whatever the nesting across blocks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "strata/detail/record_order.hpp"
#include "strata/detail/spill_file.hpp"
#include "support.hpp"

using strata::layer;
using strata::record;
using strata::record_kind;

namespace {

constexpr strata::site scope_site{"scope", "f.cpp", 1, layer::user, record_kind::scope};
constexpr strata::site instant_site{"instant", "f.cpp", 2, layer::user, record_kind::instant};
constexpr strata::site counter_site{"counter", "f.cpp", 3, layer::user, record_kind::counter};

// A thread's records as it writes them, each scope when it ends: random nesting up to `depth`,
// ticks that often repeat (scopes opening and closing on one tick), and, first, scopes that
// began before `floor` (opened in an earlier session) and end after it.
std::vector<record> thread_records(std::uint32_t seed, int n, int depth, std::uint64_t floor) {
  std::mt19937 rng(seed);
  std::vector<record> out;
  std::vector<std::uint64_t> open = {floor - 7, floor - 3};  // begun before the session
  std::uint64_t now = floor;
  std::uint64_t payload = 1;
  while (static_cast<int>(out.size()) < n) {
    now += rng() % 3;  // 0: the same tick as the previous record
    const unsigned what = rng() % 10;
    if (what < 4 && static_cast<int>(open.size()) < depth) {
      open.push_back(now);
    } else if (what < 8 && !open.empty()) {
      out.push_back({open.back(), now, &scope_site, payload++});
      open.pop_back();
    } else if (what == 8) {
      out.push_back({now, now, &instant_site, payload++});
    } else {
      out.push_back({now, payload++, &counter_site, 0});
    }
  }
  while (!open.empty()) {  // a scope open all along ends last
    now += 1;
    out.push_back({open.back(), now, &scope_site, payload++});
    open.pop_back();
  }
  return out;
}

// What a collected session must give: every record but the scopes begun before the session,
// stably sorted (the order of records that compare equal is the order they were written in).
std::vector<record> expected_order(std::vector<record> rs, std::uint64_t floor) {
  std::erase_if(rs, [&](const record& r) { return r.kind() == record_kind::scope && r.begin < floor; });
  std::stable_sort(rs.begin(), rs.end(), strata::detail::record_order);
  return rs;
}

bool same(const std::vector<record>& a, const std::vector<record>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const record& x, const record& y) {
           return x.begin == y.begin && x.end == y.end && x.site == y.site && x.payload == y.payload;
         });
}

// Spills the first `spilled` blocks (of `block` records) of `rs` as a session's store does,
// keeps the rest in memory as a collected session does, and reads the track back.
std::vector<record> spill_and_read(const std::vector<record>& rs, std::size_t block, std::size_t spilled,
                                   std::uint64_t floor, const strata_test::temp_dir& dir) {
  auto file = strata::detail::make_shared_handle<strata::detail::spill_file>();
  REQUIRE(file->create((dir.path() / "spill.bin").string(), 1).empty());
  strata::trace_data data;
  data.start_ticks = floor;
  data.threads.resize(1);
  strata::thread_track& t = data.threads[0];
  strata::detail::block_order order(floor);
  std::size_t at = 0;
  for (std::size_t b = 0; b < spilled && at < rs.size(); ++b) {
    const auto n = static_cast<std::uint32_t>(std::min(block, rs.size() - at));
    std::uint64_t offset = 0;
    REQUIRE(file->append(0, rs.data() + at, n, offset).empty());
    t.spilled.extents.push_back({offset, n});
    t.spilled.in_order += order.split(rs.data() + at, n, nullptr, &t.spilled.late);
    at += n;
  }
  t.records.assign(rs.begin() + static_cast<std::ptrdiff_t>(at), rs.end());
  t.records.resize(order.split(t.records.data(), t.records.size(), t.records.data(), &t.spilled.late));
  std::erase_if(t.spilled.late, [&](const record& r) { return r.kind() == record_kind::scope && r.begin < floor; });
  strata::detail::sort_records(t.records.data(), t.records.size());
  strata::detail::sort_records(t.spilled.late.data(), t.spilled.late.size());
  file->unlink_name();
  data.spill = file;

  std::vector<record> out;
  strata::detail::read_track(data, t, [&](const record* first, std::size_t n) { out.insert(out.end(), first, first + n); });
  CHECK(out.size() == t.record_count());
  return out;
}

}  // namespace

TEST_CASE("a spilled track reads back in the order a sort of all its records gives") {
  strata_test::temp_dir dir("track-reader");
  constexpr std::uint64_t floor = 1000;
  struct shape {
    int depth;
    std::size_t block;
    std::size_t spilled;
  };
  // Flat and deep nesting, blocks smaller than the nesting, everything or part spilled.
  const shape shapes[] = {{1, 64, 1000}, {4, 64, 1000}, {12, 16, 1000}, {30, 7, 20}, {6, 2048, 3}, {3, 1, 500}};
  for (const shape& s : shapes) {
    for (std::uint32_t seed = 1; seed <= 5; ++seed) {
      CAPTURE(s.depth);
      CAPTURE(s.block);
      CAPTURE(seed);
      const std::vector<record> rs = thread_records(seed, 3000, s.depth, floor);
      CHECK(same(spill_and_read(rs, s.block, s.spilled, floor, dir), expected_order(rs, floor)));
    }
  }
}

TEST_CASE("a spilled track whose spill file cannot be read raises an error naming it") {
  strata::trace_data data;
  data.threads.resize(1);
  data.threads[0].spilled.extents.push_back({32, 10});
  data.threads[0].spilled.in_order = 10;
  CHECK_THROWS_WITH_AS(strata::detail::read_track(data, data.threads[0], [](const record*, std::size_t) {}),
                       doctest::Contains("spill file"), strata::error);
  strata_test::temp_dir dir("track-reader-short");
  auto file = strata::detail::make_shared_handle<strata::detail::spill_file>();
  REQUIRE(file->create((dir.path() / "spill.bin").string(), 1).empty());
  data.spill = file;  // holds only its header: the extent lies past its end
  CHECK_THROWS_WITH_AS(strata::detail::read_track(data, data.threads[0], [](const record*, std::size_t) {}),
                       doctest::Contains("cannot read the spill file back"), strata::error);
}
