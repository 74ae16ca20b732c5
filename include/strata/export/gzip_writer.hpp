// strata/export/gzip_writer.hpp: a file written gzip-compressed, with zlib loaded at run time.
//
// A program that uses strata builds with the compiler and -pthread alone, so strata cannot ask
// for -lz. zlib is loaded when the first compressed file is written instead: dlopen of
// "libz.so.1" (its ABI name since zlib 1.0; glibc 2.34 and later have dlopen in libc, so no
// -ldl either) and the three deflate functions looked up by name. Its stream struct is declared
// here with the layout of zlib 1.x's `z_stream` (zlib.h), which zlib checks at run time
// through the size passed to deflateInit2_; tests/export/test_gzip_writer.cpp compares the
// layout with zlib.h's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#endif

#include "strata/core/error.hpp"
#include "strata/export/atomic_file.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

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

}  // namespace detail

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

}  // namespace v1
}  // namespace strata
