// libFuzzer target: the STRATA_* environment variables of the environment capture. The input
// gives each variable a value, or leaves it unset; the result is a configuration or a
// strata::error, and a configuration must be one the profiler accepts as far as these values go.
//
// strata's implementation (the build's, linked in) reads the environment at static
// initialisation; the runner (run_fuzz.py) clears STRATA_PROFILE, so no capture starts. The
// capture's parsers are inline in env_capture.hpp, so this file compiles them with the fuzzer's
// coverage instrumentation; the rest of the implementation need not be compiled here again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include <fuzzer/FuzzedDataProvider.h>

#include "strata/detail/env_capture.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const char* const names[] = {
      "STRATA_PROFILE",         "STRATA_OUTPUT_DIR",    "STRATA_LAYERS",        "STRATA_BUFFER_CAPACITY",
      "STRATA_OVERFLOW",        "STRATA_CAPTURE_CORES", "STRATA_RECORD_SHAPES", "STRATA_DRAIN_INTERVAL_US",
      "STRATA_PROFILE_MEMORY",  "STRATA_WITH_FLOPS",
  };
  FuzzedDataProvider in(data, size);
  std::map<std::string, std::string> env;
  for (const char* name : names) {
    if (in.ConsumeBool()) continue;
    // Mostly STRATA_PROFILE=1, so the fuzzer gets past the first check.
    env[name] = std::string(name) == "STRATA_PROFILE" && in.ConsumeBool() ? std::string("1")
                                                                          : in.ConsumeRandomLengthString(64);
  }
  const auto lookup = [&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::optional<strata::profiler_config> config;
  try {
    config = strata::capture_config_from_env(lookup);
  } catch (const strata::error&) {
    return 0;
  }
  if (!config) return 0;
  try {
    static_cast<void>(strata::core_set::parse(config->capture_cores));  // accepted once, accepted again
  } catch (const strata::error&) {
    std::abort();
  }
  if (config->memory_limit < strata::min_memory_limit) std::abort();
  return 0;
}
