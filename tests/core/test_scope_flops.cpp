// Scopes that carry a FLOP count (STRATA_SCOPE_FLOPS, scope{site, flop_count}, set_flops,
// strata_set_flops): what is recorded with and without profiler_config::with_flops, the
// table's FLOPs column, and the trace's args.flops.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "strata/strata.h"
#include "strata/args/op_args.hpp"
#include "strata/detail/impl/c_api_state.hpp"
#include "support.hpp"

namespace {

int evaluated = 0;

std::uint64_t counted(std::uint64_t n) {
  ++evaluated;
  return n;
}

// A program with known counts: "block" (1000 FLOPs) holds two "gemm" (300 each) and one
// "softmax" whose count is known only inside it (40); "plain" carries none.
void known_program() {
  STRATA_SCOPE_FLOPS("block", counted(1000));
  for (int i = 0; i < 2; ++i) {
    STRATA_SCOPE_FLOPS("gemm", counted(300));
  }
  {
    static constexpr strata::site softmax{"softmax", __FILE__, __LINE__, strata::layer::user,
                                          strata::record_kind::scope};
    strata::scope s{&softmax};
    s.set_flops(counted(7));
    s.set_flops(counted(40));  // the last call wins
  }
  STRATA_SCOPE("plain");
}

const strata::average_row* row(const strata::averages& a, std::string_view name) {
  for (const auto& r : a.rows)
    if (r.name == name) return &r;
  return nullptr;
}

struct session_result {
  strata::averages averages;
  std::string trace;
};

template <class Body>
session_result run(bool with_flops, Body&& body) {
  strata_test::temp_dir dir("flops");
  auto config = strata_test::config_in(dir);
  config.with_flops = with_flops;
  strata::profiler prof(config);
  prof.start();
  body();
  prof.stop();
  session_result out{prof.key_averages(), {}};
  const auto written = prof.export_chrome_trace((dir.path() / "trace.json").string());
  static_cast<void>(written);
  out.trace = strata_test::read_file(dir.path() / "trace.json");
  return out;
}

struct mm_args {
  BOOST_HANA_DEFINE_STRUCT(mm_args, (strata::shape, self), (strata::shape, mat2));
};

}  // namespace

TEST_CASE("with_flops: each row sums its own events' FLOPs, not its children's") {
  evaluated = 0;
  const session_result r = run(true, known_program);
  CHECK(evaluated == 5);
  REQUIRE(row(r.averages, "block") != nullptr);
  CHECK(row(r.averages, "block")->flops == 1000);
  CHECK(row(r.averages, "gemm")->flops == 600);
  CHECK(row(r.averages, "gemm")->count == 2);
  CHECK(row(r.averages, "softmax")->flops == 40);
  CHECK(row(r.averages, "plain")->flops == 0);
  CHECK(r.averages.with_flops);  // profiler_config::with_flops shows the column by default

  // torch's unit: the smallest non-zero count (40) is below 1e3, so plain FLOPs.
  const std::string table = r.averages.table();
  CHECK(table.find("Total FLOPs") != std::string::npos);
  CHECK(table.find("1000.000") != std::string::npos);
  CHECK(table.find("600.000") != std::string::npos);
  CHECK(table.find("--") != std::string::npos);  // "plain" has none

  // The trace: args.flops as torch writes it, on the events that carry a count only.
  CHECK(r.trace.find("\"name\":\"block\"") != std::string::npos);
  CHECK(r.trace.find("\"flops\":1000") != std::string::npos);
  CHECK(r.trace.find("\"flops\":300") != std::string::npos);
  CHECK(r.trace.find("\"flops\":40") != std::string::npos);
  CHECK(r.trace.find("\"flops\":7") == std::string::npos);
}

TEST_CASE("without with_flops: no count is evaluated, recorded, shown or written") {
  evaluated = 0;
  const session_result r = run(false, known_program);
  CHECK(evaluated == 2);  // set_flops' arguments are the caller's: only the macros' are lazy
  for (const auto& row : r.averages.rows) CHECK(row.flops == 0);
  CHECK_FALSE(r.averages.with_flops);
  CHECK(r.averages.table().find("FLOPs") == std::string::npos);
  CHECK(r.trace.find("\"flops\"") == std::string::npos);
  CHECK(row(r.averages, "gemm")->count == 2);
}

