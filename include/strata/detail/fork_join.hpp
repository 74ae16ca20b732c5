// strata/detail/fork_join.hpp: one piece of work split across threads, for the passes over a
// stopped session that an export makes (the Perfetto writer's tracks and flows).
#pragma once

#include <atomic>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace strata {
inline namespace v1 {
namespace detail {

/// Calls `part(k)` for each k in [0, parts): part 0 on the calling thread, the others on
/// threads of their own, and returns when all are done. A part that cannot get a thread runs
/// on the calling thread. The first exception a part throws is rethrown here once every part
/// has returned; `stop()` tells the parts still running that one has failed.
class fork_join {
 public:
  template <class Part>
  void run(unsigned parts, Part&& part) {
    std::vector<std::exception_ptr> errors(parts);
    const auto guarded = [&](unsigned k) {
      try {
        part(k);
      } catch (...) {
        errors[k] = std::current_exception();
        failed_.store(true, std::memory_order_relaxed);
      }
    };
    {
      std::vector<std::jthread> threads;  // joined when the block ends
      std::vector<unsigned> here{0};
      threads.reserve(parts);
      for (unsigned k = 1; k < parts; ++k) {
        try {
          threads.emplace_back(guarded, k);
        } catch (const std::system_error&) {
          here.push_back(k);
        }
      }
      for (unsigned k : here) guarded(k);
    }
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }

  /// Whether a part has failed: the others may stop early.
  bool stop() const noexcept { return failed_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> failed_{false};
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
