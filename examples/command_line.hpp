// examples/command_line.hpp: the examples' shared command line: an optional output directory,
// then `--flag value` pairs from a table of the options the example knows. `--help` prints the
// table and the files the example writes, exit code 0; bad input prints a one-line reason and
// the usage, exit code 2.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/sim/core_params.hpp"

namespace examples {

/// One `--flag VALUE` the example reads.
struct option {
  std::string_view flag;   ///< "--rows"
  std::string_view value;  ///< what the value is, for the usage line: "N", "trn1|trn2"; empty: a switch
                           ///< that takes no value (on_flag gets an empty value)
  std::string_view help;   ///< one line: what it sets, its range and default
};

/// A file the example writes, for `--help`.
struct output {
  std::string_view path;  ///< under OUTPUT_DIR: "OUTPUT_DIR/trace.json"
  std::string_view what;
};

class command_line {
 public:
  /// `summary`: one line saying what the example shows; `default_out`: the output directory
  /// when none is given.
  command_line(std::string program, std::string summary, std::string default_out, std::initializer_list<option> options,
               std::initializer_list<output> outputs)
      : program_(std::move(program)),
        summary_(std::move(summary)),
        default_out_(std::move(default_out)),
        options_(options),
        outputs_(outputs) {}

  /// Reads `argv`: returns the output directory (the default when none is given) and calls
  /// `on_flag(flag, value)` for each option of the table, which returns false for a flag it does
  /// not handle. `--help` prints the help and exits 0.
  template <class OnFlag>
  std::string parse(int argc, char** argv, OnFlag&& on_flag) const {
    std::string out_dir = default_out_;
    for (int i = 1; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (a == "--help" || a == "-h") {
        std::fputs(help().c_str(), stdout);
        std::exit(0);
      }
      if (a.empty() || a[0] != '-') {
        out_dir = std::string(a);
        continue;
      }
      if (!known(a)) fail(fmt::format("unknown option {}", a));
      if (is_switch(a)) {
        if (!on_flag(a, std::string_view())) fail(fmt::format("unknown option {}", a));
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
    std::fprintf(stderr, "%s: %s\nusage: %s\n(%s --help says more)\n", program_.c_str(), problem.c_str(),
                 usage().c_str(), program_.c_str());
    std::exit(2);
  }

  std::string usage() const {
    std::string u = program_ + " [OUTPUT_DIR]";
    for (const option& o : options_)
      u += o.value.empty() ? fmt::format(" [{}]", o.flag) : fmt::format(" [{} {}]", o.flag, o.value);
    return u;
  }

  std::string help() const {
    std::vector<std::pair<std::string, std::string>> rows;
    rows.emplace_back("OUTPUT_DIR", "where the files go (default: " + default_out_ + ")");
    for (const option& o : options_)
      rows.emplace_back(o.value.empty() ? std::string(o.flag) : fmt::format("{} {}", o.flag, o.value),
                        std::string(o.help));
    rows.emplace_back("--help", "print this and exit");
    const std::size_t options_end = rows.size();
    for (const output& o : outputs_) rows.emplace_back(std::string(o.path), std::string(o.what));
    std::size_t width = 0;
    for (const auto& row : rows) width = std::max(width, row.first.size());

    std::string h = fmt::format("{}: {}\n\nusage: {}\n\n", program_, summary_, usage());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (i == options_end) h += "\nwrites:\n";
      h += fmt::format("  {:<{}}  {}\n", rows[i].first, width, rows[i].second);
    }
    return h;
  }

 private:
  bool is_switch(std::string_view flag) const {
    for (const option& o : options_)
      if (o.flag == flag) return o.value.empty();
    return false;
  }

  bool known(std::string_view flag) const {
    for (const option& o : options_)
      if (o.flag == flag) return true;
    return false;
  }

  std::string program_, summary_, default_out_;
  std::vector<option> options_;
  std::vector<output> outputs_;
};

}  // namespace examples
