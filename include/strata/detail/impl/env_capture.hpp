// strata/detail/impl/env_capture.hpp: every program that compiles strata's implementation reads the
// STRATA_* environment when it starts. Part of strata's implementation
// (strata/implementation.hpp includes it last, with STRATA_ENABLED=0 too).
//
//   STRATA_PROFILE=1      a process-wide profiler from start-up; its trace is written at exit
//   STRATA_ONDEMAND=1     on-demand capture armed: a signal (SIGUSR2) records the next steps
//   STRATA_CRASH_DUMP=1   with either, and for the C API's strata_start(): a crash dump
//   any other STRATA_*    named on stderr, with the closest known name
//
// The environment is read once, during the static initialisation of the implementation's file,
// after every variable of the implementation (they are all defined above the line that arms,
// so they are initialised first); a program's own globals in other files may be initialised
// before or after it, and record only once a session runs. A bad value never stops the program:
// it is named on stderr and that capture stays off. With STRATA_ONDEMAND set but the capture
// off (a bad value, or strata compiled out), the signal still gets a handler, one that says the
// capture is off, so that it does not end the process; with STRATA_ONDEMAND unset nothing is
// installed.
//
// A program that must not be profiled from the environment (a tool that reads traces, which
// STRATA_PROFILE=1 exported in a shell would otherwise have write its own trace over the one it
// reads) defines, in any of its files: `extern "C" const bool strata_ignore_environment = true;`
#pragma once

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include <signal.h>
#include <unistd.h>

#include "strata/config.hpp"
#include "strata/detail/signal_names.hpp"
#if STRATA_ENABLED
#include "strata/detail/env_capture.hpp"
#include "strata/detail/trace_file.hpp"
#include "strata/detail/impl/profiler.hpp"  // environment_profiler
#include "strata/ondemand.hpp"
#include "strata/profiler.hpp"
#else
#include "strata/detail/impl/compiled_out.hpp"  // say_compiled_out; the parser is left out, to keep
                                         // the compiled-out file as quick to compile as it was
#endif

extern "C" {
extern char** environ;
/// Defined (as true) by a program that opts out of reading the environment; weak, so that
/// the implementation links without it.
[[gnu::weak]] extern const bool strata_ignore_environment;
}

