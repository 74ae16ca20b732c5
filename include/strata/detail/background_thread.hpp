// strata/detail/background_thread.hpp: how strata's own threads (the block store's writer, the
// window writer, on-demand capture) present themselves to the system.
//
// Each is named, so that top, gdb and perf show what it is. Each also runs as SCHED_BATCH on
// Linux: it keeps its fair share of the CPU, but waking it never preempts the thread that woke
// it. Without that, the step that ends a schedule's window (which wakes the window writer) or a
// recording thread handing off a block (which may wake the store's writer) was often switched
// out on the spot for the thread it woke, which then ordered and wrote a whole window before
// the step could return: 60-400 us for a step that otherwise takes 4 us.
#pragma once

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace strata {
inline namespace v1 {
namespace detail {

/// Names the calling thread `name` (at most 15 characters) and makes it a background thread.
/// Either may fail (an old kernel, a sandbox): the thread then runs as it was.
inline void become_background_thread(const char* name) noexcept {
#if defined(__linux__)
  pthread_setname_np(pthread_self(), name);
  sched_param param{};
  param.sched_priority = 0;
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
#else
  static_cast<void>(name);
#endif
}

}  // namespace detail
}  // namespace v1
}  // namespace strata
