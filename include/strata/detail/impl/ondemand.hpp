// strata/detail/impl/ondemand.hpp: on-demand capture (strata/ondemand.hpp). Part of strata's
// implementation (strata/implementation.hpp).
//
// One service per process, with a thread of its own ("strata ondemand") started by the first
// request or by STRATA_ONDEMAND=1:
//
//   signal ──▶ handler: a flag and one byte into a pipe ──┐
//   request_capture(): starts the profiler session ──wake─┤
//   step() ending the capture: hands the records over ────┤  (the profiler's window sink)
//                                                          ▼
//   "strata ondemand": polls the pipe (and the duration's deadline), starts a signal's capture,
//   stops the session, orders the records and writes the file, one line on stderr.
//
// Locks, in the order they nest: the service's `mutex_`, the profiler's session control mutex
// (start, step, stop), the service's `handoff_mutex_`. The sink runs inside step() with the
// control mutex held, so it takes only the last.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "strata/error.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/export/perfetto_trace.hpp"
#include "strata/ondemand.hpp"
#include "strata/profiler.hpp"
#include "strata/detail/background_thread.hpp"
#include "strata/detail/impl/profiler.hpp"
#include "strata/detail/session.hpp"
#include "strata/detail/trace_file.hpp"

namespace strata {
inline namespace v1 {
namespace detail {

// What the signal handler touches: a lock-free flag and the pipe's write end (set before the
// handler is installed, never closed).
inline constinit std::atomic<int> ondemand_signal_pending{0};
inline constinit std::atomic<int> ondemand_wake_fd{-1};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");

extern "C" inline void ondemand_signal_handler(int) {
  const int saved = errno;  // async-signal-safe only: an atomic store and write(2)
  ondemand_signal_pending.store(1, std::memory_order_relaxed);
  const int fd = ondemand_wake_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const char byte = 's';
    [[maybe_unused]] const ssize_t n = ::write(fd, &byte, 1);  // full pipe: a wake-up is pending
  }
  errno = saved;
}

/// An error's message without strata::error's "strata: ", to be quoted inside another.
inline std::string without_prefix(std::string_view what) {
  if (what.starts_with("strata: ")) what.remove_prefix(8);
  return std::string(what);
}

/// A signal's name for messages: "SIGUSR2", or "signal 40".
inline std::string signal_name(int sig) {
#if defined(__GLIBC__)
  if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#endif
  return "signal " + std::to_string(sig);
}

class ondemand_service {
 public:
  static ondemand_service& instance() {
    static ondemand_service* s = new ondemand_service;  // never destroyed: used at exit
    return *s;
  }

  void enable(const ondemand_settings& settings) {
    std::lock_guard lock(mutex_);
    if (settings.steps <= 0 && settings.duration.count() <= 0)
      throw error("on-demand capture needs a number of steps or a duration");
    if (settings.config.schedule.enabled() || settings.config.on_trace_ready)
      throw error("on-demand capture chooses its own steps and file: leave the configuration's "
                  "schedule and on_trace_ready unset");
    { profiler check(settings.config); }  // names a bad configuration now, not at the signal
    start_thread_locked();
    if (settings.signal != 0) {
      struct sigaction old {};
      if (::sigaction(settings.signal, nullptr, &old) != 0)
        throw error("STRATA_ONDEMAND_SIGNAL: " + signal_name(settings.signal) +
                    " cannot be caught; choose another signal, such as SIGUSR2");
      if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL)
        throw error("STRATA_ONDEMAND_SIGNAL: " + signal_name(settings.signal) +
                    " is already handled or ignored in this program; choose another signal");
      struct sigaction act {};
      act.sa_handler = ondemand_signal_handler;
      sigemptyset(&act.sa_mask);
      act.sa_flags = SA_RESTART;
      if (::sigaction(settings.signal, &act, nullptr) != 0)
        throw error("STRATA_ONDEMAND_SIGNAL: " + signal_name(settings.signal) +
                    " cannot be caught; choose another signal, such as SIGUSR2");
    }
    defaults_ = settings;
  }

  /// `from`: who asked, for messages ("request_capture", "SIGUSR2").
  capture_result request(const capture_request& r, const std::string& from) noexcept {
    try {
      std::lock_guard lock(mutex_);
      return request_locked(r, from);
    } catch (const std::exception& e) {
      return {capture_outcome::invalid,
              "strata: on-demand capture not started: " + without_prefix(e.what())};
    }
  }

  capture_state state() {
    std::lock_guard lock(mutex_);
    return state_;
  }

 private:
  ondemand_service() = default;

  capture_result request_locked(const capture_request& r, const std::string& from) {
    if (exiting_)
      return {capture_outcome::invalid, "strata: on-demand capture refused: the program is exiting"};
    if (state_.running)
      return {capture_outcome::capture_running,
              "strata: on-demand capture refused: the capture of " + what_ + " (asked by " + asked_by_ +
                  ") is still running; ask again once its trace is written"};
    std::int64_t steps = r.steps;
    std::chrono::milliseconds duration = r.duration;
    if (steps < 0 || duration.count() < 0)
      return {capture_outcome::invalid,
              "strata: capture_request: steps and duration must not be negative"};
    if (steps > 0 && duration.count() > 0)
      return {capture_outcome::invalid,
              "strata: capture_request: set steps or duration, not both"};
    if (steps == 0 && duration.count() == 0) {
      steps = defaults_.steps;
      duration = defaults_.duration;
      if (duration.count() > 0) steps = 0;
    }
    if (steps > INT_MAX)
      return {capture_outcome::invalid, "strata: capture_request: steps " + std::to_string(steps) +
                                            " is above the limit of " + std::to_string(INT_MAX)};
    profiler_config config = r.config ? *r.config : defaults_.config;
    if (config.schedule.enabled() || config.on_trace_ready)
      return {capture_outcome::invalid,
              "strata: capture_request: the configuration's schedule and on_trace_ready must stay "
              "unset (the capture chooses its steps and writes its own file)"};
    // One step of waiting first: the capture begins at the next step boundary, so that each of
    // its steps is whole.
    if (steps > 0) config.schedule = {.wait = 1, .active = static_cast<int>(steps), .repeat = 1};
    if (active_profiler.load() != nullptr)
      return {capture_outcome::profiler_running,
              "strata: on-demand capture refused: another strata::profiler is recording "
              "(the program's own, or STRATA_PROFILE=1); one profiler records at a time"};
    start_thread_locked();
    const std::string dir = config.output_dir;
    auto prof = std::make_unique<profiler>(std::move(config));
    profiler_access::set_window_sink(*prof, [this](std::shared_ptr<trace_data> ended) {
      {
        std::lock_guard handoff(handoff_mutex_);
        ended_ = std::move(ended);
      }
      wake();
    });
    try {
      prof->start();
    } catch (const error& e) {
      if (active_profiler.load() != nullptr)
        return {capture_outcome::profiler_running,
                "strata: on-demand capture refused: " + without_prefix(e.what())};
      throw;
    }
    profiler_ = std::move(prof);
    steps_ = steps;
    duration_ = duration;
    deadline_ = std::chrono::steady_clock::now() + duration;
    dir_ = dir;
    perfetto_ = defaults_.perfetto;
    number_ = ++requests_;
    what_ = steps > 0 ? std::to_string(steps) + (steps == 1 ? " step" : " steps")
                      : std::to_string(duration.count()) + " ms";
    asked_by_ = from;
    state_.running = true;
    wake();  // the thread's deadline changed
    return {capture_outcome::accepted,
            "strata: on-demand capture of " +
                (steps > 0 ? "the next " + what_ : what_) + " into " + dir + " started"};
  }

  void wake() noexcept {
    const char byte = 'w';
    [[maybe_unused]] const ssize_t n = ::write(pipe_[1], &byte, 1);
  }

  void start_thread_locked() {
    if (thread_.joinable()) return;
    if (pipe_[0] < 0) {
      if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
        throw error(std::string("on-demand capture: pipe2 failed: ") + std::strerror(errno));
      ondemand_wake_fd.store(pipe_[1], std::memory_order_relaxed);
    }
    thread_ = std::thread([this] { run(); });
    std::atexit([] { ondemand_service::instance().shutdown(); });
  }

  // At exit: a capture still running is stopped and its partial trace written, then the thread
  // is joined.
  void shutdown() noexcept {
    {
      std::lock_guard lock(mutex_);
      exiting_ = true;
    }
    wake();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

  void run() noexcept {
    become_background_thread("strata ondemand");
    for (;;) {
      int timeout = -1;
      {
        std::lock_guard lock(mutex_);
        if (profiler_ && duration_.count() > 0) {
          const auto left = std::chrono::ceil<std::chrono::milliseconds>(
              deadline_ - std::chrono::steady_clock::now());
          timeout = static_cast<int>(std::max<std::int64_t>(left.count(), 0));
        }
      }
      pollfd p{pipe_[0], POLLIN, 0};
      ::poll(&p, 1, timeout);
      char sink[64];
      while (::read(pipe_[0], sink, sizeof sink) > 0) {
      }
      if (ondemand_signal_pending.exchange(0, std::memory_order_relaxed) != 0) {
        const capture_result r = request({}, signal_name(defaults_signal()));
        if (!r) std::fprintf(stderr, "%s\n", r.message.c_str());
      }
      std::unique_lock lock(mutex_);
      if (!profiler_) {
        if (exiting_) return;
        continue;
      }
      std::shared_ptr<trace_data> ended = take_ended();
      const bool due = duration_.count() > 0 && std::chrono::steady_clock::now() >= deadline_;
      if (!ended && !due && !exiting_) continue;
      finish(lock, std::move(ended));
      if (exiting_) return;
    }
  }

  int defaults_signal() {
    std::lock_guard lock(mutex_);
    return defaults_.signal;
  }

  std::shared_ptr<trace_data> take_ended() {
    std::lock_guard handoff(handoff_mutex_);
    return std::move(ended_);
  }

  // Stops the session (a window still open is handed over by stop()), then writes the trace
  // with `mutex_` released: requests meanwhile are refused, since `state_.running` stays set.
  void finish(std::unique_lock<std::mutex>& lock, std::shared_ptr<trace_data> ended) noexcept {
    const bool partial = !ended;  // the steps did not all come: the duration ended, or exit
    std::string stop_error;
    try {
      profiler_->stop();
    } catch (const std::exception& e) {
      stop_error = e.what();
    }
    if (!ended) ended = take_ended();
    profiler_.reset();
    const std::string what = what_;
    const std::string dir = dir_;
    const bool perfetto = perfetto_;
    const std::uint64_t number = number_;
    const bool exiting = exiting_;
    const bool by_steps = steps_ > 0;
    lock.unlock();

    std::string file;
    std::string failure;
    std::string line;
    if (!ended) {
      failure = "the capture of " + what + " ended" + (exiting ? " at exit" : "") +
                " before its first step; nothing was written";
      line = "strata: on-demand " + failure;
    } else {
      try {
        order_session(*ended);
        ended->clock.finish();
        const std::string stem =
            "ondemand-" + std::to_string(detail::atomic_file::process_id()) + "-" + std::to_string(number);
        const std::filesystem::path path = unused_path(dir, stem, perfetto ? ".pftrace" : ".json");
        file = write_trace(*ended, path).path;
        char counts[160];
        std::snprintf(counts, sizeof counts, " (%llu records from %llu threads, %llu lost)",
                      static_cast<unsigned long long>(ended->recorded()),
                      static_cast<unsigned long long>(ended->host_threads()),
                      static_cast<unsigned long long>(ended->lost()));
        line = "strata: on-demand capture of " + what +
               (partial && by_steps ? " (partial: the program exited first)" : "") + " written to " +
               file + counts;
      } catch (const std::exception& e) {
        failure = e.what();
        line = "strata: on-demand capture of " + what + " not written: " + failure;
      }
    }
    if (!stop_error.empty()) line += " (" + stop_error + ")";
    std::fprintf(stderr, "%s\n", line.c_str());

    lock.lock();
    state_.running = false;
    if (!file.empty()) {
      ++state_.written;
      state_.last_file = file;
      state_.last_error.clear();
    } else {
      state_.last_error = failure;
    }
  }

  std::mutex mutex_;
  ondemand_settings defaults_;
  capture_state state_;
  std::unique_ptr<profiler> profiler_;  // the running capture's
  std::int64_t steps_ = 0;
  std::chrono::milliseconds duration_{0};
  std::chrono::steady_clock::time_point deadline_;
  std::string dir_;
  bool perfetto_ = false;
  std::uint64_t number_ = 0;
  std::uint64_t requests_ = 0;
  std::string what_;      // "10 steps", "500 ms"
  std::string asked_by_;  // "request_capture", "SIGUSR2"
  bool exiting_ = false;
  std::thread thread_;
  int pipe_[2] = {-1, -1};

  std::mutex handoff_mutex_;
  std::shared_ptr<trace_data> ended_;  // the window the capture's last step handed over
};

void enable_ondemand(const ondemand_settings& settings) {
  ondemand_service::instance().enable(settings);
}

}  // namespace detail

capture_result request_capture(const capture_request& request) noexcept {
  return detail::ondemand_service::instance().request(request, "request_capture");
}

capture_state ondemand_state() { return detail::ondemand_service::instance().state(); }

}  // namespace v1
}  // namespace strata
