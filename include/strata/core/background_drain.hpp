// strata/core/background_drain.hpp: a thread that empties every ring while a session runs.
//
// A ring holds `buffer_capacity` records; a session that records more than that per thread
// loses the rest (drop_newest) or the oldest (overwrite_oldest) unless someone drains it while
// it runs. With `profiler_config::drain_interval` set, this thread does: every interval it
// moves whatever each ring holds into the session's drained lists (the same consumer step
// stop() takes at the end), so a ring only has to absorb what one interval produces.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "strata/core/thread_registry.hpp"

#if defined(__linux__)
#include <pthread.h>
#endif

namespace strata {
inline namespace v1 {
namespace detail {

/// Drains the registry's current session every `interval` between `start()` and `stop()`.
class background_drain {
 public:
  background_drain() = default;
  background_drain(const background_drain&) = delete;
  background_drain& operator=(const background_drain&) = delete;
  ~background_drain() { stop(); }

  /// Starts the thread; does nothing for a zero interval or when it already runs.
  void start(std::chrono::microseconds interval) {
    if (interval.count() <= 0 || worker_.joinable()) return;
    quit_ = false;
    worker_ = std::thread([this, interval] { run(interval); });
  }

  /// Stops and joins the thread (the last drain is the caller's: stop() collects everything).
  void stop() noexcept {
    if (!worker_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }

  bool running() const noexcept { return worker_.joinable(); }

  /// Drains completed since this object was made (all sessions).
  std::uint64_t passes() const noexcept { return passes_.load(std::memory_order_acquire); }

 private:
  void run(std::chrono::microseconds interval) {
#if defined(__linux__)
    pthread_setname_np(pthread_self(), "strata drain");
#endif
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, interval, [this] { return quit_; })) {
      lock.unlock();
      try {
        registry::instance().drain_all();
        passes_.fetch_add(1, std::memory_order_release);
      } catch (...) {
        // Out of memory growing a drained list: the ring keeps its records (a drain takes
        // nothing until it has room for them) and the next drain tries again.
      }
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool quit_ = false;  // guarded by mutex_
  std::atomic<std::uint64_t> passes_{0};
  std::thread worker_;
};

}  // namespace detail
}  // namespace v1
}  // namespace strata
