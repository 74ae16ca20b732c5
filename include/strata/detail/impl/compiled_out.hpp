// strata/detail/impl/compiled_out.hpp: strata's implementation when it is compiled with
// STRATA_ENABLED=0: a profiler that keeps its configuration, records nothing, writes nothing,
// and says once on stderr that strata is compiled out (and `stats().compiled_out` says so).
// Its file compiles about as fast as one that includes <regex>: none of the registry, exporters
// or tables is compiled.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "strata/analysis/averages.hpp"
#include "strata/device.hpp"
#include "strata/error.hpp"
#include "strata/export/trace_format.hpp"
#include "strata/capture_status.hpp"
#include "strata/profiler.hpp"
#include "strata/trace_data.hpp"

namespace strata {
inline namespace v1 {

// Declared in strata/ondemand.hpp, which this file does not read (its <chrono> alone would take
// longer to compile than the budget of the whole file): the functions below only name them.
struct capture_request;
namespace detail {
struct ondemand_settings;
}

struct profiler::session {
  profiler_config config;
  core_set cores;
  std::vector<std::string> files;
};

namespace detail {

inline void say_compiled_out() noexcept {
  static bool said = false;
  if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
    std::fputs("strata: compiled out (STRATA_ENABLED=0): this program records no trace\n", stderr);
}

}  // namespace detail

profiler::profiler(profiler_config config) : session_(new session{std::move(config), {}, {}}) {
  detail::say_compiled_out();
}
profiler::~profiler() { delete session_; }
void profiler::start() {}
void profiler::step() {}
void profiler::stop() {}
bool profiler::running() const noexcept { return false; }
bool profiler::recording() const noexcept { return false; }
std::int64_t profiler::step_num() const noexcept { return 0; }
profiler_action profiler::current_action() const noexcept { return profiler_action::none; }
step_window profiler::window() const noexcept { return {}; }
export_result profiler::export_chrome_trace(const std::string&) { return {}; }
export_result profiler::export_perfetto_trace(const std::string&) { return {}; }
averages profiler::key_averages(key_averages_options options) {
  averages a;
  a.device_name = std::move(options.device_name);
  return a;
}
export_result profiler::export_stacks(const std::string&, const std::string&) { return {}; }
export_result profiler::export_window_trace() { return {}; }
export_result profiler::export_memory_timeline(const std::string&) { return {}; }
export_result profiler::snapshot(const std::string&) { return {}; }
const std::vector<std::string>& profiler::trace_files() {
  return session_->files;
}
profiler_stats profiler::stats() {
  profiler_stats s;
  s.compiled_out = true;
  return s;
}
const trace_data& profiler::data() {
  // Every compiled-out profiler's trace is this empty one; never destroyed, so that the file
  // does not compile trace_data's destructor.
  static const trace_data* const empty = new trace_data{};
  return *empty;
}
const profiler_config& profiler::config() const noexcept { return session_->config; }
const core_set& profiler::capture_cores() const noexcept { return session_->cores; }

capture_result request_capture(const capture_request&) noexcept {
  return {capture_outcome::compiled_out,
          "strata: compiled out (STRATA_ENABLED=0): this program records no trace"};
}
capture_state ondemand_state() { return {}; }
namespace detail {
void enable_ondemand(const ondemand_settings&) { say_compiled_out(); }
}  // namespace detail

// Compiled out, averages show no rows, as its CSV and JSON do (copying them here would compile
// average_row's copy, about a twentieth of the budget of this file).
std::vector<average_row> averages::sorted(std::string_view) const { return {}; }
std::string averages::table(const table_options&) const {
  return "strata is compiled out (STRATA_ENABLED=0): nothing was recorded\n";
}
std::string averages::to_csv() const { return {}; }
std::string averages::to_json() const { return "{\"compiled_out\":true,\"rows\":[]}"; }
std::string averages::percent(std::int64_t, std::int64_t) { return {}; }

}  // namespace v1
}  // namespace strata
