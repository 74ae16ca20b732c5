// examples/inference_engine.cpp: a small transformer-style block served in a loop, profiled
// with a torch.profiler-style schedule: wait, warm up, record, and write one trace per window.
// The serving loop marks its steps with STRATA_STEP(), as an engine's loop would without
// holding the profiler, from inside the iteration's own scope.
//
// With --ondemand N it runs as a server would, with no profiler at all: an admin thread asks
// for a capture of the next N steps (strata::request_capture, what an admin endpoint would
// call), strata's own thread writes OUTPUT_DIR/ondemand-<pid>-1.json once the loop has taken
// them, and the loop never waits for it. Like every program that compiles strata's
// implementation, it reads the STRATA_* environment when it starts: with STRATA_ONDEMAND=1 as
// well, kill -USR2 <pid> asks for a capture from outside once the admin's is written
// (docs/production.md). STRATA_PROFILE=1 records the whole run instead. Without --ondemand, either
// variable makes the example's own schedule stand aside (one profiler records at a time), and
// it says so: `STRATA_ONDEMAND=1 inference_engine --steps 1000 &` then `kill -USR2 <pid>` is the
// README's server command.
//
//   inference_engine [OUTPUT_DIR] [--steps N] [--workers N] [--tokens N] [--gen trn1|trn2]
//                    [--ondemand N]
//
// Each step serves one request per worker thread, on two simulated NeuronCores. A request is
// one decoding step of a block: embedding lookup (host), attention against a KV cache,
// and an MLP with GELU, each op dispatched to the device like a PyTorch eager op.
// strata's implementation is compiled once, in examples/strata_implementation.cpp.
#include "strata/profiler.hpp"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "command_line.hpp"
#include "strata/ondemand.hpp"
#include "strata/sim.hpp"

namespace {

namespace sim = strata::sim;

constexpr std::size_t model_dim = 128;
constexpr std::size_t hidden_dim = 256;
constexpr std::size_t context = 256;
constexpr std::size_t vocab = 1000;

struct options {
  std::string out_dir = "strata-out/inference_engine";
  int steps = 8;
  int workers = 2;
  std::size_t tokens = 32;
  sim::core_generation gen = sim::core_generation::trn1;
  int ondemand = 0;  ///< > 0: no schedule; a capture of this many steps, asked for by an admin thread
};

options parse(int argc, char** argv) {
  options o;
  const examples::command_line cl(
      "inference_engine", "a transformer-style block served on worker threads and two simulated NeuronCores, "
      "profiled with a schedule (a trace per window) or captured on demand",
      o.out_dir,
      {{"--steps", "N", "serving steps, 1 to 1000 (default: 8)"},
       {"--workers", "N", "worker threads, one request each per step, 1 to 16 (default: 2)"},
       {"--tokens", "N", "tokens per request, 1 to 128 (default: 32)"},
       {"--gen", "trn1|trn2", "the simulated cores: NeuronCore-v2 or -v3 (default: trn1)"},
       {"--ondemand", "N", "no schedule: an admin thread asks for a capture of the next N steps, 1 to 1000"}},
      {{"OUTPUT_DIR/trace_step2-3.json", "the schedule's first window (steps 2 and 3)"},
       {"OUTPUT_DIR/trace_step6-7.json", "its second window (steps 6 and 7; needs --steps 8 or more)"},
       {"OUTPUT_DIR/ondemand-<pid>-1.json", "with --ondemand N: the capture of N steps, instead of the windows"},
       {"(stdout)", "the last window's key_averages table by input shape, the runtime's figures"}});
  o.out_dir = cl.parse(argc, argv, [&](std::string_view flag, std::string_view value) {
    if (flag == "--steps") o.steps = static_cast<int>(cl.number(flag, value, 1, 1000));
    else if (flag == "--workers") o.workers = static_cast<int>(cl.number(flag, value, 1, 16));
    else if (flag == "--tokens") o.tokens = cl.number(flag, value, 1, 128);
    else if (flag == "--gen") o.gen = cl.generation(value);
    else if (flag == "--ondemand") o.ondemand = static_cast<int>(cl.number(flag, value, 1, 1000));
    else return false;
    return true;
  });
  return o;
}

std::vector<float> pseudo_random(std::size_t n, std::uint32_t seed, float scale) {
  std::vector<float> v(n);
  std::uint32_t s = seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * scale;
  }
  return v;
}

