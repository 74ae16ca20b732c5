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

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <signal.h>
#include <unistd.h>

#include "strata/config.hpp"
#include "strata/detail/signal_names.hpp"
#if STRATA_ENABLED
#include <exception>
#include <memory>
#include <string>

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

// What the notice handler writes: formatted once, before the handler is installed, and never
// changed after. The size is read and written with __atomic built-ins (lock-free, so safe in a
// handler, and ordered for a thread checker) instead of std::atomic, which would make the
// compiled-out implementation's file read <atomic>.
inline constinit char signal_notice[160] = {};
inline constinit std::size_t signal_notice_size = 0;

extern "C" inline void signal_notice_handler(int) {
  const int saved = errno;  // async-signal-safe: an atomic load and write(2) only
  const std::size_t size = __atomic_load_n(&signal_notice_size, __ATOMIC_ACQUIRE);
  if (size != 0) {
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, signal_notice, size);
  }
  errno = saved;
}

/// Gives `sig`, if it is still at its default action, a handler that only writes "strata:
/// signal USR2 ignored: `why`" on stderr: a signal meant for an on-demand capture that is off
/// then leaves the program running. One notice per process: a second call keeps the first text.
inline void install_signal_notice(int sig, const char* why) noexcept {
  struct sigaction old {};
  if (::sigaction(sig, nullptr, &old) != 0) return;
  if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) return;  // the program's
  if (__atomic_load_n(&signal_notice_size, __ATOMIC_ACQUIRE) == 0) {
    constexpr std::size_t room = sizeof signal_notice;
    const char* name = kill_name(sig);
    const int n = name != nullptr
                      ? std::snprintf(signal_notice, room, "strata: signal %s ignored: %s\n", name, why)
                      : std::snprintf(signal_notice, room, "strata: signal %d ignored: %s\n", sig, why);
    if (n <= 0) return;
    const std::size_t size = static_cast<std::size_t>(n) < room ? static_cast<std::size_t>(n) : room - 1;
    signal_notice[size - 1] = '\n';  // a cut notice still ends its line
    __atomic_store_n(&signal_notice_size, size, __ATOMIC_RELEASE);
  }
  struct sigaction act {};
  act.sa_handler = signal_notice_handler;
  sigemptyset(&act.sa_mask);
  act.sa_flags = SA_RESTART;
  ::sigaction(sig, &act, nullptr);
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
        const char* name = kill_name(ondemand->signal);
        const std::string kill = name != nullptr ? name : std::to_string(ondemand->signal);
        std::fprintf(stderr, "strata: on-demand capture armed: kill -%s %ld records %s into %s\n",
                     kill.c_str(), detail::atomic_file::process_id(), what.c_str(),
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
        install_signal_notice(sig, "on-demand capture is off for this run (a STRATA_* value "
                                   "was named at start-up)");
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
    install_signal_notice(sig, "strata is compiled out (STRATA_ENABLED=0), no capture");
  }
  return false;
#endif
}

// Armed once per process, by the implementation's file; see the top of this file for the order.
const bool env_capture_armed = arm_from_environment();

}  // namespace detail
}  // namespace v1
}  // namespace strata
