// examples/command_line.hpp: the examples' shared command line: an optional output directory,
// then `--flag value` pairs; bad input prints a one-line reason and the usage, exit code 2.
#pragma once

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "strata/sim/core_params.hpp"

namespace examples {

class command_line {
 public:
  command_line(std::string program, std::string usage) : program_(std::move(program)), usage_(std::move(usage)) {}

  /// Reads `argv`: returns the output directory (`out_dir` when none is given) and calls
  /// `on_flag(flag, value)` for each pair, which returns false for a flag it does not know.
  template <class OnFlag>
  std::string parse(int argc, char** argv, std::string out_dir, OnFlag&& on_flag) const {
    for (int i = 1; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (a.empty() || a[0] != '-') {
        out_dir = std::string(a);
        continue;
      }
      if (i + 1 >= argc) fail(fmt::format("{} needs a value", a));
      if (!on_flag(a, std::string_view(argv[++i]))) fail(fmt::format("unknown option {}", a));
    }
    return out_dir;
  }

  /// A whole number in [lo, hi].
  std::size_t number(std::string_view flag, std::string_view text, std::size_t lo, std::size_t hi) const {
    std::size_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
      fail(fmt::format("{} '{}': expected a whole number from {} to {}", flag, text, lo, hi));
    return v;
  }

  /// trn1 or trn2.
  strata::sim::core_generation generation(std::string_view text) const {
    try {
      return strata::sim::parse_core_generation(text);
    } catch (const strata::error& e) {
      fail(e.what());
    }
  }

  [[noreturn]] void fail(const std::string& problem) const {
    std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program_.c_str(), problem.c_str(), program_.c_str(),
                 usage_.c_str());
    std::exit(2);
  }

 private:
  std::string program_, usage_;
};

}  // namespace examples
