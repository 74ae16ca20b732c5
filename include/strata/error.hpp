// strata/error.hpp: the one exception type of the cold path.
#pragma once

#include <stdexcept>
#include <string>

namespace strata {
inline namespace v1 {

/// Raised by cold-path calls (configuration, start, export) with a message that says what to
/// change. The hot path never throws: its failures become counters.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error("strata: " + what) {}
};

}  // namespace v1
}  // namespace strata
