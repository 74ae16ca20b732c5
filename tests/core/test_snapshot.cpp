// profiler::snapshot(): what a running session holds, written without stopping it, while
// threads record (run under ThreadSanitizer in the threaded suite).
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "strata/trace_data.hpp"
#include "support.hpp"

namespace {

std::size_t count_events(const std::string& json, std::string_view name) {
  return strata_test::lines_with(json, "\"name\":\"" + std::string(name) + "\"").size();
}

}  // namespace

TEST_CASE("snapshot: writes what the session holds and leaves it recording") {
  strata_test::temp_dir dir("snapshot");
  for (const auto policy : {strata::overflow_policy::lossless, strata::overflow_policy::flight_recorder}) {
    CAPTURE(static_cast<int>(policy));
    strata::profiler prof(strata_test::config_in(dir, 1024, policy));
    prof.start();
    for (int i = 0; i < 100; ++i) STRATA_SCOPE("before");
    const strata::export_result first = prof.snapshot();
    CHECK(prof.recording());
    CHECK(std::filesystem::path(first.path).parent_path() == dir / "out");
    CHECK(std::filesystem::path(first.path).filename().string().starts_with("snapshot-"));
    CHECK(count_events(strata_test::read_file(first.path), "before") == 100);
    for (int i = 0; i < 50; ++i) STRATA_SCOPE("after");
    const strata::export_result second = prof.snapshot((dir / "named.json").string());
    CHECK(second.path == (dir / "named.json").string());
    const std::string json = strata_test::read_file(second.path);
    CHECK(count_events(json, "before") == 100);
    CHECK(count_events(json, "after") == 50);
    CHECK(first.path != prof.snapshot().path);  // the default name never overwrites
    prof.stop();
    // The session's own trace still has every record.
    CHECK(strata_test::count_named(prof.data(), "before") == 100);
    CHECK(strata_test::count_named(prof.data(), "after") == 50);
    // Stopped: the collected session.
    CHECK(count_events(strata_test::read_file(prof.snapshot().path), "after") == 50);
  }
}

TEST_CASE("snapshot: a flight recorder's newest records") {
  strata_test::temp_dir dir("snapshot");
  strata::profiler prof(strata_test::config_in(dir, 64, strata::overflow_policy::flight_recorder));
  prof.start();
  for (int i = 0; i < 1000; ++i) STRATA_SCOPE("lap");
  const std::string json = strata_test::read_file(prof.snapshot().path);
  // Exactly the newest 64, and the snapshot leaves them where they are.
  CHECK(count_events(json, "lap") == 64);
  prof.stop();
  CHECK(strata_test::count_named(prof.data(), "lap") == 64);
}

TEST_CASE("snapshot: while threads record, from another thread, across blocks and spills") {
  strata_test::temp_dir dir("snapshot");
  for (const auto policy : {strata::overflow_policy::lossless, strata::overflow_policy::flight_recorder}) {
    CAPTURE(static_cast<int>(policy));
    strata::profiler_config config = strata_test::config_in(dir, 4096, policy);
    config.memory_limit = strata::min_memory_limit * 2;  // a few blocks: spilling begins early
    strata::profiler prof(config);
    prof.start();
    std::atomic<bool> monotonic{true};
    std::vector<std::thread> recorders;
    constexpr int per_thread = 20000;
    for (int t = 0; t < 3; ++t)
      recorders.emplace_back([] {
        for (int i = 0; i < per_thread; ++i) STRATA_SCOPE("busy");
      });
    std::thread snapshots([&] {
      std::uint64_t last = 0;
      for (int i = 0; i < 8; ++i) {
        const strata::export_result r = prof.snapshot((dir / ("s" + std::to_string(i) + ".json")).string());
        const std::size_t n = count_events(strata_test::read_file(r.path), "busy");
        if (n < last) monotonic = false;  // lossless: a later snapshot holds the earlier's records
        last = n;
      }
    });
    for (auto& t : recorders) t.join();
    snapshots.join();
    if (policy == strata::overflow_policy::lossless) CHECK(monotonic);
    const strata::export_result all = prof.snapshot((dir / "all.json").string());
    prof.stop();
    if (policy == strata::overflow_policy::lossless) {
      CHECK(count_events(strata_test::read_file(all.path), "busy") == 3 * per_thread);
      CHECK(strata_test::count_named(prof.data(), "busy") == 3 * per_thread);
    }
  }
}
