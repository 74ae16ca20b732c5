// strata/detail/trace_file.hpp: where the trace writers' bytes go: a file written atomically
// (a temporary file, then a rename), through gzip for a `.gz` path (zlib loaded at run time).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#include <unistd.h>
#endif
#if defined(__linux__)
#include <fcntl.h>
#include <sys/stat.h>
#endif

#include "strata/error.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

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



/// zlib 1.x's `z_stream`, member for member.
struct zlib_stream {
  const unsigned char* next_in = nullptr;
  unsigned int avail_in = 0;
  unsigned long total_in = 0;
  unsigned char* next_out = nullptr;
  unsigned int avail_out = 0;
  unsigned long total_out = 0;
  const char* msg = nullptr;
  void* state = nullptr;
  void* (*zalloc)(void*, unsigned int, unsigned int) = nullptr;  // null: zlib's malloc
  void (*zfree)(void*, void*) = nullptr;
  void* opaque = nullptr;
  int data_type = 0;
  unsigned long adler = 0;
  unsigned long reserved = 0;
};

/// The zlib functions a gzip writer needs, loaded once per process.
struct zlib_api {
  // zlib.h's constants.
  static constexpr int ok = 0, stream_end = 1, buf_error = -5;
  static constexpr int no_flush = 0, finish = 4;
  static constexpr int deflated = 8, default_strategy = 0;
  static constexpr int gzip_window_bits = 15 + 16;  // 32 KiB window, gzip header and trailer
  static constexpr int default_mem_level = 8;

  int (*deflate_init2)(zlib_stream*, int level, int method, int window_bits, int mem_level,
                       int strategy, const char* version, int stream_size) = nullptr;
  int (*deflate)(zlib_stream*, int flush) = nullptr;
  int (*deflate_end)(zlib_stream*) = nullptr;
  const char* (*version)() = nullptr;

  /// The process's zlib; raises `strata::error` when it cannot be loaded.
  static const zlib_api& get() {
    static const zlib_api api = load();  // thread-safe, and never unloaded
    if (api.deflate == nullptr)
      throw error("cannot write a .gz trace: zlib (libz.so.1) could not be loaded; install zlib "
                  "(Debian: apt-get install zlib1g) or write the trace without .gz");
    return api;
  }

 private:
  static zlib_api load() noexcept {
    zlib_api api;
#if defined(__unix__) || defined(__APPLE__)
    void* lib = ::dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
#if defined(__APPLE__)
    if (lib == nullptr) lib = ::dlopen("libz.1.dylib", RTLD_NOW | RTLD_LOCAL);
#endif
    if (lib == nullptr) return api;
    const auto find = [lib](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
    };
    zlib_api found;
    find(found.deflate_init2, "deflateInit2_");
    find(found.deflate, "deflate");
    find(found.deflate_end, "deflateEnd");
    find(found.version, "zlibVersion");
    if (found.deflate_init2 != nullptr && found.deflate != nullptr && found.deflate_end != nullptr &&
        found.version != nullptr)
      api = found;
#endif
    return api;
  }
};



/// A gzip file written through a stream of `write()` calls and renamed into place on
/// `commit()` (see `atomic_file`); destroyed without commit, it leaves nothing behind.
/// Raises `strata::error` when zlib cannot be loaded or the file cannot be written.
class gzip_file {
 public:
  /// `level`: zlib's 1 (fastest) to 9 (smallest). 1 keeps a trace export about as quick as
  /// the uncompressed one's disk write and already shrinks JSON traces about tenfold.
  explicit gzip_file(const std::filesystem::path& path, int level = 1)
      : zlib_(detail::zlib_api::get()), file_(path), out_(new unsigned char[chunk]) {
    const int rc = zlib_.deflate_init2(&stream_, level, detail::zlib_api::deflated,
                                       detail::zlib_api::gzip_window_bits,
                                       detail::zlib_api::default_mem_level,
                                       detail::zlib_api::default_strategy, zlib_.version(),
                                       static_cast<int>(sizeof(detail::zlib_stream)));
    if (rc != detail::zlib_api::ok)
      throw error("cannot start gzip compression for '" + path.string() + "': zlib error " +
                  std::to_string(rc) + " (an incompatible libz.so.1?)");
    started_ = true;
  }

  gzip_file(const gzip_file&) = delete;
  gzip_file& operator=(const gzip_file&) = delete;

  ~gzip_file() {
    if (started_) zlib_.deflate_end(&stream_);
  }

  /// Compresses `bytes` into the file.
  void write(std::string_view bytes) {
    // avail_in is 32-bit: feed very large writes in pieces.
    while (!bytes.empty()) {
      const std::size_t n = std::min<std::size_t>(bytes.size(), std::size_t{1} << 30);
      stream_.next_in = reinterpret_cast<const unsigned char*>(bytes.data());
      stream_.avail_in = static_cast<unsigned int>(n);
      run(detail::zlib_api::no_flush);
      bytes.remove_prefix(n);
    }
  }

  /// Ends the gzip stream, then flushes, closes and renames the file into place.
  void commit() {
    stream_.next_in = nullptr;
    stream_.avail_in = 0;
    run(detail::zlib_api::finish);
    file_.commit();
  }

  /// Compressed bytes in the file so far.
  std::uint64_t bytes_written() const noexcept { return file_.bytes_written(); }

 private:
  static constexpr std::size_t chunk = std::size_t{1} << 18;

  // Deflates until the input is used up (no_flush) or the stream has ended (finish), writing
  // each full output chunk to the file.
  void run(int flush) {
    for (;;) {
      stream_.next_out = out_.get();
      stream_.avail_out = static_cast<unsigned int>(chunk);
      const int rc = zlib_.deflate(&stream_, flush);
      if (rc != detail::zlib_api::ok && rc != detail::zlib_api::stream_end &&
          rc != detail::zlib_api::buf_error)
        throw error("gzip compression failed: zlib error " + std::to_string(rc));
      const std::size_t produced = chunk - stream_.avail_out;
      file_.write(std::string_view(reinterpret_cast<const char*>(out_.get()), produced));
      if (flush == detail::zlib_api::finish ? rc == detail::zlib_api::stream_end
                                            : stream_.avail_in == 0 && stream_.avail_out != 0)
        return;
    }
  }

  const detail::zlib_api& zlib_;
  atomic_file file_;
  std::unique_ptr<unsigned char[]> out_;
  detail::zlib_stream stream_;
  bool started_ = false;
};

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

}  // namespace detail
}  // namespace v1
}  // namespace strata
