// strata/core/overflow_policy.hpp: what a full buffer does with the next record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata {
inline namespace v1 {

/// What a full buffer does with the next record. Either way nothing blocks and every lost
/// record is counted.
enum class overflow_policy : std::uint8_t {
  drop_newest,       ///< keep what is there, count the new record as dropped (default)
  overwrite_oldest,  ///< flight recorder: keep exactly the newest `buffer_capacity` records
};

constexpr std::string_view overflow_policy_name(overflow_policy p) noexcept {
  return p == overflow_policy::drop_newest ? "drop_newest" : "overwrite_oldest";
}

/// What a lossless session did with its memory (all 0 for a flight recorder): the one struct the
/// session's store reports, a collected session keeps (`trace_data::memory`) and
/// `profiler::stats()` returns.
struct session_memory {
  std::size_t limit = 0;          ///< `profiler_config::memory_limit`
  std::uint64_t spilled = 0;      ///< records that went through the spill file
  std::uint64_t spill_bytes = 0;  ///< the spill file's size
  std::uint64_t peak = 0;         ///< most bytes of record blocks held at once
  std::uint64_t waits = 0;        ///< times a recording thread waited at the limit for a block
  std::string spill_error;        ///< why spilling stopped (a failed write), if it did
};

}  // namespace v1
}  // namespace strata
