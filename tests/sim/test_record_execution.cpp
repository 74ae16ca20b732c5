// record_execution: a kernel's timeline as device records: one process per core, the kernel
// and its phases on the "Kernel" track, one track per engine, counters, correlation ids.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/analysis/key_averages.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/profiler.hpp"
#include "strata/sim/neuron_core.hpp"
#include "strata/sim/record_execution.hpp"
#include "support.hpp"

namespace sim = strata::sim;

namespace {

// Load, exp on the Scalar engine, a Vector reduce, store: three kinds of track.
sim::execution small_kernel(sim::neuron_core& core) {
  std::vector<float> data(128 * 64, 0.5f);
  sim::hbm_tensor x = core.upload("x", data, {128, 64});
  sim::hbm_tensor y = core.alloc_hbm("y", {128, 64});
  return core.run("exp_kernel", [&](sim::kernel& k) {
    auto all = k.phase("all");
    sim::tile t = k.load(x, {0, 0}, {128, 64});
    sim::tile e = [&] {
      auto ph = k.phase("compute");
      sim::tile r = k.activation(t, sim::act::exp);
      static_cast<void>(k.reduce(r, sim::alu::add));
      return r;
    }();
    k.store(y, {0, 0}, e);
  });
}

const strata::thread_track* track_named(const strata::trace_data& d, std::string_view name) {
  for (const auto& t : d.threads)
    if (t.name == name && t.pid == strata::device_pid(0)) return &t;
  return nullptr;
}

std::int64_t dur(const strata::trace_data& d, const strata::thread_track& t, const strata::record& r) {
  return d.ns_of(t, r.end) - d.ns_of(t, r.begin);
}

std::int64_t rounded_ns(std::int64_t ps) { return (ps + 500) / 1000; }

}  // namespace

TEST_CASE("record_execution: tracks, exact simulated times, correlation ids, categories") {
  sim::neuron_core core{sim::core_generation::trn1};
  const sim::execution ex = small_kernel(core);
  REQUIRE(ex.instructions.size() == 4);

  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  const std::int64_t launch = strata::clock::steady_ns();
  const auto got = sim::record_execution(ex, {.core = 0, .start_ns = launch, .correlation_id = 9});
  prof.stop();
  const auto& d = prof.data();
  CHECK(got.records == got.taken);
  // The kernel, two phases and the counters; four instructions.
  CHECK(got.records == 1 + 2 + ex.counters.size() + 4);

  const auto* kernel = track_named(d, "Kernel");
  REQUIRE(kernel != nullptr);
  CHECK(kernel->process_name == "NeuronCore 0 (trn1)");
  CHECK(kernel->tid == sim::kernel_track);
  REQUIRE(kernel->records.size() == 3 + ex.counters.size());
  const strata::record& run = kernel->records[0];
  CHECK(std::string_view(run.site->name) == "exp_kernel");
  CHECK(run.site->category == nullptr);  // the execution itself: what key_averages counts
  CHECK(run.payload == 9);
  CHECK(d.ns_of(*kernel, run.begin) == launch);
  CHECK(dur(d, *kernel, run) == rounded_ns(ex.duration_ps));
  CHECK(std::string_view(kernel->records[1].site->name) == "all");
  CHECK(std::string_view(kernel->records[1].site->category) == "device.phase");
  const auto compute = strata_test::named(*kernel, "compute");
  REQUIRE(compute.size() == 1);
  CHECK(std::string_view(compute[0].site->category) == "device.phase");
  CHECK(strata_test::scopes_nest(kernel->records));
  CHECK(strata_test::counter_values(*kernel, "SBUF used (bytes)").size() ==
        ex.counter("SBUF used (bytes)").size());

  // Each instruction on its engine's track, with its simulated times exactly.
  for (const auto& in : ex.instructions) {
    const auto* t = track_named(d, in.engine.track_name());
    REQUIRE(t != nullptr);
    CHECK(t->tid == 1 + in.engine.track_index());
    bool found = false;
    for (const auto& r : t->records) {
      if (std::string_view(r.site->name) != in.name) continue;
      found = true;
      CHECK(std::string_view(r.site->category) == "device.engine");
      CHECK(r.payload == 9);
      CHECK(d.ns_of(*t, r.begin) == launch + rounded_ns(in.start_ps));
      CHECK(d.ns_of(*t, r.end) == launch + rounded_ns(in.end_ps));
      const std::string want_args = in.bytes != 0 ? "\"bytes\":" + std::to_string(in.bytes)
                                                  : "\"cycles\":" + std::to_string(in.cycles);
      CHECK(std::string_view(r.site->args_json) == want_args);
    }
    CHECK(found);
  }
  CHECK(track_named(d, "Scalar") != nullptr);
  CHECK(track_named(d, "Vector") != nullptr);
}

