// strata::report::read_rank_model(): Kineto's and strata's rank traces into the job analyses'
// model. The documents are written out by hand; the expected values are read off them.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "strata/error.hpp"
#include "report/job_trace.hpp"
#include "support.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_job_trace {

using strata::kernel_category;

namespace {

// torch.profiler's trace of one rank, trimmed: a step, two launches, a compute kernel, a memcpy,
// an NCCL kernel with the collective args, and events the model leaves out.
const std::string kineto_doc = R"j({"schemaVersion":1,
"distributedInfo":{"backend":"nccl","rank":1,"world_size":2,"pg_count":1,
  "pg_config":[{"pg_name":"0","pg_desc":"default_pg","backend_config":"cuda:nccl","pg_size":2,"ranks":[0,1]}]},
"deviceProperties":[{"id":0,"name":"NVIDIA A100"}],
"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#5","pid":10,"tid":10,"ts":1000,"dur":500},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":10,"tid":10,"ts":1001,"dur":30,"args":{"External id":7}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":10,"ts":1010,"dur":8.5,"args":{"External id":7,"cbid":211,"correlation":70}},
{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":10,"tid":10,"ts":1100,"dur":3,"args":{"correlation":71}},
{"ph":"X","cat":"kernel","name":"void gemm_kernel<float>(float*)","pid":0,"tid":7,"ts":1020.25,"dur":40,"args":{"External id":7,"device":0,"stream":7,"correlation":70,"grid":[1,2,3]}},
{"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pageable)","pid":0,"tid":7,"ts":1070,"dur":2,"args":{"stream":7,"correlation":72,"bytes":4}},
{"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)","pid":0,"tid":40,"ts":1030,"dur":100,"args":{"stream":40,"correlation":73,"Collective name":"allreduce","In msg nelems":1024,"Out msg nelems":1024,"Group size":2,"dtype":"Float","Process Group Name":"0","Process Group Ranks":"[0, 1]","Seq":"17"}},
{"ph":"X","cat":"gpu_user_annotation","name":"## forward ##","pid":0,"tid":7,"ts":1020,"dur":60,"args":{"External id":3}},
{"ph":"f","cat":"ac2g","id":70,"pid":0,"tid":7,"ts":1020.25},
{"ph":"M","name":"thread_name","pid":0,"tid":7,"args":{"name":"stream 7"}}
],
"baseTimeNanoseconds":1700000000000000000}
)j";

// strata's trace of one rank: a NeuronCore's kernel track and an engine track, a collective on
// a track of its own, the host's submissions, and a runtime call on the core (not a launch).
const std::string strata_doc = R"j({"displayTimeUnit":"ns",
"otherData":{"strata_version":"0.1.0","clock_source":"tsc","dropped":0},
"distributedInfo":{"backend":"","rank":0,"world_size":2,"pg_count":1,"pg_config":[]},
"baseTimeNanoseconds":5000,
"traceEvents":[
{"ph":"M","name":"process_name","pid":16777216,"tid":0,"args":{"name":"NeuronCore 0 (trn1)"}},
{"ph":"M","name":"thread_name","pid":16777216,"tid":0,"args":{"name":"Kernel"}},
{"ph":"M","name":"thread_name","pid":16777216,"tid":3,"args":{"name":"Tensor"}},
{"ph":"M","name":"thread_name","pid":16777216,"tid":20,"args":{"name":"Collective queue"}},
{"ph":"X","cat":"framework","name":"ProfilerStep#2","pid":9,"tid":16777225,"ts":0,"dur":1000},
{"ph":"X","cat":"runtime","name":"nrt::submit","pid":9,"tid":9,"ts":10,"dur":2,"args":{"program":"mm","correlation_id":5}},
{"ph":"X","cat":"runtime","name":"nrt::submit","pid":9,"tid":9,"ts":20,"dur":1,"args":{"correlation_id":6}},
{"ph":"X","cat":"runtime","name":"nrt::exec","pid":16777216,"tid":99,"ts":15,"dur":1,"args":{"correlation_id":5}},
{"ph":"X","cat":"device","name":"aten::matmul kernel 32x128,128x256","pid":16777216,"tid":0,"ts":13.5,"dur":10,"args":{"flops":2,"bytes":3,"correlation_id":5}},
{"ph":"X","cat":"device.engine","name":"matmul","pid":16777216,"tid":3,"ts":14,"dur":5,"args":{"cycles":9,"correlation_id":5}},
{"ph":"X","cat":"device","name":"all_reduce","pid":16777216,"tid":20,"ts":22,"dur":30,"args":{"Collective name":"allreduce","Process Group Name":"tp","Seq":3,"correlation_id":6}}
]}
)j";

}  // namespace

