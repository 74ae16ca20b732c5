// strata/export/export_result.hpp: what a trace writer reports about the file it wrote.
#pragma once

#include <cstdint>
#include <string>

namespace strata {
inline namespace v1 {

/// What an export wrote.
struct export_result {
  std::string path;          ///< the file written
  std::uint64_t events = 0;  ///< trace events written, metadata included (Perfetto: packets)
  std::uint64_t bytes = 0;   ///< bytes of the file (compressed, for a `.gz` path)
};

}  // namespace v1
}  // namespace strata
