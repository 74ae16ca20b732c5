// examples/compare_ops.cpp: the main job. One operation, row softmax, implemented three ways
// on a simulated NeuronCore, each profiled with strata and compared:
//
//   eager     five framework ops (max, sub, exp, sum, div): five dispatches, five kernels
//   compiled  the same five ops captured into a graph: one dispatch, one fused kernel
//   nki       a hand-written NKI-style kernel (examples/nki_kernels.hpp): one dispatch
//
//   compare_ops [OUTPUT_DIR] [--rows N] [--cols N] [--gen trn1|trn2] [--iters N]
//
// Writes OUTPUT_DIR/<implementation>/trace.json, prints each key_averages table, a side-by-side
// comparison and which implementation wins and why, worked out from the measured figures, and
// writes OUTPUT_DIR/report.html, one page that compares the three (strata/export/html_report.hpp).
// strata's implementation is compiled once, in examples/strata_implementation.cpp.
#include "strata/profiler.hpp"
#include "strata/export/html_report.hpp"
#include "strata/trace_data.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "command_line.hpp"
#include "nki_kernels.hpp"

namespace {

namespace sim = strata::sim;

struct options {
  std::string out_dir = "strata-out/compare_ops";
  std::size_t rows = 512;
  std::size_t cols = 1024;
  sim::core_generation gen = sim::core_generation::trn1;
  int iters = 5;
};

options parse(int argc, char** argv) {
  options o;
  const examples::command_line cl(
      "compare_ops", "row softmax three ways (eager ops, a compiled graph, an NKI-style kernel) on a simulated "
      "NeuronCore, each profiled, checked against a CPU reference and compared",
      o.out_dir,
      {{"--rows", "N", "rows of the input, 1 to 8192 (default: 512)"},
       {"--cols", "N", "columns of the input, 1 to 4096 (default: 1024)"},
       {"--gen", "trn1|trn2", "the simulated core: NeuronCore-v2 or -v3 (default: trn1)"},
       {"--iters", "N", "profiled iterations of each implementation, 1 to 1000 (default: 5)"}},
      {{"OUTPUT_DIR/eager/trace.json", "the five eager ops' trace"},
       {"OUTPUT_DIR/compiled/trace.json", "the compiled graph's trace"},
       {"OUTPUT_DIR/nki/trace.json", "the NKI-style kernel's trace"},
       {"OUTPUT_DIR/report.html", "one page comparing the three (open it in a browser)"},
       {"(stdout)", "each key_averages table, the side-by-side comparison and its verdict"}});
  o.out_dir = cl.parse(argc, argv, [&](std::string_view flag, std::string_view value) {
    if (flag == "--rows") o.rows = cl.number(flag, value, 1, 8192);
    else if (flag == "--cols") o.cols = cl.number(flag, value, 1, 4096);
    else if (flag == "--iters") o.iters = static_cast<int>(cl.number(flag, value, 1, 1000));
    else if (flag == "--gen") o.gen = cl.generation(value);
    else return false;
    return true;
  });
  return o;
}

std::vector<float> reference_softmax(const std::vector<float>& x, std::size_t rows, std::size_t cols) {
  std::vector<float> y(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = &x[r * cols];
    const float m = *std::max_element(in, in + cols);
    double sum = 0;
    for (std::size_t c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(in[c] - m));
    for (std::size_t c = 0; c < cols; ++c)
      y[r * cols + c] = static_cast<float>(std::exp(static_cast<double>(in[c] - m)) / sum);
  }
  return y;
}

/// softmax as a framework user writes it: five ops.
sim::tensor softmax_ops(const sim::tensor& x) {
  const sim::tensor e = sim::exp(sim::sub(x, sim::max(x)));
  return sim::div(e, sim::sum(e));
}

/// What one implementation measured, per iteration.
struct figures {
  std::string name;
  double dispatches = 0;       ///< framework ops
  double submissions = 0;      ///< runtime submissions (device executions)
  double self_cpu_ns = 0;      ///< key_averages' Self CPU total
  double device_ns = 0;        ///< key_averages' Self NEURON total: time the core executed
  double latency_ns = 0;       ///< median, first dispatch to the end of the last kernel (device model)
  double wall_ns = 0;          ///< median host wall time to the result, simulation included
  double dma_bytes = 0;        ///< bytes moved between HBM and SBUF
  double mfu = 0;              ///< the kernels' FLOPs over their device time, of the core's peak
  double mbu = 0;              ///< their HBM bytes over their device time, of the core's bandwidth
  double max_error = 0;
  std::map<std::string, double> busy_ns;  ///< per engine (DMA: any queue busy)
  strata::html_run run;                   ///< the session as the report page shows it
};

/// Summed length of the union of intervals (DMA queues run in parallel).
double union_ns(std::vector<std::pair<std::int64_t, std::int64_t>> v) {
  std::sort(v.begin(), v.end());
  double total = 0;
  std::int64_t open_begin = 0, open_end = -1;
  for (const auto& [b, e] : v) {
    if (b > open_end) {
      if (open_end > open_begin) total += static_cast<double>(open_end - open_begin);
      open_begin = b;
      open_end = e;
    } else {
      open_end = std::max(open_end, e);
    }
  }
  if (open_end > open_begin) total += static_cast<double>(open_end - open_begin);
  return total;
}

void engine_figures(const strata::trace_data& d, figures& f) {
  std::vector<std::pair<std::int64_t, std::int64_t>> dma;
  for (const auto& t : d.threads) {
    if (t.pid == 0) {
      for (const auto& r : t.records)
        if (r.layer() == strata::layer::framework && r.site->category == nullptr &&
            std::string_view(r.site->name).rfind("ProfilerStep#", 0) != 0)
          f.dispatches += 1;
      continue;
    }
    const bool is_dma = t.name.rfind("DMA queue", 0) == 0;
    for (const auto& r : t.records) {
      if (r.site->category == nullptr || std::string_view(r.site->category) != "device.engine") continue;
      const std::int64_t b = d.ns_of(t, r.begin), e = d.ns_of(t, r.end);
      if (is_dma) {
        dma.emplace_back(b, e);
        const std::string_view args = r.site->args_json != nullptr ? r.site->args_json : "";
        if (args.rfind("\"bytes\":", 0) == 0) {
          std::uint64_t bytes = 0;
          std::from_chars(args.data() + 8, args.data() + args.size(), bytes);
          f.dma_bytes += static_cast<double>(bytes);
        }
      } else {
        f.busy_ns[t.name] += static_cast<double>(e - b);
      }
    }
  }
  f.busy_ns["DMA"] = union_ns(std::move(dma));
}

figures measure(const std::string& name, const options& o, sim::runtime& rt, const sim::tensor& x,
                const std::vector<float>& want, const std::function<sim::tensor(const sim::tensor&)>& impl) {
  figures f;
  f.name = name;
  // Warm up outside the profile: programs compile on first use (eager: one per op and shape).
  const auto warm = impl(x).to_host();
  static_cast<void>(warm);

  strata::profiler prof({.output_dir = o.out_dir + "/" + name,
                         .record_shapes = true});
  const auto before = rt.stats();
  std::vector<double> modelled, wall;
  std::vector<float> got;
  prof.start();
  for (int i = 0; i < o.iters; ++i) {
    STRATA_SCOPE("iteration");
    const std::int64_t t0 = strata::clock::steady_ns();
    got = impl(x).to_host();  // waits for the core
    wall.push_back(static_cast<double>(strata::clock::steady_ns() - t0));
    modelled.push_back(static_cast<double>(rt.device_free_ns(x.dev().core) - t0));
  }
  prof.stop();
  const auto after = rt.stats();

  for (std::size_t i = 0; i < got.size(); ++i)
    f.max_error = std::max(f.max_error, std::abs(static_cast<double>(got[i]) - want[i]));
  std::sort(modelled.begin(), modelled.end());
  std::sort(wall.begin(), wall.end());
  f.latency_ns = modelled[modelled.size() / 2];
  f.wall_ns = wall[wall.size() / 2];
  const auto avg = prof.key_averages();
  const double n = o.iters;
  f.self_cpu_ns = static_cast<double>(avg.self_cpu_total_ns()) / n;
  f.device_ns = static_cast<double>(avg.self_device_total_ns()) / n;
  f.submissions = static_cast<double>(after.submissions - before.submissions) / n;
  // Utilisation over the time the core executed: the device rows' FLOPs and HBM bytes.
  double flops = 0, bytes = 0, device_ns = 0;
  for (const auto& r : avg.rows) {
    if (!r.is_device) continue;
    flops += static_cast<double>(r.flops);
    bytes += static_cast<double>(r.device_bytes);
    device_ns += static_cast<double>(r.self_device_ns);
  }
  if (device_ns > 0 && avg.peak_flops_per_s > 0) f.mfu = flops * 1e9 / device_ns / avg.peak_flops_per_s;
  if (device_ns > 0 && avg.peak_hbm_bytes_per_s > 0) f.mbu = bytes * 1e9 / device_ns / avg.peak_hbm_bytes_per_s;
  engine_figures(prof.data(), f);
  f.run = strata::html_run_of(prof.data(), avg, name);
  f.dispatches /= n;
  f.dma_bytes /= n;
  for (auto& [engine, ns] : f.busy_ns) ns /= n;

  fmt::print("== {}: key_averages (sorted by device_time_total)\n{}\n", name,
             avg.table({.sort_by = "device_time_total", .row_limit = 12}));
  const auto written = prof.export_chrome_trace();
  fmt::print("trace: {}\n\n", written.path);
  return f;
}

std::string time_text(double ns) {
  if (ns >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  return fmt::format("{:.3f} us", ns / 1e3);
}

std::string share(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

void print_comparison(const std::vector<figures>& all) {
  fmt::print("== side by side, per iteration. End-to-end latency: from the first dispatch to the end\n"
             "   of the last kernel on the modelled NeuronCore; engine shares are of that latency.\n"
             "   Host wall time adds the simulator's own CPU time (computing every value).\n");
  fmt::print("{:<28}", "");
  for (const auto& f : all) fmt::print("{:>16}", f.name);
  fmt::print("\n");
  const auto row = [&](std::string_view label, auto cell) {
    fmt::print("{:<28}", label);
    for (const auto& f : all) fmt::print("{:>16}", cell(f));
    fmt::print("\n");
  };
  row("framework dispatches", [](const figures& f) { return fmt::format("{:g}", f.dispatches); });
  row("device executions", [](const figures& f) { return fmt::format("{:g}", f.submissions); });
  row("Self CPU total", [](const figures& f) { return time_text(f.self_cpu_ns); });
  row("NEURON total", [](const figures& f) { return time_text(f.device_ns); });
  row("end-to-end latency", [](const figures& f) { return time_text(f.latency_ns); });
  row("  host wall (simulating)", [](const figures& f) { return time_text(f.wall_ns); });
  row("HBM<->SBUF traffic", [](const figures& f) { return fmt::format("{:.2f} MiB", f.dma_bytes / 1048576.0); });
  row("NeuronCore busy", [](const figures& f) { return share(f.device_ns, f.latency_ns); });
  row("MFU (of peak FLOP/s)", [](const figures& f) { return fmt::format("{:.1f}%", 100.0 * f.mfu); });
  row("MBU (of HBM bandwidth)", [](const figures& f) { return fmt::format("{:.1f}%", 100.0 * f.mbu); });
  for (const char* engine : {"Tensor", "Vector", "Scalar", "GpSimd", "DMA"})
    row(fmt::format("  {} busy", engine), [&](const figures& f) {
      const auto it = f.busy_ns.find(engine);
      return share(it == f.busy_ns.end() ? 0.0 : it->second, f.latency_ns);
    });
  row("max |error| vs CPU", [](const figures& f) { return fmt::format("{:.1e}", f.max_error); });
  fmt::print("\n");
}

/// Which implementation wins and why, in one paragraph built from the figures.
std::string verdict(const std::vector<figures>& all) {
  const auto by_latency = [](const figures& a, const figures& b) { return a.latency_ns < b.latency_ns; };
  const figures& best = *std::min_element(all.begin(), all.end(), by_latency);
  const figures& worst = *std::max_element(all.begin(), all.end(), by_latency);
  std::string s = fmt::format("{} wins: {:.2f}x lower end-to-end latency than {} ({} vs {} per iteration).",
                              best.name, worst.latency_ns / best.latency_ns, worst.name,
                              time_text(best.latency_ns), time_text(worst.latency_ns));
  if (best.dispatches < worst.dispatches)
    s += fmt::format(" {} pays for {:g} dispatches and {:g} device executions per iteration, {} for {:g} and {:g}:"
                     " every dispatch costs host time (Self CPU {} vs {}) and leaves the NeuronCore idle"
                     " between kernels (busy {} of the iteration vs {}).",
                     worst.name, worst.dispatches, worst.submissions, best.name, best.dispatches,
                     best.submissions, time_text(worst.self_cpu_ns), time_text(best.self_cpu_ns),
                     share(worst.device_ns, worst.latency_ns), share(best.device_ns, best.latency_ns));
  if (best.dma_bytes < worst.dma_bytes)
    s += fmt::format(" It also moves {:.1f}x less data between HBM and SBUF ({:.2f} vs {:.2f} MiB), since"
                     " intermediate results stay on chip.",
                     worst.dma_bytes / best.dma_bytes, best.dma_bytes / 1048576.0, worst.dma_bytes / 1048576.0);
  // Among the one-kernel implementations, device time decides.
  for (const figures& other : all) {
    if (&other == &best || other.dispatches != best.dispatches) continue;
    if (other.device_ns > best.device_ns)
      s += fmt::format(" Against {} (also {:g} dispatch), its kernel is {:.2f}x shorter on the device ({} vs {}).",
                       other.name, best.dispatches, other.device_ns / best.device_ns,
                       time_text(best.device_ns), time_text(other.device_ns));
    else
      s += fmt::format(" Against {} (also {:g} dispatch) its device time is no shorter ({} vs {}): the"
                       " difference is host time.",
                       other.name, best.dispatches, time_text(best.device_ns), time_text(other.device_ns));
  }
  // Compute- or bandwidth-bound: which of the core's peaks the kernels come closer to, and
  // whether they come close to either.
  const auto bound = [](const figures& f) {
    const double top = std::max(f.mfu, f.mbu);
    if (top < 0.5) return "latency-bound: near neither peak";
    return f.mbu >= f.mfu ? "bandwidth-bound" : "compute-bound";
  };
  s += " While the core executes, ";
  for (std::size_t i = 0; i < all.size(); ++i) {
    const figures& f = all[i];
    s += fmt::format("{}{} reaches {:.1f}% MBU and {:.1f}% MFU ({})", i == 0 ? "" : i + 1 == all.size() ? " and " : ", ",
                     f.name, 100.0 * f.mbu, 100.0 * f.mfu, bound(f));
  }
  s += all.empty() ? "" : ".";
  if (std::all_of(all.begin(), all.end(), [](const figures& f) { return f.mfu < 0.01; }))
    s += " A softmax does no matmul: its work is HBM traffic and the Vector and Scalar engines', so"
         " MBU is the figure to raise.";
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  try {
    std::vector<float> x(o.rows * o.cols);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 2003) / 400.0f - 2.5f;
    const std::vector<float> want = reference_softmax(x, o.rows, o.cols);
    constexpr double tolerance = 1e-5;

    sim::runtime rt({.cores = 1, .generation = o.gen});
    const sim::device dev{&rt, 0};
    const sim::tensor dx = sim::tensor::from_host(dev, x, {o.rows, o.cols}, "x");
    sim::dispatcher::instance().register_kernel(
        "custom::softmax", examples::softmax_kernel,
        [](std::span<const sim::shape2> in) { return in[0]; });
    const sim::compiled_graph graph =
        sim::graph::capture("softmax", {{o.rows, o.cols}},
                            [](const std::vector<sim::tensor>& in) { return softmax_ops(in[0]); })
            .compile(dev);

    fmt::print("row softmax of [{}, {}] on a simulated {} ({}), {} iterations each\n\n", o.rows, o.cols,
               rt.params().core_name, sim::to_string(o.gen), o.iters);
    std::vector<figures> all;
    all.push_back(measure("eager", o, rt, dx, want, softmax_ops));
    all.push_back(measure("compiled", o, rt, dx, want,
                          [&](const sim::tensor& in) { return graph.run({in})[0]; }));
    all.push_back(measure("nki", o, rt, dx, want, [](const sim::tensor& in) {
      return sim::dispatcher::instance().call("custom::softmax", {in});
    }));

    print_comparison(all);
    const std::string conclusion = verdict(all);
    fmt::print("{}\n", conclusion);
    strata::html_report page{.title = fmt::format("compare_ops: row softmax of [{}, {}] three ways", o.rows, o.cols)};
    for (auto& f : all) page.runs.push_back(std::move(f.run));
    page.verdict = conclusion;
    const auto written = strata::write_html_report(page, o.out_dir + "/report.html");
    fmt::print("\nreport: {}\n", written.path);
    bool agree = true;
    for (const auto& f : all) {
      if (f.max_error > tolerance) {
        fmt::print(stderr, "compare_ops: {} differs from the CPU reference by {:.2e} (tolerance {:.0e})\n",
                   f.name, f.max_error, tolerance);
        agree = false;
      }
    }
    fmt::print("\nall three agree with the CPU reference within {:.0e}: {}\n", tolerance, agree ? "yes" : "NO");
    return agree ? 0 : 1;
  } catch (const strata::error& e) {
    std::fprintf(stderr, "compare_ops: %s\n", e.what());
    return 1;
  }
}