TEST_CASE("a Kineto rank trace: kernels by stream, launches, the collective and the rank") {
  const strata::rank_model m = strata::report::read_rank_model_bytes(kineto_doc, "kineto");
  CHECK(m.format == "kineto");
  CHECK(m.rank == 1);
  CHECK(m.world_size == 2);
  CHECK(m.base_time_ns == 1700000000000000000);
  REQUIRE(m.queues.size() == 2);
  CHECK(m.queues[0].name == "stream 7");
  CHECK(m.queues[1].name == "stream 40");
  // The gemm, the memcpy and the NCCL kernel; the GPU annotation (no stream) is left out.
  REQUIRE(m.kernels.size() == 3);
  CHECK(m.kernels[0].begin_ns == 1020250);
  CHECK(m.kernels[0].end_ns == 1060250);
  CHECK(m.kernels[0].correlation_id == 70);
  CHECK(m.kernels[0].category == kernel_category::compute);
  CHECK(m.kernels[1].category == kernel_category::memory);
  CHECK(m.kernels[1].queue == 0);
  CHECK(m.kernels[2].category == kernel_category::communication);
  CHECK(m.kernels[2].queue == 1);
  REQUIRE(m.kernels[2].collective == 0);
  REQUIRE(m.collectives.size() == 1);
  CHECK(m.collectives[0].name == "allreduce");
  CHECK(m.collectives[0].group == "0");
  CHECK(m.collectives[0].seq == 17);  // Seq written as a string
  CHECK(m.collectives[0].group_ranks == std::vector<std::int64_t>{0, 1});  // "[0, 1]"
  // Both runtime calls carry a correlation; only cudaLaunchKernel is a counted launch.
  REQUIRE(m.launches.size() == 2);
  CHECK(m.launches[0].correlation_id == 70);
  CHECK(m.launches[0].begin_ns == 1010000);
  CHECK(m.launches[0].end_ns == 1018500);
  CHECK(m.launches[0].counted_launch);
  CHECK(!m.launches[1].counted_launch);
  REQUIRE(m.steps.size() == 1);
  CHECK(m.steps[0].step == 5);
  CHECK(m.steps[0].begin_ns == 1000000);
  CHECK(m.steps[0].end_ns == 1500000);
}

TEST_CASE("a strata rank trace: the tracks that carry kernel executions are the queues") {
  const strata::rank_model m = strata::report::read_rank_model_bytes(strata_doc, "strata");
  CHECK(m.format == "strata");
  CHECK(m.rank == 0);
  CHECK(m.base_time_ns == 5000);
  REQUIRE(m.queues.size() == 2);
  CHECK(m.queues[0].name == "NeuronCore 0 (trn1) / Kernel");
  CHECK(m.queues[1].name == "NeuronCore 0 (trn1) / Collective queue");
  REQUIRE(m.kernels.size() == 2);  // the engine's instruction is part of the kernel
  CHECK(m.kernels[0].begin_ns == 13500);
  CHECK(m.kernels[0].category == kernel_category::compute);
  CHECK(m.kernels[1].category == kernel_category::communication);  // by its Collective name
  REQUIRE(m.collectives.size() == 1);
  CHECK(m.collectives[0].group == "tp");
  CHECK(m.collectives[0].seq == 3);
  // The host's submissions are the launches; the core's own runtime record is not.
  REQUIRE(m.launches.size() == 2);
  CHECK(m.launches[0].correlation_id == 5);
  CHECK(m.launches[0].counted_launch);
  REQUIRE(m.steps.size() == 1);
  CHECK(m.steps[0].step == 2);

  const strata::rank_analysis a = strata::analyze_rank(m);
  // The collective starts 22 us into the trace, 5000 ns after the wall clock's epoch.
  REQUIRE(a.collectives.size() == 1);
  CHECK(a.collectives[0].start_ns == 27000);
  CHECK(a.collectives[0].step == 2);
  // The matmul [13.5, 23.5) us overlaps the collective [22, 52) us by 1.5 us.
  CHECK(a.overlap_ns == 1500);
  CHECK(a.communication_ns == 30000);
}

