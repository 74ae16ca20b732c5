// Lossless sessions (overflow_policy::lossless): threads record into blocks handed to the
// session, bounded by memory_limit and spilled to disk past it. Exact counts follow from the
// block size (2048 records) and the limit: a session holds `memory_limit / 64 KiB` blocks besides
// each thread's current one. Run under TSan too (threaded_tests).
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mount.h>
#include <unistd.h>
#endif

#include "strata/export/chrome_trace.hpp"
#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "strata/trace_data.hpp"
#include "strata/detail/block_store.hpp"
#include "strata/detail/record_order.hpp"
#include "strata/detail/registry.hpp"
#include "support.hpp"

namespace {

constexpr int block_records = static_cast<int>(strata::detail::record_block::capacity);

std::vector<double> samples_upto(int from, int to) {
  std::vector<double> v;
  for (int i = from; i < to; ++i) v.push_back(i);
  return v;
}

strata::profiler_config limited(const strata_test::temp_dir& dir, std::size_t blocks, bool spill) {
  auto config = strata_test::config_in(dir);
  config.memory_limit = blocks * strata::detail::block_bytes;
  config.spill = spill;
  return config;
}

bool spill_file_left(const strata_test::temp_dir& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    if (e.path().filename().string().rfind(".strata-spill", 0) == 0) return true;
  return false;
}

void pause_writer(bool paused) {
  auto store = strata::detail::registry::instance().store();
  REQUIRE(store != nullptr);
  store->pause_writer(paused);
}

}  // namespace

TEST_CASE("memory_limit: below one block is refused with the field's name") {
  strata_test::temp_dir dir("lossless-bad-limit");
  auto config = strata_test::config_in(dir);
  config.memory_limit = 1000;
  CHECK_THROWS_WITH_AS(strata::profiler{config}, doctest::Contains("profiler_config::memory_limit"),
                       strata::error);
}

TEST_CASE("preallocate: a lossless session holds its blocks from start(), at most memory_limit") {
  strata_test::temp_dir dir("lossless-preallocate");
  constexpr std::size_t block = strata::detail::block_bytes;
  SUBCASE("the default, capped by a smaller limit") {
    strata::profiler prof(limited(dir, 8, true));
    REQUIRE(prof.config().preallocate > 8 * block);
    prof.start();
    CHECK(prof.stats().memory.peak == 8 * block);  // every block of the limit, before any record
    for (int i = 0; i < 3 * block_records; ++i) STRATA_COUNTER("sample", i);
    // Recording took ready blocks: at most the writer's top-up of the thread's current block.
    CHECK(prof.stats().memory.peak <= 9 * block);
    prof.stop();
    CHECK(prof.stats().recorded == static_cast<std::uint64_t>(3 * block_records));
  }
  SUBCASE("some of the limit") {
    auto config = limited(dir, 64, true);
    config.preallocate = 20 * block;
    strata::profiler prof(config);
    prof.start();
    CHECK(prof.stats().memory.peak == 20 * block);
    prof.stop();
  }
  SUBCASE("0: blocks as the session needs them") {
    auto config = limited(dir, 64, true);
    config.preallocate = 0;
    strata::profiler prof(config);
    prof.start();
    CHECK(prof.stats().memory.peak <= 16 * block);  // the first few, for the threads' first records
    prof.stop();
  }
  SUBCASE("a flight recorder keeps its own ring, whatever preallocate says") {
    auto config = strata_test::config_in(dir);
    config.overflow = strata::overflow_policy::flight_recorder;
    config.buffer_capacity = 4096;
    strata::profiler prof(config);
    prof.start();
    const auto store = strata::detail::registry::instance().store();  // stats() has no memory figures for it
    REQUIRE(store != nullptr);
    CHECK(store->stats().peak > 0);
    CHECK(store->stats().peak <= 16 * block);
    prof.stop();
  }
}

