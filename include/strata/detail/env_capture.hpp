// strata/detail/env_capture.hpp: how strata reads its STRATA_* environment variables.
//
//   STRATA_PROFILE=1 ./engine          → strata-out/trace.json when the program exits
//   STRATA_ONDEMAND=1 ./engine &       → kill -USR2 <pid> records the next 10 steps
//
// Every program that compiles strata's implementation (STRATA_IMPLEMENTATION, from C++ or for
// the C API) reads the environment at start-up (detail/impl/env_capture.hpp): including this header
// is no longer needed for that. What is left here is the parser, for tests and for programs
// that want to know what the environment asks for: `capture_config_from_env`,
// `ondemand_settings_from_env`, `parse_signal`, and the table of the variables strata reads.
// A bad value never stops the host program: the implementation names it on stderr and the
// capture stays off.
#pragma once

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/device.hpp"
#include "strata/distributed.hpp"
#include "strata/error.hpp"
#include "strata/export/trace_format.hpp"
#include "strata/ondemand.hpp"
#include "strata/profiler_config.hpp"
#include "strata/record.hpp"
#include "strata/detail/signal_names.hpp"

namespace strata {
inline namespace v1 {

/// Reads one environment variable; injectable so the parser is testable without a process.
using env_lookup = std::function<const char*(const char*)>;

namespace detail {

/// A STRATA_* variable strata knows: one it reads, or one it no longer reads (`retired` then
/// says what to do instead).
struct env_variable {
  const char* name;
  const char* retired = nullptr;
};

/// Every STRATA_* name strata knows; the parser reads only names listed here (`env_name`), and
/// any other STRATA_* variable in the environment is named on stderr with the closest of these.
inline constexpr env_variable env_variables[] = {
    {"STRATA_PROFILE"},
    {"STRATA_ONDEMAND"},
    {"STRATA_ONDEMAND_STEPS"},
    {"STRATA_ONDEMAND_DURATION_MS"},
    {"STRATA_ONDEMAND_SIGNAL"},
    {"STRATA_OUTPUT_DIR"},
    {"STRATA_LAYERS"},
    {"STRATA_OVERFLOW"},
    {"STRATA_MEMORY_LIMIT_MB"},
    {"STRATA_PREALLOCATE_MB"},
    {"STRATA_SPILL"},
    {"STRATA_BUFFER_CAPACITY"},
    {"STRATA_CAPTURE_CORES"},
    {"STRATA_RECORD_SHAPES"},
    {"STRATA_PROFILE_MEMORY"},
    {"STRATA_WITH_FLOPS"},
    {"STRATA_FORMAT"},
    {"STRATA_CRASH_DUMP"},
    {"STRATA_RANK"},  // the rank identity (distributed_from_env), before torchrun's RANK ...
    {"STRATA_WORLD_SIZE"},
    {"STRATA_LOCAL_RANK"},
    {"STRATA_BACKEND"},
    {"STRATA_CLOCK"},  // read by strata/clock.hpp: tsc or steady_clock
    {"STRATA_DRAIN_INTERVAL_US",
     "is no longer read: a session keeps every record without a background drain, in "
     "STRATA_MEMORY_LIMIT_MB of memory and a spill file past it; unset it"},
    {"STRATA_ENABLED",
     "is a compile-time switch (-DSTRATA_ENABLED=0), not read from the environment; unset it"},
};

/// `name`, checked at compile time to be in `env_variables`: the parser cannot read a variable
/// the typo check does not know.
consteval const char* env_name(const char* name) {
  for (const env_variable& v : env_variables)
    if (std::string_view(v.name) == name) return name;
  throw "a STRATA_* variable strata reads must be listed in detail::env_variables";
}

/// Edits (insert, delete, replace) that turn `a` into `b`.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace detail

/// What strata has to say about the STRATA_* variables of `environment` (`NAME=value` entries,
/// null-terminated, as `environ`): one line for each name it does not know (with the closest
/// known name, if one is near), and for each it no longer reads. Empty when all is well.
inline std::vector<std::string> environment_notices(const char* const* environment) {
  std::vector<std::string> notices;
  if (environment == nullptr) return notices;
  for (const char* const* entry = environment; *entry != nullptr; ++entry) {
    const std::string_view text = *entry;
    if (!text.starts_with("STRATA_")) continue;
    const std::string_view name = text.substr(0, text.find('='));
    const detail::env_variable* known = nullptr;
    const detail::env_variable* closest = nullptr;
    const detail::env_variable* extends = nullptr;  // STRATA_OVERFLOW_POLICY: STRATA_OVERFLOW
    std::size_t best = std::string_view::npos;
    for (const detail::env_variable& v : detail::env_variables) {
      if (name == v.name) known = &v;
      if (v.retired != nullptr) continue;
      const std::size_t d = detail::edit_distance(name, v.name);
      if (d < best) {
        best = d;
        closest = &v;
      }
      if (extends == nullptr && name.size() > 7 &&
          (name.starts_with(v.name) || std::string_view(v.name).starts_with(name)))
        extends = &v;
    }
    if (known != nullptr) {
      if (known->retired != nullptr)
        notices.push_back("strata: " + std::string(name) + " " + known->retired);
      continue;
    }
    // Near enough to be a typo: at most 3 edits, and about a third of the letters after
    // STRATA_ at most (STRATA_LAYER for STRATA_LAYERS, not STRATA_FOO for STRATA_SPILL).
    const std::size_t letters = name.size() > 7 ? name.size() - 7 : 0;
    std::string line = "strata: " + std::string(name) + " is not a variable strata reads";
    if (closest != nullptr && best <= 3 && best * 3 <= letters + 2)
      line += std::string("; did you mean ") + closest->name + "? It is ignored.";
    else if (extends != nullptr)
      line += std::string("; did you mean ") + extends->name + "? It is ignored.";
    else
      line += "; it is ignored (the variables strata reads are listed in the README)";
    notices.push_back(std::move(line));
  }
  return notices;
}

namespace detail {

inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// "framework,runtime" or "all" → a layer set; an unknown name raises strata::error.
/// A decimal count of at most 12 digits (surrounding blanks allowed), or nullopt.
inline std::optional<std::size_t> parse_count(std::string_view raw) {
  const std::string_view text = trim(raw);
  if (text.empty() || text.size() > 12) return std::nullopt;
  std::size_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::size_t>(c - '0');
  }
  return value;
}

inline layer_set parse_layers(std::string_view text) {
  if (trim(text) == "all") return layer_set::all();
  layer_set set;
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view token = trim(text.substr(0, comma));
    bool known = false;
    for (int l = 0; l < layer_count; ++l) {
      if (token == layer_name(static_cast<layer>(l))) {
        set.add(static_cast<layer>(l));
        known = true;
      }
    }
    if (!known)
      throw error("STRATA_LAYERS: unknown layer '" + std::string(token) +
                  "'; use a comma-separated list of framework, runtime, device, user, or all");
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return set;
}

}  // namespace detail

/// `STRATA_FORMAT`: `json` (the default, unset or empty) or `perfetto`; anything else raises
/// `strata::error` naming the variable.
inline trace_format trace_format_from_env(const env_lookup& lookup) {
  const char* v = lookup(detail::env_name("STRATA_FORMAT"));
  if (v == nullptr) return trace_format::chrome_json;
  const std::string_view text = detail::trim(v);
  if (text.empty() || text == "json") return trace_format::chrome_json;
  if (text == "perfetto") return trace_format::perfetto;
  throw error("STRATA_FORMAT='" + std::string(v) + "': use json (trace.json) or perfetto (trace.pftrace)");
}

namespace detail {

/// `STRATA_CRASH_DUMP`: `1` on, `0`, empty or unset off; anything else raises `strata::error`.
inline bool crash_dump_from_env(const env_lookup& lookup) {
  const char* v = lookup(env_name("STRATA_CRASH_DUMP"));
  if (v == nullptr) return false;
  const std::string_view text = trim(v);
  if (text.empty() || text == "0") return false;
  if (text == "1") return true;
  throw error("STRATA_CRASH_DUMP='" + std::string(v) +
              "': use 1 to write a crash dump if the process crashes, 0 not to");
}

/// The session configuration the STRATA_* variables describe (all but STRATA_PROFILE and
/// STRATA_ONDEMAND*, which say when to capture): shared by the whole-run and on-demand captures.
inline profiler_config session_config_from_env(const env_lookup& lookup) {
  const auto get = [&](const char* name) -> std::optional<std::string> {
    const char* v = lookup(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  profiler_config config;
  if (auto dir = get(detail::env_name("STRATA_OUTPUT_DIR")); dir && !dir->empty()) config.output_dir = *dir;
  if (auto layers = get(detail::env_name("STRATA_LAYERS")); layers && !layers->empty())
    config.layers = detail::parse_layers(*layers);
  if (auto capacity = get(detail::env_name("STRATA_BUFFER_CAPACITY")); capacity && !capacity->empty()) {
    const auto value = detail::parse_count(*capacity);
    if (!value)
      throw error("STRATA_BUFFER_CAPACITY='" + *capacity +
                  "': use a power of two (records per thread), such as 65536");
    config.buffer_capacity = *value;
  }
  // STRATA_DRAIN_INTERVAL_US is no longer read: environment_notices() names it.
  if (auto limit = get(detail::env_name("STRATA_MEMORY_LIMIT_MB")); limit && !limit->empty()) {
    const auto value = detail::parse_count(*limit);
    if (!value || *value == 0 || *value > (std::size_t{1} << 20))
      throw error("STRATA_MEMORY_LIMIT_MB='" + *limit +
                  "': use the MiB of records held in memory before spilling, such as 256");
    config.memory_limit = *value << 20;
  }
  if (auto ready = get(detail::env_name("STRATA_PREALLOCATE_MB")); ready && !ready->empty()) {
    const auto value = detail::parse_count(*ready);
    if (!value || *value > (std::size_t{1} << 20))
      throw error("STRATA_PREALLOCATE_MB='" + *ready +
                  "': use the MiB of memory made ready at start (at most the memory limit), "
                  "such as 256, or 0 to take it as the session needs it");
    config.preallocate = *value << 20;
  }
  if (auto spill = get(detail::env_name("STRATA_SPILL")); spill && !spill->empty()) {
    const std::string_view text = detail::trim(*spill);
    if (text != "0" && text != "1")
      throw error("STRATA_SPILL='" + *spill + "': use 1 to spill past the memory limit, 0 to drop");
    config.spill = text == "1";
  }
  if (auto overflow = get(detail::env_name("STRATA_OVERFLOW")); overflow && !overflow->empty()) {
    const std::string_view text = detail::trim(*overflow);
    if (!overflow_policy_from_name(text, config.overflow))
      throw error("STRATA_OVERFLOW='" + *overflow + "': use lossless or flight_recorder");
  }
  if (auto cores = get(detail::env_name("STRATA_CAPTURE_CORES")); cores && !cores->empty()) {
    try {
      static_cast<void>(core_set::parse(*cores));
    } catch (const error& e) {
      throw error("STRATA_CAPTURE_CORES='" + *cores + "': " + (e.what() + 8));  // drop "strata: "
    }
    config.capture_cores = *cores;
  }
  static_cast<void>(trace_format_from_env(lookup));  // a bad value is named like the others
  // An on/off switch: 0 or 1, anything else named with what the 1 does.
  const auto flag = [&](const char* name, const char* what, bool& out) {
    if (auto value = get(name); value && !value->empty()) {
      const std::string_view text = detail::trim(*value);
      if (text != "0" && text != "1")
        throw error(std::string(name) + "='" + *value + "': use 1 to " + what + ", 0 not to");
      out = text == "1";
    }
  };
  flag(detail::env_name("STRATA_RECORD_SHAPES"), "record shapes", config.record_shapes);
  flag(detail::env_name("STRATA_PROFILE_MEMORY"), "record allocations and frees",
       config.profile_memory);
  flag(detail::env_name("STRATA_WITH_FLOPS"), "record FLOP counts", config.with_flops);
  config.crash_dump = crash_dump_from_env(lookup);
  return config;
}

/// The first of `names` set (and not blank) in the environment: its name and value.
inline std::optional<std::pair<const char*, std::string>> first_set(const env_lookup& lookup,
                                                                   std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const char* v = lookup(name); v != nullptr && !trim(v).empty()) return std::pair{name, std::string(v)};
  return std::nullopt;
}

}  // namespace detail

/// The rank identity the environment gives: the rank, world size and local rank that torchrun
/// (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`) or Open MPI's mpirun (`OMPI_COMM_WORLD_RANK`, ...) set,
/// each overridden by its `STRATA_` form (`STRATA_RANK`, `STRATA_WORLD_SIZE`,
/// `STRATA_LOCAL_RANK`), and the backend `STRATA_BACKEND`. Not set: `rank` < 0. Raises
/// `strata::error` naming the variable when a value is not a count, when a rank comes without a
/// world size, or when the rank is not below the world size.
inline distributed_info distributed_from_env(const env_lookup& lookup) {
  distributed_info info;
  const auto count = [&](std::initializer_list<const char*> names, int& out) -> const char* {
    const auto found = detail::first_set(lookup, names);
    if (!found) return nullptr;
    const std::optional<std::size_t> value = detail::parse_count(found->second);
    if (!value || *value > 1u << 24)
      throw error(std::string(found->first) + "='" + found->second +
                  "': a rank or world size is a count below 2^24, such as 0 or 8");
    out = static_cast<int>(*value);
    return found->first;
  };
  const char* rank = count({detail::env_name("STRATA_RANK"), "RANK", "OMPI_COMM_WORLD_RANK"}, info.rank);
  const char* size = count({detail::env_name("STRATA_WORLD_SIZE"), "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"},
                           info.world_size);
  count({detail::env_name("STRATA_LOCAL_RANK"), "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"}, info.local_rank);
  if (const auto backend = detail::first_set(lookup, {detail::env_name("STRATA_BACKEND")}))
    info.backend = std::string(detail::trim(backend->second));
  if (rank == nullptr) return distributed_info{};  // a world size alone names no rank
  if (size == nullptr)
    throw error(std::string(rank) + " is set but no world size is: set WORLD_SIZE (or STRATA_WORLD_SIZE) too");
  if (info.rank >= info.world_size)
    throw error(std::string(rank) + "=" + std::to_string(info.rank) + " is not below the world size " +
                std::to_string(info.world_size) + " (" + size + "): ranks count from 0");
  return info;
}

/// What the environment asks for: `std::nullopt` when STRATA_PROFILE is unset, empty or 0,
/// otherwise the profiler configuration. Raises `strata::error` naming the variable when a
/// value is malformed.
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `STRATA_PROFILE` | `1` captures the whole run | off |
/// | `STRATA_OUTPUT_DIR` | where trace.json goes | `strata-out` |
/// | `STRATA_LAYERS` | `framework,runtime,device,user` or `all` | `all` |
/// | `STRATA_OVERFLOW` | `lossless` or `flight_recorder` (also read: their former names `drop_newest`, `overwrite_oldest`) | `lossless` |
/// | `STRATA_MEMORY_LIMIT_MB` | MiB of records held in memory before spilling | 256 |
/// | `STRATA_SPILL` | `0`: past the memory limit drop the newest records instead of spilling | `1` |
/// | `STRATA_BUFFER_CAPACITY` | flight recorder: records per thread, a power of two | 65536 |
/// | `STRATA_CAPTURE_CORES` | NeuronCores captured: `all`, `0`, `0,2-3` | `all` |
/// | `STRATA_RECORD_SHAPES` | `1` records input shapes and arguments | `0` |
/// | `STRATA_PROFILE_MEMORY` | `1` records allocations and frees | `0` |
/// | `STRATA_WITH_FLOPS` | `1` records the FLOP counts of scopes that carry one | `0` |
/// | `STRATA_FORMAT` | `json` (trace.json) or `perfetto` (trace.pftrace) | `json` |
/// | `STRATA_CRASH_DUMP` | `1` writes `strata-crash-<pid>.dump` on a crash (docs/production.md); also for the C API's `strata_start()` sessions | `0` |
/// | `STRATA_CLOCK` | `steady_clock` forces the portable clock instead of the TSC (any session) | `tsc` where invariant |
///
/// The on-demand variables are `ondemand_settings_from_env`'s. Any other `STRATA_*` variable is
/// named on stderr at start-up with the closest known name (`STRATA_LAYER`: did you mean
/// `STRATA_LAYERS`?) and ignored; `STRATA_DRAIN_INTERVAL_US` is named as no longer read, and
/// profiling goes on without it.
inline std::optional<profiler_config> capture_config_from_env(const env_lookup& lookup) {
  const char* profile = lookup(detail::env_name("STRATA_PROFILE"));
  if (profile == nullptr || detail::trim(profile).empty() || detail::trim(profile) == "0")
    return std::nullopt;
  if (detail::trim(profile) != "1")
    throw error("STRATA_PROFILE='" + std::string(profile) + "': use 1 to capture, 0 or unset not to");
  return detail::session_config_from_env(lookup);
}

/// A signal's name or number, as `STRATA_ONDEMAND_SIGNAL` takes it: `SIGUSR2`, `USR2` or `12`
/// (also HUP, INT, QUIT, USR1, ALRM, TERM, URG, WINCH, and the real-time signals by number).
/// Signals that cannot be caught, or that report a fault (SIGSEGV, ...), raise `strata::error`.
inline int parse_signal(std::string_view raw) {
  if (const int sig = detail::signal_number(detail::trim(raw)); sig != 0) return sig;
  throw error("STRATA_ONDEMAND_SIGNAL='" + std::string(raw) +
              "': use SIGUSR2 (the default), SIGUSR1, USR1, HUP, INT, QUIT, ALRM, TERM, URG, "
              "WINCH, or a signal's number (a real-time signal's too)");
}

/// What STRATA_ONDEMAND=1 asks for: `std::nullopt` when STRATA_ONDEMAND is unset, empty or 0,
/// otherwise the on-demand settings. Raises `strata::error` naming the variable when a value is
/// malformed, or when STRATA_PROFILE=1 asks for a whole-run capture as well.
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `STRATA_ONDEMAND` | `1`: no session until a signal (or `request_capture`) asks for one | off |
/// | `STRATA_ONDEMAND_STEPS` | steps a capture records | 10 |
/// | `STRATA_ONDEMAND_DURATION_MS` | instead of steps: milliseconds a capture records | — |
/// | `STRATA_ONDEMAND_SIGNAL` | the signal that requests a capture | `SIGUSR2` |
///
/// The session variables (`STRATA_OUTPUT_DIR`, `STRATA_LAYERS`, `STRATA_FORMAT`, ...) mean what
/// they mean for STRATA_PROFILE.
inline std::optional<detail::ondemand_settings> ondemand_settings_from_env(const env_lookup& lookup) {
  const char* on = lookup(detail::env_name("STRATA_ONDEMAND"));
  if (on == nullptr || detail::trim(on).empty() || detail::trim(on) == "0") return std::nullopt;
  if (detail::trim(on) != "1")
    throw error("STRATA_ONDEMAND='" + std::string(on) +
                "': use 1 to capture on demand (a signal or request_capture), 0 or unset not to");
  if (const char* profile = lookup(detail::env_name("STRATA_PROFILE")); profile && detail::trim(profile) == "1")
    throw error("STRATA_PROFILE=1 and STRATA_ONDEMAND=1 are both set: use one (the whole run, or "
                "captures on demand)");
  detail::ondemand_settings settings;
  settings.config = detail::session_config_from_env(lookup);
  settings.perfetto = trace_format_from_env(lookup) == trace_format::perfetto;
  const char* steps = lookup(detail::env_name("STRATA_ONDEMAND_STEPS"));
  const char* duration = lookup(detail::env_name("STRATA_ONDEMAND_DURATION_MS"));
  if (steps && *steps && duration && *duration)
    throw error("STRATA_ONDEMAND_STEPS and STRATA_ONDEMAND_DURATION_MS are both set: a capture "
                "records steps or a duration, set one");
  if (steps && *steps) {
    const auto value = detail::parse_count(steps);
    if (!value || *value == 0 || *value > 1000000)
      throw error("STRATA_ONDEMAND_STEPS='" + std::string(steps) +
                  "': use the number of steps a capture records (1 to 1000000), such as 10");
    settings.steps = static_cast<std::int64_t>(*value);
  }
  if (duration && *duration) {
    const auto value = detail::parse_count(duration);
    if (!value || *value == 0 || *value > 86400000)
      throw error("STRATA_ONDEMAND_DURATION_MS='" + std::string(duration) +
                  "': use the milliseconds a capture records (1 to 86400000), such as 500");
    settings.duration = std::chrono::milliseconds(static_cast<std::int64_t>(*value));
    settings.steps = 0;
  }
  settings.signal = SIGUSR2;
  if (const char* sig = lookup(detail::env_name("STRATA_ONDEMAND_SIGNAL")); sig && *sig)
    settings.signal = parse_signal(sig);
  return settings;
}

}  // namespace v1
}  // namespace strata
