// strata-report html's part of reading saved traces (tools/report/): who each track is (its
// thread_name and process_name metadata, its kind from its events' categories), the device's
// parts kept for the timeline only, and the run of several files. Documents written by hand.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "report/html_command.hpp"
#include "support.hpp"

// Named for this file: the analysis tests are compiled as one translation unit.
namespace test_html_command {

namespace {

// A strata trace: a host thread, a device execution track and one engine of it.
const std::string doc = R"j({"otherData":{"strata_version":"0.1.0","dropped":0},"traceEvents":[
{"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"proc"}},
{"ph":"M","name":"thread_name","pid":7,"tid":11,"args":{"name":"main"}},
{"ph":"M","name":"process_name","pid":99,"tid":0,"args":{"name":"NeuronCore 0"}},
{"ph":"M","name":"thread_name","pid":99,"tid":2,"args":{"name":"Vector"}},
{"ph":"X","cat":"framework","name":"aten::add","pid":7,"tid":11,"ts":1,"dur":10,"args":{"correlation_id":5}},
{"ph":"X","cat":"device","name":"add kernel","pid":99,"tid":0,"ts":3,"dur":4,"args":{"correlation_id":5}},
{"ph":"X","cat":"device.engine","name":"tensor_tensor","pid":99,"tid":2,"ts":3.5,"dur":2}
]})j";

const strata::track_label* label_named(const strata::report::saved_trace& t, std::string_view name) {
  for (const auto& l : t.track_labels)
    if (l.name == name) return &l;
  return nullptr;
}

}  // namespace

TEST_CASE("saved traces: track names and kinds, and the engines' events only when asked") {
  const auto plain = strata::report::read_trace_bytes(doc);
  CHECK(plain.activity.empty());
  CHECK(plain.events.size() == 2);  // the engine's instruction is in no table
  const auto t = strata::report::read_trace_bytes(doc, "<doc>", {.activity = true});
  REQUIRE(t.activity.size() == 1);
  CHECK(t.activity[0].name == "tensor_tensor");
  CHECK(t.activity[0].begin_ns == 3500);
  CHECK(t.activity[0].end_ns == 5500);
  CHECK(t.events.size() == 2);
  const strata::track_label* main = label_named(t, "main");
  REQUIRE(main != nullptr);
  CHECK(main->group == "proc");
  CHECK(main->kind == strata::track_kind::host);
  const strata::track_label* vector = label_named(t, "Vector");
  REQUIRE(vector != nullptr);
  CHECK(vector->group == "NeuronCore 0");
  CHECK(vector->kind == strata::track_kind::engine);
  const strata::track_label* kernel = label_named(t, "thread 0");  // no thread_name: its tid
  REQUIRE(kernel != nullptr);
  CHECK(kernel->kind == strata::track_kind::device);
  CHECK(t.track_labels[t.activity[0].track].name == "Vector");
}

TEST_CASE("strata-report html: several files make one run; a file without ops is an error") {
  strata_test::temp_dir dir("html-cmd");
  strata_test::write_file(dir / "a.json", doc);
  strata_test::write_file(dir / "b.json", doc);
  const std::vector<std::filesystem::path> both = {dir / "a.json", dir / "b.json"};
  const strata::html_run run = strata::report::html_run_of_files(both);
  CHECK(run.label == "2 traces");
  CHECK(run.sources.size() == 2);
  const strata::average_row* add = run.table.find("aten::add");
  REQUIRE(add != nullptr);
  CHECK(add->count == 2);
  CHECK(run.timeline.tracks.size() == 6);  // three tracks of each file
  CHECK(run.timeline.tracks[0].label.group == "a.json: proc");
  CHECK(run.timeline.device_busy_ns == 4000);  // the kernel [3, 7) us of both, on one time axis
  CHECK(run.job.ranks.empty());  // no distributedInfo: files of one run, not ranks of a job
  strata_test::write_file(dir / "empty.json", R"({"traceEvents":[{"ph":"M","name":"process_name","pid":1,"args":{"name":"x"}}]})");
  const std::vector<std::filesystem::path> empty = {dir / "empty.json"};
  CHECK_THROWS_WITH_AS(strata::report::html_run_of_files(empty), doctest::Contains("holds no op events"), strata::error);
  const std::vector<std::string_view> no_output = {"a.json"};
  CHECK_THROWS_AS(strata::report::html_command(no_output), strata::report::html_usage_error);
  const std::string out = (dir / "r.html").string();
  const std::string missing = (dir / "missing.json").string();
  const std::vector<std::string_view> unreadable = {missing, "-o", out};
  CHECK_THROWS_WITH_AS(strata::report::html_command(unreadable), doctest::Contains("no such file"), strata::error);
  CHECK_FALSE(std::filesystem::exists(dir / "r.html"));
}

