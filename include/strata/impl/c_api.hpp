// strata/impl/c_api.hpp: the C API's definitions (strata/strata.h). Part of strata's
// implementation (strata/implementation.hpp): the one file that defines STRATA_IMPLEMENTATION
// defines these C functions.
#pragma once

#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>

#include "strata/core/error.hpp"
#include "strata/impl/c_api_state.hpp"
#include "strata/profiler.hpp"
#include "strata/strata.h"

extern "C" {

void strata_push_layer(strata_layer layer_of_range, const char* name) {
  using namespace strata::detail;
  c_api::range_stack& st = c_api::tl_ranges;
  const int depth = st.depth++;
  if (depth >= c_api::max_depth) [[unlikely]]
    return;  // recorded only by depth: its pop will match it
  c_api::open_range& r = st.ranges[depth];
  const auto l = static_cast<strata::layer>(static_cast<unsigned>(layer_of_range) & 3u);
  if (gate_open(l)) [[likely]] {
    r.where = c_api::site_of(l, strata::record_kind::scope, name);
    r.mode = scope_mode::fast;
    r.begin = fast_ticks();
  } else if (cold_path_records(l)) {
    r.where = c_api::site_of(l, strata::record_kind::scope, name);
    r.mode = scope_mode::cold;
    r.begin = now_ticks();
  } else {
    r.mode = scope_mode::off;
  }
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
  if (r.mode == scope_mode::fast) [[likely]]
    push_record(r.begin, fast_ticks(), r.where, 0);
  else if (r.mode == scope_mode::cold)
    close_cold(r.begin, r.where, 0);
}

void strata_instant(const char* name) {
  using namespace strata::detail;
  const strata::layer l = strata::layer::user;
  if (gate_open(l) || cold_path_records(l)) {
    const strata::site* where = c_api::site_of(l, strata::record_kind::instant, name);
    const std::uint64_t t = now_ticks();
    push_record(t, t, where, 0);
  }
}

void strata_counter(const char* name, double value) {
  using namespace strata::detail;
  const strata::layer l = strata::layer::user;
  if (gate_open(l) || cold_path_records(l))
    push_record(now_ticks(), __builtin_bit_cast(std::uint64_t, value),
                c_api::site_of(l, strata::record_kind::counter, name), 0);
}

void strata_set_thread_name(const char* name) { strata::set_thread_name(name != nullptr ? name : ""); }

void strata_step(void) { strata::detail::mark_step(); }

int strata_start(const char* output_dir) {
  using namespace strata::detail;
  try {
    if (output_dir == nullptr || *output_dir == '\0')
      throw strata::error("strata_start: output_dir is empty; pass a directory path");
    auto& session = c_api::c_session();
    if (session && session->running()) {
      std::fputs("strata_start: a session is already running; call strata_stop_and_export() first\n",
                 stderr);
      return STRATA_ERROR_RUNNING;
    }
    session.reset();
    session = std::make_unique<strata::profiler>(
        strata::profiler_config{.output_dir = output_dir, .crash_dump = c_api::crash_dump_asked()});
    session->start();
    return STRATA_OK;
  } catch (const strata::error& e) {
    c_api::c_session().reset();
    return c_api::report("strata_start", e, STRATA_ERROR_CONFIG);
  } catch (const std::exception& e) {
    c_api::c_session().reset();
    return c_api::report("strata_start", e, STRATA_ERROR_INTERNAL);
  }
}

int strata_stop_and_export(void) {
  using namespace strata::detail;
  auto& session = c_api::c_session();
  if (!session || !session->running()) {
    std::fputs("strata_stop_and_export: no session is running; call strata_start() first\n",
               stderr);
    return STRATA_ERROR_NOT_RUNNING;
  }
  try {
    session->stop();
  } catch (const std::exception& e) {
    return c_api::report("strata_stop_and_export", e, STRATA_ERROR_INTERNAL);
  }
  try {
    const strata::export_result written = session->export_chrome_trace();
    const strata::profiler_stats s = session->stats();
    std::fprintf(stderr, "strata: wrote %s (%llu records from %llu threads, %llu lost)\n",
                 written.path.c_str(), static_cast<unsigned long long>(s.recorded),
                 static_cast<unsigned long long>(s.threads),
                 static_cast<unsigned long long>(s.dropped));
    return STRATA_OK;
  } catch (const std::exception& e) {
    return c_api::report("strata_stop_and_export", e, STRATA_ERROR_EXPORT);
  }
}

}  // extern "C"
