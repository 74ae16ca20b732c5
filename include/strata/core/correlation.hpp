// strata/core/correlation.hpp: the ids that tie an op to the runtime and device work it causes.
#pragma once

#include <atomic>
#include <cstdint>

namespace strata {
inline namespace v1 {

/// A fresh correlation id, never 0 (0 means "none" in a record's payload). Take one when a
/// framework op is dispatched and pass it to the scopes and submissions it causes; the trace
/// joins them with flow arrows and key_averages gives the device time to the op. One atomic
/// increment: call it per op, not per scope.
inline std::uint64_t new_correlation_id() noexcept {
  static constinit std::atomic<std::uint64_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace v1
}  // namespace strata
