// examples/tensor_parallel.cpp: a Megatron-style tensor-parallel decoder over N ranks, each rank a
// simulated NeuronCore, each writing its own trace as torch.profiler's tensorboard_trace_handler
// names it (rank<R>.<time_ns>.pt.trace.json, with Kineto's distributedInfo).
//
//   tensor_parallel [OUTPUT_DIR] [--ranks N] [--threads] [--layers N] [--tokens N]
//                   [--straggler R --delay-us D] [--gen trn1|trn2]
//
// Each layer is an MLP block split as Megatron-LM splits it: the up projection by columns (rank r
// holds columns r*F..(r+1)*F of W1, so gelu applies to its own slice with no communication), the
// down projection by rows (rank r holds the same rows of W2, so each rank has a partial sum of
// the output), then one all-reduce sums the partials and a residual add follows. The host runs
// ahead: it issues every layer's ops without waiting, so a rank's device queue reaches each
// all-reduce as soon as its kernels are done and sits in it until the last rank arrives. A
// barrier (an all-reduce of one value, Seq 1) lines the ranks up before the first layer.
// `--straggler R --delay-us D` makes rank R's host late by D microseconds before each layer, and
// the other ranks' traces show it as "wait for ranks" on their collective queues.
//
// By default each rank is its own process (the example starts them again with --rank and --job,
// as a launcher would); with --threads they are threads of one process, sharing one runtime with
// a core per rank, which writes one trace of the whole job. Either way the ranks' outputs are
// compared with a single-rank reference of the same model; the example exits 1 if one differs.
// strata's implementation is compiled once, in examples/strata_implementation.cpp.
#include "strata/profiler.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "command_line.hpp"
#include "strata/sim.hpp"

extern char** environ;

namespace {

namespace sim = strata::sim;

constexpr std::size_t model_dim = 128;
constexpr std::size_t ffn_per_rank = 128;  ///< F: each rank's share of the MLP's hidden width

struct options {
  std::string out_dir = "strata-out/tensor_parallel";
  int ranks = 2;
  bool threads = false;
  int layers = 4;
  std::size_t tokens = 16;
  int straggler = -1;
  std::int64_t delay_us = 0;
  sim::core_generation gen = sim::core_generation::trn1;
  int rank = -1;        ///< >= 0: this process is that rank of a job its parent started
  std::string job = {};  ///< the job directory the parent made (with --rank)
};

options parse(int argc, char** argv) {
  options o;
  const examples::command_line cl(
      "tensor_parallel",
      "a Megatron-style tensor-parallel decoder over N simulated NeuronCores, an all-reduce per layer, "
      "a trace per rank",
      o.out_dir,
      {{"--ranks", "N", "ranks (one simulated NeuronCore each), 1 to 8 (default: 2)"},
       {"--threads", "", "run the ranks as threads of one process (default: a process per rank)"},
       {"--layers", "N", "decoder layers, 1 to 64 (default: 4)"},
       {"--tokens", "N", "tokens in the batch, 1 to 128 (default: 16)"},
       {"--straggler", "R", "the rank whose host is late before each layer (default: none)"},
       {"--delay-us", "D", "how late the straggler is, 0 to 1000000 microseconds (default: 0)"},
       {"--gen", "trn1|trn2", "the simulated cores and their NeuronLink (default: trn1)"},
       {"--rank", "R", "(internal) run as rank R of the job in --job: how the example starts its ranks"},
       {"--job", "DIR", "(internal) the job directory of --rank"}},
      {{"OUTPUT_DIR/rank<R>.<time_ns>.pt.trace.json", "each rank's trace, with distributedInfo (a process per rank)"},
       {"OUTPUT_DIR/threads.<time_ns>.pt.trace.json", "with --threads: one trace of every rank's core"},
       {"(stdout)", "each rank's collective time, and whether the ranks agree with the single-rank reference"}});
  o.out_dir = cl.parse(argc, argv, [&](std::string_view flag, std::string_view value) {
    if (flag == "--ranks") o.ranks = static_cast<int>(cl.number(flag, value, 1, 8));
    else if (flag == "--threads") o.threads = true;
    else if (flag == "--layers") o.layers = static_cast<int>(cl.number(flag, value, 1, 64));
    else if (flag == "--tokens") o.tokens = cl.number(flag, value, 1, 128);
    else if (flag == "--straggler") o.straggler = static_cast<int>(cl.number(flag, value, 0, 7));
    else if (flag == "--delay-us") o.delay_us = static_cast<std::int64_t>(cl.number(flag, value, 0, 1'000'000));
    else if (flag == "--gen") o.gen = cl.generation(value);
    else if (flag == "--rank") o.rank = static_cast<int>(cl.number(flag, value, 0, 7));
    else if (flag == "--job") o.job = std::string(value);
    else return false;
    return true;
  });
  if (o.straggler >= o.ranks) cl.fail(fmt::format("--straggler {}: there are only {} ranks", o.straggler, o.ranks));
  if (o.rank >= o.ranks) cl.fail(fmt::format("--rank {}: there are only {} ranks", o.rank, o.ranks));
  if ((o.rank >= 0) != !o.job.empty()) cl.fail("--rank and --job go together (the example passes them to its ranks)");
  return o;
}

std::vector<float> pseudo_random(std::size_t n, std::uint32_t seed, float scale) {
  std::vector<float> v(n);
  std::uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * scale;
  }
  return v;
}

