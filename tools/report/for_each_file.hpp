// strata-report: one function over many trace files, up to N at once (analyze, tables).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <span>
#include <system_error>
#include <thread>
#include <vector>

namespace strata {
inline namespace v1 {
namespace report {
namespace detail {

/// `read(path)` of every file, in the order given, up to `threads` at once (this thread reads
/// too); each thread holds one file's work at a time. When some fail, the exception of the
/// first of them in the order given is raised, and no file is started after a failure.
template <class Result, class Read>
std::vector<Result> for_each_file(std::span<const std::filesystem::path> files, unsigned threads, Read read) {
  std::vector<Result> out(files.size());
  std::vector<std::exception_ptr> failures(files.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  const auto work = [&] {
    for (std::size_t i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < files.size();) {
      try {
        out[i] = read(files[i]);
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
  work();
  for (auto& t : pool) t.join();
  for (const auto& f : failures)
    if (f) std::rethrow_exception(f);
  return out;
}

}  // namespace detail
}  // namespace report
}  // namespace v1
}  // namespace strata