/// The weights of the block, on one core.
struct block_weights {
  sim::tensor keys_t;  ///< the KV cache's keys, stored transposed: [model_dim, context]
  sim::tensor values;  ///< [context, model_dim]
  sim::tensor w_up;    ///< [model_dim, hidden_dim]
  sim::tensor w_down;  ///< [hidden_dim, model_dim]

  static block_weights on(const sim::device& dev) {
    const float k = 1.0f / std::sqrt(static_cast<float>(model_dim));
    return {sim::tensor::from_host(dev, pseudo_random(model_dim * context, 1, k), {model_dim, context}, "keys_t"),
            sim::tensor::from_host(dev, pseudo_random(context * model_dim, 2, 1.0f), {context, model_dim}, "values"),
            sim::tensor::from_host(dev, pseudo_random(model_dim * hidden_dim, 3, k), {model_dim, hidden_dim}, "w_up"),
            sim::tensor::from_host(dev, pseudo_random(hidden_dim * model_dim, 4, k), {hidden_dim, model_dim}, "w_down")};
  }
};

struct embedding_args {
  BOOST_HANA_DEFINE_STRUCT(embedding_args, (strata::shape, weight), (strata::shape, indices));
};

/// One decoding step for `tokens` tokens: returns the block's output on the host.
std::vector<float> serve(const sim::device& dev, const block_weights& w, const std::vector<float>& table,
                         const std::vector<int>& ids) {
  STRATA_SCOPE_LAYER(strata::layer::user, "request");
  const std::size_t n = ids.size();
  // Embedding lookup on the host (a CPU op), then one copy to the device.
  std::vector<float> x(n * model_dim);
  {
    static const strata::site* embedding = strata::intern(strata::layer::framework, "aten::embedding");
    strata::scope op = strata::scope_with_args(embedding, [&] {
      return embedding_args{{static_cast<std::int64_t>(vocab), static_cast<std::int64_t>(model_dim)},
                            {static_cast<std::int64_t>(n)}};
    });
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t d = 0; d < model_dim; ++d) x[t * model_dim + d] = table[static_cast<std::size_t>(ids[t]) * model_dim + d];
  }
  const sim::tensor h = sim::tensor::from_host(dev, x, {n, model_dim}, "hidden");

  sim::tensor attended;
  {
    STRATA_SCOPE_LAYER(strata::layer::user, "attention");
    const sim::tensor scores = sim::matmul(h, w.keys_t);  // [n, context]
    const sim::tensor e = sim::exp(sim::sub(scores, sim::max(scores)));
    const sim::tensor probs = sim::div(e, sim::sum(e));
    attended = sim::add(h, sim::matmul(probs, w.values));  // residual
  }
  sim::tensor out;
  {
    STRATA_SCOPE_LAYER(strata::layer::user, "mlp");
    out = sim::add(attended, sim::matmul(sim::gelu(sim::matmul(attended, w.w_up)), w.w_down));
  }
  return out.to_host();
}

}  // namespace