/// The whole model's weights of one layer, on the host: W1 [D, N*F], W2 [N*F, D].
struct layer_weights {
  std::vector<float> w1, w2;
  static layer_weights of(int layer, int ranks) {
    const std::size_t hidden = ffn_per_rank * static_cast<std::size_t>(ranks);
    const float k = 1.0f / std::sqrt(static_cast<float>(model_dim));
    return {pseudo_random(model_dim * hidden, static_cast<std::uint32_t>(2 * layer + 1), k),
            pseudo_random(hidden * model_dim, static_cast<std::uint32_t>(2 * layer + 2),
                          1.0f / std::sqrt(static_cast<float>(hidden)))};
  }
  /// Rank r's shard: columns [r*F, (r+1)*F) of W1 and the same rows of W2.
  std::pair<std::vector<float>, std::vector<float>> shard(int r, int ranks) const {
    const std::size_t hidden = ffn_per_rank * static_cast<std::size_t>(ranks), c0 = ffn_per_rank * static_cast<std::size_t>(r);
    std::vector<float> a(model_dim * ffn_per_rank), b(ffn_per_rank * model_dim);
    for (std::size_t i = 0; i < model_dim; ++i)
      for (std::size_t j = 0; j < ffn_per_rank; ++j) a[i * ffn_per_rank + j] = w1[i * hidden + c0 + j];
    std::copy(w2.begin() + static_cast<std::ptrdiff_t>(c0 * model_dim),
              w2.begin() + static_cast<std::ptrdiff_t>((c0 + ffn_per_rank) * model_dim), b.begin());
    return {std::move(a), std::move(b)};
  }
};

std::vector<float> input(const options& o) { return pseudo_random(o.tokens * model_dim, 99, 2.0f); }

/// One rank's forward pass: every layer issued without waiting, then the output on the host.
std::vector<float> run_rank(const options& o, int rank, sim::runtime& rt, std::uint32_t core, sim::communicator& comm,
                            double& collective_us) {
  strata::set_thread_name(fmt::format("rank {}", rank));
  const sim::device dev{&rt, core};
  std::vector<sim::tensor> w1, w2;
  for (int l = 0; l < o.layers; ++l) {
    const auto [a, b] = layer_weights::of(l, o.ranks).shard(rank, o.ranks);
    w1.push_back(sim::tensor::from_host(dev, a, {model_dim, ffn_per_rank}, "w1"));
    w2.push_back(sim::tensor::from_host(dev, b, {ffn_per_rank, model_dim}, "w2"));
  }
  sim::tensor x = sim::tensor::from_host(dev, input(o), {o.tokens, model_dim}, "x");
  {
    // A barrier, as a job's start has one: an all-reduce of one value that every rank waits
    // for, so that the ranks start their layers together whatever their start-up took.
    STRATA_SCOPE_LAYER(strata::layer::user, "barrier");
    const sim::tensor one = sim::tensor::from_host(dev, std::vector<float>{1.0f}, {1, 1}, "barrier");
    rt.wait(sim::all_reduce(rt, core, comm, one.storage(), one.storage()));
  }
  std::vector<sim::submission> reductions;
  for (int l = 0; l < o.layers; ++l) {
    STRATA_SCOPE_LAYER(strata::layer::user, "decoder layer");
    if (rank == o.straggler) std::this_thread::sleep_for(std::chrono::microseconds(o.delay_us));
    const sim::tensor h = sim::gelu(sim::matmul(x, w1[static_cast<std::size_t>(l)]));  // column-parallel
    const sim::tensor partial = sim::matmul(h, w2[static_cast<std::size_t>(l)]);        // row-parallel
    reductions.push_back(sim::all_reduce(rt, core, comm, partial.storage(), partial.storage()));
    x = sim::add(x, partial);  // after the all-reduce: the core runs its queue in order
  }
  collective_us = 0;
  for (const auto& s : reductions) {
    rt.wait(s);
    collective_us += static_cast<double>(s.device_end_ns() - s.device_start_ns()) / 1e3;
  }
  return x.to_host();
}

