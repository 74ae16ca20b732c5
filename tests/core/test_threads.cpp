// Recording from several threads: per-thread tracks, threads that exit before stop() or
// before export, stop() and stats() while threads record, and sessions that restart under
// running threads.
#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "strata/detail/intern.hpp"
#include "support.hpp"

using strata_test::counter_values;
using strata_test::name_of;
using strata_test::named;
using strata_test::track_of;

namespace {

// One iteration: a parent with two children, an instant and a counter sample: 5 records.
void iteration(int i) {
  STRATA_SCOPE_LAYER(strata::layer::framework, "step");
  { STRATA_SCOPE_LAYER(strata::layer::runtime, "submit"); }
  {
    STRATA_SCOPE_LAYER(strata::layer::device, "execute");
    STRATA_INSTANT("executing");
  }
  STRATA_COUNTER("iteration", i);
}

// Spins until `flag` is set; no timing involved, the other side sets it.
void wait_for(const std::atomic<bool>& flag) {
  while (!flag.load(std::memory_order_acquire)) std::this_thread::yield();
}

}  // namespace

TEST_CASE("scopes from several threads land on their own tracks") {
  strata_test::temp_dir dir("threads");
  strata::profiler prof(strata_test::config_in(dir, 256));
  constexpr int workers = 4;
  constexpr int iterations = 25;
  std::array<std::uint64_t, workers> tids{};
  prof.start();
  {
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) {
      threads.emplace_back([w, &tids] {
        strata::set_thread_name("worker " + std::to_string(w));
        tids[static_cast<std::size_t>(w)] = strata_test::os_tid();
        for (int i = 0; i < iterations; ++i) iteration(i);
      });
    }
    for (auto& t : threads) t.join();
  }
  prof.stop();

  const auto& d = prof.data();
  CHECK(d.threads.size() == workers);
  CHECK(prof.stats().recorded == workers * iterations * 5);
  CHECK(prof.stats().dropped == 0);
  std::set<std::uint64_t> distinct(tids.begin(), tids.end());
  CHECK(distinct.size() == workers);
  for (int w = 0; w < workers; ++w) {
    CAPTURE(w);
    const auto* t = track_of(d, tids[static_cast<std::size_t>(w)]);
    REQUIRE(t != nullptr);
    CHECK(t->name == "worker " + std::to_string(w));
    CHECK(t->exited);
    CHECK(t->lost == 0);
    CHECK(t->records.size() == iterations * 5);
    CHECK(named(*t, "step").size() == iterations);
    CHECK(named(*t, "submit").size() == iterations);
    CHECK(named(*t, "execute").size() == iterations);
    CHECK(named(*t, "executing").size() == iterations);
    const auto values = counter_values(*t, "iteration");
    REQUIRE(values.size() == iterations);
    for (int i = 0; i < iterations; ++i) CHECK(values[static_cast<std::size_t>(i)] == i);
    CHECK(strata_test::scopes_nest(t->records));
    // Each step is a parent: the records that follow it up to the next step lie within it.
    for (std::size_t i = 0; i < t->records.size(); ++i) {
      if (name_of(t->records[i]) != "step") continue;
      CHECK(name_of(t->records.at(i + 1)) == "submit");
      CHECK(strata_test::within(t->records.at(i + 1), t->records[i]));
    }
  }
}

