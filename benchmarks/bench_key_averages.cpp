// benchmarks/bench_key_averages.cpp: how fast a stopped session becomes key_averages() rows.
//
// The session is built by hand (strata::trace_data), so the figure is the aggregation's alone:
// 10M records over 2 host threads in a repeating pattern of what an inference stack records
// (nested framework, runtime and user scopes, a recursive op that collapses, correlation ids
// on an op and the runtime call it makes, an instant that key_averages leaves out), and per
// host thread a device track (timestamps in nanoseconds) whose kernels carry the ids, so
// device time is attributed. Reported: records per second (items/s) and the number of rows.
// `stacks` builds collapsed stacks (strata::stacks, both metrics in turn) from the same session,
// beside key_averages in the same run: records/s and the number of lines.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include <unistd.h>

#include "strata/analysis/key_averages.hpp"
#include "strata/analysis/stacks.hpp"
#include "strata/device.hpp"
#include "strata/profiler.hpp"

#ifndef STRATA_BENCH_BUILD
#define STRATA_BENCH_BUILD "unknown"
#endif

namespace {

using strata::layer;
using strata::record_kind;

constexpr strata::site sites[] = {
    {"ProfilerStep#1", __FILE__, __LINE__, layer::framework, record_kind::scope},
    {"aten::linear", __FILE__, __LINE__, layer::framework, record_kind::scope},
    {"aten::matmul", __FILE__, __LINE__, layer::framework, record_kind::scope},
    {"nrt::submit", __FILE__, __LINE__, layer::runtime, record_kind::scope},
    {"nrt::execute", __FILE__, __LINE__, layer::runtime, record_kind::scope},
    {"aten::softmax", __FILE__, __LINE__, layer::framework, record_kind::scope},
    {"tokenizer: decode", __FILE__, __LINE__, layer::user, record_kind::scope},
    {"aten::to", __FILE__, __LINE__, layer::framework, record_kind::scope},
    {"aten::to", __FILE__, __LINE__ + 1000, layer::framework, record_kind::scope},
    {"step done", __FILE__, __LINE__, layer::user, record_kind::instant},
    {"nki_matmul", __FILE__, __LINE__, layer::device, record_kind::scope},
};
constexpr std::uint64_t host_block_records = 10;  // sites[0..9]; sites[10] on the device

/// Appends one block of host records starting at tick `t` and its kernel on the device track
/// (nanoseconds); returns the tick after it.
std::uint64_t append_block(const strata::trace_data& data, std::vector<strata::record>& host,
                           std::vector<strata::record>& device, std::uint64_t t, std::uint64_t corr) {
  // A parent spans its children, children follow each other, records are oldest first.
  host.push_back({t, t + 9000, &sites[0], 0});
  host.push_back({t + 100, t + 5000, &sites[1], corr});
  host.push_back({t + 200, t + 2000, &sites[2], 0});
  host.push_back({t + 2100, t + 2600, &sites[3], corr});
  host.push_back({t + 2700, t + 4800, &sites[4], 0});
  host.push_back({t + 5100, t + 7000, &sites[5], 0});
  host.push_back({t + 7100, t + 8900, &sites[6], 0});
  host.push_back({t + 7200, t + 7600, &sites[7], 0});  // aten::to holding only aten::to:
  host.push_back({t + 7250, t + 7500, &sites[8], 0});  // the two collapse into one
  host.push_back({t + 8950, t + 8950, &sites[9], 0});
  const std::int64_t launched = data.clock.to_ns(t + 2400);
  device.push_back({static_cast<std::uint64_t>(launched + 300),
                    static_cast<std::uint64_t>(launched + 300 + 1500 + static_cast<std::int64_t>(corr % 64)),
                    &sites[10], corr});
  return t + 10000;
}

/// A stopped session of about `records` records: `threads` host threads and one device track
/// each, on this process's real clock (calibrated as a profiler would).
strata::trace_data synthetic_session(std::uint64_t records, std::uint64_t threads) {
  strata::clock::select_once();
  strata::trace_data data;
  data.clock = strata::clock_calibration::begin();
  data.pid = static_cast<std::uint64_t>(::getpid());
  data.process_name = "bench_key_averages";
  data.layers = strata::layer_set::all();
  data.start_ticks = strata::clock::now();
  data.clock.finish();
  const std::uint64_t blocks = records / threads / (host_block_records + 1);
  std::uint64_t corr = 1;
  std::vector<strata::thread_track> devices;
  for (std::uint64_t i = 0; i < threads; ++i) {
    strata::thread_track host;
    host.tid = 100000 + i;
    host.sort_index = static_cast<std::uint32_t>(i);
    host.name = "worker " + std::to_string(i);
    host.records.reserve(blocks * host_block_records);
    strata::thread_track device;
    device.pid = strata::device_pid(0);
    device.tid = i;
    device.sort_index = static_cast<std::uint32_t>(i);
    device.name = "qSyncIO " + std::to_string(i);
    device.process_name = "NeuronCore 0";
    device.timestamps_in_ns = true;
    device.records.reserve(blocks);
    std::uint64_t t = data.start_ticks;
    for (std::uint64_t b = 0; b < blocks; ++b) t = append_block(data, host.records, device.records, t, corr++);
    data.stop_ticks = std::max(data.stop_ticks, t);
    data.threads.push_back(std::move(host));
    devices.push_back(std::move(device));
  }
  for (auto& d : devices) data.threads.push_back(std::move(d));  // host tracks first
  return data;
}

void key_averages(benchmark::State& state) {
  const strata::trace_data data = synthetic_session(static_cast<std::uint64_t>(state.range(0)),
                                                    static_cast<std::uint64_t>(state.range(1)));
  const std::uint64_t records = data.recorded();
  std::size_t rows = 0;
  for (auto _ : state) {
    const strata::averages result = strata::key_averages(data);
    rows = result.rows.size();
    benchmark::DoNotOptimize(result.rows.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(records));
  state.counters["records"] = static_cast<double>(records);
  state.counters["rows"] = static_cast<double>(rows);
}

void stacks(benchmark::State& state) {
  const strata::trace_data data = synthetic_session(static_cast<std::uint64_t>(state.range(0)),
                                                    static_cast<std::uint64_t>(state.range(1)));
  const std::uint64_t records = data.recorded();
  const char* metric = state.range(2) == 0 ? "self_cpu_time_total" : "self_device_time_total";
  std::size_t lines = 0;
  for (auto _ : state) {
    const strata::collapsed_stacks result = strata::stacks(data, metric);
    lines = result.lines.size();
    benchmark::DoNotOptimize(result.lines.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(records));
  state.counters["records"] = static_cast<double>(records);
  state.counters["lines"] = static_cast<double>(lines);
}

}  // namespace

BENCHMARK(key_averages)
    ->ArgNames({"records", "threads"})
    ->Args({10000000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(stacks)
    ->ArgNames({"records", "threads", "device"})
    ->Args({10000000, 2, 0})
    ->Args({10000000, 2, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

int main(int argc, char** argv) {
  benchmark::AddCustomContext("compiler", __VERSION__);
  benchmark::AddCustomContext("build", STRATA_BENCH_BUILD);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
