// examples/custom_kernel.cpp: wrapping your own NKI-style kernel, and the phases inside it, in
// strata scopes, and reading its device time in the key_averages table.
//
//   custom_kernel [OUTPUT_DIR] [--rows N] [--cols N]
//
// Three steps make a kernel call an op that strata follows from the host to the NeuronCore:
// take a correlation id, open a framework-layer scope named after the op with that id, and
// hand the same id to the runtime submission. The kernel's phases (`k.phase("exp")`) show
// nested in its execution on the core's Kernel track.
// strata's implementation is compiled once, in examples/strata_implementation.cpp.
#include "strata/profiler.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "command_line.hpp"
#include "nki_kernels.hpp"

namespace {

namespace sim = strata::sim;

struct softmax_args {
  BOOST_HANA_DEFINE_STRUCT(softmax_args, (strata::shape, self), (int, dim));
};

std::vector<float> reference_softmax(const std::vector<float>& x, std::size_t rows, std::size_t cols) {
  std::vector<float> y(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = &x[r * cols];
    float m = in[0];
    for (std::size_t c = 1; c < cols; ++c) m = std::max(m, in[c]);
    double sum = 0;
    for (std::size_t c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(in[c] - m));
    for (std::size_t c = 0; c < cols; ++c)
      y[r * cols + c] = static_cast<float>(std::exp(static_cast<double>(in[c] - m)) / sum);
  }
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  const examples::command_line cl(
      "custom_kernel", "a hand-written NKI-style softmax kernel wrapped in strata scopes, followed from its op to "
      "its phases on a simulated NeuronCore",
      "strata-out/custom_kernel",
      {{"--rows", "N", "rows of the input, 1 to 8192 (default: 256)"},
       {"--cols", "N", "columns of the input, 1 to 8192 (default: 512)"}},
      {{"OUTPUT_DIR/trace.json", "the trace: the op, its runtime calls, the kernel and its phases"},
       {"(stdout)", "the error against a CPU reference, the key_averages table by input shape"}});
  std::size_t rows = 256, cols = 512;
  const std::string out_dir = cl.parse(argc, argv, [&](std::string_view flag, std::string_view value) {
    if (flag == "--rows") rows = cl.number(flag, value, 1, 8192);
    else if (flag == "--cols") cols = cl.number(flag, value, 1, 8192);
    else return false;
    return true;
  });

  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 250.0f - 2.0f;

  strata::profiler prof({.output_dir = out_dir, .record_shapes = true});
  sim::runtime rt({.cores = 1, .generation = sim::core_generation::trn1});
  static const strata::site* op = strata::intern(strata::layer::framework, "custom::softmax");

  prof.start();
  const sim::hbm_tensor dx = rt.to_device(0, "x", x, {rows, cols});
  const sim::hbm_tensor dy = rt.empty(0, "y", {rows, cols});
  for (int call = 0; call < 3; ++call) {
    const std::uint64_t id = strata::new_correlation_id();                       // 1. an id
    strata::scope s = strata::scope_with_args(op, [&] {                          // 2. the op
      return softmax_args{{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)}, 1};
    }, id);
    const sim::program_ptr prog =                                                // compiled once
        rt.load("custom::softmax " + std::to_string(rows) + "x" + std::to_string(cols),
                "softmax_kernel", examples::softmax_kernel, {{rows, cols}}, {{rows, cols}});
    rt.wait(rt.submit(0, prog, {dx}, {dy}, id));                                 // 3. same id
  }
  const std::vector<float> y = rt.to_host(dy);
  prof.stop();

  const std::vector<float> want = reference_softmax(x, rows, cols);
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::abs(double(y[i]) - want[i]));
  std::printf("custom::softmax [%zu, %zu] on a simulated NeuronCore-v2: max |error| vs CPU = %.2e "
              "(tolerance 1e-6)\n\n", rows, cols, worst);

  std::printf("%s\n", prof.key_averages({.group_by_input_shape = true})
                          .table({.sort_by = "device_time_total", .row_limit = 12})
                          .c_str());
  const auto written = prof.export_chrome_trace();
  std::printf("trace: %s (open it in https://ui.perfetto.dev)\n", written.path.c_str());
  return worst <= 1e-6 ? 0 : 1;
}
