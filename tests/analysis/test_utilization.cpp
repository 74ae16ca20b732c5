// The utilisation columns (table_options::utilization): achieved TFLOP/s, MFU and MBU over self
// device time against the device core's peaks; CSV and JSON fields; the peaks' round trip
// through a saved strata trace and strata-report's reader, and a torch trace without peaks.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "strata/analysis/averages.hpp"
#include "strata/analysis/key_averages.hpp"
#include "strata/export/chrome_trace.hpp"
#include "strata/profiler.hpp"
#include "strata/sim/neuron_core.hpp"
#include "strata/sim/record_execution.hpp"
#include "support.hpp"
#if __has_include("report/trace_reader.hpp")
#include "report/trace_reader.hpp"
#define STRATA_TEST_HAS_READER 1
#endif

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_utilization {

namespace {

strata::average_row util_row(std::string name, bool device, std::int64_t self_cpu, std::int64_t self_device,
                             std::uint64_t flops, std::uint64_t bytes) {
  strata::average_row r;
  r.name = std::move(name);
  r.is_device = device;
  r.count = 1;
  r.self_cpu_ns = r.cpu_total_ns = self_cpu;
  r.self_device_ns = r.device_total_ns = self_device;
  r.flops = flops;
  r.device_bytes = bytes;
  return r;
}

// An op whose kernel did 50 MFLOPs and moved 200 kB in 1 us; a kernel that moved 100 kB in
// 0.5 us and computed nothing; a host op without device time.
strata::averages known_rows() {
  strata::averages a;
  a.rows = {util_row("aten::mm", false, 2000, 1000, 50'000'000, 200'000),
            util_row("mm_kernel", true, 0, 1000, 50'000'000, 200'000),
            util_row("softmax_kernel", true, 0, 500, 0, 100'000),
            util_row("tokenize", false, 3000, 0, 0, 0)};
  a.peak_flops_per_s = 95e12;
  a.peak_hbm_bytes_per_s = 410e9;
  return a;
}

std::string line_of(const std::string& table, std::string_view starts) {
  std::size_t at = 0;
  while (at < table.size()) {
    const std::size_t end = table.find('\n', at);
    const std::string line = table.substr(at, end - at);
    if (line.find(starts) != std::string::npos) return line;
    at = end == std::string::npos ? table.size() : end + 1;
  }
  return {};
}

}  // namespace

TEST_CASE("utilization: TFLOP/s, MFU and MBU per row, worked out by hand") {
  const strata::averages a = known_rows();
  const std::string t = a.table({.utilization = true});
  // 50e6 FLOPs in 1000 ns: 50 TFLOP/s, 52.63 % of 95; 200e3 bytes in 1000 ns: 200 GB/s, 48.78 %
  // of 410.
  CHECK(line_of(t, "Name").ends_with("     TFLOP/s         MFU %         MBU %  "));
  CHECK(line_of(t, "aten::mm").ends_with("      50.000         52.63         48.78  "));
  CHECK(line_of(t, "mm_kernel").ends_with("      50.000         52.63         48.78  "));
  // No FLOPs: no rate and no MFU; 100e3 bytes in 500 ns is 200 GB/s again.
  CHECK(line_of(t, "softmax_kernel").ends_with("          --            --         48.78  "));
  CHECK(line_of(t, "tokenize").ends_with("          --            --            --  "));
  CHECK(t.ends_with("Peaks (MFU, MBU): 95.000 TFLOP/s, 410.000 GB/s of HBM per core\n"));

  // Off, the table is torch's: not a column more.
  const std::string plain = a.table();
  CHECK(plain.find("MFU") == std::string::npos);
  CHECK(plain.find("Peaks") == std::string::npos);
  CHECK(line_of(plain, "Name").ends_with("# of Calls  "));

  // Without peaks the rate stays, MFU and MBU say they cannot be known.
  strata::averages unknown = known_rows();
  unknown.peak_flops_per_s = unknown.peak_hbm_bytes_per_s = 0;
  const std::string u = unknown.table({.utilization = true});
  CHECK(line_of(u, "mm_kernel").ends_with("      50.000            --            --  "));
  CHECK(u.find("Peaks (MFU, MBU): none in this trace") != std::string::npos);
}

TEST_CASE("utilization: CSV and JSON carry the bytes, the rate, MFU and MBU") {
  const strata::averages a = known_rows();
  const std::string csv = a.to_csv();
  CHECK(csv.substr(0, csv.find('\n')).ends_with(",Total FLOPs,Device Bytes,TFLOP/s,MFU %,MBU %"));
  CHECK(line_of(csv, "\"mm_kernel\"").ends_with(",50000000,200000,50,52.63157894736842,48.78048780487805"));
  CHECK(line_of(csv, "\"tokenize\"").ends_with(",0,0,,,"));
  const std::string json = a.to_json();
  CHECK(json.find("\"peak_tflops\":95,\"peak_hbm_gbps\":410,") != std::string::npos);
  CHECK(json.find("\"flops\":50000000,\"device_bytes\":200000,\"tflops_per_s\":50,"
                  "\"mfu\":52.63157894736842,\"mbu\":48.78048780487805}") != std::string::npos);
  CHECK(json.find("\"device_bytes\":0,\"tflops_per_s\":null,\"mfu\":null,\"mbu\":null}") != std::string::npos);
}

#if STRATA_TEST_HAS_READER
TEST_CASE("utilization: a saved strata trace gives strata-report the same figures and peaks") {
  namespace sim = strata::sim;
  sim::neuron_core core{sim::core_generation::trn2};
  const std::vector<float> a(128 * 128, 1.0f), b(128 * 512, 1.0f);
  const sim::hbm_tensor ha = core.upload("a", a, {128, 128}, sim::dtype::bf16);
  const sim::hbm_tensor hb = core.upload("b", b, {128, 512}, sim::dtype::bf16);
  const sim::hbm_tensor hc = core.alloc_hbm("c", {128, 512});
  const sim::execution ex = core.run("mm", [&](sim::kernel& k) {
    sim::tile acc = k.matmul(k.load(ha, {0, 0}, {128, 128}), k.load(hb, {0, 0}, {128, 512}));
    k.store(hc, {0, 0}, k.tensor_copy(acc));
  });

  strata_test::temp_dir dir("utilization");
  auto config = strata_test::config_in(dir);
  config.with_flops = true;
  strata::profiler prof(config);
  prof.start();
  const std::uint64_t id = strata::new_correlation_id();
  {
    static constexpr strata::site op{"aten::mm", __FILE__, __LINE__, strata::layer::framework,
                                     strata::record_kind::scope};
    strata::scope s{&op, id};
    sim::record_execution(ex, {.core = 0, .start_ns = strata::clock::steady_ns(), .correlation_id = id});
  }
  prof.stop();
  const strata::averages live = prof.key_averages();
  const auto path = dir.path() / "trace.json";
  static_cast<void>(prof.export_chrome_trace(path.string()));
  const strata::averages saved = strata::report::key_averages(strata::report::read_trace(path));

  CHECK(saved.peak_flops_per_s == doctest::Approx(79e12));
  CHECK(saved.peak_hbm_bytes_per_s == doctest::Approx(362.5e9));
  CHECK(saved.with_flops);
  for (const char* name : {"aten::mm", "mm"}) {
    const bool device = std::string_view(name) == "mm";
    const strata::average_row* l = nullptr;
    const strata::average_row* s = nullptr;
    for (const auto& r : live.rows)
      if (r.name == name && r.is_device == device) l = &r;
    for (const auto& r : saved.rows)
      if (r.name == name && r.is_device == device) s = &r;
    REQUIRE(l != nullptr);
    REQUIRE(s != nullptr);
    CHECK(l->flops == ex.flops);
    CHECK(s->flops == ex.flops);
    CHECK(s->device_bytes == ex.hbm_bytes);
    CHECK(l->device_bytes == ex.hbm_bytes);
  }
  CHECK(ex.flops == 2ull * 128 * 128 * 512);
  CHECK(ex.hbm_bytes == 128 * 128 * 2 + 128 * 512 * 2 + 128 * 512 * 4);
  // The same table, but for the times' microsecond rounding in the trace: compare the rows'
  // utilisation columns of the kernel.
  CHECK(line_of(saved.table({.utilization = true}), "Peaks").find("79.000 TFLOP/s, 362.500 GB/s") != std::string::npos);
}

TEST_CASE("utilization: a torch trace has no peaks, and says so") {
  const strata::averages t = strata::report::key_averages(
      strata::report::read_trace(std::filesystem::path(STRATA_TEST_DATA) / "torch" / "memory.json"));
  CHECK(t.peak_flops_per_s == 0);
  CHECK(t.table({.utilization = true}).find("Peaks (MFU, MBU): none in this trace") != std::string::npos);
}
#endif

}  // namespace test_utilization
