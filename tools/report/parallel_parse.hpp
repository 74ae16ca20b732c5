// tools/report/parallel_parse.hpp: the traceEvents array of a large trace parsed on several
// threads, a piece of the document at a time, with the same result as one parser.
//
// When the parser enters traceEvents, piece_reader reads the document on in large pieces. A
// scanner that knows only strings, escapes and nesting finds the commas between the array's
// elements; each piece is cut at those commas into one chunk per thread, each chunk is parsed
// by RapidJSON into an element_log (its events' fields as text), and the document's builder
// then takes the logs in order, exactly as it would have taken the events from one parser. The
// parser goes on after the array. Memory holds one piece and its logs, never the document.
//
// Whatever goes wrong in a piece (invalid JSON, a refused event, a read error, a document that
// ends inside the array), the reader says it was used and the trace is parsed again with one
// parser (report/trace_reader.hpp), whose error is the one reported: messages stay those of
// the serial parse, line numbers and event indices included.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "report/rapidjson_reader.hpp"
#include "report/trace_events.hpp"
#include "report/trace_input.hpp"

namespace strata {
inline namespace v1 {
namespace report {
namespace detail {

/// How a trace's events are split between threads.
struct split_options {
  std::size_t piece_bytes = std::size_t{8} << 20;  ///< the document is read this much at a time
  std::size_t chunk_bytes = std::size_t{1} << 20;  ///< a piece is parsed in chunks of about this
  /// A document whose traceEvents (and what follows them) end within this many bytes is parsed
  /// by one parser, on the calling thread, as if there were no pieces.
  std::size_t parallel_bytes = std::size_t{4} << 20;
  unsigned threads = 2;
};

/// The parser's flags (report/trace_reader.hpp says why these).
inline constexpr unsigned trace_parse_flags =
    rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseValidateEncodingFlag;

/// Follows strings, escapes and nesting over the elements of an array, a block at a time.
/// 64 bytes without a backslash are looked at together (with SSE2 where there is SSE2): the bits of
/// their quotes give which bytes lie in strings, and only the brackets and commas outside
/// strings are visited one by one; other bytes are followed one at a time.
struct element_scanner {
  bool in_string = false;
  bool escaped = false;
  std::size_t depth = 0;  ///< open arrays and objects inside the array

  /// Scans [begin, end): appends the offset (from `base`) of each comma between two elements to
  /// `commas`; returns where the array closes (a bracket at depth 0), or nullptr.
  const char* scan(const char* base, const char* begin, const char* end, std::vector<std::size_t>& commas) {
    const char* p = begin;
    while (p != end) {
      if (end - p >= 64 && !escaped) {
        const masks m = masks_of(p);
        if (m.backslash == 0) {
          if (const char* close = scan_block(base, p, m, commas)) return close;
          p += 64;
          continue;
        }
      }
      const char* const stop = std::min(end, p + 64);
      for (; p != stop; ++p)
        if (const char* close = step(base, p, commas)) return close;
    }
    return nullptr;
  }

 private:
  struct masks {
    std::uint64_t quote, backslash, open, close, comma;
  };

  static masks masks_of(const char* p) noexcept {
    masks m{};
#if defined(__SSE2__)
    for (int i = 0; i < 4; ++i) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
      const auto bits = [&](char c) {
        return static_cast<std::uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c)))))
               << (16 * i);
      };
      m.quote |= bits('"');
      m.backslash |= bits('\\');
      m.open |= bits('{') | bits('[');
      m.close |= bits('}') | bits(']');
      m.comma |= bits(',');
    }
#else
    for (int i = 0; i < 64; ++i) {
      const std::uint64_t bit = std::uint64_t{1} << i;
      switch (p[i]) {
        case '"': m.quote |= bit; break;
        case '\\': m.backslash |= bit; break;
        case '{': case '[': m.open |= bit; break;
        case '}': case ']': m.close |= bit; break;
        case ',': m.comma |= bit; break;
        default: break;
      }
    }
