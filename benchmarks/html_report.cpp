// benchmarks/html_report.cpp: the HTML report of a 10-million-record session: how long the
// page takes to build (the activity, key_averages, the page) and how big it is. The session is
// built by hand, like bench_key_averages's: per host thread a repeating pattern of nested
// framework, runtime and user scopes inside ProfilerStep#N (one step per pattern), with
// correlation ids, and a device track whose kernels carry them.
//
//   html_report [RECORDS] [OUT.html]     (default: 10000000, strata-out/bench_html/report.html)
//
// Prints the records, each stage's wall time and the page's size; the render time in headless
// Chromium comes from `tests/check_html_report.py --time OUT.html` (docs/benchmarks.md).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <unistd.h>

#include "strata/device.hpp"
#include "strata/export/html_report.hpp"
#include "strata/profiler.hpp"

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
    {"aten::copy_", __FILE__, __LINE__, layer::framework, record_kind::scope},
    {"nki_matmul", __FILE__, __LINE__, layer::device, record_kind::scope},
};

strata::trace_data synthetic_session(std::uint64_t records, std::uint64_t threads) {
  strata::clock::select_once();
  strata::trace_data data;
  data.clock = strata::clock_calibration::begin();
  data.pid = static_cast<std::uint64_t>(::getpid());
  data.process_name = "bench_html_report";
  data.layers = strata::layer_set::all();
  data.start_ticks = strata::clock::now();
  data.clock.finish();
  const std::uint64_t blocks = records / threads / 10;
  std::uint64_t corr = 1;
  std::vector<strata::thread_track> devices;
  for (std::uint64_t i = 0; i < threads; ++i) {
    strata::thread_track host;
    host.tid = 100000 + i;
    host.sort_index = static_cast<std::uint32_t>(i);
    host.name = "worker " + std::to_string(i);
    host.records.reserve(blocks * 9);
    strata::thread_track device;
    device.pid = strata::device_pid(0);
    device.tid = i;
    device.name = "Kernel " + std::to_string(i);
    device.process_name = "NeuronCore 0";
    device.timestamps_in_ns = true;
    device.records.reserve(blocks);
    std::uint64_t t = data.start_ticks;
    for (std::uint64_t b = 0; b < blocks; ++b, ++corr) {
      host.records.push_back({t, t + 9000, &sites[0], 0});
      host.records.push_back({t + 100, t + 5000, &sites[1], corr});
      host.records.push_back({t + 200, t + 2000, &sites[2], 0});
      host.records.push_back({t + 2100, t + 2600, &sites[3], corr});
      host.records.push_back({t + 2700, t + 4800, &sites[4], 0});
      host.records.push_back({t + 5100, t + 7000, &sites[5], 0});
      host.records.push_back({t + 7100, t + 8900, &sites[6], 0});
      host.records.push_back({t + 7200, t + 7600, &sites[7], 0});
      host.records.push_back({t + 7250, t + 7500, &sites[8], 0});
      const std::int64_t launched = data.clock.to_ns(t + 2400);
      device.records.push_back({static_cast<std::uint64_t>(launched + 300),
                                static_cast<std::uint64_t>(launched + 1800 + static_cast<std::int64_t>(corr % 64)),
                                &sites[9], corr});
      t += 10000;
    }
    data.stop_ticks = std::max(data.stop_ticks, t);
    data.threads.push_back(std::move(host));
    devices.push_back(std::move(device));
  }
  for (auto& d : devices) data.threads.push_back(std::move(d));
  return data;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t records = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000000;
  const std::filesystem::path out = argc > 2 ? argv[2] : "strata-out/bench_html/report.html";
  try {
    if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
    const strata::trace_data data = synthetic_session(records, 2);
    auto t0 = std::chrono::steady_clock::now();
    strata::averages table = strata::key_averages(data);
    const double ka = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    strata::html_report rep;
    rep.title = "10M-record session";
    rep.runs.push_back(strata::html_run_of(data, std::move(table), "synthetic"));
    const double activity = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const strata::export_result r = strata::write_html_report(rep, out);
    const double page = seconds_since(t0);
    fmt::print("{} records, {} tracks, {} steps: key_averages {:.2f} s, activity {:.2f} s, page {:.3f} s; "
               "{} ({} bytes, {:.2f} MB)\n",
               data.recorded(), rep.runs[0].timeline.tracks.size(), rep.runs[0].timeline.steps.size(), ka, activity,
               page, r.path, r.bytes, static_cast<double>(r.bytes) / 1e6);
    return 0;
  } catch (const strata::error& e) {
    std::fprintf(stderr, "html_report: %s\n", e.what());
    return 1;
  }
}