TEST_CASE("threads that exit are still exported") {
  strata_test::temp_dir dir("exited");
  auto config = strata_test::config_in(dir, 64);
  strata::profiler prof(config);
  prof.start();

  std::uint64_t exited_tid = 0;
  std::thread short_lived([&] {
    strata::set_thread_name("short-lived");
    exited_tid = strata_test::os_tid();
    for (int i = 0; i < 3; ++i) iteration(i);
  });
  short_lived.join();  // exits before stop()

  std::atomic<bool> recorded{false};
  std::atomic<bool> release{false};
  std::uint64_t alive_tid = 0;
  std::thread long_lived([&] {
    strata::set_thread_name("long-lived");
    alive_tid = strata_test::os_tid();
    iteration(0);
    recorded.store(true, std::memory_order_release);
    wait_for(release);
  });
  wait_for(recorded);
  prof.stop();  // long_lived is still running
  release.store(true, std::memory_order_release);
  long_lived.join();  // exits after stop(), before export

  const auto& d = prof.data();
  REQUIRE(d.threads.size() == 2);
  const auto* gone = track_of(d, exited_tid);
  const auto* alive = track_of(d, alive_tid);
  REQUIRE(gone != nullptr);
  REQUIRE(alive != nullptr);
  CHECK(gone->exited);
  CHECK(gone->records.size() == 15);
  CHECK(gone->name == "short-lived");
  CHECK_FALSE(alive->exited);  // as of stop()
  CHECK(alive->records.size() == 5);
  // Registration order: the first thread to record sorts first.
  CHECK(d.threads[0].tid == exited_tid);

  prof.export_chrome_trace();
  const std::string text = strata_test::read_file(std::filesystem::path(config.output_dir) / "trace.json");
  CHECK(text.find(",\"tid\":" + std::to_string(exited_tid) +
                  ",\"name\":\"short-lived\",\"recorded\":15,\"dropped\":0,\"exited\":true}") !=
        std::string::npos);
  CHECK(text.find(",\"tid\":" + std::to_string(alive_tid) +
                  ",\"name\":\"long-lived\",\"recorded\":5,\"dropped\":0,\"exited\":false}") !=
        std::string::npos);
  CHECK(strata_test::lines_with(text, "\"tid\":" + std::to_string(exited_tid) + ",\"ts\"").size() == 15);
}

TEST_CASE("stats() while a thread records: every record is kept or counted") {
  strata_test::temp_dir dir("stats-mt");
  strata::profiler prof(strata_test::config_in(dir, 128));
  constexpr int samples = 20'000;
  prof.start();
  std::atomic<bool> done{false};
  std::uint64_t tid = 0;
  std::thread producer([&] {
    tid = strata_test::os_tid();
    for (int i = 0; i < samples; ++i) STRATA_COUNTER("sample", i);
    done.store(true, std::memory_order_release);
  });
  int polls = 0;
  while (!done.load(std::memory_order_acquire)) {
    const auto s = prof.stats();
    CHECK(s.recorded + s.dropped <= samples);
    ++polls;
  }
  producer.join();
  prof.stop();
  const auto s = prof.stats();
  CHECK(s.recorded + s.dropped == samples);
  const auto* t = track_of(prof.data(), tid);
  REQUIRE(t != nullptr);
  const auto values = counter_values(*t, "sample");
  CHECK(values.size() == s.recorded);
  REQUIRE_FALSE(values.empty());
  CHECK(values.front() == 0);  // a lossless session never loses the first records
  bool increasing = true;
  for (std::size_t i = 1; i < values.size(); ++i) increasing = increasing && values[i] > values[i - 1];
  CHECK(increasing);
  MESSAGE("stats() polled " << polls << " times");
}

