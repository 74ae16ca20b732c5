// tests/support.hpp: helpers shared by the test files (temporary directories, reading traces,
// finding records). Nothing here decides what a test expects.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <sys/syscall.h>
#include <unistd.h>

#include "strata/analysis/key_averages.hpp"
#include "strata/clock.hpp"
#include "strata/device.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/profiler.hpp"
#include "strata/record.hpp"
#include "strata/detail/intern.hpp"
#include "strata/detail/registry.hpp"
#include "strata/detail/session.hpp"

namespace strata_test {

/// Whether this build runs under ThreadSanitizer, whose runtime clears about 0.8 MiB of
/// thread-local state for every thread started (4 ms a thread on a VM where a page fault costs
/// 10 us): a test that starts thousands of threads starts fewer there, as many as it takes to
/// race the same paths, and all of them in the other builds.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool under_tsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool under_tsan = true;
#else
inline constexpr bool under_tsan = false;
#endif
#else
inline constexpr bool under_tsan = false;
#endif

/// Names of the entries of a directory, for "nothing else was left behind" checks.
inline std::vector<std::string> entries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// A fresh directory under the system temp dir, removed with its contents on destruction, so
/// tests that share a process (and its one registry) never share an output directory.
class temp_dir {
 public:
  explicit temp_dir(std::string_view tag = "t") {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("strata-test-" + std::to_string(::getpid()) + "-" + std::string(tag) + "-" +
             std::to_string(counter.fetch_add(1)));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  const std::filesystem::path& path() const noexcept { return path_; }
  std::filesystem::path operator/(std::string_view leaf) const { return path_ / leaf; }

  std::vector<std::string> entries() const { return strata_test::entries(path_); }

 private:
  std::filesystem::path path_;
};

/// A config writing under `dir`, with a small buffer so tests stay light.
inline strata::profiler_config config_in(const temp_dir& dir, std::size_t capacity = 1024,
                                         strata::overflow_policy policy =
                                             strata::overflow_policy::lossless) {
  strata::profiler_config c;
  c.output_dir = dir / "out";
  c.buffer_capacity = capacity;
  c.overflow = policy;
  c.process_name = "strata-tests";
  return c;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::filesystem::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The lines of `text` that contain `needle` (the exporter writes one event per line).
inline std::vector<std::string> lines_with(const std::string& text, std::string_view needle) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (line.find(needle) != std::string_view::npos) out.emplace_back(line);
    start = end + 1;
  }
  return out;
}

/// The OS thread id, read independently of strata.
/// Waits until the clock has moved on by a microsecond. Some tick sources advance in steps
/// (AMD's TSC moves about 10 ns at a time), so two records a few instructions apart can share a
/// time and then count as simultaneous (an allocation at the instant a scope ends is inside it,
/// as in torch). A test whose expectation depends on which came first puts one of these between
/// them.
inline void let_time_pass() {
  const std::int64_t from = strata::clock::steady_ns();
  while (strata::clock::steady_ns() - from < 1000) {
  }
}

inline std::uint64_t os_tid() { return static_cast<std::uint64_t>(::syscall(SYS_gettid)); }

inline std::string_view name_of(const strata::record& r) { return r.site->name; }

/// The records of `t` whose site is named `name`, in track order.
inline std::vector<strata::record> named(const strata::thread_track& t, std::string_view name) {
  std::vector<strata::record> out;
  for (const auto& r : t.records)
    if (name_of(r) == name) out.push_back(r);
  return out;
}

/// The track of thread `tid`, or nullptr.
inline const strata::thread_track* track_of(const strata::trace_data& d, std::uint64_t tid) {
  for (const auto& t : d.threads)
    if (t.tid == tid) return &t;
  return nullptr;
}

/// The steps track of thread `tid` (its ProfilerStep#N scopes), or nullptr.
inline const strata::thread_track* steps_track_of(const strata::trace_data& d, std::uint64_t tid) {
  for (const auto& t : d.threads)
    if (t.steps && t.steps_of == tid) return &t;
  return nullptr;
}

/// True when `inner` lies within `outer` (both scopes, in ticks).
inline bool within(const strata::record& inner, const strata::record& outer) {
  return outer.begin <= inner.begin && inner.end <= outer.end;
}

/// Whether the scope records of one track nest properly: any two are disjoint or one contains
/// the other. Checked pairwise, independently of the order the exporter relies on.
inline bool scopes_nest(const std::vector<strata::record>& records) {
  std::vector<strata::record> scopes;
  for (const auto& r : records)
    if (r.kind() == strata::record_kind::scope) scopes.push_back(r);
  for (std::size_t i = 0; i < scopes.size(); ++i) {
    const auto& a = scopes[i];
    if (a.end < a.begin) return false;
    for (std::size_t j = i + 1; j < scopes.size(); ++j) {
      const auto& b = scopes[j];
      const bool disjoint = a.end <= b.begin || b.end <= a.begin;
      if (!disjoint && !within(a, b) && !within(b, a)) return false;
    }
  }
  return true;
}

/// The counter values of `t` named `name`, in track order.
inline std::vector<double> counter_values(const strata::thread_track& t, std::string_view name) {
  std::vector<double> out;
  for (const auto& r : named(t, name)) out.push_back(r.counter_value());
  return out;
}

/// How many records of `d`, on any track, are named `name`.
inline std::size_t count_named(const strata::trace_data& d, std::string_view name) {
  std::size_t n = 0;
  for (const auto& t : d.threads)
    for (const auto& r : t.records)
      if (std::string_view(r.site->name) == name) ++n;
  return n;
}

/// `n` deterministic values in [-2, 2): the same for the same seed.
inline std::vector<float> values(std::size_t n, std::uint32_t seed) {
  std::vector<float> v(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) * 4.0f - 2.0f;
  }
  return v;
}

}  // namespace strata_test