TEST_CASE("spill off: records past the memory limit are dropped, newest first, and counted") {
  // Two blocks held besides the thread's current one: 3 blocks of records are kept.
  strata_test::temp_dir dir("lossless-no-spill");
  strata::profiler prof(limited(dir, 2, false));
  const int n = 5 * block_records + 100;
  prof.start();
  for (int i = 0; i < n; ++i) STRATA_COUNTER("sample", i);
  prof.stop();
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  CHECK(strata_test::counter_values(*t, "sample") == samples_upto(0, 3 * block_records));
  CHECK(t->lost == static_cast<std::uint64_t>(n - 3 * block_records));
  const auto s = prof.stats();
  CHECK(s.recorded == static_cast<std::uint64_t>(3 * block_records));
  CHECK(s.dropped == static_cast<std::uint64_t>(n - 3 * block_records));
  CHECK(s.memory.spilled == 0);
  CHECK(s.memory.spill_error.empty());
  CHECK(s.memory.peak <= 3 * strata::detail::block_bytes);
}

TEST_CASE("spill on: a paused writer fills memory to the limit, then the thread waits and spills") {
  strata_test::temp_dir dir("lossless-paused");
  strata::profiler prof(limited(dir, 2, true));
  const int n = 3 * block_records + 1000;
  prof.start();
  pause_writer(true);
  std::atomic<int> made{0};
  std::thread recorder([&] {
    for (int i = 0; i < n; ++i) {
      STRATA_COUNTER("sample", i);
      made.store(i + 1, std::memory_order_relaxed);
    }
  });
  // The first 3 blocks fill without the writer; the next record needs a fourth, and the thread
  // waits for the writer at the limit. Waits for that state, not for a duration.
  while (prof.stats().memory.waits == 0) std::this_thread::yield();
  CHECK(made.load() == 3 * block_records);
  strata::profiler_stats at_limit = prof.stats();
  CHECK(at_limit.recorded == static_cast<std::uint64_t>(3 * block_records));
  CHECK(at_limit.memory.spilled == 0);
  CHECK(at_limit.dropped == 0);
  pause_writer(false);
  recorder.join();
  prof.stop();
  const auto s = prof.stats();
  CHECK(s.recorded == static_cast<std::uint64_t>(n));
  CHECK(s.dropped == 0);
  CHECK(s.memory.waits == 1);
  CHECK(s.memory.spilled >= static_cast<std::uint64_t>(block_records));
  CHECK(s.memory.spilled % block_records == 0);
  CHECK(s.memory.spill_bytes > s.memory.spilled * sizeof(strata::record));  // records plus headers
  CHECK(s.memory.peak <= 4 * strata::detail::block_bytes);
  std::uint64_t tid = 0;
  for (const auto& t : prof.data().threads)
    if (!t.records.empty()) tid = t.tid;
  const auto* t = strata_test::track_of(prof.data(), tid);
  REQUIRE(t != nullptr);
  CHECK(strata_test::counter_values(*t, "sample") == samples_upto(0, n));
  CHECK_FALSE(spill_file_left(dir));  // removed once collected
}

TEST_CASE("spill round trip: hostile names and every record kind come back from the spill file") {
  strata_test::temp_dir dir("lossless-roundtrip");
  strata::profiler prof(limited(dir, 1, true));
  const std::vector<std::string> names = {"quote \" back\\slash", "newline\nand\ttab",
                                          "ctl \x01\x1f\x7f", "utf8 \xc3\xa9 bad \xff", ""};
  const int rounds = 4 * block_records / 3;  // 3 records a round: four blocks, most of them spilled
  prof.start();
  for (int i = 0; i < rounds; ++i) {
    const std::string& name = names[static_cast<std::size_t>(i) % names.size()];
    { STRATA_SCOPE_DYNAMIC(strata::layer::runtime, name); }
    STRATA_INSTANT_DYNAMIC(strata::layer::user, name);
    STRATA_COUNTER("round", i);
  }
  prof.stop();
  const auto s = prof.stats();
  CHECK(s.recorded == static_cast<std::uint64_t>(3 * rounds));
  CHECK(s.dropped == 0);
  CHECK(s.memory.spilled > 0);
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  int i_scope = 0, i_instant = 0;
  for (const auto& r : t->records) {
    switch (r.kind()) {
      case strata::record_kind::scope:
        CHECK(std::string_view(r.site->name) == names[static_cast<std::size_t>(i_scope++) % names.size()]);
        break;
      case strata::record_kind::instant:
        CHECK(std::string_view(r.site->name) == names[static_cast<std::size_t>(i_instant++) % names.size()]);
        break;
      default:
        break;
    }
  }
  CHECK(i_scope == rounds);
  CHECK(i_instant == rounds);
  CHECK(strata_test::counter_values(*t, "round") == samples_upto(0, rounds));
  const auto written = prof.export_chrome_trace();
  CHECK(written.events > static_cast<std::size_t>(3 * rounds) - 1);
  CHECK_FALSE(spill_file_left(dir));
}

