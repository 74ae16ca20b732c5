// strata/device.hpp: the device layer: records of a device's engines, made off the hot path,
// and which device cores a session captures.
//
// A (simulated) NeuronCore does not run on a thread of its own: its engines' instructions are
// timed by a model and handed over in bulk, with timestamps in steady_clock nanoseconds (the
// traces' time base; `clock::steady_ns()`), so that a modelled duration reaches the trace and
// key_averages exactly instead of through a tick-rate estimate. They go to device tracks: one
// trace process per core, one track per engine or DMA queue, as hardware profiles show them. The
// profiler's `capture_cores` (parsed by `core_set`, as Neuron's `capture_enabled_for_nc`) decides
// which cores are taken and `max_events_per_core` bounds each core's records per session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "strata/config.hpp"
#include "strata/error.hpp"
#include "strata/record.hpp"
#include "strata/detail/link_check.h"
#include "strata/detail/record_path.hpp"

namespace strata {
inline namespace v1 {

/// A set of core indices, or every core. Built by `core_set::parse`.
///
/// **Example**
/// ```cpp
/// auto cores = strata::core_set::parse("0,2-3");
/// cores.contains(2);  // true
/// cores.contains(1);  // false
/// ```
class core_set {
 public:
  /// The largest core index accepted.
  static constexpr int max_core = 1023;

  /// Every core (`"all"`).
  static core_set all() noexcept {
    core_set s;
    s.all_ = true;
    return s;
  }

  /// Parses `"all"`, or a comma-separated list of core indices (`"0"`) and inclusive ranges
  /// (`"2-5"`), each between 0 and `max_core`. Spaces and tabs around an entry are ignored
  /// (`"0, 2-5"`); none are allowed inside one (`"2 - 5"` is an error). Anything else raises
  /// `strata::error` quoting the bad entry and listing the accepted forms.
  static core_set parse(std::string_view text) {
    const std::string_view whole = trim(text);
    if (whole == "all") return all();
    core_set s;
    std::size_t pos = 0;
    while (true) {
      const std::size_t comma = text.find(',', pos);
      const std::string_view raw =
          text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
      s.add_entry(trim(raw), text);
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
    }
    return s;
  }

  /// Whether core `core` is captured.
  bool contains(int core) const noexcept {
    if (core < 0 || core > max_core) return false;
    return all_ || ((words_[core / 64] >> (core % 64)) & 1u) != 0;
  }

  /// Whether every core is captured (`"all"`).
  bool is_all() const noexcept { return all_; }

  /// How many cores are listed (0 for `"all"`, which names no particular core).
  std::size_t count() const noexcept {
    if (all_) return 0;
    std::size_t n = 0;
    for (std::uint64_t w : words_) n += static_cast<std::size_t>(__builtin_popcountll(w));
    return n;
  }

  friend bool operator==(const core_set&, const core_set&) = default;

 private:
  static std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  }

  [[noreturn]] static void bad(std::string_view entry, std::string_view text, const char* why) {
    throw error("profiler_config::capture_cores: bad entry '" + std::string(entry) + "' in \"" +
                std::string(text) + "\" (" + why + "); accepted forms: \"all\", a core index "
                "such as \"0\", or a comma-separated list of indices and ranges such as "
                "\"0,1,2-5\", with indices from 0 to " + std::to_string(max_core));
  }

  // A core index: digits only, at most max_core. Returns -1 if `digits` is not one.
  static int index_of(std::string_view digits) noexcept {
    if (digits.empty()) return -1;
    int v = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return -1;
      v = v * 10 + (c - '0');
      if (v > max_core) return -2;
    }
    return v;
  }

  void add_entry(std::string_view entry, std::string_view text) {
    if (entry.empty()) bad(entry, text, "an empty entry");
    if (entry == "all") bad(entry, text, "\"all\" must be the whole value");
    const std::size_t dash = entry.find('-');
    const std::string_view first = entry.substr(0, dash);
    const int lo = index_of(first);
    if (lo == -2) bad(entry, text, "a core index above the largest");
    if (lo < 0) bad(entry, text, dash == 0 ? "a negative or missing index" : "not a core index");
    int hi = lo;
    if (dash != std::string_view::npos) {
      hi = index_of(entry.substr(dash + 1));
      if (hi == -2) bad(entry, text, "a core index above the largest");
      if (hi < 0) bad(entry, text, "a range needs two indices, as in \"2-5\"");
      if (hi < lo) bad(entry, text, "a range must go from low to high");
    }
    for (int c = lo; c <= hi; ++c) words_[c / 64] |= std::uint64_t{1} << (c % 64);
  }