/// The same model on one core, unsharded.
std::vector<float> reference(const options& o) {
  sim::runtime rt({.generation = o.gen});
  const sim::device dev{&rt, 0};
  const std::size_t hidden = ffn_per_rank * static_cast<std::size_t>(o.ranks);
  sim::tensor x = sim::tensor::from_host(dev, input(o), {o.tokens, model_dim}, "x");
  for (int l = 0; l < o.layers; ++l) {
    const layer_weights w = layer_weights::of(l, o.ranks);
    const auto w1 = sim::tensor::from_host(dev, w.w1, {model_dim, hidden}, "w1");
    const auto w2 = sim::tensor::from_host(dev, w.w2, {hidden, model_dim}, "w2");
    x = sim::add(x, sim::matmul(sim::gelu(sim::matmul(x, w1)), w2));
  }
  return x.to_host();
}

strata::distributed_info rank_info(int rank, int ranks) {
  strata::process_group all{.name = "0", .description = "default_pg", .backend_config = "neuron:ccom"};
  for (int r = 0; r < ranks; ++r) all.ranks.push_back(r);
  return {.rank = rank, .local_rank = rank, .world_size = ranks, .backend = "ccom", .groups = {all}};
}

sim::communicator_config comm_config(const options& o, const std::string& job, int rank) {
  return {.job_dir = job, .rank = rank, .world_size = o.ranks, .max_elements = o.tokens * model_dim,
          .timeout = std::chrono::milliseconds(20'000) + std::chrono::milliseconds(o.delay_us * o.layers / 1000),
          .link = sim::neuronlink(o.gen)};
}

std::int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string trace_path(const options& o, const std::string& worker, const strata::distributed_info& info) {
  return (std::filesystem::path(o.out_dir) / strata::worker_trace_name(worker, info, wall_ns())).string();
}

void write_floats(const std::string& path, const std::vector<float>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  if (!f) throw strata::error("cannot write " + path);
}

std::vector<float> read_floats(const std::string& path, std::size_t n) {
  std::vector<float> v(n);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(float)));
  if (!f || f.gcount() != static_cast<std::streamsize>(n * sizeof(float)))
    throw strata::error("rank output " + path + " is missing or short");
  return v;
}

/// The job directory: a fresh one per run, so that no earlier run's rendezvous file is in it.
std::string job_dir(const options& o) {
  return (std::filesystem::path(o.out_dir) / fmt::format("job-{}", ::getpid())).string();
}

/// This process is rank `o.rank`: one core, its own session and trace, its output to the job.
int rank_main(const options& o) {
  const strata::distributed_info info = rank_info(o.rank, o.ranks);
  sim::runtime rt({.generation = o.gen});
  sim::communicator comm(comm_config(o, o.job, o.rank));
  strata::profiler prof({.output_dir = o.out_dir, .distributed = info});
  prof.start();
  double collective_us = 0;
  const std::vector<float> out = run_rank(o, o.rank, rt, 0, comm, collective_us);
  prof.stop();
  const auto written = prof.export_chrome_trace(trace_path(o, "", info));
  write_floats((std::filesystem::path(o.job) / fmt::format("rank{}.out", o.rank)).string(), out);
  fmt::print("rank {}: {:.1f} us on its collective queue over {} all-reduces; trace {}\n", o.rank, collective_us,
             o.layers, written.path);
  return 0;
}