#if defined(__linux__)
TEST_CASE("a spill directory on a full file system: the documented error, and what was kept stays") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: mounting a tmpfs needs root (CI runs as root)");
    return;
  }
  strata_test::temp_dir dir("lossless-full-fs");
  // Room for the header and one spilled block, not two.
  const int mounted = ::mount("tmpfs", dir.path().c_str(), "tmpfs", 0, "size=100k");
  REQUIRE_MESSAGE(mounted == 0, "mount tmpfs failed");
  // If a check below fails first, the file system is still detached (lazily: whatever holds it
  // open lets go at exit), so a failing run leaves no mount behind either.
  struct unmount_at_end {
    const char* path;
    bool done = false;
    ~unmount_at_end() {
      if (!done) ::umount2(path, MNT_DETACH);
    }
  } unmount{dir.path().c_str()};
  const int n = 12 * block_records;
  {
    strata::profiler prof(limited(dir, 2, true));
    prof.start();
    for (int i = 0; i < n; ++i) STRATA_COUNTER("sample", i);
    prof.stop();
    const auto s = prof.stats();
    CHECK(s.memory.spill_error.find("cannot write the spill file") != std::string::npos);
    CHECK(s.recorded + s.dropped == static_cast<std::uint64_t>(n));
    CHECK(s.dropped > 0);
    CHECK(s.memory.spilled >= static_cast<std::uint64_t>(block_records));  // the block that fitted
    const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
    REQUIRE(t != nullptr);
    // What was kept is the oldest records, none twice, none missing in between.
    CHECK(strata_test::counter_values(*t, "sample") == samples_upto(0, static_cast<int>(s.recorded)));
    CHECK_FALSE(spill_file_left(dir));
  }
  // The profiler is gone: nothing of the session (its spill file among them) holds the file
  // system, so it unmounts at once.
  const int unmounted = ::umount(dir.path().c_str());
  const std::string why = unmounted == 0 ? "" : std::strerror(errno);
  CHECK_MESSAGE(unmounted == 0, "umount: " << why << " (a file of the session is still open)");
  unmount.done = unmounted == 0;
}
#endif

TEST_CASE("1,000 threads recording at once keep every record (250 under TSan)") {
  strata_test::temp_dir dir("lossless-1000");
  strata::profiler prof(strata_test::config_in(dir));
  constexpr int threads = strata_test::under_tsan ? 250 : 1000;
  constexpr int each = 300;
  prof.start();
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < each; ++i) STRATA_COUNTER("sample", i);
    });
  while (ready.load() != threads) std::this_thread::yield();
  go.store(true);
  for (auto& t : pool) t.join();
  prof.stop();
  const auto s = prof.stats();
  CHECK(s.threads == threads);
  CHECK(s.recorded == std::uint64_t{threads} * each);
  CHECK(s.dropped == 0);
  for (const auto& t : prof.data().threads) CHECK(strata_test::counter_values(t, "sample") == samples_upto(0, each));
}

