// strata/detail/impl/c_api.hpp: the C API's definitions (strata/strata.h). Part of strata's
// implementation (strata/implementation.hpp): the one file that defines STRATA_IMPLEMENTATION
// defines these C functions.
#pragma once

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "strata/memory.hpp"
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/analysis/stacks.hpp"
#include "strata/error.hpp"
#include "strata/ondemand.hpp"
#include "strata/profiler.hpp"
#include "strata/strata.h"
#include "strata/detail/impl/c_api_state.hpp"
#include "strata/detail/impl/profiler.hpp"

namespace strata {
inline namespace v1 {
namespace detail {
namespace c_api {

inline constexpr const char* default_output = "strata-out/trace.json";

/// `path` (named `what` in the message) if it is a trace file name (strata/export/
/// trace_format.hpp); else raises strata::error saying so.
inline std::string check_trace_name(const char* what, const std::string& path) {
  try {
    trace_format_of(path);
  } catch (const error& e) {
    throw error(std::string(what) + " " + (e.what() + 8));  // after "strata: "
  }
  return path;
}

/// The C configuration as a profiler's; raises strata::error naming the C field.
inline profiler_config to_profiler_config(const strata_config& c, std::string& output) {
  output = check_trace_name("strata_config.output",
                            c.output != nullptr && *c.output != '\0' ? c.output : default_output);
  profiler_config config;
  const std::filesystem::path dir = std::filesystem::path(output).parent_path();
  config.output_dir = dir.empty() ? "." : dir.string();
  if ((c.layers & ~STRATA_LAYERS_ALL) != 0)
    throw error("strata_config.layers " + std::to_string(c.layers) +
                " has bits of no layer; or STRATA_LAYER_BIT(STRATA_LAYER_...) values together");
  if (c.layers != 0) config.layers = layer_set::from_bits(c.layers);
  const strata_schedule& s = c.schedule;
  config.schedule = {.skip_first = s.skip_first, .wait = s.wait, .warmup = s.warmup,
                     .active = s.active, .repeat = s.repeat,
                     .skip_first_wait = s.skip_first_wait != 0};
  config.crash_dump = c.crash_dump != 0 || crash_dump_asked();  // or STRATA_CRASH_DUMP=1
  config.profile_memory = c.profile_memory != 0;
  config.with_flops = c.with_flops != 0;
  if (c.world_size != 0) {
    if (c.world_size < 0 || c.rank < 0 || c.local_rank_plus_one < 0)
      throw error("strata_config.world_size " + std::to_string(c.world_size) + ", rank " + std::to_string(c.rank) +
                  ", local_rank_plus_one " + std::to_string(c.local_rank_plus_one) +
                  ": a rank is a count from 0 and a world size one from 1");
    config.distributed = {.rank = c.rank, .local_rank = c.local_rank_plus_one - 1, .world_size = c.world_size,
                          .backend = c.backend != nullptr ? c.backend : ""};
  }
  if (c.memory_limit != 0) config.memory_limit = c.memory_limit;
  if (c.preallocate != 0) config.preallocate = c.preallocate == STRATA_PREALLOCATE_NONE ? 0 : c.preallocate;
  if (c.flight_recorder != 0) {
    config.overflow = overflow_policy::flight_recorder;
    config.buffer_capacity = c.flight_recorder;
  }
  return config;
}

/// "profiler_config::memory_limit ..." → "strata_config.memory_limit ...": the C user's names.
inline std::string in_c_terms(std::string message) {
  static constexpr std::pair<std::string_view, std::string_view> names[] = {
      {"profiler_config::buffer_capacity", "strata_config.flight_recorder"},
      {"profiler_config::schedule", "strata_config.schedule"},
      {"profiler_config::output_dir", "the directory of strata_config.output"},
      {"profiler_config::distributed.rank", "strata_config.rank"},
      {"is not below world_size", "is not below strata_config.world_size"},
      {"profiler_config::", "strata_config."},
  };
  for (const auto& [from, to] : names)
    for (auto at = message.find(from); at != std::string::npos; at = message.find(from, at + to.size()))
      message.replace(at, from.size(), to);
  return message;
}

inline export_result export_perfetto(profiler& p, const std::string& path) {
  return p.export_perfetto_trace(path);
}

inline bool another_session_records() noexcept { return active_profiler.load() != nullptr; }

inline int refuse_running(const char* call) {
  const profiler* running = active_profiler.load();
  if (running != nullptr && running == environment_profiler.load())
    std::fprintf(stderr,
                 "%s: already running: STRATA_PROFILE=1 records this whole run (one session "
                 "records at a time); unset STRATA_PROFILE to run the program's own session\n",
                 call);
  else
    std::fprintf(stderr,
                 "%s: already running: another strata session records (a C++ strata::profiler "
                 "or an on-demand capture); stop it first: one session records at a time\n",
                 call);
  return STRATA_ERROR_RUNNING;
}

// With the C state's mutex held.
inline int start_locked(const strata_config& c) {
  c_session_state& st = c_state();
  if (st.session && st.session->running()) {
    std::fputs("strata_start: the C session is already running; call strata_stop() or "
               "strata_stop_and_export() first\n", stderr);
    return STRATA_ERROR_RUNNING;
  }
  if (another_session_records()) return refuse_running("strata_start");
  try {
    std::string output;
    profiler_config config = to_profiler_config(c, output);
    st.session.reset();
    st.has_table = false;
    st.output = std::move(output);
    st.session = std::make_unique<profiler>(std::move(config));
    st.session->start();
    return STRATA_OK;
  } catch (const error& e) {
    st.session.reset();
    if (another_session_records()) return refuse_running("strata_start");  // started meanwhile
    return report("strata_start", std::runtime_error(in_c_terms(e.what())), STRATA_ERROR_CONFIG);
  } catch (const std::exception& e) {
    st.session.reset();
    return report("strata_start", e, STRATA_ERROR_INTERNAL);
  }
}

inline int stop_locked(const char* call) {
  c_session_state& st = c_state();
  if (!st.session || !st.session->running()) {
    std::fprintf(stderr, "%s: no C session is running; call strata_start() first\n", call);
    return STRATA_ERROR_NOT_RUNNING;
  }
  st.has_table = false;
  try {
    st.session->stop();
    return STRATA_OK;
  } catch (const error& e) {
    return report(call, e, STRATA_ERROR_EXPORT);  // a window's trace was not written
  } catch (const std::exception& e) {
    return report(call, e, STRATA_ERROR_INTERNAL);
  }
}

// A stopped session to read, or the status that says why there is none.
inline int check_stopped(const char* call) {
  c_session_state& st = c_state();
  if (!st.session) {
    std::fprintf(stderr, "%s: no C session has run; call strata_start() and strata_stop() first\n",
                 call);
    return STRATA_ERROR_NO_TRACE;
  }
  if (st.session->running()) {
    std::fprintf(stderr, "%s: the C session is still recording; call strata_stop() first\n", call);
    return STRATA_ERROR_RUNNING;
  }
  return STRATA_OK;
}

inline int export_locked(const char* call, const char* path, bool say) {
  c_session_state& st = c_state();
  if (const int status = check_stopped(call); status != STRATA_OK) return status;
  std::string target;
  try {
    target = check_trace_name("path", path != nullptr && *path != '\0' ? path : st.output);
  } catch (const error& e) {
    return report(call, e, STRATA_ERROR_CONFIG);
  }
  try {
    const bool perfetto = trace_format_of(target) == trace_format::perfetto;
    if (perfetto && st.export_perfetto == nullptr)  // only strata_start_ex configures .pftrace
      throw error("no Perfetto writer registered for '" + target + "'");
    const export_result written = perfetto ? st.export_perfetto(*st.session, target)
                                           : st.session->export_chrome_trace(target);
    if (say) {
      const profiler_stats s = st.session->stats();
      std::fprintf(stderr, "strata: wrote %s (%llu records from %llu threads, %llu lost)\n",
                   written.path.c_str(), static_cast<unsigned long long>(s.recorded),
                   static_cast<unsigned long long>(s.threads),
                   static_cast<unsigned long long>(s.dropped));
    }
    return STRATA_OK;
  } catch (const std::exception& e) {
    return report(call, e, STRATA_ERROR_EXPORT);
  }
}

}  // namespace c_api
}  // namespace detail
}  // namespace v1
}  // namespace strata