/// Starts every rank as a process of its own and waits for them all; returns their outputs.
std::vector<std::vector<float>> run_processes(const options& o, const char* self) {
  const std::string job = job_dir(o);
  std::filesystem::create_directories(job);
  std::vector<pid_t> children;
  for (int r = 0; r < o.ranks; ++r) {
    std::vector<std::string> args = {self, o.out_dir, "--ranks", std::to_string(o.ranks), "--layers",
                                     std::to_string(o.layers), "--tokens", std::to_string(o.tokens), "--gen",
                                     std::string(sim::to_string(o.gen)), "--delay-us", std::to_string(o.delay_us),
                                     "--rank", std::to_string(r), "--job", job};
    if (o.straggler >= 0) args.insert(args.end(), {"--straggler", std::to_string(o.straggler)});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (const int e = ::posix_spawn(&pid, self, nullptr, nullptr, argv.data(), environ); e != 0)
      throw strata::error(fmt::format("cannot start rank {}: {}", r, std::strerror(e)));
    children.push_back(pid);
  }
  // Reaped as they end, so a rank that dies is gone at once and the others' waits say so.
  int failed = 0;
  for (std::size_t left = children.size(); left > 0; --left) {
    int status = 0;
    const pid_t pid = ::wait(&status);
    if (pid < 0) break;
    const auto it = std::find(children.begin(), children.end(), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "tensor_parallel: rank %d failed (%s %d)\n", static_cast<int>(it - children.begin()),
                   WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      ++failed;
    }
  }
  if (failed > 0) {
    std::filesystem::remove_all(job);
    throw strata::error(fmt::format("{} of {} ranks failed", failed, o.ranks));
  }
  std::vector<std::vector<float>> outs;
  for (int r = 0; r < o.ranks; ++r)
    outs.push_back(read_floats((std::filesystem::path(job) / fmt::format("rank{}.out", r)).string(),
                               o.tokens * model_dim));
  std::filesystem::remove_all(job);
  return outs;
}

/// Every rank a thread of this process, one core each, one session.
std::vector<std::vector<float>> run_threads(const options& o) {
  const std::string job = job_dir(o);
  sim::runtime rt({.cores = static_cast<std::uint32_t>(o.ranks), .generation = o.gen});
  strata::profiler prof({.output_dir = o.out_dir});
  prof.start();
  std::vector<std::vector<float>> outs(static_cast<std::size_t>(o.ranks));
  std::vector<double> collective_us(outs.size());
  std::vector<std::string> errors(outs.size());
  {
    std::vector<std::thread> ranks;
    for (int r = 0; r < o.ranks; ++r)
      ranks.emplace_back([&, r] {
        const auto i = static_cast<std::size_t>(r);
        try {
          sim::communicator comm(comm_config(o, job, r));
          outs[i] = run_rank(o, r, rt, static_cast<std::uint32_t>(r), comm, collective_us[i]);
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    for (auto& t : ranks) t.join();
  }
  prof.stop();
  std::filesystem::remove_all(job);
  for (std::size_t r = 0; r < errors.size(); ++r)
    if (!errors[r].empty()) throw strata::error(fmt::format("rank {}: {}", r, errors[r]));
  const auto written = prof.export_chrome_trace(trace_path(o, "threads", {}));
  for (std::size_t r = 0; r < outs.size(); ++r)
    fmt::print("rank {}: {:.1f} us on its collective queue over {} all-reduces\n", r, collective_us[r], o.layers);
  fmt::print("trace of every rank: {}\n", written.path);
  return outs;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  try {
    if (o.rank >= 0) return rank_main(o);
    std::filesystem::create_directories(o.out_dir);
    std::error_code ec;
    const std::string self = std::filesystem::read_symlink("https://gh.072103.xyz/proc/self/exe", ec).string();
    const auto outs = o.threads ? run_threads(o) : run_processes(o, ec ? argv[0] : self.c_str());
    const std::vector<float> ref = reference(o);
    double worst = 0;
    bool same = true;
    for (const auto& out : outs) {
      same = same && out == outs.front();
      for (std::size_t i = 0; i < ref.size(); ++i)
        worst = std::max(worst, std::abs(static_cast<double>(out[i]) - ref[i]) / (1.0 + std::abs(ref[i])));
    }
    constexpr double tolerance = 1e-4;
    const bool agree = same && worst <= tolerance;
    fmt::print("{} ranks x {} layers ({}, {} tokens): {} the single-rank reference (largest relative difference "
               "{:.2g}, tolerance {:.0e}){}\n",
               o.ranks, o.layers, o.threads ? "threads" : "processes", o.tokens, agree ? "agree with" : "DISAGREE with",
               worst, tolerance, same ? "" : "; the ranks' outputs differ from each other");
    return agree ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensor_parallel%s: %s\n", o.rank >= 0 ? fmt::format(" rank {}", o.rank).c_str() : "",
                 e.what());
    return 1;
  }
}
