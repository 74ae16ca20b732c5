// strata/export/trace_file.hpp: where a trace writer streams its bytes: the path as it is, or
// gzip-compressed when the path ends in ".gz".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "strata/export/atomic_file.hpp"
#include "strata/export/gzip_writer.hpp"

namespace strata {
inline namespace v1 {

/// The file a trace writer streams into, written atomically (see `atomic_file`); compressed
/// with gzip (`gzip_file`) when `path` ends in ".gz".
class trace_file {
 public:
  explicit trace_file(const std::filesystem::path& path) {
    if (is_gzip_path(path))
      gzip_.emplace(path);
    else
      plain_.emplace(path);
  }

  /// Whether a trace written to `path` is gzip-compressed.
  static bool is_gzip_path(const std::filesystem::path& path) { return path.extension() == ".gz"; }

  void write(std::string_view bytes) {
    if (plain_) plain_->write(bytes);
    else gzip_->write(bytes);
  }
  /// Finishes the file and renames it into place.
  void commit() {
    if (plain_) plain_->commit();
    else gzip_->commit();
  }
  /// Bytes in the file so far (compressed bytes for a .gz path).
  std::uint64_t bytes_written() const noexcept {
    return plain_ ? plain_->bytes_written() : gzip_->bytes_written();
  }

 private:
  std::optional<atomic_file> plain_;
  std::optional<gzip_file> gzip_;
};

}  // namespace v1
}  // namespace strata
