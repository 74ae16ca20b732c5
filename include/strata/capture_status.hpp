// strata/capture_status.hpp: what an on-demand capture request gets back, and what on-demand
// capture has done so far (strata/ondemand.hpp declares the functions that return them).
// A header of its own so that the compiled-out implementation, which defines those functions
// without ever capturing, does not read ondemand.hpp's <chrono>.
#pragma once

#include <cstdint>
#include <string>

namespace strata {
inline namespace v1 {

/// Why a request was accepted or not.
enum class capture_outcome : std::uint8_t {
  accepted,          ///< the capture runs (steps: from the next step boundary)
  capture_running,   ///< an on-demand capture is running: requests are refused, not queued
  profiler_running,  ///< another strata::profiler records (one profiler records at a time)
  invalid,           ///< the request or its configuration is wrong (the message says what)
  compiled_out,      ///< strata is compiled out (STRATA_ENABLED=0)
};

/// What `request_capture` did; converts to true when the capture was accepted.
struct capture_result {
  capture_outcome outcome = capture_outcome::invalid;
  /// Accepted: what will be captured and where; refused: why, and what to do.
  std::string message;
  explicit operator bool() const noexcept { return outcome == capture_outcome::accepted; }
};

/// What on-demand capture has done in this process so far.
struct capture_state {
  bool running = false;         ///< a capture is recording or being written
  std::uint64_t written = 0;    ///< captures whose trace file was written
  std::string last_file;        ///< the last trace file written
  std::string last_error;       ///< why the last capture wrote nothing, if it did not
};

}  // namespace v1
}  // namespace strata
