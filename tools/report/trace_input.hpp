// tools/report/trace_input.hpp: the bytes of a saved trace, fed to the JSON parser in fixed
// blocks so that a trace of any size is read in constant memory.
//
// A source is anything with `std::size_t read(char* into, std::size_t n)` (0 at the end) and
// `const std::string& failure()` (empty unless reading failed). detail::json_input adapts one
// to RapidJSON's input stream concept and knows the line of the current position, which parse
// errors quote.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace strata {
inline namespace v1 {
namespace report {
namespace detail {

/// A file read with stdio (its own buffering is turned off: json_input reads in large blocks).
class file_source {
 public:
  explicit file_source(std::FILE* f) noexcept : file_(f) {}
  std::size_t read(char* into, std::size_t n) {
    const std::size_t got = std::fread(into, 1, n, file_.get());
    if (got < n && std::ferror(file_.get()) != 0 && failure_.empty())
      failure_ = std::string("reading it failed: ") + std::strerror(errno);
    return got;
  }
  const std::string& failure() const noexcept { return failure_; }

 private:
  struct closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, closer> file_;
  std::string failure_;
};

/// Bytes already in memory.
class memory_source {
 public:
  explicit memory_source(std::string_view bytes) noexcept : rest_(bytes) {}
  std::size_t read(char* into, std::size_t n) noexcept {
    n = std::min(n, rest_.size());
    std::memcpy(into, rest_.data(), n);
    rest_.remove_prefix(n);
    return n;
  }
  const std::string& failure() const noexcept { return failure_; }

 private:
  std::string_view rest_;
  std::string failure_;
};

/// RapidJSON's input stream over a source: Peek, Take, Tell, one block in memory at a time.
/// A NUL byte reads as the end of the input, as RapidJSON's own streams do, so a document with
/// one inside is refused as invalid JSON.
template <class Source>
class json_input {
 public:
  using Ch = char;
  static constexpr std::size_t block_size = std::size_t{1} << 16;

  explicit json_input(Source& source) : source_(source), block_(new char[block_size + 1]) { refill(); }

  Source& source() noexcept { return source_; }

  /// The bytes of the current block not taken yet.
  std::string_view rest() const noexcept { return {current_, static_cast<std::size_t>(last_ - current_)}; }

  /// Goes on with `bytes` instead of the rest of the current block, then the source: the
  /// document's next `skipped` bytes were read by someone else (report/parallel_parse.hpp) and
  /// `bytes` come after them. With `skipped` 0, `bytes` are exactly the rest of the block and
  /// what the source gave after it. The newlines of skipped bytes are not counted: line() is
  /// then short of them (a failure after them is parsed again, serially, for its line).
  void replace_rest(std::string_view bytes, std::size_t skipped) {
    lines_ += static_cast<std::size_t>(std::count(block_.get(), current_, '\n'));
    consumed_ += static_cast<std::size_t>(current_ - block_.get()) + skipped;
    if (bytes.size() > capacity_) {
      block_.reset(new char[bytes.size() + 1]);
      capacity_ = bytes.size();
    }
    std::memcpy(block_.get(), bytes.data(), bytes.size());
    block_[bytes.size()] = '\0';
    current_ = block_.get();
    last_ = block_.get() + bytes.size();
    if (bytes.empty()) refill();
  }

  // Called once per byte of the document: forced inline, or the call costs more than the byte.
  [[gnu::always_inline]] char Peek() const noexcept { return *current_; }
  [[gnu::always_inline]] char Take() {
    const char c = *current_;
    if (current_ != last_ && ++current_ == last_) refill();
    return c;
  }
  std::size_t Tell() const noexcept { return consumed_ + static_cast<std::size_t>(current_ - block_.get()); }

  /// The line (from 1) of the next byte to be taken.
  std::size_t line() const noexcept {
    return lines_ + 1 + static_cast<std::size_t>(std::count(block_.get(), current_, '\n'));
  }

  // Writing, required by the concept; the parser never writes to a stream it does not parse in
  // place.
  char* PutBegin() { return nullptr; }
  void Put(char) {}
  void Flush() {}
  std::size_t PutEnd(char*) { return 0; }

 private:
  void refill() {
    consumed_ += static_cast<std::size_t>(last_ - block_.get());
    lines_ += static_cast<std::size_t>(std::count(block_.get(), last_, '\n'));
    const std::size_t n = source_.read(block_.get(), block_size);
    block_[n] = '\0';  // what Peek sees at the end of the input
    current_ = block_.get();
    last_ = block_.get() + n;
  }

  Source& source_;
  std::unique_ptr<char[]> block_;
  std::size_t capacity_ = block_size;  ///< bytes block_ holds, besides the final NUL
  char* current_ = block_.get();
  char* last_ = block_.get();
  std::size_t consumed_ = 0;  ///< bytes of the blocks before this one
  std::size_t lines_ = 0;     ///< newlines in the blocks before this one
};

}  // namespace detail
}  // namespace report
}  // namespace v1
}  // namespace strata