#endif
    return m;
  }

  /// A block without backslashes: each quote opens or closes a string.
  const char* scan_block(const char* base, const char* p, const masks& m, std::vector<std::size_t>& commas) {
    std::uint64_t inside = m.quote;  // bit i: byte i is in a string (its opening quote included)
    inside ^= inside << 1;
    inside ^= inside << 2;
    inside ^= inside << 4;
    inside ^= inside << 8;
    inside ^= inside << 16;
    inside ^= inside << 32;
    if (in_string) inside = ~inside;
    in_string = (inside >> 63) != 0;
    const std::uint64_t commas_out = m.comma & ~inside;
    std::uint64_t brackets = (m.open | m.close) & ~inside;
    int from = 0;  // commas at depth 0 are looked for from this bit on
    const auto add_commas = [&](int to) {  // the commas in [from, to), while at depth 0
      if (from >= to) return;
      std::uint64_t c = commas_out >> from;
      if (to - from < 64) c &= (std::uint64_t{1} << (to - from)) - 1;
      for (; c != 0; c &= c - 1) commas.push_back(static_cast<std::size_t>(p - base) + from + std::countr_zero(c));
    };
    for (; brackets != 0; brackets &= brackets - 1) {
      const int i = std::countr_zero(brackets);
      if (((m.open >> i) & 1u) != 0) {
        if (depth++ == 0) add_commas(i);
      } else {
        if (depth == 0) {
          add_commas(i);
          return p + i;
        }
        if (--depth == 0) from = i + 1;
      }
    }
    if (depth == 0) add_commas(64);
    return nullptr;
  }

  /// One byte, outside a block.
  const char* step(const char* base, const char* p, std::vector<std::size_t>& commas) {
    const char c = *p;
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      return nullptr;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[': case '{': ++depth; break;
      case ']': case '}':
        if (depth == 0) return p;
        --depth;
        break;
      case ',':
        if (depth == 0) commas.push_back(static_cast<std::size_t>(p - base));
        break;
      default: break;
    }
    return nullptr;
  }
};

/// Parses the elements in [begin, end) (`*end` must be NUL: where a comma or the closing
/// bracket was) into `log`. False when they are not JSON values separated by commas.
inline bool parse_elements(const char* begin, const char* end, std::size_t events_depth, element_log& log) {
  log.clear();
  trace_builder builder(events_depth, log);
  rapidjson::Reader reader;
  rapidjson::StringStream in(begin);
  for (;;) {
    if (reader.Parse<trace_parse_flags | rapidjson::kParseStopWhenDoneFlag>(in, builder).IsError()) return false;
    rapidjson::SkipWhitespace(in);
    if (in.Peek() != ',') return in.Peek() == '\0' && begin + in.Tell() == end;
    in.Take();
  }
}

/// The events_hook that reads traceEvents in pieces (see the top of this file).
template <class Source>
class piece_reader final : public events_hook {
 public:
  piece_reader(json_input<Source>& in, split_options options) : in_(in), options_(options) {}

  /// Whether the events were read in pieces; then any failure of the parse is to be found
  /// again by a serial parse.
  bool used() const noexcept { return used_; }

  bool on_events(trace_builder& builder) override {
    const std::string_view rest = in_.rest();
    std::size_t capacity = std::max(options_.piece_bytes, rest.size());
    buffer_.reset(new char[capacity + 1]);
    std::memcpy(buffer_.get(), rest.data(), rest.size());
    std::size_t filled = rest.size(), scanned = 0, skipped = 0;
    bool at_end = false, first = true;
    element_scanner scanner;
    std::vector<std::size_t> commas;
    for (;;) {
      while (filled < capacity && !at_end) {
        const std::size_t n = in_.source().read(buffer_.get() + filled, capacity - filled);
        at_end = n == 0;
        filled += n;
      }
      char* const base = buffer_.get();
      const char* close = scanner.scan(base, base + scanned, base + filled, commas);
      scanned = filled;
      const bool failed = !in_.source().failure().empty();
      if (first && at_end && !failed && filled < options_.parallel_bytes) {
        in_.replace_rest({base, filled}, 0);  // small: the parser reads on by itself
        buffer_.reset();
        return true;
      }
      used_ = true;
      if (failed || (close == nullptr && at_end)) return false;
      if (close == nullptr && commas.empty()) {  // one element longer than a piece
        std::unique_ptr<char[]> larger(new char[2 * capacity + 1]);
        std::memcpy(larger.get(), base, filled);
        buffer_ = std::move(larger);
        capacity *= 2;
        continue;
      }
      const std::size_t end = close != nullptr ? static_cast<std::size_t>(close - base) : commas.back();
      if (close != nullptr) {
        const bool nothing = std::all_of(base, base + end, [](char c) {
          return c == ' ' || c == '\n' || c == '\r' || c == '\t';
        });
        // Only an empty array may hold nothing here: after a comma an element must follow.
        if ((!nothing || !first) && !parse_piece(builder, base, end, commas)) return false;
        in_.replace_rest({base + end, filled - end}, skipped + end);
        buffer_.reset();
        return true;
      }
      commas.pop_back();  // the piece ends at its last comma
      if (!parse_piece(builder, base, end, commas)) return false;
      first = false;
      skipped += end + 1;
      std::memmove(base, base + end + 1, filled - end - 1);
      filled -= end + 1;
      scanned = filled;
      commas.clear();
    }
  }