// Whether the environment asks strata to capture this run itself: STRATA_PROFILE=1 (the whole
// run, written at exit) or STRATA_ONDEMAND=1 (what a signal asks for). The example's own
// schedule then stands aside, as one profiler records at a time.
bool environment_captures() {
  for (const char* name : {"STRATA_PROFILE", "STRATA_ONDEMAND"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && std::string_view(v) == "1") return true;
  }
  return false;
}

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  try {
    sim::runtime rt({.cores = 2, .generation = o.gen});
    const std::vector<sim::device> devices = {{&rt, 0}, {&rt, 1}};
    const std::vector<block_weights> weights = {block_weights::on(devices[0]), block_weights::on(devices[1])};
    const std::vector<float> table = pseudo_random(vocab * model_dim, 5, 1.0f);

    // Skip nothing, wait one step, warm up one, record two; twice. Each window's trace goes to
    // its own file (trace_step<first>-<last>.json), as torch.profiler's on_trace_ready would.
    strata::profiler prof({.output_dir = o.out_dir, .record_shapes = true,
                           .schedule = {.wait = 1, .warmup = 1, .active = 2, .repeat = 2}});
    if (o.ondemand > 0) {
      // A server runs with no session; its admin endpoint (here a thread) asks for one when
      // someone wants to look. The capture starts at the loop's next STRATA_STEP().
      std::thread admin([&] {
        const strata::capture_result r = strata::request_capture(
            {.steps = o.ondemand, .config = strata::profiler_config{.output_dir = o.out_dir}});
        fmt::print("admin: {}\n", r.message);
      });
      admin.join();
    } else if (environment_captures()) {
      std::fprintf(stderr, "inference_engine: the STRATA_* environment captures this run; the "
                           "example's schedule is off\n");
    } else {
      prof.start();
    }
    double checksum = 0;
    for (int step = 0; step < o.steps; ++step) {
      // Still open when STRATA_STEP() marks the boundary below: the steps lie on a track of
      // their own (this thread's steps track), so this scope stays whole on the thread's track.
      STRATA_SCOPE("iteration");
      std::vector<std::thread> workers;
      std::vector<double> sums(static_cast<std::size_t>(o.workers));
      for (int w = 0; w < o.workers; ++w) {
        workers.emplace_back([&, w] {
          strata::set_thread_name(fmt::format("worker {}", w));
          std::vector<int> ids(o.tokens);
          for (std::size_t t = 0; t < ids.size(); ++t)
            ids[t] = static_cast<int>((t * 31 + static_cast<std::size_t>(step * 7 + w)) % vocab);
          const auto core = static_cast<std::size_t>(w % 2);
          const auto y = serve(devices[core], weights[core], table, ids);
          double s = 0;
          for (float v : y) s += v;
          sums[static_cast<std::size_t>(w)] = s;
        });
      }
      for (auto& t : workers) t.join();
      for (double s : sums) checksum += s;
      STRATA_STEP();  // the running profiler's step(); the window's file is written off this thread
    }
    if (prof.running()) prof.stop();

    fmt::print("served {} steps x {} requests of {} tokens (checksum {:.6f})\n", o.steps, o.workers,
               o.tokens, checksum);
    if (o.ondemand > 0) {
      // Only so that the example can print it: a server would just go on serving.
      strata::capture_state s = strata::ondemand_state();
      while (s.running) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        s = strata::ondemand_state();
      }
      fmt::print("on-demand capture: {}\n", s.written > 0 ? s.last_file : s.last_error);
      return s.written > 0 ? 0 : 1;
    }
    if (environment_captures()) return 0;  // the environment's captures write their own files
    for (const auto& f : prof.trace_files()) fmt::print("trace: {}\n", f);
    fmt::print("\nlast window, key_averages grouped by input shape:\n{}\n",
               prof.key_averages({.group_by_input_shape = true})
                   .table({.sort_by = "self_device_time_total", .row_limit = 15}));
    const auto st = rt.stats();
    fmt::print("runtime: {} compiles, {} cache hits, {} submissions, queue wait {:.3f} ms in total\n",
               st.compiles, st.cache_hits, st.submissions, static_cast<double>(st.queue_wait_ns) / 1e6);
    return 0;
  } catch (const strata::error& e) {
    std::fprintf(stderr, "inference_engine: %s\n", e.what());
    return 1;
  }
}
