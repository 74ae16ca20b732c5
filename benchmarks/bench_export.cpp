// benchmarks/bench_export.cpp: how fast a stopped session becomes Chrome trace JSON, a Perfetto
// protobuf trace, or either gzip-compressed.
//
// The session is built by hand (strata::trace_data), so the figure is the writer's alone and is
// the same from run to run: 1M records over 2 threads in a repeating pattern of what an
// inference stack records (nested framework and runtime scopes, some with a correlation id,
// user scopes, instants, counters). The file goes to the temporary directory and is removed
// afterwards. Reported: records per second (items/s), bytes per second and bytes per record.
// The formats run as one benchmark with the format as its argument, so that
// --benchmark_enable_random_interleaving mixes their repetitions and a ratio of two medians
// compares runs that met the same load.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <benchmark/benchmark.h>

#include <unistd.h>

#include "strata/export/chrome_trace.hpp"
#include "strata/export/perfetto_trace.hpp"
#include "strata/profiler.hpp"

#ifndef STRATA_BENCH_BUILD
#define STRATA_BENCH_BUILD "unknown"
#endif

namespace {

using strata::layer;
using strata::record_kind;

// A repeating block of 10 records: 7 scopes (3 carrying a correlation id), 2 instants and 1
// counter; names of the lengths an engine uses.
constexpr strata::site sites[] = {
    {"ProfilerStep#1", __FILE__, __LINE__, layer::framework, record_kind::scope},
    {"aten::linear", __FILE__, __LINE__, layer::framework, record_kind::scope},
    {"aten::matmul", __FILE__, __LINE__, layer::framework, record_kind::scope},
    {"nrt::submit", __FILE__, __LINE__, layer::runtime, record_kind::scope},
    {"nrt::execute", __FILE__, __LINE__, layer::runtime, record_kind::scope},
    {"aten::softmax", __FILE__, __LINE__, layer::framework, record_kind::scope},
    {"tokenizer: decode", __FILE__, __LINE__, layer::user, record_kind::scope},
    {"kernel launched", __FILE__, __LINE__, layer::runtime, record_kind::instant},
    {"step done", __FILE__, __LINE__, layer::user, record_kind::instant},
    {"queue depth", __FILE__, __LINE__, layer::runtime, record_kind::counter},
};
constexpr std::uint64_t block_records = std::size(sites);

/// Appends one block starting at tick `t`; returns the tick after it.
std::uint64_t append_block(std::vector<strata::record>& out, std::uint64_t t, std::uint64_t corr) {
  // ticks: a parent spans its children; children follow each other. In trace order (oldest
  // first, a parent before its children), as a collected session holds them.
  const double depth = static_cast<double>(corr % 7);
  out.push_back({t, t + 9000, &sites[0], 0});
  out.push_back({t + 100, t + 5000, &sites[1], corr});
  out.push_back({t + 200, t + 2000, &sites[2], corr});
  out.push_back({t + 2100, t + 2600, &sites[3], corr});
  out.push_back({t + 2650, t + 2650, &sites[7], 0});
  out.push_back({t + 2650, std::bit_cast<std::uint64_t>(depth), &sites[9], 0});
  out.push_back({t + 2700, t + 4800, &sites[4], 0});
  out.push_back({t + 5100, t + 7000, &sites[5], 0});
  out.push_back({t + 7100, t + 8900, &sites[6], 0});
  out.push_back({t + 8950, t + 8950, &sites[8], 0});
  return t + 10000;
}

/// A stopped session of `records` records spread evenly over `threads` threads, on this
/// process's real clock (calibrated as a profiler would).
strata::trace_data synthetic_session(std::uint64_t records, std::uint64_t threads) {
  strata::clock::select_once();
  strata::trace_data data;
  data.clock = strata::clock_calibration::begin();
  data.pid = static_cast<std::uint64_t>(::getpid());
  data.process_name = "bench_export";
  data.layers = strata::layer_set::all();
  data.buffer_capacity = std::size_t{1} << 20;
  data.start_ticks = strata::clock::now();
  std::uint64_t corr = 1;
  for (std::uint64_t i = 0; i < threads; ++i) {
    strata::thread_track track;
    track.tid = 100000 + i;
    track.sort_index = static_cast<std::uint32_t>(i);
    track.name = "worker " + std::to_string(i);
    const std::uint64_t blocks = records / threads / block_records;
    track.records.reserve(blocks * block_records);
    std::uint64_t t = data.start_ticks;
    for (std::uint64_t b = 0; b < blocks; ++b) t = append_block(track.records, t, corr++);
    data.stop_ticks = std::max(data.stop_ticks, t);
    data.threads.push_back(std::move(track));
  }
  data.clock.finish();
  return data;
}

// The formats, by the benchmark's third argument. The fourth is the Perfetto writer's threads
// (perfetto_options::threads: 0 one per core, 1 the calling thread alone); the JSON writer has one.
enum trace_format : std::int64_t { chrome_json = 0, perfetto = 1, chrome_json_gz = 2, perfetto_gz = 3 };

/// A file in the temporary directory's strata-bench/, which is made if missing.
std::filesystem::path scratch_path(const char* file) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "strata-bench";
  std::filesystem::create_directories(dir);
  return dir / file;
}

