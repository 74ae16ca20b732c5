// strata/export/atomic_file.hpp: a file that appears complete or not at all.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "strata/core/error.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif
#if defined(__linux__)
#include <fcntl.h>
#include <sys/stat.h>
#endif

namespace strata {
inline namespace v1 {

/// Writes to `<path>.tmp.<pid>` and renames it over `path` on `commit()`, so a reader (or a
/// crash half way) never sees a truncated file. Destroyed without commit, it removes the
/// temporary file. Every write is checked; failures raise `strata::error`.
class atomic_file {
 public:
  explicit atomic_file(std::filesystem::path path) : path_(std::move(path)) {
    tmp_ = path_;
    tmp_ += ".tmp." + std::to_string(process_id());
    file_ = std::fopen(tmp_.c_str(), "wb");
    if (file_ == nullptr)
      throw error("cannot write '" + path_.string() + "': " + std::strerror(errno) +
                  "; choose a writable output directory");
  }

  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;

  ~atomic_file() {
    if (file_ != nullptr) std::fclose(file_);
    if (!committed_) {
      std::error_code ignored;
      std::filesystem::remove(tmp_, ignored);
    }
  }

  void write(std::string_view bytes) {
    if (bytes.empty()) return;
    if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
      fail("write to");
    bytes_ += bytes.size();
  }

  /// Flushes, closes and renames the file into place.
  ///
  /// Replacing an existing file on Linux swaps the two atomically (`RENAME_EXCHANGE`) and then
  /// removes the old one, rather than renaming over it: ext4 answers a rename that replaces a
  /// file by writing the new file's data to disk before returning (its `auto_da_alloc`
  /// heuristic), which made re-exporting a 146 MB trace take about 100 ms longer than writing
  /// a new one. Readers see the same thing either way: the old file whole, then the new one
  /// whole. Like any export without fsync, the new file reaches the disk when the kernel
  /// writes it back, exactly as when the path did not exist before. (A crash between the swap
  /// and the removal leaves the old content under the temporary name.)
  void commit() {
    if (std::fflush(file_) != 0 || std::ferror(file_) != 0) fail("flush");
    const int rc = std::fclose(file_);
    file_ = nullptr;
    if (rc != 0) fail("close");
#if defined(__linux__) && defined(RENAME_EXCHANGE)
    // Only a non-directory is swapped: renaming over a directory must keep failing.
    struct stat existing{};
    if (::lstat(path_.c_str(), &existing) == 0 && !S_ISDIR(existing.st_mode) &&
        ::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, path_.c_str(), RENAME_EXCHANGE) == 0) {
      committed_ = true;
      std::error_code ignored;
      std::filesystem::remove(tmp_, ignored);  // the previous file, now under the temporary name
      return;
    }
    // No file to replace, or a file system without the exchange: a plain rename.
#endif
    std::error_code ec;
    std::filesystem::rename(tmp_, path_, ec);
    if (ec) throw error("cannot rename '" + tmp_.string() + "' to '" + path_.string() + "': " + ec.message());
    committed_ = true;
  }

  std::uint64_t bytes_written() const noexcept { return bytes_; }

  static long process_id() noexcept {
#if defined(__unix__) || defined(__APPLE__)
    return static_cast<long>(::getpid());
#else
    return 0;
#endif
  }

 private:
  [[noreturn]] void fail(const char* what) {
    const int e = errno;
    throw error(std::string("cannot ") + what + " '" + tmp_.string() + "': " +
                (e != 0 ? std::strerror(e) : "I/O error") + " (disk full?)");
  }

  std::filesystem::path path_;
  std::filesystem::path tmp_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
  std::uint64_t bytes_ = 0;
};

}  // namespace v1
}  // namespace strata