TEST_CASE("record_execution: the op's device time is the execution's, not the engines' sum") {
  sim::neuron_core core{sim::core_generation::trn1};
  const sim::execution ex = small_kernel(core);
  std::int64_t engine_sum = 0;
  for (const auto& in : ex.instructions) engine_sum += rounded_ns(in.end_ps) - rounded_ns(in.start_ps);

  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  const std::uint64_t op_begin = strata::clock::now();
  sim::record_execution(ex, {.core = 0, .start_ns = strata::clock::steady_ns(), .correlation_id = 5});
  strata::append_record(strata::intern(strata::layer::framework, "my_op"), op_begin, strata::clock::now(), 5);
  prof.stop();

  const auto avg = strata::key_averages(prof.data());
  bool op_seen = false, kernel_seen = false;
  for (const auto& row : avg.rows) {
    CHECK(row.name != "load");  // parts of the execution are not rows
    CHECK(row.name != "all");
    if (row.name == "my_op") {
      op_seen = true;
      CHECK(row.device_total_ns == rounded_ns(ex.duration_ps));
      CHECK(row.self_device_ns == rounded_ns(ex.duration_ps));
    }
    if (row.name == "exp_kernel") {
      kernel_seen = true;
      CHECK(row.is_device);
      CHECK(row.self_device_ns == rounded_ns(ex.duration_ps));
    }
  }
  CHECK(op_seen);
  CHECK(kernel_seen);
  CHECK(engine_sum > rounded_ns(ex.duration_ps));  // the engines overlap: a sum would overcount
}

TEST_CASE("record_execution: nothing is built for a core that is not captured") {
  sim::neuron_core core{sim::core_generation::trn2};
  const sim::execution ex = small_kernel(core);
  strata_test::temp_dir dir;
  auto config = strata_test::config_in(dir);
  config.capture_cores = "1";
  strata::profiler prof(config);
  prof.start();
  const auto skipped = sim::record_execution(ex, {.core = 0, .start_ns = strata::clock::steady_ns()});
  const auto kept = sim::record_execution(ex, {.core = 1, .start_ns = strata::clock::steady_ns()});
  prof.stop();
  CHECK(skipped.records == 0);
  CHECK(kept.taken == kept.records);
  for (const auto& t : prof.data().threads) CHECK(t.pid == strata::device_pid(1));
  CHECK(prof.data().threads.front().process_name == "NeuronCore 1 (trn2)");
}

TEST_CASE("record_execution: the same kernel gives the same device durations on every run") {
  const auto durations = [] {
    sim::neuron_core core{sim::core_generation::trn1};
    const sim::execution ex = small_kernel(core);
    strata_test::temp_dir dir;
    strata::profiler prof(strata_test::config_in(dir));
    prof.start();
    sim::record_execution(ex, {.core = 0, .start_ns = strata::clock::steady_ns() + 12345});
    prof.stop();
    std::vector<std::int64_t> out;
    for (const auto& t : prof.data().threads)
      for (const auto& r : t.records)
        if (r.kind() == strata::record_kind::scope) out.push_back(dur(prof.data(), t, r));
    return out;
  };
  const auto first = durations();
  CHECK(first.size() == 7);
  CHECK(durations() == first);
}

TEST_CASE("record_execution: the trace shows engine parts under their own categories") {
  sim::neuron_core core{sim::core_generation::trn1};
  const sim::execution ex = small_kernel(core);
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  sim::record_execution(ex, {.core = 0, .start_ns = strata::clock::steady_ns(), .correlation_id = 3});
  prof.stop();
  const auto path = dir / "t.json";
  strata::write_chrome_trace(prof.data(), path);
  const std::string text = strata_test::read_file(path);
  CHECK(strata_test::lines_with(text, R"({"ph":"X","cat":"device","name":"exp_kernel")").size() == 1);
  CHECK(strata_test::lines_with(text, R"({"ph":"X","cat":"device.phase","name":"compute")").size() == 1);
  CHECK(strata_test::lines_with(text, R"({"ph":"X","cat":"device.engine","name":"load")").size() == 1);
  CHECK(strata_test::lines_with(text, R"("args":{"bytes":32768,"correlation_id":3})").size() == 2);
  CHECK(strata_test::lines_with(text, R"x({"ph":"C","cat":"device","name":"SBUF used (bytes)")x").size() ==
        ex.counter("SBUF used (bytes)").size());
}