 private:
  /// Parses the elements in [base, base + end), `commas` the offsets of the commas between
  /// them, as chunks of about options_.chunk_bytes that up to options_.threads threads (this
  /// one among them) take in turn, and hands them to `builder` in order. This thread hands over
  /// each chunk as soon as it is parsed and parses one itself while it waits.
  bool parse_piece(trace_builder& builder, char* base, std::size_t end, const std::vector<std::size_t>& commas) {
    const std::size_t wanted =
        std::min(commas.size() + 1, std::max<std::size_t>(1, end / std::max<std::size_t>(1, options_.chunk_bytes)));
    // Chunk i ends at the first comma past i shares of the piece (the last at its end).
    std::vector<std::size_t> ends;
    for (std::size_t i = 1; i < wanted; ++i) {
      const auto it = std::lower_bound(commas.begin(), commas.end(), end * i / wanted);
      const std::size_t at = it != commas.end() ? *it : commas.back();
      if (ends.empty() || at > ends.back()) ends.push_back(at);
    }
    ends.push_back(end);
    const std::size_t n = ends.size();
    const char saved = base[end];
    for (const std::size_t e : ends) base[e] = '\0';
    if (logs_.size() < n) logs_.resize(n);
    std::vector<char> ok(n, 0);
    const std::unique_ptr<std::atomic<bool>[]> done(new std::atomic<bool>[n]);
    for (std::size_t i = 0; i < n; ++i) done[i].store(false, std::memory_order_relaxed);
    std::atomic<std::size_t> next{0};
    std::mutex m;
    std::condition_variable parsed;
    const std::size_t depth = builder.events_depth();  // the builder is this thread's alone
    const auto parse = [&](std::size_t i) noexcept {
      const std::size_t from = i == 0 ? 0 : ends[i - 1] + 1;
      try {
        ok[i] = parse_elements(base + from, base + ends[i], depth, logs_[i]);
      } catch (...) {  // out of memory: the serial parse after it will say so on the caller's thread
        ok[i] = 0;
      }
      {
        const std::lock_guard<std::mutex> lock(m);
        done[i].store(true, std::memory_order_release);
      }
      parsed.notify_all();
    };
    const auto work = [&] {
      for (std::size_t i; (i = next.fetch_add(1)) < n;) parse(i);
    };
    // Joined however this function leaves: the helpers use its locals.
    struct joiner {
      std::atomic<std::size_t>& next;
      std::size_t n;
      std::vector<std::thread> threads = {};
      void join() {
        next.store(n);  // after a failure the helpers start no other chunk
        for (auto& t : threads)
          if (t.joinable()) t.join();
      }
      ~joiner() { join(); }
    } helpers{next, n};
    for (std::size_t t = 1; t < std::min<std::size_t>(options_.threads, n); ++t) {
      try {
        helpers.threads.emplace_back(work);
      } catch (const std::system_error&) {
        break;  // no thread to be had: this one parses the rest
      }
    }
    bool good = true;
    for (std::size_t c = 0; c < n && good; ++c) {
      while (!done[c].load(std::memory_order_acquire)) {
        if (const std::size_t i = next.fetch_add(1); i < n) {
          parse(i);
        } else {
          std::unique_lock<std::mutex> lock(m);
          parsed.wait(lock, [&] { return done[c].load(std::memory_order_acquire); });
        }
      }
      good = ok[c] && builder.take_elements(logs_[c]);
    }
    helpers.join();  // a helper may still read its chunk, up to the NUL at its end
    base[end] = saved;
    return good;
  }

  json_input<Source>& in_;
  split_options options_;
  bool used_ = false;
  std::unique_ptr<char[]> buffer_;
  std::vector<element_log> logs_;
};

}  // namespace detail
}  // namespace report
}  // namespace v1
}  // namespace strata
