// The STRATA_* environment parser, with the environment injected (the end-to-end run of a
// child process is tests/check_env_capture.py).
#include <doctest/doctest.h>

#include <csignal>
#include <map>
#include <string>
#include <vector>

#include "strata/detail/env_capture.hpp"

namespace {

struct fake_env {
  std::map<std::string, std::string> vars;
  strata::env_lookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

std::string error_of(const fake_env& env) {
  try {
    strata::capture_config_from_env(env.lookup());
  } catch (const strata::error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("env capture: off unless STRATA_PROFILE is 1") {
  CHECK_FALSE(strata::capture_config_from_env(fake_env{}.lookup()).has_value());
  CHECK_FALSE(strata::capture_config_from_env(fake_env{{{"STRATA_PROFILE", ""}}}.lookup()));
  CHECK_FALSE(strata::capture_config_from_env(fake_env{{{"STRATA_PROFILE", "0"}}}.lookup()));
  // Other variables alone do not turn it on.
  CHECK_FALSE(strata::capture_config_from_env(
      fake_env{{{"STRATA_OUTPUT_DIR", "x"}, {"STRATA_LAYERS", "device"}}}.lookup()));
}

TEST_CASE("env capture: defaults and every variable") {
  SUBCASE("defaults") {
    const auto config = strata::capture_config_from_env(fake_env{{{"STRATA_PROFILE", "1"}}}.lookup());
    REQUIRE(config.has_value());
    CHECK(config->output_dir == "strata-out");
    CHECK(config->layers == strata::layer_set::all());
    CHECK(config->buffer_capacity == 65536);
    CHECK(config->overflow == strata::overflow_policy::lossless);
    CHECK(config->capture_cores == "all");
    CHECK_FALSE(config->record_shapes);
    CHECK(config->memory_limit == std::size_t{256} << 20);
    CHECK(config->spill);
    CHECK_FALSE(config->crash_dump);
  }
  SUBCASE("STRATA_OVERFLOW takes the policies' former names too") {
    for (const auto& [name, policy] : {std::pair{"drop_newest", strata::overflow_policy::lossless},
                                       std::pair{"overwrite_oldest", strata::overflow_policy::flight_recorder},
                                       std::pair{"lossless", strata::overflow_policy::lossless}}) {
      const auto config = strata::capture_config_from_env(
          fake_env{{{"STRATA_PROFILE", "1"}, {"STRATA_OVERFLOW", name}}}.lookup());
      REQUIRE(config.has_value());
      CHECK(config->overflow == policy);
    }
  }
  SUBCASE("all set") {
    const auto config = strata::capture_config_from_env(
        fake_env{{{"STRATA_PROFILE", " 1 "},
                  {"STRATA_OUTPUT_DIR", "/tmp/somewhere"},
                  {"STRATA_LAYERS", "framework, device"},
                  {"STRATA_BUFFER_CAPACITY", "4096"},
                  {"STRATA_OVERFLOW", "flight_recorder"},
                  {"STRATA_CAPTURE_CORES", "0,2-3"},
                  {"STRATA_RECORD_SHAPES", "1"},
                  {"STRATA_PROFILE_MEMORY", "1"},
                  {"STRATA_WITH_FLOPS", "1"},
                  {"STRATA_MEMORY_LIMIT_MB", "64"},
                  {"STRATA_PREALLOCATE_MB", "16"},
                  {"STRATA_SPILL", "0"},
                  {"STRATA_CRASH_DUMP", "1"}}}
            .lookup());
    REQUIRE(config.has_value());
    CHECK(config->output_dir == "/tmp/somewhere");
    CHECK(config->layers == strata::layer_set{strata::layer::framework, strata::layer::device});
    CHECK(config->buffer_capacity == 4096);
    CHECK(config->overflow == strata::overflow_policy::flight_recorder);
    CHECK(config->capture_cores == "0,2-3");
    CHECK(config->record_shapes);
    CHECK(config->profile_memory);
    CHECK(config->with_flops);
    CHECK(config->memory_limit == std::size_t{64} << 20);
    CHECK(config->preallocate == std::size_t{16} << 20);
    CHECK_FALSE(config->spill);
    CHECK(config->crash_dump);
  }
  SUBCASE("layers: all") {
    const auto config = strata::capture_config_from_env(
        fake_env{{{"STRATA_PROFILE", "1"}, {"STRATA_LAYERS", "all"}}}.lookup());
    REQUIRE(config.has_value());
    CHECK(config->layers == strata::layer_set::all());
  }
}

TEST_CASE("env capture: a bad value names its variable and the accepted values") {
  const std::string cores = error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_CAPTURE_CORES", "0,x"}}});
  CHECK(cores.rfind("strata: STRATA_CAPTURE_CORES='0,x': ", 0) == 0);
  CHECK(cores.find("'x'") != std::string::npos);
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_RECORD_SHAPES", "yes"}}})
            .find("STRATA_RECORD_SHAPES='yes'") != std::string::npos);
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_PROFILE_MEMORY", "on"}}})
            .find("STRATA_PROFILE_MEMORY='on': use 1 to record allocations and frees") !=
        std::string::npos);
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_WITH_FLOPS", "2"}}})
            .find("STRATA_WITH_FLOPS='2'") != std::string::npos);
  CHECK(error_of({{{"STRATA_PROFILE", "yes"}}}).find("STRATA_PROFILE='yes'") != std::string::npos);
  const std::string layers = error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_LAYERS", "framework,gpu"}}});
  CHECK(layers.find("STRATA_LAYERS") != std::string::npos);
  CHECK(layers.find("'gpu'") != std::string::npos);
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_LAYERS", "framework,,user"}}})
            .find("STRATA_LAYERS: unknown layer ''") != std::string::npos);
  // A setting that no longer exists does not turn profiling off (environment_notices names it).
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_DRAIN_INTERVAL_US", "1000"}}}) == "");
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_MEMORY_LIMIT_MB", "0"}}})
            .find("STRATA_MEMORY_LIMIT_MB='0'") != std::string::npos);
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_MEMORY_LIMIT_MB", "1g"}}})
            .find("STRATA_MEMORY_LIMIT_MB='1g'") != std::string::npos);
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_PREALLOCATE_MB", "lots"}}})
            .find("STRATA_PREALLOCATE_MB='lots'") != std::string::npos);
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_PREALLOCATE_MB", "0"}}}) == "");  // none ahead
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_SPILL", "yes"}}})
            .find("STRATA_SPILL='yes'") != std::string::npos);
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_CRASH_DUMP", "on"}}})
            .find("STRATA_CRASH_DUMP='on': use 1") != std::string::npos);
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_BUFFER_CAPACITY", "64k"}}})
            .find("STRATA_BUFFER_CAPACITY='64k'") != std::string::npos);
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_BUFFER_CAPACITY", "99999999999999999999"}}})
            .find("STRATA_BUFFER_CAPACITY") != std::string::npos);
  CHECK(error_of({{{"STRATA_PROFILE", "1"}, {"STRATA_OVERFLOW", "block"}}})
            .find("STRATA_OVERFLOW='block'") != std::string::npos);
}

