// strata/core/overflow_policy.hpp: what a full buffer does with the next record.
#pragma once

#include <cstdint>
#include <string_view>

namespace strata {
inline namespace v1 {

/// What a full buffer does with the next record. Either way nothing blocks and every lost
/// record is counted.
enum class overflow_policy : std::uint8_t {
  drop_newest,       ///< keep what is there, count the new record as dropped (default)
  overwrite_oldest,  ///< flight recorder: keep the newest records (`capacity - 1` once the
                     ///< ring has filled: the slot being rewritten is never trusted)
};

constexpr std::string_view overflow_policy_name(overflow_policy p) noexcept {
  return p == overflow_policy::drop_newest ? "drop_newest" : "overwrite_oldest";
}

}  // namespace v1
}  // namespace strata
