// A program that carries strata's scopes and marks its steps, started with STRATA_ONDEMAND=1 by
// check_ondemand.py, which drives it through stdin, one command a line, so that every step is
// taken when the test says so (nothing depends on timing):
//
//   step N     N steps, each one "work" scope, then STRATA_STEP(); prints "stepped N"
//   request N  request_capture({.steps = N}); prints "request <outcome>: <message>"
//   state      prints "state <running> <written>"
//   spin MS    records "work" scopes without steps for MS ms (a capture by duration)
//   quit       returns from main (exit status 0)
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "strata/macros.hpp"
#include "strata/ondemand.hpp"

namespace {

const char* outcome_name(strata::capture_outcome o) {
  switch (o) {
    case strata::capture_outcome::accepted: return "accepted";
    case strata::capture_outcome::capture_running: return "capture_running";
    case strata::capture_outcome::profiler_running: return "profiler_running";
    case strata::capture_outcome::invalid: return "invalid";
    case strata::capture_outcome::compiled_out: return "compiled_out";
  }
  return "?";
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string command;
    long long n = 0;
    in >> command >> n;
    if (command == "step") {
      for (long long i = 0; i < n; ++i) {
        { STRATA_SCOPE("work"); }
        STRATA_STEP();
      }
      std::printf("stepped %lld\n", n);
    } else if (command == "request") {
      const strata::capture_result r = strata::request_capture({.steps = n});
      std::printf("request %s: %s\n", outcome_name(r.outcome), r.message.c_str());
    } else if (command == "state") {
      const strata::capture_state s = strata::ondemand_state();
      std::printf("state %d %llu\n", s.running ? 1 : 0, static_cast<unsigned long long>(s.written));
    } else if (command == "spin") {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(n);
      while (std::chrono::steady_clock::now() < until) STRATA_SCOPE("work");
      std::printf("spun\n");
    } else if (command == "quit") {
      break;
    } else {
      std::printf("unknown command %s\n", command.c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