TEST_CASE("a trace without distributedInfo or kernels reads as an empty model") {
  const strata::rank_model m = strata::report::read_rank_model_bytes(R"({"traceEvents":[]})", "empty");
  CHECK(!m.rank);
  CHECK(!m.world_size);
  CHECK(m.kernels.empty());
  CHECK(m.format == "chrome");
  const strata::rank_analysis a = strata::analyze_rank(m);
  CHECK(a.rank == 0);
  CHECK(a.rank_assumed);
  CHECK(a.temporal.span_ns == 0);
}

TEST_CASE("bad rank traces raise errors that name the file and the field") {
  const auto message = [](const std::string& doc) {
    try {
      strata::report::read_rank_model_bytes(doc, "'r.json'");
    } catch (const strata::error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message(R"({"distributedInfo":{"rank":-1},"traceEvents":[]})").find("distributedInfo.rank is not a count") != std::string::npos);
  CHECK(message(R"({"distributedInfo":{"world_size":"two"},"traceEvents":[]})").find("'r.json'") != std::string::npos);
  CHECK(message(R"({"baseTimeNanoseconds":1.5,"traceEvents":[]})").find("baseTimeNanoseconds") != std::string::npos);
  CHECK(message(R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","args":{"stream":7},"ts":"x","dur":1}]})")
            .find("traceEvents[0]: ts or dur") != std::string::npos);
  CHECK(message(R"({"otherData":{}})").find("has no traceEvents array") != std::string::npos);
  CHECK(message(R"({"traceEvents":[)").find("not valid JSON") != std::string::npos);
  CHECK(message(std::string(300, '[')).find("nest more than") != std::string::npos);
}

TEST_CASE("a trace file, plain and gzip-compressed") {
  const strata_test::temp_dir dir;
  strata_test::write_file(dir / "rank1.json", kineto_doc);
  CHECK(strata::report::read_rank_model(dir / "rank1.json").kernels.size() == 3);
  CHECK_THROWS_WITH_AS(strata::report::read_rank_model(dir / "missing.json"),
                       doctest::Contains("no such file"), strata::error);
  const auto gz = std::filesystem::path(STRATA_TEST_DATA) / "analyze" / "job" / "rank0.json.gz";
  CHECK(strata::report::read_rank_model(gz).rank == 0);
}

TEST_CASE("the key_averages reader keeps distributedInfo.rank, for --per-rank") {
  CHECK(strata::report::read_trace_bytes(kineto_doc).rank == 1);
  CHECK(strata::report::read_trace_bytes(strata_doc).rank == 0);
  CHECK(!strata::report::read_trace_bytes(R"({"traceEvents":[]})").rank);
  CHECK(!strata::report::read_trace_bytes(R"({"distributedInfo":{"rank":-2},"traceEvents":[]})").rank);
  // Only the top-level object's rank: an event's args named rank are not it.
  CHECK(!strata::report::read_trace_bytes(
             R"({"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1,"args":{"rank":4}}]})")
             .rank);
}

}  // namespace test_job_trace
