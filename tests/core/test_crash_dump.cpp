// Crash dumps in process: the dump file's life, and the handler run by a raised signal whose
// previous handler is the test's own (so the process survives and reads its dump back). The
// crashing children (SIGSEGV, SIGABRT, exit statuses) are in check_crash_dump.py.
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "strata/crash_dump.hpp"
#include "strata/macros.hpp"
#include "strata/profiler.hpp"
#include "strata/detail/crash_recorder.hpp"
#include "support.hpp"

namespace {

volatile std::sig_atomic_t previous_handler_ran = 0;
void previous_handler(int) { previous_handler_ran = 1; }

std::filesystem::path dump_of(const std::filesystem::path& dir) {
  return strata::detail::crash_recorder::dump_path(
      dir.string(), static_cast<std::uint64_t>(strata::detail::atomic_file::process_id()));
}

}  // namespace

TEST_CASE("crash dump: the file exists while the profiler runs, and a normal stop removes it") {
  strata_test::temp_dir dir("crash");
  strata::profiler prof({.output_dir = dir.path().string(), .crash_dump = true});
  CHECK_FALSE(std::filesystem::exists(dump_of(dir.path())));
  prof.start();
  CHECK(std::filesystem::exists(dump_of(dir.path())));
  { STRATA_SCOPE("crash test scope"); }
  prof.stop();
  CHECK(strata_test::entries(dir.path()).empty());
  SUBCASE("off by default") {
    strata::profiler plain({.output_dir = dir.path().string()});
    plain.start();
    CHECK(strata_test::entries(dir.path()).empty());
    plain.stop();
  }
}

// A dump is written once per process: no other test of this program may expect one.
TEST_CASE("crash dump: a signal writes the records and then runs the previous handler") {
  strata_test::temp_dir dir("crash");
  struct sigaction mine {};
  mine.sa_handler = &previous_handler;
  sigemptyset(&mine.sa_mask);
  struct sigaction before {};
  REQUIRE(::sigaction(SIGFPE, &mine, &before) == 0);
  {
    strata::profiler prof({.output_dir = dir.path().string(),
                           .buffer_capacity = 1024,
                           .overflow = strata::overflow_policy::flight_recorder,
                           .crash_dump = true});
    prof.start();
    for (int i = 0; i < 1500; ++i) STRATA_SCOPE("ring scope");  // laps the 1024-record ring
    STRATA_INSTANT("quote \" and \x02");
    std::raise(SIGFPE);
    CHECK(previous_handler_ran == 1);
    prof.stop();  // the file stays: it holds a dump
  }
  struct sigaction after {};
  ::sigaction(SIGFPE, nullptr, &after);
  CHECK((after.sa_handler == &previous_handler));  // the previous action is back
  ::sigaction(SIGFPE, &before, nullptr);

  const auto dump = strata::read_crash_dump_file(dump_of(dir.path()));
  CHECK(dump->signal == SIGFPE);
  CHECK(dump->missing().empty());
  std::size_t scopes = 0, instants = 0;
  for (const strata::thread_track& t : dump->data.threads)
    for (const strata::record& r : t.records) {
      if (std::string(r.site->name) == "ring scope") ++scopes;
      if (std::string(r.site->name) == "quote \" and \x02") ++instants;
    }
  CHECK(scopes == 1023);  // the newest 1024 records of the ring, the instant among them
  CHECK(instants == 1);
  CHECK(dump->data.lost() >= 1500 - 1023);
}

TEST_CASE("crash dump: a start that cannot create the dump file says so") {
  strata_test::temp_dir dir("crash");
  strata::profiler prof({.output_dir = dir.path().string(), .crash_dump = true});
  std::filesystem::create_directory(dump_of(dir.path()));  // a directory of the dump's name
  std::string message;
  try {
    prof.start();
  } catch (const strata::error& e) {
    message = e.what();
  }
  CHECK(message.find("cannot create the crash dump file") != std::string::npos);
  CHECK_FALSE(prof.running());
  strata::profiler other({.output_dir = dir.path().string()});
  CHECK_NOTHROW(other.start());  // the failed start left no active profiler behind
  other.stop();
}
