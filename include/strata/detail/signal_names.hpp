// strata/detail/signal_names.hpp: the signals an on-demand capture may be asked to answer, by
// name or number (STRATA_ONDEMAND_SIGNAL), for the environment's parser (env_capture.hpp) and for
// the compiled-out implementation, which still answers the signal (impl/env_capture.hpp) without
// compiling the parser.
#pragma once

#include <csignal>
#include <cstddef>
#include <string_view>

namespace strata {
inline namespace v1 {
namespace detail {

struct named_signal {
  const char* name;
  int number;
};
/// The signals STRATA_ONDEMAND_SIGNAL takes by name: those a program may be sent to ask for
/// something, not those that report a fault or cannot be caught.
inline constexpr named_signal named_signals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
    {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"URG", SIGURG},   {"WINCH", SIGWINCH}};

/// `text` (without surrounding blanks) as a signal of the table: `SIGUSR2`, `USR2`, `12`, or a
/// real-time signal's number; 0 when it is none of them.
inline int signal_number(std::string_view text) noexcept {
  const std::string_view bare = text.starts_with("SIG") ? text.substr(3) : text;
  for (const auto& n : named_signals)
    if (bare == n.name) return n.number;
  if (text.empty() || text.size() > 6) return 0;
  long long number = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return 0;
    number = number * 10 + (c - '0');
  }
  for (const auto& n : named_signals)
    if (number == n.number) return n.number;
#if defined(SIGRTMIN)
  if (number >= SIGRTMIN && number <= SIGRTMAX) return static_cast<int>(number);
#endif
  return 0;
}

/// How a signal is named on a kill command line ("USR2"); null for one of no name in the table
/// (a real-time signal), which is named by its number.
inline const char* kill_name(int sig) noexcept {
  for (const auto& n : named_signals)
    if (n.number == sig) return n.name;
  return nullptr;
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
