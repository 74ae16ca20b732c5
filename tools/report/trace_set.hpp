// tools/report/trace_set.hpp: several saved traces at once (the ranks of one job, or runs),
// named as files or as directories of them, read on several threads.
//
// Built on report/trace_reader.hpp: needs RapidJSON's headers and zlib (link -lz).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "strata/analysis/averages.hpp"
#include "strata/analysis/key_averages.hpp"
#include "strata/error.hpp"
#include "report/for_each_file.hpp"
#include "report/trace_reader.hpp"

namespace strata {
inline namespace v1 {
namespace report {

/// The trace files that `paths` name: a directory stands for the files directly in it whose
/// names end in `.json` or `.json.gz` (torch.profiler's `*.pt.trace.json.gz` among them), in
/// name order; any other path stands for itself (read_trace() says what is wrong with it).
/// Raises `strata::error` for a directory that holds no such file.
inline std::vector<std::filesystem::path> trace_files(std::span<const std::filesystem::path> paths) {
  std::vector<std::filesystem::path> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(p, ec)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::directory_iterator(p, ec)) {
      const std::string name = entry.path().filename().string();
      std::error_code file_ec;
      if ((name.ends_with(".json") || name.ends_with(".json.gz")) && entry.is_regular_file(file_ec))
        found.push_back(entry.path());
    }
    if (ec) throw error("cannot list trace directory '" + p.string() + "': " + ec.message());
    if (found.empty())
      throw error("directory '" + p.string() + "' holds no trace files (*.json, *.json.gz)");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

/// What one file of a set gave.
struct trace_summary {
  std::filesystem::path path = {};
  averages table = {};
  std::uint64_t skipped = 0;  ///< trace events that are not ops
  std::optional<std::int64_t> rank = {};  ///< distributedInfo.rank, when the trace has one
};

/// key_averages() of every file, in the order given, reading up to `threads` files at once
/// (each thread holds one trace's events at a time, then only its table). When files cannot be
/// read, raises the `strata::error` of the first of them in the order given (it names the file);
/// no file is started after a failure.
inline std::vector<trace_summary> key_averages_of_files(std::span<const std::filesystem::path> files,
                                                         const key_averages_options& options = {},
                                                         unsigned threads = 2) {
  return detail::for_each_file<trace_summary>(files, threads, [&](const std::filesystem::path& file) {
    const saved_trace t = read_trace(file);
    return trace_summary{file, key_averages(t, options), t.skipped, t.rank};
  });
}

}  // namespace report
}  // namespace v1
}  // namespace strata