namespace strata {
inline namespace v1 {
namespace detail {

// What the notice handler writes: set before it is installed, never freed. Atomics, lock-free,
// so that the handler's read is one a thread checker sees ordered after the write.
inline constinit std::atomic<const char*> signal_notice{nullptr};
inline constinit std::atomic<std::size_t> signal_notice_size{0};
static_assert(std::atomic<const char*>::is_always_lock_free, "the signal handler needs lock-free atomics");

extern "C" inline void signal_notice_handler(int) {
  const int saved = errno;  // async-signal-safe: atomic loads and write(2) only
  const char* text = signal_notice.load(std::memory_order_acquire);
  if (text != nullptr) {
    [[maybe_unused]] const ssize_t n =
        ::write(STDERR_FILENO, text, signal_notice_size.load(std::memory_order_relaxed));
  }
  errno = saved;
}

/// Gives `sig`, if it is still at its default action, a handler that only writes `message` on
/// stderr: a signal meant for an on-demand capture that is off then leaves the program running.
inline void install_signal_notice(int sig, const std::string& message) noexcept {
  try {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) return;
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) return;  // the program's
    static const std::string* kept = new std::string(message);  // one notice per process
    signal_notice_size.store(kept->size(), std::memory_order_relaxed);
    signal_notice.store(kept->c_str(), std::memory_order_release);
    struct sigaction act {};
    act.sa_handler = signal_notice_handler;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_RESTART;
    ::sigaction(sig, &act, nullptr);
  } catch (...) {
    // Out of memory at start-up: the signal keeps its default action.
  }
}

/// Without surrounding blanks.
inline std::string_view unpadded(const char* value) noexcept {
  std::string_view s = value != nullptr ? value : "";
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// The signal an on-demand capture was asked to answer: STRATA_ONDEMAND_SIGNAL's, or SIGUSR2
/// when it is unset or not a signal strata takes.
inline int ondemand_signal_asked() noexcept {
  const int sig = signal_number(unpadded(std::getenv("STRATA_ONDEMAND_SIGNAL")));
  return sig != 0 ? sig : SIGUSR2;
}

/// Whether a switch variable (STRATA_PROFILE, STRATA_ONDEMAND) is set to anything but 0.
inline bool switched_on(const char* value) noexcept {
  return !unpadded(value).empty() && unpadded(value) != "0";
}

#if STRATA_ENABLED

/// The process-wide profiler of STRATA_PROFILE=1; exports when the process exits.
class env_capture {
 public:
  static env_capture& instance() {
    static env_capture* c = new env_capture;  // never destroyed: the atexit handler uses it
    return *c;
  }

  /// Starts what the environment asks for. Never throws: problems go to stderr.
  bool arm() noexcept {
    const env_lookup lookup = [](const char* n) { return std::getenv(n); };
    const bool ondemand_asked = switched_on(lookup(env_name("STRATA_ONDEMAND")));
    try {
      if (auto ondemand = ondemand_settings_from_env(lookup)) {
        enable_ondemand(*ondemand);
        const std::string what =
            ondemand->duration.count() > 0
                ? std::to_string(ondemand->duration.count()) + " ms"
                : "the next " + std::to_string(ondemand->steps) + " steps";
        std::fprintf(stderr, "strata: on-demand capture armed: kill -%s %ld records %s into %s\n",
                     kill_name(ondemand->signal).c_str(), detail::atomic_file::process_id(), what.c_str(),
                     ondemand->config.output_dir.c_str());
        return true;
      }
      auto config = capture_config_from_env(lookup);
      if (!config) return false;
      format_ = trace_format_from_env(lookup);
      profiler_ = std::make_unique<profiler>(std::move(*config));
      profiler_->start();
      environment_profiler.store(profiler_.get());
      std::atexit([] { env_capture::instance().finish(); });
      return true;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s (from the STRATA_* environment); profiling is off for this run\n",
                   e.what());
      profiler_.reset();
      if (ondemand_asked) {
        const int sig = ondemand_signal_asked();
        install_signal_notice(sig, "strata: signal " + kill_name(sig) +
                                       " ignored: on-demand capture is off for this run (a "
                                       "STRATA_* value was named at start-up)\n");
      }
      return false;
    }
  }

  /// Stops and exports; called once at exit.
  void finish() noexcept {
    if (!profiler_) return;
    try {
      profiler_->stop();
      const auto written = format_ == trace_format::perfetto ? profiler_->export_perfetto_trace()
                                                             : profiler_->export_chrome_trace();
      const auto s = profiler_->stats();
      std::fprintf(stderr, "strata: wrote %s (%llu records from %llu threads, %llu lost)\n",
                   written.path.c_str(), static_cast<unsigned long long>(s.recorded),
                   static_cast<unsigned long long>(s.threads),
                   static_cast<unsigned long long>(s.dropped));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s; the trace of this run was not written\n", e.what());
    }
    environment_profiler.store(nullptr);
    profiler_.reset();
  }

 private:
  env_capture() = default;
  std::unique_ptr<profiler> profiler_;
  trace_format format_ = trace_format::chrome_json;
};

#endif

/// Reads the environment: names the STRATA_* variables strata does not know, then starts what
/// the known ones ask for. Never throws.
inline bool arm_from_environment() noexcept {
  if (&strata_ignore_environment != nullptr && strata_ignore_environment) return false;
#if STRATA_ENABLED
  try {
    for (const std::string& line : environment_notices(environ)) std::fprintf(stderr, "%s\n", line.c_str());
  } catch (...) {
    // Out of memory at start-up: the notices are skipped, the capture is still tried.
  }
  return env_capture::instance().arm();
#else
  // Compiled out: nothing to configure, so no notices; the switches are only answered.
  const bool ondemand = switched_on(std::getenv("STRATA_ONDEMAND"));
  if (ondemand || switched_on(std::getenv("STRATA_PROFILE"))) say_compiled_out();
  if (ondemand) {
    const int sig = ondemand_signal_asked();
    install_signal_notice(sig, "strata: signal " + kill_name(sig) +
                                   " ignored: strata is compiled out (STRATA_ENABLED=0), no "
                                   "capture\n");
  }
  return false;
#endif
}

// Armed once per process, by the implementation's file; see the top of this file for the order.
const bool env_capture_armed = arm_from_environment();

}  // namespace detail
}  // namespace v1
}  // namespace strata
