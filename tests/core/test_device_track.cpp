// device tracks: records of a device's engines appended in bulk, one process per core.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "strata/device.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "support.hpp"

using strata::layer;
using strata::record_kind;

namespace {

constexpr strata::site matmul{"matmul", "f.cpp", 1, layer::device, record_kind::scope};

std::vector<strata::record> device_records(std::size_t n, std::uint64_t t0) {
  std::vector<strata::record> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back({t0 + 10 * i, t0 + 10 * i + 5, &matmul, i + 1});
  return out;
}

strata::device_track track(std::uint32_t core, std::uint32_t id, const char* name) {
  return {.core = core, .core_name = "NeuronCore", .track = id, .track_name = name};
}

const strata::thread_track* find(const strata::trace_data& d, std::uint64_t pid, std::uint64_t tid) {
  for (const auto& t : d.threads)
    if (t.pid == pid && t.tid == tid) return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("device records are taken only while a session captures the device layer") {
  const auto records = device_records(3, static_cast<std::uint64_t>(strata::clock::steady_ns()));
  CHECK(strata::append_device_records(track(0, 0, "Tensor"), records) == 0);
  CHECK_FALSE(strata::device_core_captured(0));

  strata_test::temp_dir dir;
  auto config = strata_test::config_in(dir);
  config.layers = {layer::framework, layer::runtime};
  strata::profiler prof(config);
  prof.start();
  CHECK_FALSE(strata::device_core_captured(0));
  CHECK(strata::append_device_records(track(0, 0, "Tensor"), records) == 0);
  prof.stop();
  CHECK(prof.data().threads.empty());
  CHECK(strata::append_device_records(track(0, 0, "Tensor"), records) == 0);
}

TEST_CASE("each core is a process of its own, each track a thread, after the host threads") {
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  { STRATA_SCOPE("host work"); }
  const std::uint64_t t0 = static_cast<std::uint64_t>(strata::clock::steady_ns());
  CHECK(strata::append_device_records(track(1, 1, "Vector"), device_records(2, t0 + 50)) == 2);
  CHECK(strata::append_device_records(track(1, 0, "Tensor"), device_records(3, t0)) == 3);
  CHECK(strata::append_device_records(track(0, 0, "Tensor"), device_records(1, t0)) == 1);
  CHECK(strata::append_device_records(track(1, 0, "Tensor"), device_records(1, t0 + 100)) == 1);
  prof.stop();

  const auto& d = prof.data();
  REQUIRE(d.threads.size() == 4);
  CHECK(d.threads[0].pid == 0);  // the host thread
  CHECK(d.threads[1].pid == strata::device_pid(0));
  CHECK(d.threads[2].pid == strata::device_pid(1));
  CHECK(d.threads[2].tid == 0);
  CHECK(d.threads[3].tid == 1);
  const auto* tensor1 = find(d, strata::device_pid(1), 0);
  REQUIRE(tensor1 != nullptr);
  CHECK(tensor1->name == "Tensor");
  CHECK(tensor1->process_name == "NeuronCore");
  CHECK(tensor1->records.size() == 4);
  CHECK(tensor1->timestamps_in_ns);
  CHECK_FALSE(d.threads[0].timestamps_in_ns);
  // Device timestamps are nanoseconds already: a modelled duration reaches the trace exactly.
  CHECK(d.ns_of(*tensor1, tensor1->records[0].end) - d.ns_of(*tensor1, tensor1->records[0].begin) == 5);
  CHECK(tensor1->lost == 0);
  CHECK(strata_test::scopes_nest(tensor1->records));

  SUBCASE("the trace names the core's process and puts its events there") {
    const auto path = dir / "t.json";
    strata::write_chrome_trace(d, path);
    const std::string text = strata_test::read_file(path);
    const std::string pid1 = std::to_string(strata::device_pid(1));
    CHECK(strata_test::lines_with(text, R"("name":"process_name","pid":)" + pid1 + R"(,"tid":0,"args":{"name":"NeuronCore"}})").size() == 1);
    CHECK(strata_test::lines_with(text, R"("name":"matmul","pid":)" + pid1 + R"(,"tid":0,)").size() == 4);
    CHECK(strata_test::lines_with(text, R"(,"dur":0.005,"args":{"correlation_id":)").size() == 7);
    CHECK(strata_test::lines_with(text, R"("name":"matmul","pid":)" + pid1 + R"(,"tid":1,)").size() == 2);
    CHECK(strata_test::lines_with(text, R"("correlation_id":3})").size() == 1);
  }
}

TEST_CASE("capture_cores decides whose device records are kept") {
  strata_test::temp_dir dir;
  auto config = strata_test::config_in(dir);
  config.capture_cores = "1,3-4";
  strata::profiler prof(config);
  prof.start();
  const auto records = device_records(2, static_cast<std::uint64_t>(strata::clock::steady_ns()));
  for (std::uint32_t core = 0; core < 6; ++core) {
    const bool wanted = core == 1 || core == 3 || core == 4;
    CHECK(strata::device_core_captured(core) == wanted);
    CHECK(strata::append_device_records(track(core, 0, "Tensor"), records) == (wanted ? 2u : 0u));
  }
  prof.stop();
  CHECK(prof.data().threads.size() == 3);
  CHECK(prof.data().lost() == 0);  // not captured is not lost
}

TEST_CASE("max_events_per_core bounds each core's records; the rest are counted as lost") {
  strata_test::temp_dir dir;
  auto config = strata_test::config_in(dir);
  config.max_events_per_core = 5;
  strata::profiler prof(config);
  prof.start();
  const std::uint64_t t0 = static_cast<std::uint64_t>(strata::clock::steady_ns());
  CHECK(strata::append_device_records(track(0, 0, "Tensor"), device_records(3, t0)) == 3);
  CHECK(strata::append_device_records(track(0, 1, "Vector"), device_records(4, t0)) == 2);
  CHECK(strata::append_device_records(track(0, 1, "Vector"), device_records(1, t0 + 100)) == 0);
  CHECK(strata::append_device_records(track(1, 0, "Tensor"), device_records(5, t0)) == 5);
  prof.stop();
  const auto& d = prof.data();
  CHECK(find(d, strata::device_pid(0), 0)->lost == 0);
  CHECK(find(d, strata::device_pid(0), 1)->records.size() == 2);
  CHECK(find(d, strata::device_pid(0), 1)->lost == 3);
  CHECK(find(d, strata::device_pid(1), 0)->records.size() == 5);
  CHECK(d.lost() == 3);

  SUBCASE("a new session starts the count again") {
    prof.start();
    CHECK(strata::append_device_records(track(0, 0, "Tensor"), device_records(5, static_cast<std::uint64_t>(strata::clock::steady_ns()))) == 5);
    prof.stop();
  }
}

TEST_CASE("stats: threads counts the program's threads that recorded, tracks every track") {
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  const auto t0 = static_cast<std::uint64_t>(strata::clock::steady_ns());
  { STRATA_SCOPE("host work"); }
  std::thread worker([] { STRATA_SCOPE("worker work"); });
  worker.join();
  std::thread idle([] {});  // never records: no thread of the trace
  idle.join();
  for (std::uint32_t engine = 0; engine < 4; ++engine)
    CHECK(strata::append_device_records(track(0, engine, "engine"), device_records(2, t0)) == 2);
  SUBCASE("while recording") {
    const strata::profiler_stats s = prof.stats();
    CHECK(s.threads == 2);
    CHECK(s.tracks == 2 + 4);  // the device tracks are tracks, not threads
    prof.stop();
  }
  SUBCASE("collected") {
    prof.stop();
    const strata::profiler_stats s = prof.stats();
    CHECK(s.threads == 2);
    CHECK(s.tracks == prof.data().threads.size());
    CHECK(s.tracks == 2 + 4);
    CHECK(prof.data().host_threads() == 2);
  }
}
