// strata/detail/spill_file.hpp: where a session puts full blocks past its memory limit.
//
// The spill file is private to the process that writes it: the session's writer thread appends
// full blocks; when the session stops, the file's name is removed and the open file goes with
// the session's records (trace_data), whose writers and tables read the blocks back from it.
// Its layout (docs/trace-format.md, "Spill file"): a 32-byte header, then one entry per block,
// a 16-byte entry header followed by the block's records as they are in memory (32 bytes each;
// `where` is a pointer into the writing process, which is why no other process reads the file).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "strata/record.hpp"
#include "strata/detail/record_block.hpp"
#include "strata/detail/shared_handle.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

struct spill_header {
  char magic[8] = {'S', 'T', 'R', 'S', 'P', 'I', 'L', 'L'};
  std::uint32_t version = 1;
  std::uint32_t record_bytes = sizeof(record);
  std::uint32_t block_records = record_block::capacity;
  std::uint32_t reserved = 0;
  std::uint64_t pid = 0;
};
static_assert(sizeof(spill_header) == 32);

struct spill_entry_header {
  std::uint32_t thread = 0;  ///< the recording thread's registration order
  std::uint32_t count = 0;   ///< records that follow
  std::uint64_t sequence = 0;  ///< the block's place among the session's spilled blocks
};
static_assert(sizeof(spill_entry_header) == 16);

/// An open spill file. Appends from one thread (the session's writer), reads from the collecting
/// thread; the two never touch the same bytes (a block is read only once it is written).
class spill_file : public shared_object {
 public:
  spill_file() = default;
  ~spill_file() override { remove(); }

  /// Creates `path` (which must not exist) and writes the header. On failure returns a message
  /// naming the path and the reason, and stays closed.
  std::string create(std::string path, std::uint64_t pid) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd_ < 0) return "cannot create the spill file '" + path + "': " + std::strerror(errno);
    path_ = std::move(path);
    spill_header h;
    h.pid = pid;
    size_ = 0;
    if (std::string e = write_at(&h, sizeof h); !e.empty()) {
      remove();
      return e;
    }
    return {};
  }

  bool open() const noexcept { return fd_ >= 0; }
  const std::string& path() const noexcept { return path_; }
  std::uint64_t size() const noexcept { return size_; }

  /// Appends `count` records of one thread's block; returns where its records start (through
  /// `offset`) or a message. A failed append leaves the file as it was for every earlier entry.
  std::string append(std::uint32_t thread, const record* records, std::uint32_t count,
                     std::uint64_t& offset) {
    const spill_entry_header h{thread, count, entries_};
    const std::uint64_t at = size_;
    if (std::string e = write_at(&h, sizeof h); !e.empty()) return e;
    if (std::string e = write_at(records, std::size_t{count} * sizeof(record)); !e.empty()) {
      size_ = at;  // the next entry overwrites the partial one
      return e;
    }
    ++entries_;
    offset = at + sizeof h;
    return {};
  }

  /// Appends the `count` records at `offset` to `out`; false if the file cannot be read.
  bool read(std::uint64_t offset, std::uint32_t count, std::vector<record>& out) const {
    const std::size_t base = out.size();
    out.resize(base + count);
    if (read(offset, count, out.data() + base)) return true;
    out.resize(base);
    return false;
  }

  /// Reads the `count` records at `offset` into `out`; false if the file cannot be read.
  bool read(std::uint64_t offset, std::uint32_t count, record* out) const {
    char* dst = reinterpret_cast<char*>(out);
    std::size_t left = std::size_t{count} * sizeof(record);
    auto at = static_cast<off_t>(offset);
    while (left > 0) {
      const ssize_t n = ::pread(fd_, dst, left, at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      dst += n;
      at += n;
      left -= static_cast<std::size_t>(n);
    }
    return true;
  }

  /// Removes the file's name and keeps it open: what was spilled stays readable through this
  /// object, and the space goes back to the file system when it is destroyed (or the process
  /// ends, however it ends).
  void unlink_name() noexcept {
    if (fd_ < 0 || path_.empty()) return;
    ::unlink(path_.c_str());
    path_.clear();
  }

  /// Closes and deletes the file (nothing if it was never created).
  void remove() noexcept {
    if (fd_ < 0) return;
    ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
    fd_ = -1;
    path_.clear();
  }

 private:
  std::string write_at(const void* data, std::size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(size_));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0)
        return "cannot write the spill file '" + path_ + "': " +
               std::strerror(w < 0 ? errno : ENOSPC);
      p += w;
      n -= static_cast<std::size_t>(w);
      size_ += static_cast<std::uint64_t>(w);
    }
    return {};
  }

  int fd_ = -1;
  std::string path_;
  std::uint64_t size_ = 0;
  std::uint64_t entries_ = 0;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
