// tools/report/gzip_input.hpp: a gzip-compressed saved trace (torch.profiler writes
// `.pt.trace.json.gz`), decompressed block by block as the parser asks for bytes.
//
// Uses zlib: a program that reads traces links it (`-lz`, Meson's dependency('zlib')).
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include <zlib.h>

#include "strata/error.hpp"
#include "report/trace_input.hpp"

namespace strata {
inline namespace v1 {
namespace report {
namespace detail {

/// gzip's magic number, the first two bytes of every gzip file whatever its name.
inline bool starts_like_gzip(std::string_view first_bytes) noexcept {
  return first_bytes.size() >= 2 && static_cast<unsigned char>(first_bytes[0]) == 0x1f &&
         static_cast<unsigned char>(first_bytes[1]) == 0x8b;
}

/// A gzip file read through zlib's gz interface, a source for detail::json_input
/// (report/trace_input.hpp). Concatenated gzip members are read one after the other,
/// as gunzip does; a file that ends inside a member, or whose data is corrupt, fails.
class gzip_source {
 public:
  explicit gzip_source(const std::filesystem::path& path) : file_(gzopen(path.c_str(), "rb")) {
    if (file_ == nullptr) {
      failure_ = std::string("cannot open it: ") + std::strerror(errno);
      return;
    }
    gzbuffer(file_.get(), 1u << 17);  // fewer, larger reads than zlib's 8 KiB default
  }
  std::size_t read(char* into, std::size_t n) {
    if (file_ == nullptr || !failure_.empty()) return 0;
    const int got = gzread(file_.get(), into, static_cast<unsigned>(n));
    int code = Z_OK;
    const char* message = got <= 0 ? gzerror(file_.get(), &code) : nullptr;
    if (got < 0 || (got == 0 && code != Z_OK)) {
      failure_ = code == Z_BUF_ERROR ? std::string("its gzip data ends early (truncated?)")
                                     : std::string("its gzip data is corrupt: ") + message;
      return 0;
    }
    return static_cast<std::size_t>(got);
  }
  const std::string& failure() const noexcept { return failure_; }

 private:
  struct closer {
    void operator()(gzFile f) const noexcept { gzclose(f); }
  };
  std::unique_ptr<gzFile_s, closer> file_;
  std::string failure_;
};

/// Calls `parse(open)` for the saved trace at `path`, where each call of `open()` gives a fresh
/// source of its bytes from the start (a reader that needs a second pass calls it again): a
/// gzip_source when the file begins with gzip's magic bytes, whatever its name, else a
/// file_source. Raises `strata::error` naming the file (`source`, as messages quote it) when it
/// does not exist, is a directory or cannot be opened.
template <class Parse>
auto parse_trace_file(const std::filesystem::path& path, const std::string& source, Parse parse) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw error("cannot read trace " + source + ": no such file");
  if (std::filesystem::is_directory(status)) throw error("cannot read trace " + source + ": it is a directory");
  const auto open_plain = [&] {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) throw error("cannot read trace " + source + ": cannot open it (permissions?)");
    std::setvbuf(f, nullptr, _IONBF, 0);  // json_input reads in large blocks already
    return file_source(f);
  };
  char magic[2] = {};
  const std::size_t got = [&] {
    file_source first = open_plain();
    return first.read(magic, sizeof magic);
  }();
  if (starts_like_gzip(std::string_view(magic, got))) return parse([&] { return gzip_source(path); });
  return parse(open_plain);
}

}  // namespace detail
}  // namespace report
}  // namespace v1
}  // namespace strata
