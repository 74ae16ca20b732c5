// collectives: the ring/tree cost model against hand-computed figures, the values each
// collective computes across ranks on threads, a slow rank's delay as waiting time on the others,
// the host and device records with Kineto's collective args, timeouts, dead or departed ranks
// and bad arguments. Multithreaded: also built for ThreadSanitizer.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <future>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "strata/profiler.hpp"
#include "strata/sim/collectives.hpp"
#include "strata/sim/communicator.hpp"
#include "strata/sim/runtime.hpp"
#include "support.hpp"

namespace sim = strata::sim;
using namespace std::chrono_literals;

namespace {

sim::communicator_config rank_config(const strata_test::temp_dir& dir, int rank, int ranks,
                                     std::chrono::milliseconds timeout = 20'000ms) {
  return {.job_dir = (dir / "job").string(), .rank = rank, .world_size = ranks, .max_elements = 4096,
          .timeout = timeout};
}

// Runs `body(rank)` on one thread per rank and rethrows the first failure.
void on_ranks(int ranks, const std::function<void(int)>& body) {
  std::vector<std::future<void>> done;
  for (int r = 0; r < ranks; ++r) done.push_back(std::async(std::launch::async, body, r));
  for (auto& f : done) f.get();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const strata::error& e) {
    return e.what();
  }
  return "(no error)";
}

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("collective cost model: ring and tree against hand-computed figures") {
  using sim::collective_kind;
  const sim::collective_link v3 = sim::neuronlink(sim::core_generation::trn2);
  CHECK(v3.bytes_per_s == 320e9);  // 1.28 TB/s per device over its 4 links
  CHECK(v3.latency_ns == 600);     // one DMA's fixed latency on trn2
  // 1 MiB over 4 ranks: ring 2*3 hops of 262144 B (819.2 ns at 320 GB/s) + 600 ns.
  const sim::collective_shape mib{collective_kind::all_reduce, 1 << 20, 4};
  CHECK(sim::collective_ps(mib, v3, sim::collective_algorithm::ring) == 6 * (600'000 + 819'200));
  // Tree: 2*log2(4) = 4 hops of the whole 1 MiB (3276.8 ns).
  CHECK(sim::collective_ps(mib, v3, sim::collective_algorithm::tree) == 4 * (600'000 + 3'276'800));
  CHECK(sim::collective_ps(mib, v3) == 8'515'200);
  CHECK(sim::chosen_algorithm(mib, v3, sim::collective_algorithm::automatic) == sim::collective_algorithm::ring);
  // 1 KiB over 4 ranks: the tree's 4 hops (600 ns + 3.2 ns) beat the ring's 6 (600 ns + 0.8 ns).
  const sim::collective_shape kib{collective_kind::all_reduce, 1024, 4};
  CHECK(sim::collective_ps(kib, v3, sim::collective_algorithm::ring) == 6 * 600'800);
  CHECK(sim::collective_ps(kib, v3) == 4 * 603'200);
  CHECK(sim::chosen_algorithm(kib, v3, sim::collective_algorithm::automatic) == sim::collective_algorithm::tree);
  // Tree over 5 ranks: ceil(log2 5) = 3 levels.
  CHECK(sim::collective_ps({collective_kind::all_reduce, 1000, 5}, v3, sim::collective_algorithm::tree) ==
        6 * (600'000 + 3'125));

  // trn1 over NeuronLink-v2 (192 GB/s, 2 us): all_gather of 3 x 64 KiB is 2 hops of 64 KiB.
  const sim::collective_link v2 = sim::neuronlink(sim::core_generation::trn1);
  CHECK(sim::collective_ps({collective_kind::all_gather, 3 * 65536, 3}, v2) == 2 * (2'000'000 + 341'333));
  CHECK(sim::collective_ps({collective_kind::reduce_scatter, 3 * 65536, 3}, v2) == 2 * (2'000'000 + 341'333));
  // A send is one hop of the message; EFA on trn1: 800 Gbps / 16 devices = 6.25 GB/s, 10 us.
  const sim::collective_link net = sim::efa(sim::core_generation::trn1);
  CHECK(net.bytes_per_s == 6.25e9);
  CHECK(sim::collective_ps({collective_kind::send, 1'000'000, 2}, net) == 10'000'000 + 160'000'000);
  // No work: one rank, or nothing to move.
  CHECK(sim::collective_ps({collective_kind::all_reduce, 1 << 20, 1}, v3) == 0);
  CHECK(sim::collective_ps({collective_kind::all_reduce, 0, 8}, v3) == 0);
  CHECK(has(error_of([&] { sim::collective_ps(mib, {"none", 0, 1}); }), "positive bandwidth"));
  CHECK(has(error_of([&] { sim::collective_ps({collective_kind::all_reduce, 8, 0}, v3); }), "at least one rank"));
}

TEST_CASE("communicator: each collective's values across three ranks on threads") {
  strata_test::temp_dir dir;
  constexpr int n = 3;
  std::vector<std::vector<float>> reduced(n), gathered(n), scattered(n), received(n);
  std::vector<sim::collective_result> results(n);
  std::vector<std::int64_t> arrivals = {1'000, 5'000, 3'000};
  on_ranks(n, [&](int r) {
    sim::communicator comm(rank_config(dir, r, n));
    CHECK(comm.size() == 3);
    CHECK(comm.group_rank() == static_cast<std::uint32_t>(r));
    CHECK(comm.ranks_text() == "[0, 1, 2]");
    const std::vector<float> x = {static_cast<float>(r + 1), 10.0f * static_cast<float>(r), 0.5f};
    std::vector<float> sum(3);
    results[static_cast<std::size_t>(r)] = comm.all_reduce(x, sum, arrivals[static_cast<std::size_t>(r)]);
    reduced[static_cast<std::size_t>(r)] = sum;
    std::vector<float> all(9);
    comm.all_gather(x, all, 0);
    gathered[static_cast<std::size_t>(r)] = all;
    // reduce_scatter of 6 values: rank r keeps the sum of block r (2 values).
    std::vector<float> six(6), part(2);
    for (std::size_t i = 0; i < 6; ++i) six[i] = static_cast<float>(i) + 100.0f * static_cast<float>(r);
    comm.reduce_scatter(six, part, 0);
    scattered[static_cast<std::size_t>(r)] = part;
    // A ring of sends: r sends {r, r} to r + 1 and receives from r - 1. Sends block until taken,
    // so even ranks send first and odd ranks receive first.
    const auto next = static_cast<std::uint32_t>((r + 1) % n), prev = static_cast<std::uint32_t>((r + n - 1) % n);
    const std::vector<float> mine = {static_cast<float>(r), static_cast<float>(r)};
    std::vector<float> got(2);
    if (r % 2 == 0) {
      comm.send(mine, next, 0);
      comm.recv(got, prev, 0);
    } else {
      comm.recv(got, prev, 0);
      comm.send(mine, next, 0);
    }
    received[static_cast<std::size_t>(r)] = got;
  });
  for (int r = 0; r < n; ++r) {
    const auto i = static_cast<std::size_t>(r);
    CHECK(reduced[i] == std::vector<float>{6.0f, 30.0f, 1.5f});
    CHECK(gathered[i] == std::vector<float>{1, 0, 0.5f, 2, 10, 0.5f, 3, 20, 0.5f});
    // Block r of each rank's six values, summed: (2r + j) * 3 + 100 * (0 + 1 + 2).
    CHECK(scattered[i] == std::vector<float>{static_cast<float>(6 * r + 300), static_cast<float>(6 * r + 3 + 300)});
    const float from = static_cast<float>((r + n - 1) % n);
    CHECK(received[i] == std::vector<float>{from, from});
    // Every rank starts the transfer when the last one (rank 1, at 5000 ns) arrived, and ends
    // it after the model's time for 12 bytes over 3 ranks (trn1 NeuronLink-v2).
    CHECK(results[i].start_ns == 5'000);
    const std::int64_t ps = sim::collective_ps({sim::collective_kind::all_reduce, 12, 3},
                                               sim::neuronlink(sim::core_generation::trn1));
    CHECK(results[i].end_ns == 5'000 + (ps + 500) / 1000);
    CHECK(results[i].seq == 1);
  }
  // The last rank to leave removed the rendezvous file.
  CHECK(strata_test::entries(dir / "job").empty());
}

TEST_CASE("collectives on the runtime: values, records with Kineto's args, a straggler's delay as wait") {
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir, 4096));
  prof.start();
  constexpr int n = 2;
  constexpr sim::shape2 shape{4, 8};
  constexpr std::int64_t delay_ns = 5'000'000;
  sim::runtime rt({.cores = n});
  std::vector<sim::submission> subs(n);
  std::vector<std::vector<float>> out(n);
  std::promise<void> rank0_submitted;
  std::shared_future<void> submitted = rank0_submitted.get_future().share();
  on_ranks(n, [&](int r) {
    const auto core = static_cast<std::uint32_t>(r);
    sim::communicator comm(rank_config(dir, r, n));
    std::vector<float> x(shape.rows * shape.cols);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * static_cast<float>(r + 1);
    auto t = rt.to_device(core, "x", x, shape);
    if (r == 1) {
      // The straggler: it submits its part only after rank 0 has, and a delay later.
      submitted.wait();
      std::this_thread::sleep_for(std::chrono::nanoseconds(delay_ns));
    }
    const auto sub = sim::all_reduce(rt, core, comm, t, t);
    if (r == 0) rank0_submitted.set_value();
    rt.wait(sub);
    subs[core] = sub;
    out[core] = rt.to_host(t);
  });
  prof.stop();

  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < out[0].size(); ++i) CHECK(out[static_cast<std::size_t>(r)][i] == 3.0f * static_cast<float>(i));
  // Both queues end the collective together; rank 0's reached it at least the delay earlier.
  CHECK(subs[0].device_end_ns() == subs[1].device_end_ns());
  CHECK(subs[1].device_start_ns() - subs[0].device_start_ns() >= delay_ns);

  const auto& d = prof.data();
  std::vector<std::int64_t> wait_ns(n, -1);
  int collectives = 0, ops = 0, comms = 0;
  for (const auto& t : d.threads)
    for (const auto& rec : t.records) {
      const std::string_view name = rec.site->name;
      const std::string args = rec.site->args_json != nullptr ? rec.site->args_json : "";
      if (name == "c10d::allreduce_" || name == "record_param_comms") {
        (name == "record_param_comms" ? comms : ops)++;
        CHECK(t.pid == 0);
        CHECK(has(args, "\"Collective name\":\"allreduce\""));
        CHECK(has(args, "\"In msg nelems\":32,\"Out msg nelems\":32,\"Group size\":2"));
        CHECK(has(args, "\"Process Group Ranks\":\"[0, 1]\""));
        CHECK(has(args, "\"Seq\":1"));
      }
      if (name == "AllReduce (tree)" || name == "AllReduce (ring)") {
        ++collectives;
        CHECK(t.name == "Collective queue");
        CHECK(has(args, "\"dtype\":\"Float\""));
        const int core = static_cast<int>(t.pid - strata::device_pid(0));
        REQUIRE(core >= 0);
        REQUIRE(core < n);
        CHECK(rec.payload != 0);
        CHECK(static_cast<std::int64_t>(rec.begin) == subs[static_cast<std::size_t>(core)].device_start_ns());
        CHECK(static_cast<std::int64_t>(rec.end) == subs[static_cast<std::size_t>(core)].device_end_ns());
      }
      if (name == "wait for ranks") {
        const int core = static_cast<int>(t.pid - strata::device_pid(0));
        wait_ns[static_cast<std::size_t>(core)] = static_cast<std::int64_t>(rec.end - rec.begin);
      }
    }
  CHECK(ops == 2);
  CHECK(comms == 2);
  CHECK(collectives == 2);
  // The fast rank's queue sat in the collective waiting for the straggler; the straggler, the
  // last to arrive, did not wait.
  CHECK(wait_ns[0] >= delay_ns);
  CHECK(wait_ns[1] == -1);
}

TEST_CASE("communicator: a rank that never arrives, leaves or dies ends the wait with an error") {
  strata_test::temp_dir dir;
  SUBCASE("never joins: a timeout naming the missing rank") {
    const std::string e = error_of([&] { sim::communicator comm(rank_config(dir, 0, 2, 200ms)); });
    CHECK(has(e, "joining: timed out after 200 ms waiting for rank 1"));
    // Rank 1 never came, so the file stays; a next job in the same directory is told so.
    CHECK(strata_test::entries(dir / "job") == std::vector<std::string>{"collectives-0.shm"});
    CHECK(has(error_of([&] { sim::communicator again(rank_config(dir, 0, 2, 200ms)); }),
              "a file left by an earlier job (remove it, or give the job a new directory)"));
  }
  SUBCASE("joins, then leaves before the collective") {
    std::string e;
    on_ranks(2, [&](int r) {
      sim::communicator comm(rank_config(dir, r, 2));
      if (r == 1) return;
      std::this_thread::sleep_for(50ms);  // not needed for the outcome: rank 1 leaves at some point
      std::vector<float> x(4, 1.0f), y(4);
      e = error_of([&] { comm.all_reduce(x, y, 0); });
    });
    CHECK(has(e, "allreduce #1: rank 1 (pid"));
    CHECK(has(e, "left the group before it arrived"));
  }
  SUBCASE("the other rank's process dies") {
    const std::string job = (dir / "job").string();
    std::fflush(nullptr);  // the child must not write the parent's buffered output again
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      try {
        sim::communicator comm({.job_dir = job, .rank = 1, .world_size = 2, .max_elements = 4096});
        ::_exit(3);  // dies as a member, without leaving
      } catch (...) {
        ::_exit(4);
      }
    }
    std::string e;
    {
      sim::communicator comm({.job_dir = job, .rank = 0, .world_size = 2, .max_elements = 4096});
      int status = 0;
      ::waitpid(child, &status, 0);
      CHECK(WEXITSTATUS(status) == 3);
      std::vector<float> x(4, 1.0f), y(4);
      e = error_of([&] { comm.all_reduce(x, y, 0); });
      // Broken: the group cannot go on.
      CHECK(has(error_of([&] { comm.all_reduce(x, y, 0); }), "an earlier collective of this rank failed"));
    }
    CHECK(has(e, "exited before it arrived"));
  }
  SUBCASE("a send nobody receives") {
    std::string e;
    on_ranks(2, [&](int r) {
      sim::communicator comm(rank_config(dir, r, 2, 200ms));
      if (r == 0) {
        const std::vector<float> x(4, 1.0f);
        e = error_of([&] { comm.send(x, 1, 0); });
      } else {
        std::this_thread::sleep_for(400ms);  // stays in the group, never receives
      }
    });
    CHECK(has(e, "send #1 to group rank 1: timed out after 200 ms waiting for rank 1"));
  }
}

TEST_CASE("communicator: ranks that disagree, and bad arguments") {
  strata_test::temp_dir dir;
  SUBCASE("different collectives at the same seq") {
    std::vector<std::string> errors(2);
    on_ranks(2, [&](int r) {
      sim::communicator comm(rank_config(dir, r, 2));
      std::vector<float> x(4, 1.0f), y(4), all(8);
      errors[static_cast<std::size_t>(r)] =
          error_of([&] { r == 0 ? comm.all_reduce(x, y, 0) : comm.all_gather(x, all, 0); });
    });
    CHECK(has(errors[0], "allreduce #1: rank 1 called allgather with 4 values where rank 0 called allreduce"));
    CHECK(has(errors[1], "allgather #1: rank 0 called allreduce with 4 values where rank 1 called allgather"));
  }
  SUBCASE("membership and configuration") {
    const std::string job = (dir / "job").string();
    CHECK(has(error_of([&] { sim::communicator c({.job_dir = job, .rank = 5, .world_size = 2}); }),
              "rank 5 is not a member of group '0' (ranks [0, 1])"));
    CHECK(has(error_of([&] {
                sim::communicator c({.job_dir = job, .rank = 0, .group = {.name = "tp", .ranks = {0, 2, 0}}});
              }),
              "group 'tp' lists rank 0 twice"));
    CHECK(has(error_of([&] {
                sim::communicator c({.job_dir = job, .rank = 0, .group = {.name = "a\"b\n", .ranks = {0}}});
              }),
              "a group name may only hold letters, digits, '_', '-' and '.'; got \"a\\\"b\\n\""));
    CHECK(has(error_of([&] { sim::communicator c({.job_dir = job, .rank = 0, .world_size = 0}); }),
              "world_size must be from 1 to 64"));
    CHECK(has(error_of([&] { sim::communicator c({.job_dir = "", .rank = 0, .world_size = 1}); }),
              "no job directory"));
    CHECK(has(error_of([&] {
                sim::communicator c({.job_dir = "/proc/strata-no/such", .rank = 0, .world_size = 1});
              }),
              "cannot create the job directory /proc/strata-no/such"));
  }
  SUBCASE("sizes") {
    sim::communicator comm({.job_dir = (dir / "job").string(), .rank = 0, .world_size = 1, .max_elements = 8});
    std::vector<float> x(4, 2.0f), y(3), big(9);
    CHECK(has(error_of([&] { comm.all_reduce(x, y, 0); }), "allreduce: the output holds 3 values, the input 4"));
    CHECK(has(error_of([&] { comm.all_gather(x, y, 0); }), "allgather: the output must hold 1 x 4 values"));
    CHECK(has(error_of([&] { comm.all_reduce(big, big, 0); }), "9 values exceed communicator_config::max_elements (8)"));
    CHECK(has(error_of([&] { comm.send(x, 0, 0); }), "group rank 0 is not another member"));
    // A group of one: the collective is the identity and costs nothing.
    std::vector<float> same(4);
    const auto r = comm.all_reduce(x, same, 7'000);
    CHECK(same == x);
    CHECK(r.start_ns == 7'000);
    CHECK(r.end_ns == 7'000);
  }
  SUBCASE("the same rank twice, or a file another group left") {
    const std::string job = (dir / "job").string();
    sim::communicator a({.job_dir = job, .rank = 0, .world_size = 1});
    CHECK(has(error_of([&] { sim::communicator b({.job_dir = job, .rank = 0, .world_size = 1}); }),
              "rank 0 has already joined through"));
    CHECK(has(error_of([&] { sim::communicator b({.job_dir = job, .rank = 0, .world_size = 2}); }),
              "belongs to another group"));
  }
  SUBCASE("runtime calls check their tensors") {
    sim::runtime rt;
    sim::communicator comm({.job_dir = (dir / "job").string(), .rank = 0, .world_size = 1});
    const auto a = rt.empty(0, "a", {4, 8}), b = rt.empty(0, "b", {8, 8});
    CHECK(has(error_of([&] { sim::all_reduce(rt, 0, comm, a, b); }), "all_reduce: the output is [8, 8], the input [4, 8]"));
    CHECK(has(error_of([&] { sim::all_gather(rt, 0, comm, a, b); }), "all_gather: the output must be [4, 8]"));
    CHECK(has(error_of([&] { sim::reduce_scatter(rt, 0, comm, b, a); }), "reduce_scatter: the input must be [4, 8]"));
    CHECK(has(error_of([&] { sim::send(rt, 0, comm, sim::hbm_tensor{}, 0); }), "send: the input is an empty tensor"));
    CHECK(has(error_of([&] { sim::all_reduce(rt, 3, comm, a, a); }), "core 3 does not exist"));
    // A failure on the device side is the submission's: a send to oneself.
    CHECK(has(error_of([&] { rt.wait(sim::send(rt, 0, comm, a, 0)); }), "group rank 0 is not another member"));
  }
}