  // One bit per core (not std::bitset: this header is part of the compiled-out profiler's
  // file, which must stay light).
  std::uint64_t words_[(max_core + 1) / 64] = {};
  bool all_ = false;
};

/// Trace process ids of device cores start here, far above any Linux pid (at most 2^22), so
/// they never collide with the host process.
inline constexpr std::uint64_t device_pid_base = std::uint64_t{1} << 24;

/// The trace process id of device core `core`.
constexpr std::uint64_t device_pid(std::uint32_t core) noexcept { return device_pid_base + core; }

/// One track of one device core: `track` orders the tracks within the core's process.
struct device_track {
  std::uint32_t core = 0;
  std::string_view core_name;   ///< the process name, e.g. "NeuronCore 0 (trn1)"
  std::uint32_t track = 0;
  std::string_view track_name;  ///< e.g. "Tensor", "DMA queue 0"
  /// The core's peaks, which the tables' utilisation columns (MFU, MBU) and the trace's
  /// otherData carry; 0: unknown. The first append that gives them sets them for the track.
  double peak_flops_per_s = 0;
  double peak_hbm_bytes_per_s = 0;
};

#if STRATA_ENABLED

/// Whether a running session takes device records of `core` (device layer captured, core in
/// `capture_cores`). A producer asks once per execution and skips building records otherwise.
bool device_core_captured(std::uint32_t core);

/// Appends `records` (begin and end in steady_clock nanoseconds, see `clock::steady_ns()`;
/// sites of the device layer) to `track`. Returns how many were taken: none without a session
/// capturing the device layer, and no more than the session's `max_events_per_core` for the
/// core; the rest is counted as lost and reported like a full buffer's. Cold path: takes the
/// registry's lock once.
///
/// **Example**
/// ```cpp
/// const strata::site* mm = strata::intern(strata::layer::device, "matmul");
/// const std::int64_t launch = strata::clock::steady_ns();
/// strata::record r{std::uint64_t(launch + 100), std::uint64_t(launch + 350), mm, correlation_id};
/// strata::append_device_records({.core = 0, .core_name = "NeuronCore 0", .track = 0,
///                                 .track_name = "Tensor"}, {&r, 1});
/// ```
std::size_t append_device_records(const device_track& track, std::span<const record> records);

/// The descriptor of records made off the hot path: `like`'s layer, kind, category and source
/// location under `name`, carrying `args_json` (the members of a JSON object, without braces,
/// written into the trace event's `args`; empty: none). Interned once per distinct value, and
/// cached per thread: never null, never freed.
///
/// **Example**
/// ```cpp
/// const strata::site like{nullptr, "", 0, strata::layer::device, strata::record_kind::scope,
///                         nullptr, nullptr, "device.engine"};
/// const strata::site* mm = strata::intern_site(like, "matmul", "\"cycles\":512");
/// ```
const site* intern_site(const site& like, std::string_view name, std::string_view args_json = {});

/// `text` as a JSON string, quotes included, for building `args_json`: any bytes in (control
/// characters escaped, invalid UTF-8 replaced), valid JSON out.
std::string json_string(std::string_view text);

/// A number that changes with each session started, or 0 while none records: what a producer
/// compares with to do something once per session (name a device's tracks, say).
std::uint32_t recording_session() noexcept;

#else  // compiled out: nothing is recorded, as the C API's calls do nothing

inline bool device_core_captured(std::uint32_t) { return false; }
inline std::size_t append_device_records(const device_track&, std::span<const record>) { return 0; }
inline const site* intern_site(const site&, std::string_view, std::string_view = {}) {
  return &detail::unnamed_site;
}
inline std::string json_string(std::string_view text) {
  std::string quoted(1, '"');
  quoted.append(text).push_back('"');
  return quoted;
}
inline std::uint32_t recording_session() noexcept { return 0; }

#endif  // STRATA_ENABLED

}  // namespace v1
}  // namespace strata
