// strata/ondemand.hpp: on-demand capture of a running program, for an engine's admin endpoint.
//
//   admin thread: request_capture({.steps = 10}) ──▶ a profiler session starts now
//   the program's loop: STRATA_STEP() x 10        ──▶ the session ends at the 10th step
//   strata's thread ("strata ondemand")           ──▶ output_dir/ondemand-<pid>-<n>.json,
//                                                     one line on stderr
//
// A program started with STRATA_ONDEMAND=1 gets the same from a signal (SIGUSR2 by default):
// strata's implementation reads the environment when the program starts (detail/impl/env_capture.hpp);
// docs/production.md describes both.
// Declarations only: the definitions are part of strata's implementation (STRATA_IMPLEMENTATION).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "strata/capture_status.hpp"
#include "strata/profiler_config.hpp"

namespace strata {
inline namespace v1 {

/// What `request_capture` is asked to record. Set `steps` or `duration`, not both; with
/// neither, the on-demand defaults apply (`STRATA_ONDEMAND_STEPS` or
/// `STRATA_ONDEMAND_DURATION_MS` when STRATA_ONDEMAND=1 armed them, else 10 steps).
///
/// **Example**
/// ```cpp
/// strata::capture_result r = strata::request_capture({.steps = 10});
/// if (!r) reply(503, r.message);  // a capture is running, or another profiler records
/// ```
struct capture_request {
  /// Records the next `steps` whole steps (those that `STRATA_STEP()` or `profiler::step()`
  /// mark), each as a `ProfilerStep#N` scope; the capture begins at the next step boundary.
  std::int64_t steps = 0;
  /// Records for this long from now (for a program that marks no steps).
  std::chrono::milliseconds duration{0};
  /// The session's configuration (output directory, layers, memory limit, ...); without it,
  /// the STRATA_* environment's when STRATA_ONDEMAND=1 armed on-demand capture, else
  /// `profiler_config{}`. Its `schedule` and `on_trace_ready` must stay unset: the capture
  /// chooses its steps and writes its own file.
  std::optional<profiler_config> config = std::nullopt;
};

/// Starts an on-demand capture: a profiler session over the whole process that ends after
/// `request.steps` steps or `request.duration`, whose trace strata's own thread writes to
/// `output_dir/ondemand-<pid>-<n>.json` (never overwriting a file: `.1`, `.2`, ... before
/// `.json` while the name exists), saying so in one line on stderr. The program runs on; the
/// step that ends the capture only hands the records over. Safe from any thread; a request
/// while a capture runs is refused (`capture_outcome::capture_running`), never queued. Works in
/// any program that compiles strata's implementation, with or without STRATA_ONDEMAND.
capture_result request_capture(const capture_request& request = {}) noexcept;

/// The on-demand captures' state; safe from any thread.
capture_state ondemand_state();

namespace detail {

/// What STRATA_ONDEMAND=1 arms (strata/detail/env_capture.hpp parses it from the environment).
struct ondemand_settings {
  profiler_config config;               ///< every capture's session (schedule left unset)
  std::int64_t steps = 10;              ///< a signal's capture: steps ...
  std::chrono::milliseconds duration{0};///< ... or, when non-zero, a duration
  int signal = 0;                       ///< the signal that requests a capture (0: none)
  bool perfetto = false;                ///< write trace.pftrace-format files
};

/// Makes `settings` the on-demand defaults, starts strata's on-demand thread and installs the
/// signal handler. Raises `strata::error` naming what is wrong (a signal that cannot be
/// caught, one the program already handles).
void enable_ondemand(const ondemand_settings& settings);

}  // namespace detail
}  // namespace v1
}  // namespace strata
