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
    for (const char* id : {"summary", "timeline", "ops", "device", "compare"})
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
