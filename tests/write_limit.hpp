// tests/write_limit.hpp: makes writes past a size fail, to test what happens on a full disk.
#pragma once

#include <csignal>

#include <sys/resource.h>

namespace strata_test {

/// While alive, this process cannot grow a regular file past `bytes`: writes beyond it fail
/// with EFBIG (SIGXFSZ, which would kill the process, is ignored meanwhile). Tests that use it
/// must not run other threads that write files.
class write_limit {
 public:
  explicit write_limit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    saved_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lowered);
  }
  write_limit(const write_limit&) = delete;
  write_limit& operator=(const write_limit&) = delete;
  ~write_limit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, saved_handler_);
  }

 private:
  rlimit saved_{};
  void (*saved_handler_)(int) = SIG_DFL;
};

}  // namespace strata_test