TEST_CASE("10,000 short-lived threads keep every record, and hold no block once exited (2,000 under TSan)") {
  strata_test::temp_dir dir("lossless-short");
  strata::profiler prof(strata_test::config_in(dir));
  constexpr int batches = strata_test::under_tsan ? 20 : 100;
  constexpr int per_batch = 100;
  constexpr int each = 7;
  prof.start();
  for (int b = 0; b < batches; ++b) {
    std::vector<std::thread> pool;
    for (int w = 0; w < per_batch; ++w)
      pool.emplace_back([] {
        for (int i = 0; i < each; ++i) STRATA_COUNTER("sample", i);
      });
    for (auto& t : pool) t.join();
  }
  const auto running = prof.stats();
  prof.stop();
  const auto s = prof.stats();
  CHECK(s.threads == batches * per_batch);
  CHECK(s.recorded == std::uint64_t{batches} * per_batch * each);
  CHECK(s.dropped == 0);
  // An exited thread's block went back to the store: the session never held a block per thread
  // (10,000 blocks, 625 MiB: more than the limit, which 2,000 under TSan are not), only its
  // memory limit and a block for each of the threads alive at once.
  CHECK(running.memory.peak <= prof.config().memory_limit + per_batch * strata::detail::block_bytes);
  for (const auto& t : prof.data().threads) {
    CHECK(t.exited);
    CHECK(strata_test::counter_values(t, "sample") == samples_upto(0, each));
  }
}

TEST_CASE("a spilled session's table reads the spill file: every record, nested as recorded") {
  strata_test::temp_dir dir("lossless-table");
  strata::profiler prof(limited(dir, 1, true));
  constexpr int ops = 3 * block_records / 2;  // 3 records an op: about 4.5 blocks, most spilled
  prof.start();
  {
    STRATA_SCOPE("spilled session");  // encloses every block: its record is read back last
    for (int i = 0; i < ops; ++i) {
      STRATA_SCOPE_LAYER(strata::layer::framework, "spilled op");
      { STRATA_SCOPE("spilled kernel"); }
      STRATA_INSTANT("spilled mark");
    }
  }
  prof.stop();
  REQUIRE(prof.stats().memory.spilled > 0);
  const strata::averages a = prof.key_averages();
  const auto row = [&](std::string_view name) {
    const strata::average_row* r = a.find(name);
    REQUIRE_MESSAGE(r != nullptr, "no row " << name);
    return *r;
  };
  const auto session = row("spilled session");
  const auto op = row("spilled op");
  const auto kernel = row("spilled kernel");
  CHECK(session.count == 1);
  CHECK(op.count == static_cast<std::uint64_t>(ops));
  CHECK(kernel.count == static_cast<std::uint64_t>(ops));
  // Nested as recorded: each op is a child of the session, each kernel of an op.
  CHECK(session.self_cpu_ns == session.cpu_total_ns - op.cpu_total_ns);
  CHECK(op.self_cpu_ns == op.cpu_total_ns - kernel.cpu_total_ns);
  // data() reads the spilled records back into memory, oldest first.
  const auto* t = strata_test::track_of(prof.data(), strata_test::os_tid());
  REQUIRE(t != nullptr);
  CHECK(t->spilled.empty());
  CHECK(t->records.size() == static_cast<std::size_t>(3 * ops + 1));
  CHECK(std::is_sorted(t->records.begin(), t->records.end(), strata::detail::record_order));
  CHECK(strata_test::name_of(t->records.front()) == "spilled session");
  // Read a block at a time from the spill file, the table is the one of the records in memory.
  const strata::averages loaded = prof.key_averages();
  REQUIRE(loaded.rows.size() == a.rows.size());
  for (const auto& r : a.rows) {
    CAPTURE(r.name);
    const strata::average_row* l = loaded.find(r.name);
    REQUIRE(l != nullptr);
    CHECK(l->count == r.count);
    CHECK(l->cpu_total_ns == r.cpu_total_ns);
    CHECK(l->self_cpu_ns == r.self_cpu_ns);
  }
}
