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
  std::vector<trace_summary> out(files.size());
  std::vector<std::exception_ptr> failures(files.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  const auto work = [&] {
    for (std::size_t i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < files.size();) {
      try {
        const saved_trace t = read_trace(files[i]);
        out[i] = {files[i], key_averages(t, options), t.skipped, t.rank};
      } catch (...) {
        failures[i] = std::current_exception();
        failed.store(true, std::memory_order_relaxed);
      }
    }
  };
  const std::size_t helpers = std::min<std::size_t>(std::max(threads, 1u), files.size());
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < helpers; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread to be had: the ones running (this one at least) read the rest
    }
  }
  work();  // this thread reads too
  for (auto& t : pool) t.join();
  for (const auto& f : failures)
    if (f) std::rethrow_exception(f);
  return out;
}

}  // namespace report
}  // namespace v1
}  // namespace strata