namespace {

// Rank `rank` of a job of `world`: a host op, its kernel, and an all-reduce (Seq 1) that starts
// at `collective_us` on the wall clock shared by every rank (baseTimeNanoseconds).
std::string rank_doc(int rank, int world, int collective_us) {
  return "{\"distributedInfo\":{\"rank\":" + std::to_string(rank) + ",\"world_size\":" + std::to_string(world) +
         "},\"baseTimeNanoseconds\":1000000,\"otherData\":{\"strata_version\":\"0.1.0\",\"dropped\":0},\"traceEvents\":["
         R"j({"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"proc"}},
{"ph":"M","name":"process_name","pid":16777216,"tid":0,"args":{"name":"NeuronCore 0"}},
{"ph":"M","name":"thread_name","pid":16777216,"tid":0,"args":{"name":"Kernel"}},
{"ph":"M","name":"thread_name","pid":16777216,"tid":1,"args":{"name":"Collective queue"}},
{"ph":"X","cat":"framework","name":"aten::mm","pid":7,"tid":11,"ts":1,"dur":10,"args":{"correlation_id":5}},
{"ph":"X","cat":"device","name":"mm kernel","pid":16777216,"tid":0,"ts":3,"dur":4,"args":{"correlation_id":5}},
{"ph":"X","cat":"device","name":"AllReduce","pid":16777216,"tid":1,"ts":)j" +
         std::to_string(collective_us) +
         R"j(,"dur":2,"args":{"Collective name":"allreduce","Process Group Name":"0","Seq":1}}]})j";
}

}  // namespace

TEST_CASE("strata-report html: the ranks of one job carry its analyses; bad jobs are errors") {
  strata_test::temp_dir dir("html-job");
  strata_test::write_file(dir / "r0.json", rank_doc(0, 2, 8));
  strata_test::write_file(dir / "r1.json", rank_doc(1, 2, 308));
  const std::vector<std::filesystem::path> job = {dir / "r1.json", dir / "r0.json"};
  const strata::html_run run = strata::report::html_run_of_files(job);
  REQUIRE(run.job.ranks.size() == 2);
  CHECK(run.job.ranks[0].rank == 0);  // in rank order, whatever the files' order
  CHECK(run.job.ranks[0].source == (dir / "r0.json").string());
  // Rank 0: the kernel [3, 7) and the all-reduce [8, 10) us: span 7 us, 1 us idle, 2 us communication.
  CHECK(run.job.ranks[0].temporal.span_ns == 7000);
  CHECK(run.job.ranks[0].temporal.idle_ns == 1000);
  CHECK(run.job.ranks[0].temporal.compute_ns == 4000);
  CHECK(run.job.ranks[0].communication_ns == 2000);
  CHECK(run.job.ranks[1].temporal.span_ns == 307'000);
  REQUIRE(run.job.stragglers.size() == 2);
  // Starts 8 and 308 us: their median 158 us, so rank 1 is 150 us late, over the 100 us threshold.
  CHECK(run.job.stragglers[0].median_late_ns == -150'000);
  CHECK(run.job.stragglers[1].rank == 1);
  CHECK(run.job.stragglers[1].median_late_ns == 150'000);
  CHECK(run.job.stragglers[1].straggler);
  CHECK(run.job.stragglers[1].step == -1);  // no ProfilerStep in these traces
  const std::string out = (dir / "job.html").string();
  const std::string r0 = (dir / "r0.json").string(), r1 = (dir / "r1.json").string();
  const std::vector<std::string_view> args = {r0, r1, "-o", out};
  CHECK(strata::report::html_command(args) == 0);
  const std::string page = strata_test::read_file(dir / "job.html");
  CHECK(page.find("<section id=\"distributed\">") != std::string::npos);
  CHECK(page.find("Straggler: <b>rank 1</b> (the whole run).") != std::string::npos);

  // One rank twice among the ranks of a job, or two jobs: an error naming both files, no page.
  strata_test::write_file(dir / "r0-again.json", rank_doc(0, 2, 8));
  strata_test::write_file(dir / "other-job.json", rank_doc(1, 4, 8));
  const std::string again = (dir / "r0-again.json").string(), other = (dir / "other-job.json").string();
  const std::string bad_out = (dir / "bad.html").string();
  const std::vector<std::string_view> twice = {r0, again, r1, "-o", bad_out};
  const std::string both = r0 + " and " + again + " are both rank 0: html takes one trace per rank";
  CHECK_THROWS_WITH_AS(strata::report::html_command(twice), doctest::Contains(both.c_str()), strata::error);
  const std::vector<std::string_view> mixed = {r0, other, "-o", bad_out};
  CHECK_THROWS_WITH_AS(strata::report::html_command(mixed), doctest::Contains("are ranks of different jobs"), strata::error);
  CHECK_FALSE(std::filesystem::exists(dir / "bad.html"));
  // The files of one rank (two windows of it): one run, no job.
  const std::vector<std::filesystem::path> one_rank = {dir / "r0.json", dir / "r0-again.json"};
  CHECK(strata::report::html_run_of_files(one_rank).job.ranks.empty());
}

}  // namespace test_html_command