TEST_CASE("record_execution: phases that overlap in time go to lanes that each nest") {
  sim::neuron_core core{sim::core_generation::trn1};
  std::vector<float> data(128 * 64, 1.0f);
  sim::hbm_tensor x = core.upload("x", data, {256, 32});
  // Two blocks on two DMA queues: the second block's phase starts before the first's ends.
  const sim::execution ex = core.run("two_blocks", [&](sim::kernel& k) {
    for (std::size_t b = 0; b < 2; ++b) {
      auto ph = k.phase("block");
      static_cast<void>(k.activation(k.load(x, {128 * b, 0}, {128, 32}, static_cast<std::uint16_t>(b)),
                                     sim::act::exp));
    }
  });
  REQUIRE(ex.phases.size() == 2);
  REQUIRE(ex.phases[1].start_ps < ex.phases[0].end_ps);

  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  sim::record_execution(ex, {.core = 0, .start_ns = strata::clock::steady_ns()});
  prof.stop();
  const auto* kernel = track_named(prof.data(), "Kernel");
  const auto* lane = track_named(prof.data(), "Kernel phases 1");
  REQUIRE(kernel != nullptr);
  REQUIRE(lane != nullptr);
  CHECK(lane->tid == sim::phase_lane_track + 1);
  CHECK(strata_test::named(*kernel, "block").size() == 1);
  CHECK(strata_test::named(*lane, "block").size() == 1);
  for (const auto& t : prof.data().threads) CHECK(strata_test::scopes_nest(t.records));
}

TEST_CASE("record_execution: the core shows every engine, used or not, in a fixed order") {
  sim::neuron_core core{sim::core_generation::trn1};
  const sim::execution ex = small_kernel(core);  // DMA, Scalar and Vector; no Tensor, no GpSimd
  strata_test::temp_dir dir;
  strata::profiler prof(strata_test::config_in(dir));
  prof.start();
  const std::int64_t launch = strata::clock::steady_ns();
  sim::record_execution(ex, {.core = 0, .start_ns = launch, .correlation_id = 3});
  sim::record_execution(ex, {.core = 0, .start_ns = launch + 100000, .correlation_id = 4});
  prof.stop();

  std::vector<std::string> want = {"Kernel", "Tensor", "Vector", "Scalar", "GpSimd"};
  for (int q = 0; q < 16; ++q) want.push_back("DMA queue " + std::to_string(q));  // trn1: 16
  std::vector<std::string> got;
  for (const auto& t : prof.data().threads)
    if (t.pid == strata::device_pid(0)) got.push_back(t.name);  // sorted by sort_index
  CHECK(got == want);
  const auto* tensor = track_named(prof.data(), "Tensor");
  REQUIRE(tensor != nullptr);
  CHECK(tensor->records.empty());
  CHECK(tensor->sort_index == 1);
  CHECK(track_named(prof.data(), "GpSimd")->sort_index == 4);

  // The JSON trace names the idle Tensor track and places it second.
  strata::write_chrome_trace(prof.data(), dir / "trace.json");
  const std::string json = strata_test::read_file(dir / "trace.json");
  CHECK(json.find("\"name\":\"thread_name\",\"pid\":16777216,\"tid\":1,\"args\":{\"name\":\"Tensor\"}") != std::string::npos);
  CHECK(json.find("\"name\":\"thread_sort_index\",\"pid\":16777216,\"tid\":1,\"args\":{\"sort_index\":1}") != std::string::npos);
}

TEST_CASE("record_execution: a new session names the engines again") {
  sim::neuron_core core{sim::core_generation::trn2};
  const sim::execution ex = small_kernel(core);
  for (int session = 0; session < 2; ++session) {
    CAPTURE(session);
    strata_test::temp_dir dir;
    strata::profiler prof(strata_test::config_in(dir));
    prof.start();
    sim::record_execution(ex, {.core = 1, .start_ns = strata::clock::steady_ns(), .correlation_id = 5});
    prof.stop();
    std::size_t tracks = 0;
    for (const auto& t : prof.data().threads) tracks += t.pid == strata::device_pid(1) ? 1 : 0;
    CHECK(tracks == 5 + sim::params_for(sim::core_generation::trn2).dma_queues);
  }
}
