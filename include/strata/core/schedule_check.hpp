// strata/core/schedule_check.hpp: whether a schedule's fields make sense, with a message that
// names the field to change.
#pragma once

#include <string>

#include "strata/core/error.hpp"
#include "strata/core/schedule.hpp"

namespace strata {
inline namespace v1 {

namespace detail {

/// Raises `strata::error` naming the first field of `s` that is out of range.
inline void check_schedule(const schedule& s) {
  const auto field = [](const char* name, int value, const char* rule) {
    return std::string("profiler_config::schedule.") + name + " is " + std::to_string(value) +
           "; " + rule;
  };
  if (s.skip_first < 0) throw error(field("skip_first", s.skip_first, "it must be 0 or more"));
  if (s.wait < 0) throw error(field("wait", s.wait, "it must be 0 or more"));
  if (s.warmup < 0) throw error(field("warmup", s.warmup, "it must be 0 or more"));
  if (s.active < 0)
    throw error(field("active", s.active, "it must be more than 0 (or 0 for no schedule)"));
  if (s.repeat < 0)
    throw error(field("repeat", s.repeat, "it must be 0 (repeat forever) or more"));
  if (s.active == 0) {
    const char* set = s.skip_first != 0 ? "skip_first"
                      : s.wait != 0     ? "wait"
                      : s.warmup != 0   ? "warmup"
                      : s.repeat != 0   ? "repeat"
                      : s.skip_first_wait ? "skip_first_wait"
                                          : nullptr;
    if (set != nullptr)
      throw error(std::string("profiler_config::schedule.active is 0 (no schedule) but "
                              "schedule.") + set + " is set; set active to the number of "
                              "steps to record, or leave every schedule field at 0");
  }
  // One cycle's length must fit an int: wait + warmup + active are summed in 64 bits anyway,
  // but a cycle longer than INT_MAX steps is surely a mistake.
  if (std::int64_t{s.wait} + s.warmup + s.active > 0x7fffffff)
    throw error("profiler_config::schedule: wait + warmup + active exceeds 2^31-1 steps; "
                "lower them");
}

}  // namespace detail

}  // namespace v1
}  // namespace strata