extern "C" {

void strata_push_layer(strata_layer layer_of_range, const char* name) {
  using namespace strata::detail;
  c_api::range_stack& st = c_api::tl_ranges;
  const int depth = st.depth++;
  if (depth >= c_api::max_depth) [[unlikely]]
    return;  // recorded only by depth: its pop will match it
  c_api::open_range& r = st.ranges[depth];
  const auto l = static_cast<strata::layer>(static_cast<unsigned>(layer_of_range) & 3u);
  open_record(l, [&] { return c_api::site_of(l, strata::record_kind::scope, name); }, r.mode, r.site,
              r.begin);
}

void strata_push(const char* name) { strata_push_layer(STRATA_LAYER_USER, name); }

void strata_pop(void) {
  using namespace strata::detail;
  c_api::range_stack& st = c_api::tl_ranges;
  if (st.depth == 0) [[unlikely]] {
    c_api::report_unmatched_pop();
    return;
  }
  const int depth = --st.depth;
  if (depth >= c_api::max_depth) [[unlikely]]
    return;
  const c_api::open_range& r = st.ranges[depth];
  close_record(r.mode, r.begin, r.site, 0);
}

void strata_set_flops(unsigned long long flops) {
  using namespace strata::detail;
  c_api::range_stack& st = c_api::tl_ranges;
  if (st.depth == 0 || st.depth > c_api::max_depth) return;  // none open, or not stored
  c_api::open_range& r = st.ranges[st.depth - 1];
  if (r.mode != record_mode::off && r.site != nullptr && records_flops(load_state()))
    r.site = site_with_flops(r.site, static_cast<std::uint64_t>(flops));
}

void strata_instant_layer(strata_layer layer_of_instant, const char* name) {
  using namespace strata::detail;
  const auto l = static_cast<strata::layer>(static_cast<unsigned>(layer_of_instant) & 3u);
  record_mode mode;
  const strata::site* where = nullptr;
  std::uint64_t t = 0;
  open_record(l, [&] { return c_api::site_of(l, strata::record_kind::instant, name); }, mode, where, t);
  if (mode != record_mode::off)
    push_record(t, t, where, 0);
}

void strata_instant(const char* name) { strata_instant_layer(STRATA_LAYER_USER, name); }

void strata_counter_layer(strata_layer layer_of_counter, const char* name, double value) {
  using namespace strata::detail;
  const auto l = static_cast<strata::layer>(static_cast<unsigned>(layer_of_counter) & 3u);
  record_mode mode;
  const strata::site* where = nullptr;
  std::uint64_t t = 0;
  open_record(l, [&] { return c_api::site_of(l, strata::record_kind::counter, name); }, mode, where, t);
  if (mode != record_mode::off)
    push_record(t, __builtin_bit_cast(std::uint64_t, value), where, 0);
}

void strata_counter(const char* name, double value) {
  strata_counter_layer(STRATA_LAYER_USER, name, value);
}

void strata_set_thread_name(const char* name) { strata::set_thread_name(name != nullptr ? name : ""); }

void strata_step(void) { strata::detail::mark_step(); }

void strata_alloc(const void* ptr, size_t bytes) { strata::record_alloc(ptr, bytes); }

void strata_free(const void* ptr) { strata::record_free(ptr); }

void strata_alloc_device(strata_device_type device, int index, const void* ptr, size_t bytes) {
  strata::record_alloc(ptr, bytes, {static_cast<strata::device_type>(device), static_cast<std::int8_t>(index)});
}

void strata_free_device(strata_device_type device, int index, const void* ptr) {
  strata::record_free(ptr, {static_cast<strata::device_type>(device), static_cast<std::int8_t>(index)});
}

void strata_reserve_device(strata_device_type device, int index, long long delta_bytes) {
  strata::record_reserve(static_cast<std::int64_t>(delta_bytes),
                         {static_cast<strata::device_type>(device), static_cast<std::int8_t>(index)});
}

int strata_start_ex(const strata_config* config) {
  using namespace strata::detail;
  try {
    std::lock_guard lock(c_api::c_state().mutex);
    c_api::c_state().export_perfetto = &c_api::export_perfetto;
    return c_api::start_locked(config != nullptr ? *config : strata_config{});
  } catch (const std::exception& e) {
    return c_api::report("strata_start", e, STRATA_ERROR_INTERNAL);
  }
}

int strata_start(const char* output_dir) {
  using namespace strata::detail;
  if (output_dir == nullptr || *output_dir == '\0') {
    std::fputs("strata_start: output_dir is empty; pass a directory path\n", stderr);
    return STRATA_ERROR_CONFIG;
  }
  try {
    const std::string output = (std::filesystem::path(output_dir) / "trace.json").string();
    strata_config c{};
    c.output = output.c_str();
    std::lock_guard lock(c_api::c_state().mutex);
    return c_api::start_locked(c);  // not strata_start_ex: writes JSON, needs no Perfetto writer
  } catch (const std::exception& e) {
    return c_api::report("strata_start", e, STRATA_ERROR_INTERNAL);
  }
}

int strata_stop(void) {
  using namespace strata::detail;
  try {
    std::lock_guard lock(c_api::c_state().mutex);
    return c_api::stop_locked("strata_stop");
  } catch (const std::exception& e) {
    return c_api::report("strata_stop", e, STRATA_ERROR_INTERNAL);
  }
}

int strata_export(const char* path) {
  using namespace strata::detail;
  try {
    std::lock_guard lock(c_api::c_state().mutex);
    c_api::c_state().export_perfetto = &c_api::export_perfetto;
    return c_api::export_locked("strata_export", path, false);
  } catch (const std::exception& e) {
    return c_api::report("strata_export", e, STRATA_ERROR_INTERNAL);
  }
}

int strata_stop_and_export(void) {
  using namespace strata::detail;
  try {
    std::lock_guard lock(c_api::c_state().mutex);
    const int stopped = c_api::stop_locked("strata_stop_and_export");
    if (stopped == STRATA_ERROR_NOT_RUNNING || stopped == STRATA_ERROR_INTERNAL) return stopped;
    strata::profiler& p = *c_api::c_session();
    if (!p.config().schedule.enabled()) {
      const int exported = c_api::export_locked("strata_stop_and_export", nullptr, true);
      return stopped != STRATA_OK ? stopped : exported;
    }
    const std::vector<std::string>& files = p.trace_files();
    std::fprintf(stderr, "strata: %zu window trace%s written in %s\n", files.size(),
                 files.size() == 1 ? "" : "s", p.config().output_dir.c_str());
    for (const std::string& f : files) std::fprintf(stderr, "strata:   %s\n", f.c_str());
    return stopped;
  } catch (const std::exception& e) {
    return c_api::report("strata_stop_and_export", e, STRATA_ERROR_INTERNAL);
  }
}

int strata_snapshot(const char* path) {
  using namespace strata::detail;
  try {
    std::lock_guard lock(c_api::c_state().mutex);
    const auto& session = c_api::c_session();
    if (!session) {
      std::fputs("strata_snapshot: no C session was started; call strata_start() first\n", stderr);
      return STRATA_ERROR_NOT_RUNNING;
    }
    std::string target;
    if (path != nullptr && *path != '\0') {
      try {
        target = c_api::check_trace_name("path", path);
      } catch (const strata::error& e) {
        return c_api::report("strata_snapshot", e, STRATA_ERROR_CONFIG);
      }
    }
    const strata::export_result written = session->snapshot(target);
    std::fprintf(stderr, "strata: snapshot written to %s\n", written.path.c_str());
    return STRATA_OK;
  } catch (const std::exception& e) {
    return c_api::report("strata_snapshot", e, STRATA_ERROR_EXPORT);
  }
}

int strata_request_capture(int steps, int duration_ms) {
  const strata::capture_result r =
      strata::request_capture({.steps = steps, .duration = std::chrono::milliseconds(duration_ms)});
  std::fprintf(stderr, "%s\n", r.message.c_str());
  switch (r.outcome) {
    case strata::capture_outcome::accepted: return STRATA_OK;
    case strata::capture_outcome::capture_running:
    case strata::capture_outcome::profiler_running: return STRATA_ERROR_RUNNING;
    case strata::capture_outcome::invalid: return STRATA_ERROR_CONFIG;
    case strata::capture_outcome::compiled_out: return STRATA_OK;
  }
  return STRATA_ERROR_INTERNAL;
}

int strata_table(char* buf, size_t size, const char* sort_by, int row_limit) {
  using namespace strata::detail;
  try {
    std::lock_guard lock(c_api::c_state().mutex);
    c_api::c_session_state& st = c_api::c_state();
    if (const int status = c_api::check_stopped("strata_table"); status != STRATA_OK)
      return -status;
    const std::string sort = sort_by != nullptr ? sort_by : "self_cpu_time_total";
    const int limit = row_limit > 0 ? row_limit : -1;
    std::string key = sort + '\n' + std::to_string(limit);
    if (!st.has_table || st.table_key != key) {
      try {
        st.table = st.session->key_averages().table({.sort_by = sort, .row_limit = limit});
      } catch (const strata::error& e) {
        return -c_api::report("strata_table", e, STRATA_ERROR_CONFIG);
      }
      st.table_key = std::move(key);
      st.has_table = true;
    }
    if (st.table.size() > INT_MAX) return -STRATA_ERROR_INTERNAL;
    if (buf != nullptr && size > 0) {
      const std::size_t n = st.table.size() < size ? st.table.size() : size - 1;
      std::memcpy(buf, st.table.data(), n);
      buf[n] = '\0';
    }
    return static_cast<int>(st.table.size());
  } catch (const std::exception& e) {
    return -c_api::report("strata_table", e, STRATA_ERROR_INTERNAL);
  }
}

int strata_export_stacks(const char* path, const char* metric) {
  using namespace strata::detail;
  try {
    std::lock_guard lock(c_api::c_state().mutex);
    if (const int status = c_api::check_stopped("strata_export_stacks"); status != STRATA_OK) return status;
    const std::string m = metric != nullptr ? metric : "self_cpu_time_total";
    try {
      if (path == nullptr || *path == '\0') throw strata::error("no path given; name a file such as stacks.folded");
      strata::stack_metric_named(m);
    } catch (const strata::error& e) {
      return c_api::report("strata_export_stacks", e, STRATA_ERROR_CONFIG);
    }
    try {
      c_api::c_state().session->export_stacks(path, m);
      return STRATA_OK;
    } catch (const std::exception& e) {
      return c_api::report("strata_export_stacks", e, STRATA_ERROR_EXPORT);
    }
  } catch (const std::exception& e) {
    return c_api::report("strata_export_stacks", e, STRATA_ERROR_INTERNAL);
  }
}

int strata_export_html(const char* path) {
  using namespace strata::detail;
  try {
    std::lock_guard lock(c_api::c_state().mutex);
    if (const int status = c_api::check_stopped("strata_export_html"); status != STRATA_OK) return status;
    try {
      c_api::c_state().session->export_html(path != nullptr ? path : "");
      return STRATA_OK;
    } catch (const std::exception& e) {
      return c_api::report("strata_export_html", e, STRATA_ERROR_EXPORT);
    }
  } catch (const std::exception& e) {
    return c_api::report("strata_export_html", e, STRATA_ERROR_INTERNAL);
  }
}

}  // extern "C"