TEST_CASE("a count set on a scope with arguments keeps its input shapes") {
  strata_test::temp_dir dir("flops-args");
  auto config = strata_test::config_in(dir);
  config.with_flops = true;
  config.record_shapes = true;
  strata::profiler prof(config);
  prof.start();
  for (int i = 0; i < 3; ++i) {
    static constexpr strata::site mm{"aten::mm", __FILE__, __LINE__, strata::layer::framework,
                                     strata::record_kind::scope};
    strata::scope s = strata::scope_with_args(&mm, [] { return mm_args{{4, 8}, {8, 16}}; });
    s.set_flops(2 * 4 * 8 * 16);
  }
  prof.stop();
  const strata::averages a = prof.key_averages({.group_by_input_shape = true});
  REQUIRE(row(a, "aten::mm") != nullptr);
  CHECK(row(a, "aten::mm")->input_shapes == "[[4, 8], [8, 16]]");
  CHECK(row(a, "aten::mm")->flops == 3 * 1024);
  CHECK(row(a, "aten::mm")->count == 3);
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  REQUIRE(t->records.size() == 3);
  const strata::site* s = t->records[0].site;
  CHECK(s == t->records[2].site);  // interned once per (site, count), then cached
  CHECK(s->flops == 1024);
  CHECK(std::string(s->args_json) ==
        "\"Input Dims\":[[4,8],[8,16]],\"Input Names\":[\"self\",\"mat2\"],\"flops\":1024");
}

TEST_CASE("a scope constructed with a flop_count, and counts that change per call") {
  strata_test::temp_dir dir("flops-ctor");
  auto config = strata_test::config_in(dir);
  config.with_flops = true;
  strata::profiler prof(config);
  prof.start();
  static constexpr strata::site step{"step", __FILE__, __LINE__, strata::layer::user, strata::record_kind::scope};
  std::uint64_t total = 0;
  for (std::uint64_t n = 1; n <= 100; ++n) {  // more distinct counts than the cache has slots
    strata::scope s{&step, strata::flop_count{n * 1000}};
    total += n * 1000;
  }
  { strata::scope s{&step, strata::flop_count{5000}}; }  // seen before: the same descriptor
  total += 5000;
  prof.stop();
  const strata::averages a = prof.key_averages();
  REQUIRE(row(a, "step") != nullptr);
  CHECK(row(a, "step")->count == 101);
  CHECK(row(a, "step")->flops == total);
  // torch's unit: the smallest row's count, 5,055,000, gives MFLOPs.
  CHECK(a.table().find("Total MFLOPs") != std::string::npos);
  CHECK(a.table().find("5.055") != std::string::npos);
}

TEST_CASE("C API: strata_set_flops sets the innermost open range's count") {
  strata_test::temp_dir dir("flops-c");
  strata_config config = STRATA_CONFIG_INIT;
  const std::string out = (dir.path() / "trace.json").string();
  config.output = out.c_str();
  config.with_flops = 1;
  REQUIRE(strata_start_ex(&config) == STRATA_OK);
  strata_set_flops(5);  // no open range: ignored
  strata_push("outer");
  strata_push("conv");
  strata_set_flops(123456);
  strata_pop();
  strata_set_flops(9);
  strata_pop();
  REQUIRE(strata_stop_and_export() == STRATA_OK);
  const strata::averages a = strata::key_averages(strata::detail::c_api::c_session()->data());
  REQUIRE(row(a, "conv") != nullptr);
  CHECK(row(a, "conv")->flops == 123456);
  CHECK(row(a, "outer")->flops == 9);
  const std::string trace = strata_test::read_file(out);
  CHECK(trace.find("\"flops\":123456") != std::string::npos);
}

TEST_CASE("threads keep caches of their own, freed when they exit") {
  strata_test::temp_dir dir("flops-threads");
  auto config = strata_test::config_in(dir);
  config.with_flops = true;
  strata::profiler prof(config);
  prof.start();
  std::vector<std::thread> threads;
  for (std::uint64_t t = 1; t <= 3; ++t)
    threads.emplace_back([t] {
      for (std::uint64_t i = 0; i < 200; ++i) {
        STRATA_SCOPE_FLOPS("threaded gemm", t * 1000 + i % 7);  // 7 counts per thread, reused
      }
    });
  for (auto& th : threads) th.join();  // each thread's cache is freed as it exits
  prof.stop();
  std::uint64_t want = 0;
  for (std::uint64_t t = 1; t <= 3; ++t)
    for (std::uint64_t i = 0; i < 200; ++i) want += t * 1000 + i % 7;
  const strata::averages a = prof.key_averages();
  REQUIRE(row(a, "threaded gemm") != nullptr);
  CHECK(row(a, "threaded gemm")->count == 600);
  CHECK(row(a, "threaded gemm")->flops == want);
}