namespace {

std::string ondemand_error_of(const fake_env& env) {
  try {
    strata::ondemand_settings_from_env(env.lookup());
  } catch (const strata::error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("on-demand env: off unless STRATA_ONDEMAND is 1; defaults; every variable") {
  CHECK_FALSE(strata::ondemand_settings_from_env(fake_env{}.lookup()));
  CHECK_FALSE(strata::ondemand_settings_from_env(fake_env{{{"STRATA_ONDEMAND", "0"}}}.lookup()));
  CHECK_FALSE(strata::ondemand_settings_from_env(fake_env{{{"STRATA_ONDEMAND_STEPS", "5"}}}.lookup()));
  SUBCASE("defaults") {
    const auto s = strata::ondemand_settings_from_env(fake_env{{{"STRATA_ONDEMAND", "1"}}}.lookup());
    REQUIRE(s.has_value());
    CHECK(s->steps == 10);
    CHECK(s->duration.count() == 0);
    CHECK(s->signal == SIGUSR2);
    CHECK(s->config.output_dir == "strata-out");
    CHECK_FALSE(s->perfetto);
  }
  SUBCASE("set") {
    const auto s = strata::ondemand_settings_from_env(
        fake_env{{{"STRATA_ONDEMAND", "1"}, {"STRATA_ONDEMAND_DURATION_MS", "250"},
                  {"STRATA_ONDEMAND_SIGNAL", "SIGUSR1"}, {"STRATA_OUTPUT_DIR", "/tmp/x"},
                  {"STRATA_LAYERS", "framework"}, {"STRATA_FORMAT", "perfetto"}}}
            .lookup());
    REQUIRE(s.has_value());
    CHECK(s->steps == 0);
    CHECK(s->duration.count() == 250);
    CHECK(s->signal == SIGUSR1);
    CHECK(s->config.output_dir == "/tmp/x");
    CHECK(s->config.layers == strata::layer_set{strata::layer::framework});
    CHECK(s->perfetto);
    const auto steps = strata::ondemand_settings_from_env(
        fake_env{{{"STRATA_ONDEMAND", "1"}, {"STRATA_ONDEMAND_STEPS", " 3 "}}}.lookup());
    REQUIRE(steps.has_value());
    CHECK(steps->steps == 3);
  }
}

TEST_CASE("on-demand env: signals by name or number") {
  CHECK(strata::parse_signal("SIGUSR2") == SIGUSR2);
  CHECK(strata::parse_signal("USR1") == SIGUSR1);
  CHECK(strata::parse_signal(" HUP ") == SIGHUP);
  CHECK(strata::parse_signal(std::to_string(SIGUSR1)) == SIGUSR1);
  CHECK(strata::parse_signal(std::to_string(SIGRTMIN + 1)) == SIGRTMIN + 1);
  for (const char* bad : {"BOGUS", "SIGKILL", "STOP", "SEGV", "9", "0", "", "usr1", "SIG"})
    CHECK_THROWS_WITH_AS(strata::parse_signal(bad),
                         doctest::Contains("STRATA_ONDEMAND_SIGNAL"), strata::error);
}

TEST_CASE("on-demand env: a bad value names its variable") {
  using env = std::map<std::string, std::string>;
  CHECK(ondemand_error_of({env{{"STRATA_ONDEMAND", "yes"}}}).find("STRATA_ONDEMAND='yes'") !=
        std::string::npos);
  for (const char* steps : {"abc", "0", "-3", "1000001"})
    CHECK(ondemand_error_of({env{{"STRATA_ONDEMAND", "1"}, {"STRATA_ONDEMAND_STEPS", steps}}})
              .find(std::string("STRATA_ONDEMAND_STEPS='") + steps + "'") != std::string::npos);
  CHECK(ondemand_error_of({env{{"STRATA_ONDEMAND", "1"}, {"STRATA_ONDEMAND_DURATION_MS", "0"}}})
            .find("STRATA_ONDEMAND_DURATION_MS='0'") != std::string::npos);
  CHECK(ondemand_error_of({env{{"STRATA_ONDEMAND", "1"}, {"STRATA_ONDEMAND_STEPS", "2"},
                               {"STRATA_ONDEMAND_DURATION_MS", "9"}}})
            .find("both set") != std::string::npos);
  CHECK(ondemand_error_of({env{{"STRATA_ONDEMAND", "1"}, {"STRATA_PROFILE", "1"}}})
            .find("STRATA_PROFILE=1 and STRATA_ONDEMAND=1") != std::string::npos);
  CHECK(ondemand_error_of({env{{"STRATA_ONDEMAND", "1"}, {"STRATA_SPILL", "maybe"}}})
            .find("STRATA_SPILL='maybe'") != std::string::npos);
}

TEST_CASE("environment notices: unknown and retired STRATA_* names, with the closest known name") {
  using list = std::vector<const char*>;
  const auto notices = [](list entries) {
    entries.push_back(nullptr);
    return strata::environment_notices(entries.data());
  };
  CHECK(notices({}).empty());
  CHECK(strata::environment_notices(nullptr).empty());
  // Known names, other programs' variables, and a value that looks like a name: nothing to say.
  CHECK(notices({"STRATA_PROFILE=1", "STRATA_LAYERS=framework", "STRATA_CLOCK=steady_clock",
                 "STRATA_ONDEMAND_SIGNAL=USR1", "PATH=/bin", "X=STRATA_BOGUS=1", "STRATA_OUTPUT_DIR="})
            .empty());
  SUBCASE("typos name the closest variable") {
    const auto one = [&](const char* entry) {
      const auto n = notices({entry});
      REQUIRE(n.size() == 1);
      return n[0];
    };
    CHECK(one("STRATA_LAYER=framework") ==
          "strata: STRATA_LAYER is not a variable strata reads; did you mean STRATA_LAYERS? It is ignored.");
    CHECK(one("STRATA_PROFILER=1").find("did you mean STRATA_PROFILE?") != std::string::npos);
    CHECK(one("STRATA_ONDEMAND_STEP=3").find("did you mean STRATA_ONDEMAND_STEPS?") != std::string::npos);
    CHECK(one("STRATA_OUTPUTDIR=x").find("did you mean STRATA_OUTPUT_DIR?") != std::string::npos);
    CHECK(one("STRATA_CRASHDUMP=1").find("did you mean STRATA_CRASH_DUMP?") != std::string::npos);
    // Nothing near: named, with where the list is, and no guess.
    const std::string far = one("STRATA_WHATEVER=1");
    CHECK(far.rfind("strata: STRATA_WHATEVER is not a variable strata reads", 0) == 0);
    CHECK(far.find("did you mean") == std::string::npos);
    CHECK(one("STRATA_=1").find("did you mean") == std::string::npos);
    CHECK(one("STRATA_FOO=1").find("did you mean") == std::string::npos);  // short: 1 edit at most
    // A known name with more, or less, after it.
    CHECK(one("STRATA_OVERFLOW_POLICY=x").find("did you mean STRATA_OVERFLOW?") != std::string::npos);
    CHECK(one("STRATA_ONDEMAND_DURATION=5").find("did you mean STRATA_ONDEMAND_DURATION_MS?") !=
          std::string::npos);
    // A name without a value is still a name.
    CHECK(one("STRATA_LAYER").find("STRATA_LAYERS?") != std::string::npos);
  }
  SUBCASE("retired names say what to do; they are never suggested") {
    const auto n = notices({"STRATA_DRAIN_INTERVAL_US=1000", "STRATA_ENABLED=0", "STRATA_DRAIN_INTERVAL=5"});
    REQUIRE(n.size() == 3);
    CHECK(n[0].rfind("strata: STRATA_DRAIN_INTERVAL_US is no longer read", 0) == 0);
    CHECK(n[1].find("STRATA_ENABLED is a compile-time switch") != std::string::npos);
    CHECK(n[2].find("did you mean STRATA_DRAIN") == std::string::npos);
  }
  SUBCASE("every name the parser reads is known: its notices are empty") {
    std::vector<std::string> entries;
    for (const auto& v : strata::detail::env_variables)
      if (v.retired == nullptr) entries.push_back(std::string(v.name) + "=1");
    list raw;
    for (const auto& e : entries) raw.push_back(e.c_str());
    CHECK(raw.size() >= 16);
    CHECK(notices(raw).empty());
  }
}

TEST_CASE("STRATA_CRASH_DUMP: 1 on, 0 or empty or unset off, anything else named") {
  using env = std::map<std::string, std::string>;
  CHECK_FALSE(strata::detail::crash_dump_from_env(fake_env{}.lookup()));
  CHECK_FALSE(strata::detail::crash_dump_from_env(fake_env{env{{"STRATA_CRASH_DUMP", ""}}}.lookup()));
  CHECK_FALSE(strata::detail::crash_dump_from_env(fake_env{env{{"STRATA_CRASH_DUMP", "0"}}}.lookup()));
  CHECK(strata::detail::crash_dump_from_env(fake_env{env{{"STRATA_CRASH_DUMP", " 1 "}}}.lookup()));
  CHECK_THROWS_WITH_AS(strata::detail::crash_dump_from_env(fake_env{env{{"STRATA_CRASH_DUMP", "yes"}}}.lookup()),
                       doctest::Contains("STRATA_CRASH_DUMP='yes': use 1"), strata::error);
}

TEST_CASE("distributed_from_env: torchrun's variables, STRATA_ overrides, clear errors") {
  const auto from = [](std::map<std::string, std::string> vars) {
    return strata::distributed_from_env(fake_env{std::move(vars)}.lookup());
  };
  SUBCASE("nothing set: not a rank of a job") {
    CHECK_FALSE(from({}).known());
    CHECK_FALSE(from({{"WORLD_SIZE", "4"}}).known());  // a world size alone names no rank
  }
  SUBCASE("torchrun") {
    const auto d = from({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}});
    CHECK(d.rank == 3);
    CHECK(d.world_size == 4);
    CHECK(d.local_rank == 1);
    CHECK(d.backend.empty());
    CHECK(d.groups.empty());
  }
  SUBCASE("STRATA_ forms win; Open MPI's are read last") {
    const auto d = from({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"STRATA_RANK", " 0 "}, {"STRATA_WORLD_SIZE", "2"},
                         {"STRATA_BACKEND", "ccom"}});
    CHECK(d.rank == 0);
    CHECK(d.world_size == 2);
    CHECK(d.local_rank == -1);
    CHECK(d.backend == "ccom");
    const auto mpi = from({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}});
    CHECK(mpi.rank == 5);
    CHECK(mpi.world_size == 8);
    CHECK(from({{"RANK", ""}, {"OMPI_COMM_WORLD_RANK", "1"}, {"WORLD_SIZE", "2"}}).rank == 1);  // blank is unset
  }
  SUBCASE("bad values name their variable") {
    const auto error_from = [&](std::map<std::string, std::string> vars) {
      try {
        from(std::move(vars));
      } catch (const strata::error& e) {
        return std::string(e.what());
      }
      return std::string();
    };
    CHECK(error_from({{"RANK", "one"}, {"WORLD_SIZE", "2"}}).find("RANK='one'") != std::string::npos);
    CHECK(error_from({{"RANK", "0"}, {"STRATA_WORLD_SIZE", "-2"}}).find("STRATA_WORLD_SIZE='-2'") != std::string::npos);
    CHECK(error_from({{"RANK", "1"}}).find("RANK is set but no world size") != std::string::npos);
    CHECK(error_from({{"RANK", "4"}, {"WORLD_SIZE", "4"}}).find("RANK=4 is not below the world size 4 (WORLD_SIZE)") !=
          std::string::npos);
    CHECK(error_from({{"STRATA_RANK", "1"}, {"WORLD_SIZE", "99999999999"}}).find("WORLD_SIZE='99999999999'") !=
          std::string::npos);
  }
}