strata::export_result write_as(const strata::trace_data& data, trace_format format, unsigned writers,
                               const std::filesystem::path& path) {
  return format == perfetto || format == perfetto_gz ? strata::write_perfetto_trace(data, path, {.threads = writers})
                                                     : strata::write_chrome_trace(data, path);
}

void write_trace(benchmark::State& state) {
  const strata::trace_data data = synthetic_session(static_cast<std::uint64_t>(state.range(0)),
                                                    static_cast<std::uint64_t>(state.range(1)));
  const auto format = static_cast<trace_format>(state.range(2));
  static constexpr const char* file_names[] = {"bench_export.json", "bench_export.pftrace",
                                               "bench_export.json.gz", "bench_export.pftrace.gz"};
  static constexpr const char* labels[] = {"chrome_json", "perfetto", "chrome_json_gz", "perfetto_gz"};
  state.SetLabel(labels[format]);
  const std::filesystem::path path = scratch_path(file_names[format]);
  const std::uint64_t records = data.recorded();
  strata::export_result written;
  for (auto _ : state) {
    written = write_as(data, format, static_cast<unsigned>(state.range(3)), path);
    benchmark::DoNotOptimize(written.bytes);
  }
  const auto iterations = static_cast<std::int64_t>(state.iterations());
  state.SetItemsProcessed(iterations * static_cast<std::int64_t>(records));
  state.SetBytesProcessed(iterations * static_cast<std::int64_t>(written.bytes));
  state.counters["records"] = static_cast<double>(records);
  state.counters["bytes_per_record"] =
      static_cast<double>(written.bytes) / static_cast<double>(records);
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
}

}  // namespace

// Real time: the export writes a file, and time blocked in write() is part of its cost.
BENCHMARK(write_trace)
    ->ArgNames({"records", "threads", "format", "writers"})
    ->Args({1000000, 2, chrome_json, 1})
    ->Args({1000000, 2, perfetto, 0})
    ->Args({1000000, 2, perfetto, 1})
    ->Args({1000000, 2, chrome_json_gz, 1})
    ->Args({1000000, 2, perfetto_gz, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

namespace {

// `bench_export --once FORMAT WRITERS`: one export of the same session in this process, as a
// program makes at the end of its session (its buffers and scratch arrays fresh memory, where
// the repetitions above reuse what the heap kept), printed as milliseconds; the session is
// built before the clock starts. benchmarks/export_once.py runs it interleaved.
int export_once(const char* format_arg, const char* writers_arg) {
  const std::string_view name = format_arg;
  if (name != "chrome_json" && name != "perfetto") {
    std::fprintf(stderr, "bench_export --once: FORMAT is chrome_json or perfetto, not '%s'\n", format_arg);
    return 2;
  }
  const trace_format format = name == "perfetto" ? perfetto : chrome_json;
  const auto writers = static_cast<unsigned>(std::stoul(writers_arg));
  const strata::trace_data data = synthetic_session(1000000, 2);
  const std::filesystem::path path = scratch_path(format == perfetto ? "once.pftrace" : "once.json");
  const auto t0 = std::chrono::steady_clock::now();
  const strata::export_result written = write_as(data, format, writers, path);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.3f %llu\n", ms, static_cast<unsigned long long>(written.bytes));
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string_view(argv[1]) == "--once") return export_once(argv[2], argv[3]);
  benchmark::AddCustomContext("compiler", __VERSION__);
  benchmark::AddCustomContext("build", STRATA_BENCH_BUILD);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
