// profiler: configuration errors, the one-recording-profiler rule, sessions and stats().
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "support.hpp"

using strata::layer;

namespace {

// The message of the strata::error that constructing a profiler with `config` raises, or a
// note saying it did not raise one.
std::string config_error(const strata::profiler_config& config) {
  try {
    strata::profiler prof(config);
  } catch (const strata::error& e) {
    return e.what();
  } catch (...) {
    return "<an exception other than strata::error>";
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("each configuration error is a strata::error naming the field") {
  strata_test::temp_dir dir("config");
  auto config = strata_test::config_in(dir);
  const auto contains = [](const std::string& s, std::string_view part) {
    return s.find(part) != std::string::npos;
  };

  SUBCASE("buffer_capacity, of a flight recorder") {
    config.overflow = strata::overflow_policy::flight_recorder;
    SUBCASE("zero") {
      config.buffer_capacity = 0;
      const std::string m = config_error(config);
      CHECK(contains(m, "profiler_config::buffer_capacity"));
      CHECK(contains(m, "power of two"));
    }
    SUBCASE("one: a power of two, but below the minimum of 2") {
      config.buffer_capacity = 1;
      CHECK(contains(config_error(config), "profiler_config::buffer_capacity"));
    }
    SUBCASE("not a power of two: the message suggests the next one") {
      config.buffer_capacity = 1000;
      const std::string m = config_error(config);
      CHECK(contains(m, "profiler_config::buffer_capacity"));
      CHECK(contains(m, "got 1000 (try 1024)"));
    }
    SUBCASE("above the limit") {
      config.buffer_capacity = strata::max_buffer_capacity * 2;
      const std::string m = config_error(config);
      CHECK(contains(m, "profiler_config::buffer_capacity"));
      CHECK(contains(m, "67108864"));
    }
    SUBCASE("a wrapped -1 is above the limit (and not an overflowing suggestion)") {
      config.buffer_capacity = std::numeric_limits<std::size_t>::max();
      const std::string m = config_error(config);
      CHECK(contains(m, "profiler_config::buffer_capacity"));
      CHECK(contains(m, "exceeds the limit"));
    }
  }
  SUBCASE("layers: an empty set") {
    config.layers = strata::layer_set::none();
    CHECK(contains(config_error(config), "profiler_config::layers"));
  }
  SUBCASE("output_dir") {
    SUBCASE("empty") {
      config.output_dir = "";
      CHECK(contains(config_error(config), "profiler_config::output_dir"));
    }
    SUBCASE("below a regular file, so it cannot be created") {
      strata_test::write_file(dir / "a_file", "x");
      config.output_dir = dir / "a_file" / "sub";
      const std::string m = config_error(config);
      CHECK(contains(m, "profiler_config::output_dir"));
      CHECK(contains(m, "cannot be created"));
    }
    SUBCASE("a regular file") {
      strata_test::write_file(dir / "a_file", "x");
      config.output_dir = dir / "a_file";
      CHECK(contains(config_error(config), "profiler_config::output_dir"));
      CHECK(strata_test::read_file(dir / "a_file") == "x");
    }
#if defined(__linux__)
    SUBCASE("a directory that exists but takes no files (/proc, even for root)") {
      config.output_dir = "/proc";
      const std::string m = config_error(config);
      CHECK(contains(m, "profiler_config::output_dir"));
      CHECK(contains(m, "not writable"));
    }
#endif
  }
  SUBCASE("every message starts with the library's prefix") {
    config.layers = strata::layer_set::none();
    CHECK(config_error(config).rfind("strata: ", 0) == 0);
  }
}

TEST_CASE("valid configurations are accepted") {
  strata_test::temp_dir dir("valid");
  auto config = strata_test::config_in(dir);
  SUBCASE("a lossless session does not use buffer_capacity, so any value is accepted") {
    REQUIRE(config.overflow == strata::overflow_policy::lossless);
    for (std::size_t capacity : {std::size_t{0}, std::size_t{1000}, strata::max_buffer_capacity * 2}) {
      config.buffer_capacity = capacity;
      CHECK(config_error(config) == "<no error>");
    }
  }
  SUBCASE("the smallest and largest buffers of a flight recorder") {
    config.overflow = strata::overflow_policy::flight_recorder;
    config.buffer_capacity = 2;
    CHECK(config_error(config) == "<no error>");
    config.buffer_capacity = strata::max_buffer_capacity;  // allocated only when a thread records
    CHECK(config_error(config) == "<no error>");
  }
  SUBCASE("a missing output_dir is created, and the write check leaves nothing behind") {
    config.output_dir = dir / "a" / "b" / "c";
    strata::profiler prof(config);
    CHECK(std::filesystem::is_directory(dir / "a" / "b" / "c"));
    CHECK(std::filesystem::is_empty(dir / "a" / "b" / "c"));
  }
  SUBCASE("the config is kept, and an empty process name becomes the program's") {
    config.process_name = "";
    config.layers = {layer::device};
    strata::profiler prof(config);
    CHECK_FALSE(prof.config().process_name.empty());
    CHECK(prof.config().layers == strata::layer_set{layer::device});
    CHECK(prof.config().buffer_capacity == 1024);
  }
}

TEST_CASE("one profiler records at a time") {
  strata_test::temp_dir dir("one");
  strata::profiler first(strata_test::config_in(dir));
  strata::profiler second(strata_test::config_in(dir));
  first.start();
  REQUIRE(first.running());

  SUBCASE("start() twice is an error and leaves the session running") {
    CHECK_THROWS_WITH_AS(first.start(), doctest::Contains("called twice"), strata::error);
    CHECK(first.running());
  }
  SUBCASE("a second profiler cannot start until the first stops") {
    CHECK_THROWS_WITH_AS(second.start(), doctest::Contains("another strata::profiler is recording"),
                         strata::error);
    CHECK_FALSE(second.running());
    first.stop();
    CHECK_NOTHROW(second.start());
    CHECK(second.running());
    second.stop();
  }
  SUBCASE("destroying a running profiler stops it and frees the slot") {
    {
      strata::profiler third(strata_test::config_in(dir));
      first.stop();
      third.start();
    }
    CHECK_NOTHROW(second.start());
    second.stop();
  }
  SUBCASE("export needs a stopped session") {
    CHECK_THROWS_WITH_AS(first.export_chrome_trace(), doctest::Contains("call stop() first"),
                         strata::error);
  }
  first.stop();
  CHECK_FALSE(first.running());
}

TEST_CASE("start() checks the output directory again and keeps the slot free on failure") {
  strata_test::temp_dir dir("recheck");
  auto config = strata_test::config_in(dir);
  strata::profiler prof(config);
  std::filesystem::remove_all(config.output_dir);
  strata_test::write_file(config.output_dir, "now a file");
  CHECK_THROWS_WITH_AS(prof.start(), doctest::Contains("profiler_config::output_dir"), strata::error);
  CHECK_FALSE(prof.running());

  strata_test::temp_dir other_dir("recheck-other");
  strata::profiler other(strata_test::config_in(other_dir));
  CHECK_NOTHROW(other.start());
  other.stop();
}

TEST_CASE("stop() without a session, and twice, does nothing") {
  strata_test::temp_dir dir("stop");
  strata::profiler prof(strata_test::config_in(dir));
  CHECK_NOTHROW(prof.stop());
  prof.start();
  { STRATA_SCOPE("once"); }
  prof.stop();
  CHECK_NOTHROW(prof.stop());
  CHECK(prof.data().recorded() == 1);
}

TEST_CASE("stats() while running and after stop") {
  strata_test::temp_dir dir("stats");

  SUBCASE("no loss") {
    strata::profiler prof(strata_test::config_in(dir, 16));
    prof.start();
    for (int i = 0; i < 5; ++i) STRATA_INSTANT("five times");
    auto s = prof.stats();
    CHECK(s.recorded == 5);
    CHECK(s.dropped == 0);
    CHECK(s.threads == 1);
    STRATA_INSTANT("sixth");  // stats() only read counters: later records are counted once
    prof.stop();
    s = prof.stats();
    CHECK(s.recorded == 6);
    CHECK(s.dropped == 0);
    CHECK(s.threads == 1);
  }
  SUBCASE("with losses: a flight recorder of 4, 6 records") {
    // Exactly the newest 4 survive (test_overflow.cpp).
    strata::profiler prof(strata_test::config_in(dir, 4, strata::overflow_policy::flight_recorder));
    prof.start();
    for (int i = 0; i < 6; ++i) STRATA_INSTANT("six times");
    auto s = prof.stats();
    CHECK(s.recorded == 4);
    CHECK(s.dropped == 2);
    prof.stop();
    s = prof.stats();
    CHECK(s.recorded == 4);
    CHECK(s.dropped == 2);
    CHECK(prof.data().lost() == 2);
  }
  SUBCASE("an empty session") {
    strata::profiler prof(strata_test::config_in(dir));
    prof.start();
    CHECK(prof.stats().threads == 0);
    prof.stop();
    const auto s = prof.stats();
    CHECK(s.recorded == 0);
    CHECK(s.dropped == 0);
    CHECK(s.threads == 0);
  }
}

TEST_CASE("a new session discards the previous one's records") {
  strata_test::temp_dir dir("restart");
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  { STRATA_SCOPE("first session"); }
  prof.stop();
  prof.start();
  { STRATA_SCOPE("second session"); }
  prof.stop();
  REQUIRE(prof.data().recorded() == 1);
  CHECK(strata_test::name_of(prof.data().threads.at(0).records.at(0)) == "second session");
}

TEST_CASE("the session's data describes its process, thread and settings") {
  strata_test::temp_dir dir("data");
  auto config = strata_test::config_in(dir, 32, strata::overflow_policy::flight_recorder);
  config.layers = {layer::user, layer::runtime};
  strata::profiler prof(config);
  strata::set_thread_name("profiler test main");
  prof.start();
  { STRATA_SCOPE("described"); }
  prof.stop();
  const auto& d = prof.data();
  CHECK(d.pid == static_cast<std::uint64_t>(::getpid()));
  CHECK(d.process_name == "strata-tests");
  CHECK(d.layers == strata::layer_set{layer::user, layer::runtime});
  CHECK(d.buffer_capacity == 32);
  CHECK(d.overflow == strata::overflow_policy::flight_recorder);
  CHECK(d.start_ticks <= d.stop_ticks);
  REQUIRE(d.threads.size() == 1);
  CHECK(d.threads[0].tid == strata_test::os_tid());
  CHECK(d.threads[0].name == "profiler test main");
  CHECK_FALSE(d.threads[0].exited);
  const auto& r = d.threads[0].records.at(0);
  CHECK(d.start_ticks <= r.begin);
  CHECK(r.end <= d.stop_ticks);
}

TEST_CASE("profiler::key_averages summarises the last session") {
  strata_test::temp_dir dir("key-averages");
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  for (int i = 0; i < 3; ++i) {
    STRATA_SCOPE_LAYER(strata::layer::framework, "outer op");
    STRATA_SCOPE_LAYER(strata::layer::framework, "inner op");
  }
  CHECK_THROWS_AS(prof.key_averages(), strata::error);  // still recording
  prof.stop();
  const strata::averages a = prof.key_averages();
  REQUIRE(a.rows.size() == 2);
  const auto& outer = a.rows[0].name == "outer op" ? a.rows[0] : a.rows[1];
  const auto& inner = a.rows[0].name == "outer op" ? a.rows[1] : a.rows[0];
  CHECK(outer.name == "outer op");
  CHECK(inner.name == "inner op");
  CHECK(outer.count == 3);
  CHECK(inner.count == 3);
  // The inner scope lies within the outer one, so it is the outer's child.
  CHECK(outer.cpu_total_ns == outer.self_cpu_ns + inner.cpu_total_ns);
  CHECK(inner.self_cpu_ns == inner.cpu_total_ns);
  CHECK(a.records_lost == 0);
  CHECK(a.table().find("Self CPU time total: ") != std::string::npos);
}
