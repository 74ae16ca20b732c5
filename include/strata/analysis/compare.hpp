// strata/analysis/compare.hpp: two key_averages() side by side, per op, with the ratio B/A, to
// compare implementations of the same work (rules: docs/key-averages.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "strata/analysis/averages.hpp"
#include "strata/detail/json_escape.hpp"
#include "strata/detail/table_format.hpp"

namespace strata {
inline namespace v1 {

/// One op in both runs; a side where the op did not occur is empty.
struct compare_row {
  std::string name = {};
  std::string input_shapes = {};
  bool is_device = false;
  std::optional<average_row> a = {};
  std::optional<average_row> b = {};
};

/// B/A of one quantity, or nothing when A is 0 or a side is missing.
inline std::optional<double> ratio_b_over_a(std::int64_t a, std::int64_t b) noexcept {
  if (a == 0) return std::nullopt;
  return static_cast<double>(b) / static_cast<double>(a);
}

struct compare_options {
  std::string label_a = "A";
  std::string label_b = "B";
};

struct compare_table_options {
  int row_limit = -1;                     ///< negative: no limit
  std::size_t max_name_column_width = 55; ///< 0: no limit
  std::string_view time_unit = {};        ///< "s", "ms", "us"; anything else: automatic
};

/// Two runs matched by key (name, input shapes, host or device).
///
/// **Example**
/// ```
/// auto diff = strata::compare(strata::key_averages(eager), strata::key_averages(compiled),
///                             {.label_a = "eager", .label_b = "compiled"});
/// fmt::print("{}", diff.table());
/// ```
struct comparison {
  std::vector<compare_row> rows = {};  ///< A's rows in A's order, then B-only rows in B's order
  std::string label_a = "A";
  std::string label_b = "B";
  std::string device_name = "NEURON";

  bool has_device_time() const noexcept {
    return std::any_of(rows.begin(), rows.end(), [](const compare_row& r) {
      return (r.a && r.a->device_total_ns > 0) || (r.b && r.b->device_total_ns > 0);
    });
  }

  /// Columns: Name, calls, self CPU, CPU total and (with device time) device total, each as
  /// A, B and B/A; "-" where a side lacks the op, "--" where the ratio is undefined.
  std::string table(const compare_table_options& opt = {}) const {
    const bool device = has_device_time();
    std::vector<std::string> headers = {"Name"};
    const auto triple = [&](std::string_view what) {
      headers.push_back(fmt::format("{} {}", what, label_a));
      headers.push_back(fmt::format("{} {}", what, label_b));
      headers.push_back(fmt::format("{} {}/{}", what, label_b, label_a));
    };
    triple("Calls");
    triple("Self CPU");
    triple("CPU total");
    if (device) triple(device_name + " total");
    std::vector<std::size_t> widths;
    for (const auto& h : headers) widths.push_back(std::max<std::size_t>(12, h.size()));
    std::size_t name_width = 4;
    for (const auto& r : rows) name_width = std::max(name_width, r.name.size() + 4);
    if (opt.max_name_column_width != 0) name_width = std::min(name_width, opt.max_name_column_width);
    widths.front() = name_width;

    const auto time = [&](std::int64_t ns) {
      return detail::format_time_ns(static_cast<double>(ns), opt.time_unit);
    };
    const auto ratio_cell = [](std::int64_t a, std::int64_t b) {
      const auto q = ratio_b_over_a(a, b);
      return q ? fmt::format("{:.2f}x", *q) : std::string("--");
    };

    std::string out;
    detail::append_separator(out, widths);
    detail::append_row(out, headers, widths);
    detail::append_separator(out, widths);
    int printed = 0;
    for (const auto& r : rows) {
      if (opt.row_limit >= 0 && printed == opt.row_limit) break;
      ++printed;
      std::string name = r.name;
      const std::size_t max = opt.max_name_column_width;
      if (max != 0 && name.size() + 3 >= max) name = name.substr(0, max >= 3 ? max - 3 : 0) + "...";
      std::vector<std::string> cells = {std::move(name)};
      const auto add = [&](auto field, auto fmt_value) {
        const bool both = r.a && r.b;
        cells.push_back(r.a ? fmt_value(field(*r.a)) : std::string("-"));
        cells.push_back(r.b ? fmt_value(field(*r.b)) : std::string("-"));
        cells.push_back(both ? ratio_cell(static_cast<std::int64_t>(field(*r.a)),
                                          static_cast<std::int64_t>(field(*r.b)))
                             : std::string("--"));
      };
      add([](const average_row& x) { return x.count; },
          [](std::uint64_t v) { return std::to_string(v); });
      add([](const average_row& x) { return x.self_cpu_ns; }, time);
      add([](const average_row& x) { return x.cpu_total_ns; }, time);
      if (device) add([](const average_row& x) { return x.device_total_ns; }, time);
      detail::append_row(out, cells, widths);
    }
    detail::append_separator(out, widths);
    return out;
  }

  /// One header line, one line per row; times in nanoseconds, empty fields for a missing side
  /// or an undefined ratio.
  std::string to_csv() const {
    std::string out =
        "Name,Input Shapes,Is Device,Calls A,Calls B,Calls B/A,Self CPU A,Self CPU B,"
        "Self CPU B/A,CPU total A,CPU total B,CPU total B/A,Device total A,Device total B,"
        "Device total B/A\n";
    for (const auto& r : rows) {
      detail::append_csv_string(out, r.name);
      out += ',';
      detail::append_csv_string(out, r.input_shapes);
      out += r.is_device ? ",1" : ",0";
      const auto add = [&](auto field) {
        const auto side = [&](const std::optional<average_row>& x) {
          return x ? fmt::format(",{}", field(*x)) : std::string(",");
        };
        out += side(r.a);
        out += side(r.b);
        const auto q = r.a && r.b ? ratio_b_over_a(static_cast<std::int64_t>(field(*r.a)),
                                          static_cast<std::int64_t>(field(*r.b)))
                                  : std::nullopt;
        out += q ? fmt::format(",{}", *q) : std::string(",");
      };
      add([](const average_row& x) { return x.count; });
      add([](const average_row& x) { return x.self_cpu_ns; });
      add([](const average_row& x) { return x.cpu_total_ns; });
      add([](const average_row& x) { return x.device_total_ns; });
      out += '\n';
    }
    return out;
  }

  /// An array of objects; `null` for a missing side or an undefined ratio.
  std::string to_json() const {
    fmt::memory_buffer out;
    const auto app = [&](std::string_view s) { out.append(s.data(), s.data() + s.size()); };
    app("[");
    bool first = true;
    for (const auto& r : rows) {
      detail::open_json_row(out, first, r.name, r.input_shapes);
      first = false;
      app(r.is_device ? ",\"is_device\":true" : ",\"is_device\":false");
      const auto add = [&](std::string_view key, auto field) {
        const auto side = [&](std::string_view suffix, const std::optional<average_row>& x) {
          fmt::format_to(std::back_inserter(out), ",\"{}_{}\":", key, suffix);
          if (x) fmt::format_to(std::back_inserter(out), "{}", field(*x));
          else app("null");
        };
        side("a", r.a);
        side("b", r.b);
        const auto q = r.a && r.b ? ratio_b_over_a(static_cast<std::int64_t>(field(*r.a)),
                                          static_cast<std::int64_t>(field(*r.b)))
                                  : std::nullopt;
        fmt::format_to(std::back_inserter(out), ",\"{}_ratio\":", key);
        if (q) fmt::format_to(std::back_inserter(out), "{}", *q);
        else app("null");
      };
      add("count", [](const average_row& x) { return x.count; });
      add("self_cpu_time_total_ns", [](const average_row& x) { return x.self_cpu_ns; });
      add("cpu_time_total_ns", [](const average_row& x) { return x.cpu_total_ns; });
      add("device_time_total_ns", [](const average_row& x) { return x.device_total_ns; });
      app("}");
    }
    app("]\n");
    return fmt::to_string(out);
  }
};

/// Matches the rows of two key_averages() results by key; an op of one run only still gets a
/// row, with the other side empty.
inline comparison compare(const averages& a, const averages& b, const compare_options& opt = {}) {
  comparison out;
  out.label_a = opt.label_a;
  out.label_b = opt.label_b;
  out.device_name = a.device_name;
  std::unordered_map<std::string, std::size_t> index;
  const auto key = [](const average_row& r) {
    std::string k = r.name;
    k += '\0';
    k += r.is_device ? 'd' : 'h';
    k += '\0';
    k += r.input_shapes;
    return k;
  };
  const auto add = [&](const average_row& r, bool side_a) {
    auto [it, fresh] = index.try_emplace(key(r), out.rows.size());
    if (fresh) out.rows.push_back({r.name, r.input_shapes, r.is_device, std::nullopt, std::nullopt});
    (side_a ? out.rows[it->second].a : out.rows[it->second].b) = r;
  };
  for (const auto& r : a.rows) add(r, true);
  for (const auto& r : b.rows) add(r, false);
  return out;
}

}  // namespace v1
}  // namespace strata
