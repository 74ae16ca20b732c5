// A rank's identity in its traces: Kineto's distributedInfo and baseTimeNanoseconds in the JSON,
// the wall clock in the Perfetto snapshot, and torch's tensorboard_trace_handler file names.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>

#include "strata/profiler.hpp"

#include "support.hpp"

namespace {

std::string json_of_session(const strata_test::temp_dir& dir, strata::distributed_info rank) {
  strata::profiler prof({.output_dir = dir.path().string(), .distributed = std::move(rank)});
  prof.start();
  { STRATA_SCOPE("work"); }
  prof.stop();
  return strata_test::read_file(prof.export_chrome_trace().path);
}

std::int64_t number_after(const std::string& text, std::string_view key) {
  const std::size_t at = text.find(key);
  REQUIRE(at != std::string::npos);
  return std::stoll(text.substr(at + key.size()));
}

}  // namespace

TEST_CASE("distributed: a rank's trace carries Kineto's distributedInfo") {
  strata_test::temp_dir dir;
  SUBCASE("the default group of every rank, as torch describes it") {
    const std::string json = json_of_session(dir, {.rank = 1, .local_rank = 1, .world_size = 3, .backend = "ccom"});
    CHECK(json.find("\"distributedInfo\":{\"backend\":\"ccom\",\"rank\": 1,\"world_size\":3,\"local_rank\":1,"
                    "\"pg_count\":1,\"pg_config\":[{\"pg_name\":\"0\",\"pg_desc\":\"default_pg\","
                    "\"backend_config\":\"ccom\",\"pg_size\":3,\"ranks\":[0,1,2]}]}") != std::string::npos);
  }
  SUBCASE("HTA finds the rank: its pattern on the file's lines matches the rank's") {
    // What HTA's trace_file.py does to tell a trace's rank (a file it cannot match is rank 0).
    const std::string json = json_of_session(dir, {.rank = 5, .world_size = 8});
    const std::regex hta_rank(R"re("rank":\s+(\d+))re");
    std::istringstream lines(json);
    std::string line, found;
    std::smatch m;
    while (found.empty() && std::getline(lines, line))
      if (std::regex_search(line, m, hta_rank)) found = m[1];
    CHECK(found == "5");
  }
  SUBCASE("configured groups, names escaped") {
    const std::string json = json_of_session(
        dir, {.rank = 0, .world_size = 4, .backend = "ccom",
              .groups = {{"0", "default_pg", "neuron:ccom", {0, 1, 2, 3}}, {"1", "tp \"pair\"", "neuron:ccom", {0, 1}}}});
    CHECK(json.find("\"pg_count\":2,\"pg_config\":[{\"pg_name\":\"0\",\"pg_desc\":\"default_pg\",\"backend_config\":"
                    "\"neuron:ccom\",\"pg_size\":4,\"ranks\":[0,1,2,3]},{\"pg_name\":\"1\",\"pg_desc\":"
                    "\"tp \\\"pair\\\"\",\"backend_config\":\"neuron:ccom\",\"pg_size\":2,\"ranks\":[0,1]}]}") !=
          std::string::npos);
  }
  SUBCASE("not a rank: no distributedInfo, still a wall-clock base") {
    const std::string json = json_of_session(dir, {});
    CHECK(json.find("distributedInfo") == std::string::npos);
    CHECK(json.find("\"baseTimeNanoseconds\":") != std::string::npos);
  }
}

TEST_CASE("distributed: baseTimeNanoseconds turns ts into wall-clock time") {
  strata_test::temp_dir dir;
  using namespace std::chrono;
  const auto wall_minus_steady = [] {
    return duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count() -
           duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
  };
  const std::int64_t before = wall_minus_steady();
  const std::string json = json_of_session(dir, {});
  const std::int64_t after = wall_minus_steady();
  const std::int64_t base = number_after(json, "\"baseTimeNanoseconds\":");
  // The two clocks drift apart only by NTP slews between the reads; a second is far more.
  CHECK(base > std::min(before, after) - 1'000'000'000);
  CHECK(base < std::max(before, after) + 1'000'000'000);
}

TEST_CASE("distributed: a rank given in the config is checked") {
  strata_test::temp_dir dir;
  const auto error_of = [&](strata::distributed_info d) {
    try {
      strata::profiler prof({.output_dir = dir.path().string(), .distributed = std::move(d)});
    } catch (const strata::error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of({.rank = 2, .world_size = 2}).find("distributed.rank 2 is not below world_size 2") !=
        std::string::npos);
  CHECK(error_of({.rank = 0, .world_size = 2, .groups = {{"1", "tp", "", {0, 2}}}})
            .find("group '1' lists rank 2, outside the world of 2 ranks") != std::string::npos);
  CHECK(error_of({.rank = 1, .world_size = 2}).empty());
}

TEST_CASE("distributed: tensorboard_trace_handler names files as torch does") {
  CHECK(strata::worker_trace_name("", {.rank = 3, .world_size = 4}, 1234567890123, false) ==
        "rank3.1234567890123.pt.trace.json");
  CHECK(strata::worker_trace_name("worker/0", {}, 7, true) == "worker_0.7.pt.trace.json.gz");
  const std::string host_pid = strata::worker_trace_name("", {}, 5);
  CHECK(host_pid.ends_with("_" + std::to_string(::getpid()) + ".5.pt.trace.json"));

  strata_test::temp_dir dir;
  const std::filesystem::path log = dir.path() / "log";
  {
    strata::profiler prof({.output_dir = dir.path().string(),
                           .distributed = {.rank = 0, .world_size = 2},
                           .schedule = {.wait = 0, .warmup = 0, .active = 1, .repeat = 2},
                           .on_trace_ready = strata::tensorboard_trace_handler(log.string())});
    prof.start();
    for (int step = 0; step < 3; ++step) {
      STRATA_SCOPE("step work");
      prof.step();
    }
    prof.stop();
  }
  const std::vector<std::string> files = strata_test::entries(log);
  REQUIRE(files.size() == 2);
  for (const std::string& f : files) {
    CHECK(f.starts_with("rank0."));
    CHECK(f.ends_with(".pt.trace.json"));
    const std::string json = strata_test::read_file(log / f);
    CHECK(json.find("\"rank\": 0,\"world_size\":2") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(strata::tensorboard_trace_handler(""), doctest::Contains("the directory is empty"),
                       strata::error);
}

TEST_CASE("distributed: a rank's Perfetto trace names its processes after the rank") {
  // The protobuf format has no distributedInfo: the process names carry the rank, as the
  // descriptors' process_name fields, which Perfetto UI and trace_processor show.
  strata_test::temp_dir dir;
  const auto pftrace_of = [&](strata::distributed_info rank) {
    strata::profiler prof(
        {.output_dir = dir.path().string(), .process_name = "tp worker", .distributed = std::move(rank)});
    prof.start();
    { STRATA_SCOPE("work"); }
    prof.stop();
    return strata_test::read_file(prof.export_perfetto_trace().path);
  };
  CHECK(pftrace_of({.rank = 2, .world_size = 4}).find("rank 2: tp worker") != std::string::npos);
  const std::string plain = pftrace_of({});
  CHECK(plain.find("rank ") == std::string::npos);
  CHECK(plain.find("tp worker") != std::string::npos);
}
