// The HTML report (strata/export/html_report.hpp, strata/detail/html_escape.hpp): names from a
// trace only ever as text (HTML and JSON-in-<script> escaping), each section only when its data
// exists, a page whose size does not grow with the number of events, atomic writes and clear
// errors, and profiler::export_html / strata_export_html on a real session. The browser's view
// of the same pages is tests/check_html_report.py.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "strata/export/html_report.hpp"
#include "strata/profiler.hpp"
#include "strata/strata.h"
#include "strata/strata.hpp"

#include "support.hpp"

namespace {

using namespace strata_test;

std::size_t html_count(const std::string& s, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

strata::html_run html_run_from(std::vector<strata::op_event> events, std::vector<strata::track_label> labels, std::string label) {
  strata::html_run r;
  r.label = std::move(label);
  r.table = strata::key_averages(events);
  r.timeline = strata::activity_of(events, labels);
  return r;
}

strata::op_event html_ev(std::string name, std::int64_t b, std::int64_t e, std::uint64_t track = 0,
                    strata::layer l = strata::layer::framework, std::uint64_t corr = 0) {
  strata::op_event o;
  o.name = std::move(name);
  o.begin_ns = b;
  o.end_ns = e;
  o.track = track;
  o.layer = l;
  o.correlation_id = corr;
  return o;
}

}  // namespace

TEST_CASE("html text: markup characters become references, bad bytes U+FFFD") {
  using strata::detail::html_text;
  CHECK(html_text("<a href='x'>&\"") == "&lt;a href=&#39;x&#39;&gt;&amp;&quot;");
  CHECK(html_text(std::string_view("a\0b", 3)) == "a\xef\xbf\xbd" "b");
  CHECK(html_text("\x01\x7f") == "\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(html_text("tab\tnew\nline") == "tab\tnew\nline");
  CHECK(html_text("caf\xc3\xa9 \xe2\x80\xa8") == "caf\xc3\xa9 \xe2\x80\xa8");  // valid UTF-8 kept
  CHECK(html_text("\xff\xc3") == "\xef\xbf\xbd\xef\xbf\xbd");             // invalid, truncated
  CHECK(html_text("\xed\xa0\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // a surrogate
}

TEST_CASE("JSON in <script>: no </script>, <!-- or line separator survives, NUL is U+FFFD") {
  const auto json = [](std::string_view s) {
    std::string out;
    strata::detail::append_script_json_string(out, s);
    return out;
  };
  CHECK(json("</script><!--") == "\"\\u003c/script\\u003e\\u003c!--\"");
  CHECK(json("a&b") == "\"a\\u0026b\"");
  CHECK(json("\"q\" \\") == "\"\\\"q\\\" \\\\\"");
  CHECK(json("\xe2\x80\xa8\xe2\x80\xa9") == "\"\\u2028\\u2029\"");
  CHECK(json(std::string_view("\0\n", 2)) == "\"\xef\xbf\xbd\\u000a\"");
  CHECK(json("\xc3(") == "\"\xef\xbf\xbd(\"");
  CHECK(json("\xc3\xa9") == "\"\xc3\xa9\"");
}

TEST_CASE("html page: hostile names are text everywhere they appear") {
  const std::string evil = "</script><script>alert(1)</script><!--<img src=x onerror=alert(2)>";
  const std::string name = evil + std::string("\0\xff", 2);
  strata::html_report rep;
  rep.title = "title " + evil;
  rep.runs.push_back(html_run_from({html_ev(name, 0, 100), html_ev("ok", 100, 200)}, {{evil, evil, strata::track_kind::host}}, evil));
  const std::string page = strata::html_page(rep);
  // The page's own two scripts (its data and its code) and no other.
  CHECK(html_count(page, "<script") == 2);
  CHECK(html_count(page, "</script>") == 2);
  CHECK(html_count(page, "<img") == 0);
  CHECK(html_count(page, "<!--") == 0);
  CHECK(page.find("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;!--&lt;img src=x onerror=alert(2)&gt;") != std::string::npos);
  CHECK(page.find("\\u003c/script\\u003e\\u003cscript\\u003ealert(1)") != std::string::npos);
  CHECK(page.find('\0') == std::string::npos);
  CHECK(page.find("\xff") == std::string::npos);
}

TEST_CASE("html page: each section only when its data exists") {
  const auto sections = [](const std::string& page) {
    std::vector<std::string> out;
    for (const char* id : {"summary", "timeline", "ops", "device", "distributed", "compare"})
      if (page.find(std::string("<section id=\"") + id + "\">") != std::string::npos) out.emplace_back(id);
    return out;
  };
  strata::html_report host;
  host.runs.push_back(html_run_from({html_ev("op", 0, 100)}, {}, "host only"));
  CHECK(sections(strata::html_page(host)) == std::vector<std::string>{"summary", "timeline", "ops"});

  const std::vector<strata::track_label> labels = {{"main", "p", strata::track_kind::host},
                                                   {"Kernel", "core", strata::track_kind::device}};
  strata::html_report dev;
  dev.runs.push_back(html_run_from({html_ev("op", 0, 100, 0, strata::layer::framework, 1),
                             html_ev("kernel", 10, 90, 1, strata::layer::device, 1)}, labels, "with device"));
  const std::string one = strata::html_page(dev);
  CHECK(sections(one) == std::vector<std::string>{"summary", "timeline", "ops", "device"});
  CHECK(one.find("80.0%") != std::string::npos);  // device busy 80 of 100 ns

  dev.runs.push_back(html_run_from({html_ev("op", 0, 300)}, {}, "other"));
  const std::string two = strata::html_page(dev);
  CHECK(sections(two) == std::vector<std::string>{"summary", "timeline", "ops", "device", "compare"});
  CHECK(two.find("with device is fastest") != std::string::npos);  // 100 ns against 300 ns
  dev.verdict = "given verdict";
  CHECK(strata::html_page(dev).find("given verdict") != std::string::npos);
}

TEST_CASE("html page: its size depends on tracks, bins and rows, not on the number of events") {
  const auto page_of = [](int events) {
    std::vector<strata::op_event> v;
    for (int i = 0; i < events; ++i) v.push_back(html_ev(i % 2 ? "aten::mm" : "aten::add", i * 100, i * 100 + 90));
    strata::html_report rep;
    rep.runs.push_back(html_run_from(std::move(v), {}, "run"));
    return strata::html_page(rep).size();
  };
  const std::size_t small = page_of(2000), large = page_of(200000);
  CHECK(large < small + small / 10);
  CHECK(large < 200000);
}

TEST_CASE("write_html_report: atomic, with clear errors and nothing left behind") {
  temp_dir dir("html");
  strata::html_report rep;
  CHECK_THROWS_WITH_AS(strata::write_html_report(rep, dir.path() / "r.html"), doctest::Contains("no run"), strata::error);
  rep.runs.push_back(html_run_from({html_ev("op", 0, 100)}, {}, "run"));
  CHECK_THROWS_WITH_AS(strata::write_html_report(rep, dir.path()), doctest::Contains("is a directory"), strata::error);
  CHECK_THROWS_WITH_AS(strata::write_html_report(rep, dir.path() / "missing" / "r.html"), doctest::Contains("cannot write"), strata::error);
  CHECK_THROWS_AS(strata::write_html_report(rep, ""), strata::error);
  CHECK(dir.entries().empty());
  const strata::export_result r = strata::write_html_report(rep, dir.path() / "r.html");
  CHECK(r.bytes == std::filesystem::file_size(dir.path() / "r.html"));
  CHECK(dir.entries() == std::vector<std::string>{"r.html"});
  CHECK(read_file(dir.path() / "r.html") == strata::html_page(rep));
}

TEST_CASE("profiler::export_html and strata_export_html write a session's page") {
  temp_dir dir("html");
  {
    strata::profiler prof(config_in(dir));
    prof.start();
    {
      STRATA_SCOPE("forward");
      STRATA_SCOPE("aten::mm");
    }
    CHECK_THROWS_WITH_AS(prof.export_html(), doctest::Contains("stop() first"), strata::error);
    prof.stop();
    const strata::export_result r = prof.export_html({}, "my run");
    CHECK(r.path == (dir / "out" / "report.html").string());
    const std::string page = read_file(r.path);
    CHECK(page.find("<section id=\"summary\">") != std::string::npos);
    CHECK(page.find("aten::mm") != std::string::npos);
    CHECK(page.find("my run") != std::string::npos);
  }
  CHECK(strata_start((dir / "c").c_str()) == STRATA_OK);
  strata_push("c_scope");
  strata_pop();
  CHECK(strata_export_html((dir.path() / "c.html").c_str()) == STRATA_ERROR_RUNNING);
  CHECK(strata_stop() == STRATA_OK);
  CHECK(strata_export_html((dir.path() / "missing" / "c.html").c_str()) == STRATA_ERROR_EXPORT);
  CHECK(strata_export_html((dir.path() / "c.html").c_str()) == STRATA_OK);
  CHECK(read_file(dir.path() / "c.html").find("c_scope") != std::string::npos);
}

namespace {

strata::rank_analysis html_rank(std::int64_t rank, std::string source, strata::temporal_breakdown t, std::int64_t communication,
                                std::int64_t overlap) {
  strata::rank_analysis a;
  a.rank = rank;
  a.world_size = 2;
  a.source = std::move(source);
  a.kernels = 4;
  a.temporal = t;
  a.communication_ns = communication;
  a.overlap_ns = overlap;
  return a;
}

// The text between `from` and the next `to`, from the first `from` on.
std::string html_between(const std::string& page, std::string_view from, std::string_view to) {
  const std::size_t b = page.find(from);
  if (b == std::string::npos) return {};
  const std::size_t e = page.find(to, b);
  return page.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

}  // namespace

TEST_CASE("html page: the Distributed section of a job's ranks, names as text") {
  strata::html_report rep;
  rep.runs.push_back(html_run_from({html_ev("op", 0, 100)}, {}, "job"));
  strata::job_figures& job = rep.runs[0].job;
  const std::string evil = "<script>q</script>";
  job.ranks = {html_rank(0, evil + ".json", {.span_ns = 1000, .idle_ns = 100, .compute_ns = 400, .non_compute_ns = 500}, 500, 100),
               html_rank(1, "r1.json", {.span_ns = 2000, .idle_ns = 1000, .compute_ns = 500, .non_compute_ns = 500}, 500, 0)};
  job.ranks[0].queues = {{.queue = evil, .kernels = 3, .host_wait_ns = 30, .kernel_wait_ns = 20, .other_ns = 50}};
  job.ranks[1].queues = {{.queue = "NeuronCore 0 / Kernel", .kernels = 4, .host_wait_ns = 0, .kernel_wait_ns = 0, .other_ns = 0}};
  job.stragglers = {{.step = 3, .rank = 0, .collectives = 2, .median_late_ns = -10, .max_late_ns = 0, .straggler = false},
                    {.step = 3, .rank = 1, .collectives = 2, .median_late_ns = 150'000, .max_late_ns = 160'000, .straggler = true}};
  const std::string page = strata::html_page(rep);
  REQUIRE(page.find("<section id=\"distributed\">") != std::string::npos);
  CHECK(page.find("<a href=\"#distributed\">Distributed</a>") != std::string::npos);
  CHECK(page.find("2 ranks of a world of 2") != std::string::npos);
  // One bar per rank in each chart, its figures beside it.
  const std::string ranks = html_between(page, "<svg class=\"ranks\"", "</svg>");
  CHECK(html_count(ranks, "<g class=\"rank\"") == 2);
  CHECK(ranks.find("compute 40.0% &middot; non-compute 50.0% &middot; idle 10.0% of 1.000us") != std::string::npos);
  CHECK(ranks.find("compute 25.0% &middot; non-compute 25.0% &middot; idle 50.0% of 2.000us") != std::string::npos);
  CHECK(ranks.find("width=\"192.0\"") != std::string::npos);  // 40% of 480
  const std::string overlap = html_between(page, "<svg class=\"overlap\"", "</svg>");
  CHECK(html_count(overlap, "<g class=\"rank\"") == 2);
  CHECK(overlap.find("20.0% of 0.500us communication (50.0% of the span)") != std::string::npos);
  // The table's rank rows, the queues' idle time, the names escaped.
  CHECK(html_count(html_between(page, "<table class=\"sortable\" id=\"ranks0\">", "</table>"), "<tr data-rank=") == 2);
  CHECK(html_count(html_between(page, "<table class=\"sortable\" id=\"idle0\">", "</table>"), "<tr data-rank=") == 2);
  CHECK(page.find("&lt;script&gt;q&lt;/script&gt;.json") != std::string::npos);
  CHECK(page.find("<td class=\"l\">&lt;script&gt;q&lt;/script&gt;</td><td data-v=\"3\">3</td><td data-v=\"100\">0.100us</td>") !=
        std::string::npos);
  CHECK(page.find(evil) == std::string::npos);
  // The straggler strip: a cell per rank in step 3, the straggler's marked, and named below.
  const std::string strip = html_between(page, "<svg class=\"stragglers\"", "</svg>");
  CHECK(html_count(strip, "<g class=\"rank\"") == 2);
  CHECK(html_count(strip, "class=\"late straggler\"") == 1);
  CHECK(strip.find("rank 1, step 3: collectives start a median 150.000us after their group's median (at most 160.000us late) over "
                   "2 collectives: a straggler") != std::string::npos);
  CHECK(page.find("Straggler: <b>rank 1</b> (step 3).") != std::string::npos);
  // The summary's recommendations name it.
  CHECK(page.find("<li data-rule=\"stragglers\"><b>Rank 1 starts its collectives 150.000us late") != std::string::npos);

  // Clocks that cannot be aligned: no strip, said so.
  job.clocks_aligned = false;
  job.stragglers.clear();
  CHECK(strata::html_page(rep).find("Not compared: some traces have baseTimeNanoseconds") != std::string::npos);
  // One rank with kernels: no section, the page as a single rank's.
  job.ranks[1].kernels = 0;
  const std::string single = strata::html_page(rep);
  CHECK(single.find("<section id=\"distributed\">") == std::string::npos);
  CHECK(single.find("#distributed") == std::string::npos);
}
