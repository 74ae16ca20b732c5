// strata/export/trace_file.hpp: where a trace writer streams its bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "strata/export/atomic_file.hpp"

namespace strata {
inline namespace v1 {

/// The file a trace writer streams into, written atomically (see `atomic_file`).
class trace_file {
 public:
  explicit trace_file(const std::filesystem::path& path) : plain_(path) {}

  void write(std::string_view bytes) { plain_.write(bytes); }
  /// Finishes the file and renames it into place.
  void commit() { plain_.commit(); }
  /// Bytes in the file so far.
  std::uint64_t bytes_written() const noexcept { return plain_.bytes_written(); }

 private:
  atomic_file plain_;
};

}  // namespace v1
}  // namespace strata