TEST_CASE("stop() while threads record, and sessions that restart under them") {
  strata_test::temp_dir dir("restart-mt");
  // The threads record flat out while the main thread waits for them: a bounded session
  // (spilling off, one block besides each thread's current one) keeps what it exports small.
  auto config = strata_test::config_in(dir);
  config.memory_limit = std::size_t{1} << 16;
  config.spill = false;
  strata::profiler prof(config);
  constexpr int workers = 3;
  std::array<std::atomic<int>, workers> progress{};
  std::atomic<bool> quit{false};

  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([w, &progress, &quit] {
      for (int i = 0; !quit.load(std::memory_order_acquire); ++i) {
        iteration(i);
        progress[static_cast<std::size_t>(w)].fetch_add(1, std::memory_order_release);
      }
    });
  }
  const auto wait_for_progress = [&](int more) {
    std::array<int, workers> from{};
    for (int w = 0; w < workers; ++w) from[static_cast<std::size_t>(w)] = progress[static_cast<std::size_t>(w)].load();
    for (int w = 0; w < workers; ++w)
      while (progress[static_cast<std::size_t>(w)].load(std::memory_order_acquire) < from[static_cast<std::size_t>(w)] + more)
        std::this_thread::yield();
  };

  for (int session = 0; session < 3; ++session) {
    CAPTURE(session);
    prof.start();
    wait_for_progress(20);  // each thread completes 20 iterations inside this session
    prof.stop();
    const auto& d = prof.data();
    CHECK(d.threads.size() == workers);
    for (const auto& t : d.threads) {
      // Of the 20 iterations, only the first may have begun before start(): at least 19
      // iterations' records were taken or counted while the session ran.
      CHECK(t.records.size() + t.lost >= 19 * 5);
      CHECK(strata_test::scopes_nest(t.records));
      for (const auto& r : t.records) CHECK(r.begin >= d.start_ticks);
    }
    prof.export_chrome_trace();
    wait_for_progress(5);  // threads keep recording between sessions (into nothing)
  }
  quit.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
}

TEST_CASE("interning from several threads yields one site per name") {
  constexpr int workers = 4;
  constexpr int names = 20;
  // Each thread writes only its own row; the rows are read after join().
  std::array<std::array<const strata::site*, names>, workers> seen{};
  std::array<bool, workers> consistent{};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([w, &seen, &consistent] {
      auto& row = seen[static_cast<std::size_t>(w)];
      bool ok = true;
      for (int round = 0; round < 3; ++round) {
        for (int n = 0; n < names; ++n) {
          const auto name = "concurrent name " + std::to_string(n);
          const strata::site* s =
              round % 2 == 0 ? strata::intern(strata::layer::runtime, name)
                             : strata::detail::intern_cached(strata::layer::runtime,
                                                             strata::record_kind::scope, name);
          auto& slot = row[static_cast<std::size_t>(n)];
          if (round == 0) slot = s;
          ok = ok && slot == s;
        }
      }
      consistent[static_cast<std::size_t>(w)] = ok;
    });
  }
  for (auto& t : threads) t.join();
  for (int w = 0; w < workers; ++w) {
    CAPTURE(w);
    CHECK(consistent[static_cast<std::size_t>(w)]);
    for (int n = 0; n < names; ++n)
      CHECK(seen[static_cast<std::size_t>(w)][static_cast<std::size_t>(n)] ==
            strata::intern(strata::layer::runtime, "concurrent name " + std::to_string(n)));
  }
}

// stats() reads every thread's chain of blocks while the threads hand full blocks off and take
// new ones: under TSan this checks the hand-off and the reads share the chains without a race.
// A small memory limit makes the store's writer spill at the same time.
TEST_CASE("stats() while threads record and spill: every record is kept, once") {
  strata_test::temp_dir dir("lossless-mt");
  auto config = strata_test::config_in(dir);
  config.memory_limit = std::size_t{4} << 16;  // four blocks
  strata::profiler prof(config);
  prof.start();
  constexpr int workers = 3;
  constexpr int iterations = 4000;
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&] {
      for (int i = 0; i < iterations; ++i) iteration(i);
      done.fetch_add(1);
    });
  std::uint64_t seen = 0;
  while (done.load() != workers) {
    const std::uint64_t now = prof.stats().recorded;
    CHECK(now >= seen);  // what a thread handed off is never counted twice or lost
    seen = now;
  }
  for (auto& t : threads) t.join();
  prof.stop();
  const auto& d = prof.data();
  CHECK(d.threads.size() == workers);
  CHECK(prof.stats().dropped == 0);
  for (const auto& t : d.threads) {
    CHECK(t.records.size() == iterations * 5);
    CHECK(strata_test::scopes_nest(t.records));
  }
}
