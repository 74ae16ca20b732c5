// strata/export/html_report.hpp: one self-contained HTML page per run (or per comparison of
// runs): a summary with ranked recommendations, a timeline overview, the key_averages table,
// the device's engines and memory, a distributed job's ranks, and runs side by side. Inline CSS, SVG and a little
// JavaScript; no network request, no external script or font (docs/report.md).
//
// The page aggregates: its size depends on the tracks, bins and table rows, never on the
// number of records. Every name from a trace is written as text (detail/html_escape.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strata/analysis/activity.hpp"
#include "strata/analysis/averages.hpp"
#include "strata/analysis/compare.hpp"
#include "strata/analysis/job_analysis.hpp"
#include "strata/analysis/memory.hpp"
#include "strata/analysis/recommendations.hpp"
#include "strata/error.hpp"
#include "strata/export/trace_format.hpp"
#include "strata/trace_data.hpp"
#include "strata/detail/html_escape.hpp"
#include "strata/detail/trace_file.hpp"

namespace strata {
inline namespace v1 {

/// One device's allocated bytes over the run, at most one point per timeline bin (its
/// highest), and its peak.
struct memory_curve {
  std::vector<std::pair<std::int64_t, std::int64_t>> points = {};  ///< (ns, allocated bytes)
  memory_peak peak = {};
};

/// One run as the page shows it.
struct html_run {
  std::string label = {};                ///< "eager", a file name, ...
  std::vector<std::string> sources = {};  ///< the traces it was read from (none: a live session)
  averages table = {};
  activity timeline = {};
  std::vector<memory_curve> memory = {};
  /// A distributed job's analyses (strata/analysis/job_analysis.hpp), one result per rank: the
  /// Distributed section and the rules over ranks, shown when two ranks or more ran kernels.
  job_figures job = {};
};

/// What `html_page` shows: one run, or several side by side (the first is A of comparisons).
struct html_report {
  std::string title = "strata report";
  std::vector<html_run> runs = {};
  std::string verdict = {};  ///< a comparison's conclusion in words (empty: the page says which run is fastest)
  recommendation_thresholds thresholds = {};
};

/// Samples (ns, total bytes) of a memory curve, at most one per bin of `timeline`: each bin's
/// highest, so no peak is lost however many events the run has.
inline std::vector<std::pair<std::int64_t, std::int64_t>> memory_curve_points(
    const std::vector<std::pair<std::int64_t, std::int64_t>>& samples, const activity& timeline) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  if (timeline.bins == 0) return samples;
  std::size_t last_bin = static_cast<std::size_t>(-1);
  for (const auto& [ns, total] : samples) {
    std::size_t bin = 0;
    if (ns > timeline.begin_ns) {
      const long double f = static_cast<long double>(ns - timeline.begin_ns) * static_cast<long double>(timeline.bins) /
                            static_cast<long double>(std::max<std::int64_t>(timeline.wall_ns(), 1));
      bin = std::min(static_cast<std::size_t>(f), timeline.bins - 1);
    }
    if (bin == last_bin && !out.empty()) {
      if (total > out.back().second) out.back() = {ns, total};
    } else {
      out.emplace_back(ns, total);
      last_bin = bin;
    }
  }
  return out;
}

/// The memory curves of a session's memory events (strata/analysis/memory.hpp), one per device.
inline std::vector<memory_curve> memory_curves_of(const trace_data& data, const activity& timeline) {
  std::vector<memory_curve> out;
  if (!data.profile_memory) return out;
  const memory_profile p = read_memory(data);
  for (const device_memory& d : p.devices) {
    std::vector<std::pair<std::int64_t, std::int64_t>> samples;
    for (const memory_sample& s : p.events)
      if (detail::device_key(s.device) == detail::device_key(d.device)) samples.emplace_back(s.ns, s.total_allocated);
    memory_curve c;
    c.points = memory_curve_points(samples, timeline);
    c.peak = {device_label(d.device), d.peak_allocated, d.peak_ns, d.op_at_peak};
    out.push_back(std::move(c));
  }
  return out;
}

/// A stopped session as a run of the page: its `table` (key_averages of it), its activity and
/// memory. Raises `strata::error` if a spilled track cannot be read back.
inline html_run html_run_of(const trace_data& data, averages table, std::string label = {}) {
  html_run run;
  run.label = label.empty() ? data.process_name : std::move(label);
  run.table = std::move(table);
  run.timeline = activity_of(data);
  run.memory = memory_curves_of(data, run.timeline);
  return run;
}

namespace detail {

/// The five numbers of a run's summary.
struct run_numbers {
  std::int64_t wall_ns = 0;
  std::int64_t self_cpu_ns = 0;
  std::optional<double> device_busy;       ///< share of the wall time; none without a device
  double dispatches = 0;                   ///< per step when there are steps, else in the run
  bool per_step = false;
  std::optional<memory_peak> peak_memory;  ///< the largest device peak
};

inline run_numbers numbers_of(const html_run& r) {
  run_numbers n;
  n.wall_ns = r.timeline.wall_ns();
  n.self_cpu_ns = r.table.self_cpu_total_ns();
  if (r.timeline.has_device() && n.wall_ns > 0)
    n.device_busy = static_cast<double>(r.timeline.device_busy_ns) / static_cast<double>(n.wall_ns);
  n.per_step = !r.timeline.steps.empty();
  n.dispatches = static_cast<double>(r.timeline.framework_ops) /
                 (n.per_step ? static_cast<double>(r.timeline.steps.size()) : 1.0);
  for (const memory_curve& m : r.memory)
    if (!n.peak_memory || m.peak.bytes > n.peak_memory->bytes) n.peak_memory = m.peak;
  return n;
}

/// Whether a run is a job whose ranks the Distributed section compares (and the rules over
/// ranks apply to): two ranks or more ran kernels.
inline bool shows_job(const html_run& r) { return r.job.ranks_with_kernels() >= 2; }

inline std::vector<memory_peak> peaks_of(const html_run& r) {
  std::vector<memory_peak> out;
  for (const memory_curve& m : r.memory) out.push_back(m.peak);
  return out;
}

/// Appends to a page: text and formatted text, names always escaped.
class page_writer {
 public:
  std::string out;

  void raw(std::string_view s) { out += s; }
  void text(std::string_view s) { append_html_text(out, s); }
  template <class... Args>
  void f(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
  }
  void json(std::string_view s) { append_script_json_string(out, s); }
};

inline constexpr std::string_view page_style = R"css(
:root{--fg:#1d2733;--muted:#5b6775;--bg:#f6f7f9;--card:#fff;--line:#d9dee5;--host:#3b6fb6;--dev:#e08a1e;--eng:#2f9e6e;--q:#8a63c9;--bad:#c0392b}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{background:#1d2733;color:#fff;padding:14px 24px}header h1{margin:0;font-size:20px}header p{margin:4px 0 0;color:#c5ced8;font-size:12px}
nav{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid var(--line);padding:6px 24px}nav a{margin-right:16px;color:var(--host);text-decoration:none;font-weight:600}
main{padding:8px 24px 40px;max-width:1400px}section{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:12px 18px;margin:16px 0}
h2{margin:4px 0 10px;font-size:18px}h3{margin:14px 0 6px;font-size:15px}.muted{color:var(--muted)}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid var(--line);border-radius:6px;padding:8px 12px;min-width:170px}
.card .v{font-size:22px;font-weight:700}.card .k{font-size:12px;color:var(--muted)}
ol.recs li{margin:6px 0}.save{font-weight:700;color:var(--bad)}.rule{font-size:11px;color:var(--muted);font-family:monospace}
table{border-collapse:collapse;width:100%;font-size:12.5px}th,td{border-bottom:1px solid var(--line);padding:3px 6px;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left;white-space:normal;word-break:break-all}th{background:#eef1f5;cursor:pointer;user-select:none;position:sticky;top:34px}
th.asc::after{content:" \25B2"}th.desc::after{content:" \25BC"}input.filter{margin:4px 0 8px;padding:4px 8px;width:320px;border:1px solid var(--line);border-radius:4px}
.tl{display:grid;grid-template-columns:260px 1fr;align-items:stretch}.tl .names div{height:16px;font-size:11px;line-height:16px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;padding-right:6px}
.tl svg{width:100%;display:block;background:#fbfbfc;cursor:crosshair}.tools button{margin-right:6px}
.topops{margin-top:8px;font-size:12.5px;min-height:20px}svg text{font-size:11px;fill:var(--fg)}
.legend span{display:inline-block;margin-right:14px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
details>summary{cursor:pointer;font-weight:600;margin:6px 0}th.l,td.l{text-align:left}.verdict{background:#fff8e6;border-left:4px solid var(--dev);padding:8px 12px}
)css";

inline constexpr std::string_view page_script = R"js(
(function(){
"use strict";
var data=JSON.parse(document.getElementById("strata-data").textContent);
function fmtTime(ns){var a=Math.abs(ns);if(a>=1e9)return (ns/1e9).toFixed(3)+" s";if(a>=1e6)return (ns/1e6).toFixed(3)+" ms";if(a>=1e3)return (ns/1e3).toFixed(3)+" us";return ns+" ns";}
function el(tag,text){var e=document.createElement(tag);if(text!==undefined)e.textContent=text;return e;}
// Sortable, filterable tables: a header sorts by its column (numbers by data-v), twice: the other way.
document.querySelectorAll("table.sortable").forEach(function(t){
  var ths=t.tHead.rows[0].cells;
  Array.prototype.forEach.call(ths,function(th,col){th.addEventListener("click",function(){
    var desc=!th.classList.contains("desc");
    Array.prototype.forEach.call(ths,function(h){h.classList.remove("asc","desc");});
    th.classList.add(desc?"desc":"asc");
    var rows=Array.prototype.slice.call(t.tBodies[0].rows);
    var numeric=th.hasAttribute("data-num");
    rows.sort(function(a,b){var x=a.cells[col],y=b.cells[col];var r;
      if(numeric){r=parseFloat(x.getAttribute("data-v"))-parseFloat(y.getAttribute("data-v"));}
      else{r=x.textContent.localeCompare(y.textContent);}
      return desc?-r:r;});
    rows.forEach(function(r){t.tBodies[0].appendChild(r);});
  });});
});
document.querySelectorAll("input.filter").forEach(function(inp){
  var t=document.getElementById(inp.getAttribute("data-table"));
  inp.addEventListener("input",function(){var q=inp.value.toLowerCase();
    Array.prototype.forEach.call(t.tBodies[0].rows,function(r){
      r.style.display=r.cells[0].textContent.toLowerCase().indexOf(q)>=0?"":"none";});});
});
// Timelines: drag to select a stretch (its top ops below), zoom into it, reset.
document.querySelectorAll(".tlrun").forEach(function(tl){
  var run=data.runs[parseInt(tl.getAttribute("data-run"),10)];
  var svg=tl.querySelector("svg.strips"),out=document.getElementById(tl.getAttribute("data-out"));
  var view=[0,run.bins];var sel=null,start=null;
  function binAt(ev){var r=svg.getBoundingClientRect();var f=(ev.clientX-r.left)/r.width;
    return Math.max(0,Math.min(run.bins-1,Math.floor(view[0]+f*(view[1]-view[0]))));}
  function trackAt(ev){var r=svg.getBoundingClientRect();return Math.floor((ev.clientY-r.top)/16);}
  function setView(a,b){view=[a,b];svg.setAttribute("viewBox",a+" 0 "+(b-a)+" "+svg.getAttribute("data-h"));}
  function show(b0,b1,track){
    var sums={};var tracks=track>=0&&track<run.tracks.length?[track]:run.tracks.map(function(_,i){return i;});
    tracks.forEach(function(ti){var top=run.tracks[ti].top;for(var b=b0;b<=b1;b++){var v=top[b];if(!v)continue;
      for(var i=0;i<v.length;i+=2){sums[v[i]]=(sums[v[i]]||0)+v[i+1];}}});
    var list=Object.keys(sums).map(function(k){return [run.names[k],sums[k]];}).sort(function(a,b){return b[1]-a[1];}).slice(0,10);
    out.textContent="";
    var t0=run.begin+Math.round(run.bin_ns*b0),t1=run.begin+Math.round(run.bin_ns*(b1+1));
    var h=el("div",(tracks.length==1?run.tracks[tracks[0]].name+": ":"all tracks: ")+fmtTime(t0-run.begin)+" to "+fmtTime(t1-run.begin)+" into the run");
    h.className="muted";out.appendChild(h);
    if(!list.length){out.appendChild(el("div","nothing ran in this stretch"));return;}
    var ol=el("ol");list.forEach(function(p){ol.appendChild(el("li",p[0]+" \u2014 "+fmtTime(p[1])));});out.appendChild(ol);
  }
  svg.addEventListener("mousedown",function(ev){start=binAt(ev);ev.preventDefault();});
  svg.addEventListener("mouseup",function(ev){if(start===null)return;var b=binAt(ev);var a=Math.min(start,b),c=Math.max(start,b);
    sel=[a,c];start=null;show(a,c,a==c?trackAt(ev):-1);});
  tl.querySelector(".zoom").addEventListener("click",function(){if(sel&&sel[1]>sel[0])setView(sel[0],sel[1]+1);
    else{var m=(view[0]+view[1])/2,w=Math.max(4,(view[1]-view[0])/2);setView(Math.max(0,m-w/2),Math.min(run.bins,m+w/2));}});
  tl.querySelector(".reset").addEventListener("click",function(){setView(0,run.bins);sel=null;});
});
})();
)js";

inline void section_open(page_writer& w, std::string_view id, std::string_view title) {
  w.f("<section id=\"{}\"><h2>{}</h2>\n", id, title);
}

inline std::string time_cell(std::int64_t ns) { return report_time(ns); }

inline void append_summary(page_writer& w, const html_report& rep) {
  section_open(w, "summary", "Summary");
  for (std::size_t i = 0; i < rep.runs.size(); ++i) {
    const html_run& r = rep.runs[i];
    const run_numbers n = numbers_of(r);
    if (rep.runs.size() > 1) {
      w.raw("<h3>");
      w.text(r.label);
      w.raw("</h3>\n");
    }
    w.raw("<div class=\"cards\">");
    const auto card = [&](std::string_view key, const std::string& value) {
      w.raw("<div class=\"card\"><div class=\"v\">");
      w.text(value);
      w.raw("</div><div class=\"k\">");
      w.text(key);
      w.raw("</div></div>");
    };
    card("wall time", report_time(n.wall_ns));
    card("host Self CPU", report_time(n.self_cpu_ns));
    card("device busy", n.device_busy ? fmt::format("{:.1f}%", 100.0 * *n.device_busy) : std::string("no device"));
    card(n.per_step ? "dispatches per step" : "dispatches (no steps marked)", fmt::format("{:g}", n.dispatches));
    card(n.peak_memory ? "peak memory (" + n.peak_memory->device + ")" : std::string("peak memory"),
         n.peak_memory ? report_bytes(n.peak_memory->bytes) : std::string("not recorded"));
    w.raw("</div>\n");
    const std::vector<memory_peak> peaks = peaks_of(r);
    const job_figures no_job;
    const std::vector<recommendation> recs = recommend(r.table, r.timeline, peaks, rep.thresholds, shows_job(r) ? r.job : no_job);
    if (recs.empty()) {
      w.raw("<p class=\"muted\">No recommendation: no rule applies to this run.</p>\n");
      continue;
    }
    w.raw("<h3>Recommendations, by the time they could save</h3><ol class=\"recs\">\n");
    for (const recommendation& rec : recs) {
      w.f("<li data-rule=\"{}\"><b>", rec.rule);
      w.text(rec.title);
      w.raw("</b> ");
      if (rec.saving_ns >= 0) {
        w.raw("<span class=\"save\">could save up to ");
        w.text(report_time(rec.saving_ns));
        w.raw("</span>");
      }
      w.raw("<br>");
      w.text(rec.detail);
      w.f(" <span class=\"rule\">[{}]</span></li>\n", rec.rule);
    }
    w.raw("</ol>\n");
  }
  w.raw("</section>\n");
}

inline std::string_view kind_color(track_kind k) {
  switch (k) {
    case track_kind::host: return "var(--host)";
    case track_kind::device: return "var(--dev)";
    case track_kind::engine: return "var(--eng)";
    case track_kind::queue: return "var(--q)";
  }
  return "var(--host)";
}

inline void append_timeline(page_writer& w, const html_report& rep) {
  bool any = false;
  for (const html_run& r : rep.runs) any = any || (!r.timeline.tracks.empty() && r.timeline.bins > 0);
  if (!any) return;
  section_open(w, "timeline", "Timeline overview");
  w.raw("<p class=\"muted\">Each track's busy share per stretch of the run (darker: busier); steps are the "
        "grey lines. Drag over a strip to list the top ops of that stretch (a click: one stretch of one "
        "track), <b>Zoom</b> into the selection, <b>Reset</b> to the whole run.</p>\n");
  w.raw("<div class=\"legend\"><span><i style=\"background:var(--host)\"></i>host thread</span><span><i "
        "style=\"background:var(--dev)\"></i>device executions</span><span><i style=\"background:var(--eng)\"></i>"
        "engine / DMA queue</span><span><i style=\"background:var(--q)\"></i>device queue</span></div>\n");
  for (std::size_t i = 0; i < rep.runs.size(); ++i) {
    const activity& a = rep.runs[i].timeline;
    if (a.tracks.empty() || a.bins == 0) continue;
    if (rep.runs.size() > 1) {
      w.raw("<h3>");
      w.text(rep.runs[i].label);
      w.raw("</h3>\n");
    }
    const std::size_t h = a.tracks.size() * 16;
    w.f("<div class=\"tlrun\" data-run=\"{}\" data-out=\"topops{}\">", i, i);
    w.f("<div class=\"tools\"><button class=\"zoom\">Zoom</button><button class=\"reset\">Reset</button> "
        "<span class=\"muted\">{} over {} stretches of {}</span></div>\n",
        report_time(a.wall_ns()), a.bins, report_time(a.wall_ns() / static_cast<std::int64_t>(a.bins)));
    w.raw("<div class=\"tl\"><div class=\"names\">");
    for (const activity_track& t : a.tracks) {
      w.raw("<div title=\"");
      w.text(t.label.group);
      w.raw("\">");
      w.text(t.label.name);
      w.raw("</div>");
    }
    w.f("</div><svg class=\"strips\" viewBox=\"0 0 {} {}\" data-h=\"{}\" preserveAspectRatio=\"none\" height=\"{}\">", a.bins, h, h, h);
    const double bin_ns = static_cast<double>(a.wall_ns()) / static_cast<double>(a.bins);
    for (std::size_t ti = 0; ti < a.tracks.size(); ++ti) {
      const activity_track& t = a.tracks[ti];
      w.f("<g fill=\"{}\">", kind_color(t.label.kind));
      // Runs of bins at the same shade (tenths) make one rectangle.
      std::size_t b = 0;
      while (b < a.bins) {
        const int level = static_cast<int>(std::min(10.0, std::ceil(10.0 * static_cast<double>(t.busy[b]) / bin_ns)));
        std::size_t e = b + 1;
        while (e < a.bins &&
               static_cast<int>(std::min(10.0, std::ceil(10.0 * static_cast<double>(t.busy[e]) / bin_ns))) == level)
          ++e;
        if (level > 0) w.f("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"14\" fill-opacity=\"{:.1f}\"/>", b, ti * 16 + 1, e - b, 0.1 * level);
        b = e;
      }
      w.raw("</g>");
    }
    // Steps: at most 500 lines (a longer run marks every n-th step).
    const std::size_t every = a.steps.size() / 500 + 1;
    w.raw("<g stroke=\"#888\" stroke-width=\"0.3\">");
    for (std::size_t s = 0; s < a.steps.size(); s += every) {
      const double x = static_cast<double>(a.steps[s].begin_ns - a.begin_ns) / bin_ns;
      w.f("<line x1=\"{:.2f}\" x2=\"{:.2f}\" y1=\"0\" y2=\"{}\"/>", x, x, h);
    }
    w.raw("</g></svg></div></div>\n");
    w.f("<div class=\"topops\" id=\"topops{}\"><span class=\"muted\">Select a stretch to see its top ops.</span></div>\n", i);
  }
  w.raw("</section>\n");
}

inline void append_ops(page_writer& w, const html_report& rep) {
  bool any = false;
  for (const html_run& r : rep.runs) any = any || !r.table.rows.empty();
  if (!any) return;
  section_open(w, "ops", "Ops");
  for (std::size_t i = 0; i < rep.runs.size(); ++i) {
    const averages& t = rep.runs[i].table;
    if (t.rows.empty()) continue;
    if (rep.runs.size() > 1) w.f("<details{}><summary>", i == 0 ? " open" : "");
    if (rep.runs.size() > 1) {
      w.text(rep.runs[i].label);
      w.raw("</summary>\n");
    }
    // Bar chart: the top ops by Self CPU or device time, both bars per op.
    std::vector<const average_row*> top;
    for (const average_row& r : t.rows) top.push_back(&r);
    const auto key = [](const average_row* r) { return std::max(r->self_cpu_ns, r->is_device ? r->self_device_ns : r->device_total_ns); };
    std::stable_sort(top.begin(), top.end(), [&](auto* a, auto* b) { return key(a) > key(b); });
    if (top.size() > 12) top.resize(12);
    std::int64_t scale = 1;
    for (const average_row* r : top) scale = std::max(scale, key(r));
    const std::string device = t.device_name;
    w.raw("<h3>Top ops: Self CPU against device time</h3><div class=\"legend\"><span><i style=\"background:var(--host)\"></i>Self CPU</span><span><i style=\"background:var(--dev)\"></i>");
    w.text(device);
    w.raw(" time (device rows: self; host ops: attributed total)</span></div>\n");
    const std::size_t ch = top.size() * 26 + 4;
    w.f("<svg class=\"bars\" viewBox=\"0 0 1000 {}\" width=\"100%\" style=\"max-width:1000px\">", ch);
    for (std::size_t k = 0; k < top.size(); ++k) {
      const average_row& r = *top[k];
      const double y = static_cast<double>(k * 26 + 2);
      const double cpu = 470.0 * static_cast<double>(r.self_cpu_ns) / static_cast<double>(scale);
      const std::int64_t dev_ns = r.is_device ? r.self_device_ns : r.device_total_ns;
      const double dev = 470.0 * static_cast<double>(dev_ns) / static_cast<double>(scale);
      w.raw("<text x=\"0\" y=\"");
      w.f("{:.0f}\">", y + 15);
      std::string name = r.name.size() > 48 ? r.name.substr(0, 45) + "..." : r.name;
      w.text(name);
      w.raw("<title>");
      w.text(r.name);
      w.raw("</title></text>");
      w.f("<rect x=\"330\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"10\" fill=\"var(--host)\"/>", y + 2, std::max(cpu, 0.5));
      w.f("<rect x=\"330\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"10\" fill=\"var(--dev)\"/>", y + 13, std::max(dev, 0.5));
      w.f("<text x=\"{:.0f}\" y=\"{:.0f}\">{} / {}</text>", 336 + std::max(cpu, dev), y + 17, report_time(r.self_cpu_ns), report_time(dev_ns));
    }
    w.raw("</svg>\n");
    // The table.
    const bool util = t.peak_flops_per_s > 0 || t.peak_hbm_bytes_per_s > 0 || t.with_flops;
    const bool mem = t.profile_memory;
    constexpr std::size_t max_rows = 2000;
    w.f("<h3>key_averages</h3><input class=\"filter\" type=\"search\" placeholder=\"filter by name\" data-table=\"ops{}\"> "
        "<span class=\"muted\">{} rows{}; click a header to sort</span>\n",
        i, t.rows.size(), t.rows.size() > max_rows ? fmt::format(", the {} with the most time shown", max_rows) : std::string());
    w.f("<table class=\"sortable\" id=\"ops{}\"><thead><tr><th>Name</th><th>Layer</th><th data-num>Calls</th><th data-num>Self CPU</th>"
        "<th data-num>Self CPU %</th><th data-num>CPU total</th><th data-num>Self ", i);
    w.text(device);
    w.raw("</th><th data-num>");
    w.text(device);
    w.raw(" total</th>");
    if (util) w.raw("<th data-num>FLOPs</th><th data-num>TFLOP/s</th><th data-num>MFU</th><th data-num>MBU</th>");
    if (mem) w.raw("<th data-num>CPU Mem</th><th data-num>Self CPU Mem</th><th data-num>Device Mem</th>");
    w.raw("</tr></thead><tbody>\n");
    std::vector<const average_row*> rows;
    for (const average_row& r : t.rows) rows.push_back(&r);
    std::stable_sort(rows.begin(), rows.end(), [](auto* a, auto* b) {
      return std::max(a->self_cpu_ns, a->self_device_ns) > std::max(b->self_cpu_ns, b->self_device_ns);
    });
    if (rows.size() > max_rows) rows.resize(max_rows);
    const std::int64_t cpu_total = t.self_cpu_total_ns();
    for (const average_row* rp : rows) {
      const average_row& r = *rp;
      w.raw("<tr><td>");
      w.text(r.name);
      if (!r.input_shapes.empty()) {
        w.raw(" <span class=\"muted\">");
        w.text(r.input_shapes);
        w.raw("</span>");
      }
      w.f("</td><td>{}</td>", r.is_device ? "device" : "host");
      w.f("<td data-v=\"{}\">{}</td>", r.count, r.count);
      const auto tcell = [&](std::int64_t ns) { w.f("<td data-v=\"{}\">{}</td>", ns, report_time(ns)); };
      tcell(r.self_cpu_ns);
      const double share = cpu_total > 0 ? 100.0 * static_cast<double>(r.self_cpu_ns) / static_cast<double>(cpu_total) : 0;
      w.f("<td data-v=\"{:.4f}\">{:.2f}%</td>", share, share);
      tcell(r.cpu_total_ns);
      tcell(r.self_device_ns);
      tcell(r.device_total_ns);
      if (util) {
        w.f("<td data-v=\"{}\">{}</td>", r.flops, r.flops);
        const double fl = r.achieved_flops_per_s();
        w.f("<td data-v=\"{:.6f}\">{}</td>", fl / 1e12, fl > 0 ? fmt::format("{:.3f}", fl / 1e12) : std::string("--"));
        const double mfu = t.peak_flops_per_s > 0 ? 100 * fl / t.peak_flops_per_s : 0;
        const double mbu = t.peak_hbm_bytes_per_s > 0 ? 100 * r.achieved_bytes_per_s() / t.peak_hbm_bytes_per_s : 0;
        w.f("<td data-v=\"{:.4f}\">{}</td>", mfu, mfu > 0 ? fmt::format("{:.2f}%", mfu) : std::string("--"));
        w.f("<td data-v=\"{:.4f}\">{}</td>", mbu, mbu > 0 ? fmt::format("{:.2f}%", mbu) : std::string("--"));
      }
      if (mem) {
        for (const std::int64_t b : {r.cpu_memory_usage, r.self_cpu_memory_usage, r.device_memory_usage})
          w.f("<td data-v=\"{}\">{}</td>", b, report_bytes(b));
      }
      w.raw("</tr>\n");
    }
    w.raw("</tbody></table>\n");
    if (rep.runs.size() > 1) w.raw("</details>\n");
  }
  w.raw("</section>\n");
}

inline void append_device(page_writer& w, const html_report& rep) {
  bool any = false;
  for (const html_run& r : rep.runs) any = any || r.timeline.has_device() || !r.memory.empty();
  if (!any) return;
  section_open(w, "device", "Device");
  for (std::size_t i = 0; i < rep.runs.size(); ++i) {
    const html_run& run = rep.runs[i];
    const activity& a = run.timeline;
    if (!a.has_device() && run.memory.empty()) continue;
    if (rep.runs.size() > 1) {
      w.raw("<h3>");
      w.text(run.label);
      w.raw("</h3>\n");
    }
    if (a.has_device()) {
      std::vector<const activity_track*> dev;
      std::uint64_t bytes = 0, flops = 0;
      for (const activity_track& t : a.tracks)
        if (t.label.kind != track_kind::host) {
          dev.push_back(&t);
          if (t.label.kind == track_kind::device) bytes += t.bytes, flops += t.flops;
        }
      const double wall = static_cast<double>(std::max<std::int64_t>(a.wall_ns(), 1));
      w.f("<p>Device busy {} of the wall time ({}). HBM traffic of the executions: {}",
          report_share(static_cast<double>(a.device_busy_ns), wall), report_time(a.device_busy_ns), report_bytes(static_cast<std::int64_t>(bytes)));
      if (a.device_busy_ns > 0 && bytes > 0)
        w.f(", {:.2f} GB/s over the device's busy time", static_cast<double>(bytes) / static_cast<double>(a.device_busy_ns));
      if (flops > 0) w.f("; {} FLOPs", flops);
      w.raw(".</p>\n<h3>Busy share per engine and queue (of the wall time)</h3>\n");
      const std::size_t ch = dev.size() * 20 + 4;
      w.f("<svg class=\"engines\" viewBox=\"0 0 1000 {}\" width=\"100%\" style=\"max-width:1000px\">", ch);
      for (std::size_t k = 0; k < dev.size(); ++k) {
        const activity_track& t = *dev[k];
        const double share = static_cast<double>(t.busy_ns) / wall;
        const double y = static_cast<double>(k * 20 + 2);
        w.f("<text x=\"0\" y=\"{:.0f}\">", y + 12);
        w.text(t.label.name);
        w.raw("</text>");
        w.f("<rect x=\"260\" y=\"{:.0f}\" width=\"600\" height=\"14\" fill=\"#eef1f5\"/>", y);
        w.f("<rect x=\"260\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"14\" fill=\"{}\"/>", y, 600 * share, kind_color(t.label.kind));
        w.f("<text x=\"870\" y=\"{:.0f}\">{:.1f}%</text>", y + 12, 100 * share);
      }
      w.raw("</svg>\n<table class=\"sortable\" id=\"engines");
      w.f("{}\"><thead><tr><th>Track</th><th>Device</th><th data-num>Busy</th><th data-num>Busy %</th><th data-num>Events</th>"
          "<th data-num>FLOPs</th><th data-num>HBM bytes</th></tr></thead><tbody>\n", i);
      for (const activity_track* t : dev) {
        w.raw("<tr><td>");
        w.text(t->label.name);
        w.raw("</td><td>");
        w.text(t->label.group);
        const double share = 100.0 * static_cast<double>(t->busy_ns) / wall;
        w.f("</td><td data-v=\"{}\">{}</td><td data-v=\"{:.4f}\">{:.1f}%</td><td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td></tr>\n",
            t->busy_ns, report_time(t->busy_ns), share, share, t->events, t->events, t->flops, t->flops, t->bytes,
            report_bytes(static_cast<std::int64_t>(t->bytes)));
      }
      w.raw("</tbody></table>\n");
    }
    if (!run.memory.empty()) {
      w.raw("<h3>Memory timeline (allocated bytes)</h3>\n");
      std::int64_t top = 1;
      for (const memory_curve& m : run.memory) top = std::max(top, m.peak.bytes);
      const double wall = static_cast<double>(std::max<std::int64_t>(a.wall_ns(), 1));
      w.raw("<svg class=\"memory\" viewBox=\"0 0 1000 220\" width=\"100%\" style=\"max-width:1000px\">");
      w.raw("<line x1=\"60\" y1=\"200\" x2=\"1000\" y2=\"200\" stroke=\"#999\"/>");
      w.f("<text x=\"0\" y=\"14\">{}</text><text x=\"0\" y=\"200\">0</text>", report_bytes(top));
      static constexpr std::string_view colors[] = {"var(--dev)", "var(--host)", "var(--eng)", "var(--q)"};
      for (std::size_t k = 0; k < run.memory.size(); ++k) {
        const memory_curve& m = run.memory[k];
        std::string pts = "60,200";
        double last_y = 200;
        for (const auto& [ns, b] : m.points) {
          const double x = 60 + 940 * std::clamp(static_cast<double>(ns - a.begin_ns) / wall, 0.0, 1.0);
          const double y = 200 - 190 * static_cast<double>(std::max<std::int64_t>(b, 0)) / static_cast<double>(top);
          fmt::format_to(std::back_inserter(pts), " {:.1f},{:.1f} {:.1f},{:.1f}", x, last_y, x, y);
          last_y = y;
        }
        fmt::format_to(std::back_inserter(pts), " 1000,{:.1f}", last_y);
        w.f("<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"{}\" points=\"{}\"><title>", colors[k % 4], pts);
        w.text(m.peak.device);
        w.raw("</title></polyline>");
        w.f("<text x=\"{}\" y=\"{}\" fill=\"{}\">", 70 + 200 * (k % 4), 214, colors[k % 4]);
        w.text(m.peak.device + " peak " + report_bytes(m.peak.bytes) + (m.peak.op.empty() ? "" : " in " + m.peak.op));
        w.raw("</text>");
      }
      w.raw("</svg>\n");
    }
  }
  w.raw("</section>\n");
}

inline std::string signed_time(std::int64_t ns) { return ns < 0 ? "-" + report_time(-ns) : report_time(ns); }

inline void append_distributed(page_writer& w, const html_report& rep) {
  if (std::none_of(rep.runs.begin(), rep.runs.end(), shows_job)) return;
  section_open(w, "distributed", "Distributed");
  for (std::size_t i = 0; i < rep.runs.size(); ++i) {
    const html_run& run = rep.runs[i];
    if (!shows_job(run)) continue;
    const job_figures& job = run.job;
    if (rep.runs.size() > 1) {
      w.raw("<h3>");
      w.text(run.label);
      w.raw("</h3>\n");
    }
    std::optional<std::int64_t> world;
    for (const rank_analysis& r : job.ranks)
      if (r.world_size) world = r.world_size;
    w.f("<p>{} ranks{}, each from its device kernels as <code>strata-report analyze</code> reads them "
        "(docs/distributed.md).</p>\n",
        job.ranks.size(), world ? fmt::format(" of a world of {}", *world) : std::string());

    // Temporal breakdown: one stacked bar per rank.
    w.raw("<h3>Temporal breakdown per rank (% of its kernel span)</h3>\n<div class=\"legend\"><span><i "
          "style=\"background:var(--dev)\"></i>compute</span><span><i style=\"background:var(--q)\"></i>non-compute "
          "(communication, copies)</span><span><i style=\"background:#d9dee5\"></i>idle</span></div>\n");
    const std::size_t n = job.ranks.size();
    w.f("<svg class=\"ranks\" viewBox=\"0 0 1000 {}\" width=\"100%\" style=\"max-width:1000px\">", n * 22 + 4);
    for (std::size_t k = 0; k < n; ++k) {
      const rank_analysis& r = job.ranks[k];
      const temporal_breakdown& t = r.temporal;
      const double y = static_cast<double>(k * 22 + 2);
      w.f("<g class=\"rank\" data-rank=\"{}\"><text x=\"0\" y=\"{:.0f}\">rank {}</text>", r.rank, y + 12, r.rank);
      double x = 100;
      for (const auto& [ns, color, what] : {std::tuple{t.compute_ns, "var(--dev)", "compute"},
                                            std::tuple{t.non_compute_ns, "var(--q)", "non-compute"},
                                            std::tuple{t.idle_ns, "#d9dee5", "idle"}}) {
        const double width = 480 * t.pct(ns) / 100;
        w.f("<rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"15\" fill=\"{}\"><title>rank {} {}: {} ({:.1f}%)</title></rect>",
            x, y, width, color, r.rank, what, report_time(ns), t.pct(ns));
        x += width;
      }
      w.f("<text x=\"592\" y=\"{:.0f}\">compute {:.1f}% &middot; non-compute {:.1f}% &middot; idle {:.1f}% of {}</text></g>",
          y + 12, t.pct(t.compute_ns), t.pct(t.non_compute_ns), t.pct(t.idle_ns), report_time(t.span_ns));
    }
    w.raw("</svg>\n");

    // Overlap: one bar per rank, the share of its communication that runs beside compute.
    w.raw("<h3>Communication/computation overlap per rank (% of its communication time)</h3>\n");
    w.f("<svg class=\"overlap\" viewBox=\"0 0 1000 {}\" width=\"100%\" style=\"max-width:1000px\">", n * 22 + 4);
    for (std::size_t k = 0; k < n; ++k) {
      const rank_analysis& r = job.ranks[k];
      const double y = static_cast<double>(k * 22 + 2);
      w.f("<g class=\"rank\" data-rank=\"{}\"><text x=\"0\" y=\"{:.0f}\">rank {}</text>", r.rank, y + 12, r.rank);
      w.f("<rect x=\"100\" y=\"{:.0f}\" width=\"480\" height=\"15\" fill=\"#eef1f5\"/>", y);
      w.f("<rect x=\"100\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"15\" fill=\"var(--eng)\"/>", y, 4.8 * r.overlap_pct());
      if (r.communication_ns > 0)
        w.f("<text x=\"592\" y=\"{:.0f}\">{:.1f}% of {} communication ({:.1f}% of the span)</text></g>", y + 12,
            r.overlap_pct(), report_time(r.communication_ns), r.temporal.pct(r.communication_ns));
      else
        w.f("<text x=\"592\" y=\"{:.0f}\">no communication kernel</text></g>", y + 12);
    }
    w.raw("</svg>\n");

    // The same figures as a table, and each rank's file.
    w.f("<table class=\"sortable\" id=\"ranks{}\"><thead><tr><th data-num>Rank</th><th class=\"l\">Trace</th><th data-num>Kernels</th>"
        "<th data-num>Span</th><th data-num>Compute %</th><th data-num>Non-compute %</th><th data-num>Idle %</th>"
        "<th data-num>Communication</th><th data-num>Overlap %</th></tr></thead><tbody>\n", i);
    for (const rank_analysis& r : job.ranks) {
      const temporal_breakdown& t = r.temporal;
      w.f("<tr data-rank=\"{}\"><td data-v=\"{}\">{}</td><td class=\"l\">", r.rank, r.rank, r.rank);
      w.text(r.source);
      w.f("</td><td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td>", r.kernels, r.kernels, t.span_ns, report_time(t.span_ns));
      for (const std::int64_t ns : {t.compute_ns, t.non_compute_ns, t.idle_ns}) w.f("<td data-v=\"{:.4f}\">{:.1f}%</td>", t.pct(ns), t.pct(ns));
      w.f("<td data-v=\"{}\">{}</td><td data-v=\"{:.4f}\">{}</td></tr>\n", r.communication_ns, report_time(r.communication_ns),
          r.overlap_pct(), r.communication_ns > 0 ? fmt::format("{:.1f}%", r.overlap_pct()) : std::string("--"));
    }
    w.raw("</tbody></table>\n");

    // Idle time per queue by cause: a table, each row's causes as a bar on one scale.
    w.f("<h3>Idle time per device queue, by cause</h3>\n<div class=\"legend\"><span><i style=\"background:var(--bad)\"></i>"
        "host wait (the launch came after the queue ran dry)</span><span><i style=\"background:var(--q)\"></i>kernel wait "
        "(gaps under {})</span><span><i style=\"background:#9aa5b1\"></i>other</span></div>\n",
        report_time(job.options.kernel_wait_ns));
    std::int64_t most_idle = 1;
    for (const rank_analysis& r : job.ranks)
      for (const queue_idle& q : r.queues) most_idle = std::max(most_idle, q.idle_ns());
    w.f("<table class=\"sortable\" id=\"idle{}\"><thead><tr><th data-num>Rank</th><th class=\"l\">Queue</th><th data-num>Kernels</th>"
        "<th data-num>Idle</th><th data-num>Host wait</th><th data-num>Kernel wait</th><th data-num>Other</th><th>By cause</th>"
        "</tr></thead><tbody>\n", i);
    constexpr std::size_t max_queue_rows = 500;
    std::size_t queue_rows = 0;
    for (const rank_analysis& r : job.ranks)
      for (const queue_idle& q : r.queues) {
        if (++queue_rows > max_queue_rows) break;
        w.f("<tr data-rank=\"{}\"><td data-v=\"{}\">{}</td><td class=\"l\">", r.rank, r.rank, r.rank);
        w.text(q.queue);
        w.f("</td><td data-v=\"{}\">{}</td>", q.kernels, q.kernels);
        for (const std::int64_t ns : {q.idle_ns(), q.host_wait_ns, q.kernel_wait_ns, q.other_ns})
          w.f("<td data-v=\"{}\">{}</td>", ns, report_time(ns));
        w.raw("<td><svg class=\"idle\" viewBox=\"0 0 200 10\" width=\"200\" height=\"10\">");
        double x = 0;
        for (const auto& [ns, color] : {std::pair{q.host_wait_ns, "var(--bad)"}, std::pair{q.kernel_wait_ns, "var(--q)"},
                                        std::pair{q.other_ns, "#9aa5b1"}}) {
          const double width = 200.0 * static_cast<double>(ns) / static_cast<double>(most_idle);
          if (width > 0) w.f("<rect x=\"{:.1f}\" y=\"0\" width=\"{:.1f}\" height=\"10\" fill=\"{}\"/>", x, width, color);
          x += width;
        }
        w.raw("</svg></td></tr>\n");
      }
    w.raw("</tbody></table>\n");
    if (queue_rows > max_queue_rows) w.f("<p class=\"muted\">The first {} queues shown.</p>\n", max_queue_rows);

    // Stragglers: per step (columns) and rank (rows), its median lateness against the median start.
    w.f("<h3>Stragglers: each rank's collective starts against their group's median, per step</h3>\n");
    if (!job.clocks_aligned) {
      w.raw("<p>Not compared: some traces have baseTimeNanoseconds and others not, so the ranks' clocks cannot be "
            "aligned.</p>\n");
    } else if (job.stragglers.empty()) {
      w.raw("<p>No collective was seen on two ranks.</p>\n");
    } else {
      std::vector<std::int64_t> steps;
      for (const straggler_row& s : job.stragglers) steps.push_back(s.step);
      std::sort(steps.begin(), steps.end());
      steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
      constexpr std::size_t max_steps = 400;
      const bool cut = steps.size() > max_steps;
      if (cut) steps.resize(max_steps);
      std::map<std::pair<std::int64_t, std::int64_t>, const straggler_row*> cell;  // (rank, step)
      std::int64_t scale = 1;
      for (const straggler_row& s : job.stragglers) {
        cell[{s.rank, s.step}] = &s;
        scale = std::max(scale, s.median_late_ns < 0 ? -s.median_late_ns : s.median_late_ns);
      }
      w.f("<div class=\"legend\"><span><i style=\"background:var(--bad)\"></i>late (darker: later, up to {})</span><span><i "
          "style=\"background:var(--host)\"></i>early</span><span><i style=\"border:2px solid var(--fg);box-sizing:border-box\"></i>"
          "straggler: median lateness over {} in that step</span></div>\n", report_time(scale), report_time(job.options.straggler_ns));
      const double cw = std::min(120.0, 860.0 / static_cast<double>(steps.size()));
      const std::size_t h = 18 + n * 20;
      w.f("<svg class=\"stragglers\" viewBox=\"0 0 1000 {}\" width=\"100%\" style=\"max-width:1000px\">", h);
      const std::size_t label_every = cw >= 30 ? 1 : static_cast<std::size_t>(std::ceil(30.0 / cw));
      for (std::size_t c = 0; c < steps.size(); c += label_every)
        w.f("<text x=\"{:.1f}\" y=\"12\">{}</text>", 100 + cw * static_cast<double>(c) + 2,
            steps[c] < 0 ? std::string(steps.size() == 1 ? "the whole run (no ProfilerStep marked)" : "no step")
                         : fmt::format("{}{}", c == 0 ? "step " : "", steps[c]));
      for (std::size_t k = 0; k < n; ++k) {
        const rank_analysis& r = job.ranks[k];
        const double y = static_cast<double>(18 + k * 20);
        w.f("<g class=\"rank\" data-rank=\"{}\"><text x=\"0\" y=\"{:.0f}\">rank {}</text>", r.rank, y + 12, r.rank);
        for (std::size_t c = 0; c < steps.size(); ++c) {
          const double x = 100 + cw * static_cast<double>(c);
          const auto it = cell.find({r.rank, steps[c]});
          if (it == cell.end()) {
            w.f("<rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"16\" fill=\"#f3f4f6\"><title>rank {}: no matched "
                "collective</title></rect>", x, y, std::max(cw - 1, 0.5), r.rank);
            continue;
          }
          const straggler_row& s = *it->second;
          const double f = static_cast<double>(s.median_late_ns < 0 ? -s.median_late_ns : s.median_late_ns) / static_cast<double>(scale);
          w.f("<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"16\" fill=\"{}\" fill-opacity=\"{:.2f}\"{}>",
              s.straggler ? "late straggler" : "late", x, y, std::max(cw - 1, 0.5), s.median_late_ns > 0 ? "var(--bad)" : "var(--host)",
              0.08 + 0.92 * f, s.straggler ? " stroke=\"#1d2733\" stroke-width=\"2\"" : "");
          w.f("<title>rank {}{}: collectives start a median {} {} their group's median (at most {} late) over {} collective{}{}</title></rect>",
              r.rank, s.step < 0 ? std::string() : fmt::format(", step {}", s.step), report_time(s.median_late_ns < 0 ? -s.median_late_ns : s.median_late_ns),
              s.median_late_ns < 0 ? "before" : "after", signed_time(s.max_late_ns), s.collectives, s.collectives == 1 ? "" : "s",
              s.straggler ? ": a straggler" : "");
          if (cw >= 60)
            w.f("<text x=\"{:.1f}\" y=\"{:.0f}\"{}>{}</text>", x + 4, y + 12, f > 0.5 ? " style=\"fill:#fff\"" : "", signed_time(s.median_late_ns));
        }
        w.raw("</g>");
      }
      w.raw("</svg>\n");
      std::map<std::int64_t, std::vector<std::string>> late;
      for (const straggler_row& s : job.stragglers)
        if (s.straggler) late[s.rank].push_back(s.step < 0 ? std::string("the whole run") : std::to_string(s.step));
      if (late.empty()) {
        w.f("<p>No straggler: no rank's collectives start more than {} after their group's median in a step.</p>\n",
            report_time(job.options.straggler_ns));
      } else {
        w.raw("<p class=\"stragglers\">Straggler");
        w.raw(late.size() == 1 ? ": " : "s: ");
        bool first = true;
        for (const auto& [rank, where] : late) {
          w.f("{}<b>rank {}</b> ({}{})", first ? "" : "; ", rank,
              where.size() == 1 && where.front() == "the whole run" ? "" : where.size() == 1 ? "step " : "steps ", listed(where));
          first = false;
        }
        w.raw(".</p>\n");
      }
      if (cut) w.f("<p class=\"muted\">The first {} steps shown.</p>\n", max_steps);
    }
  }
  w.raw("</section>\n");
}

inline void append_compare(page_writer& w, const html_report& rep) {
  if (rep.runs.size() < 2) return;
  section_open(w, "compare", "Compare");
  std::vector<run_numbers> nums;
  for (const html_run& r : rep.runs) nums.push_back(numbers_of(r));
  std::string verdict = rep.verdict;
  if (verdict.empty()) {
    std::size_t best = 0, worst = 0;
    for (std::size_t i = 1; i < nums.size(); ++i) {
      if (nums[i].wall_ns < nums[best].wall_ns) best = i;
      if (nums[i].wall_ns > nums[worst].wall_ns) worst = i;
    }
    verdict = fmt::format("{} is fastest: wall time {} against {} for {} ({:.2f}x).", rep.runs[best].label,
                          report_time(nums[best].wall_ns), report_time(nums[worst].wall_ns), rep.runs[worst].label,
                          nums[best].wall_ns > 0 ? static_cast<double>(nums[worst].wall_ns) / static_cast<double>(nums[best].wall_ns) : 0.0);
  }
  w.raw("<p class=\"verdict\">");
  w.text(verdict);
  w.raw("</p>\n");
  // One small bar chart per figure, the runs side by side.
  struct figure {
    std::string_view name;
    std::vector<double> values;
    bool time;
  };
  std::vector<figure> figures = {{"wall time", {}, true}, {"host Self CPU", {}, true}, {"device busy time", {}, true},
                                 {"framework dispatches", {}, false}};
  for (std::size_t i = 0; i < rep.runs.size(); ++i) {
    figures[0].values.push_back(static_cast<double>(nums[i].wall_ns));
    figures[1].values.push_back(static_cast<double>(nums[i].self_cpu_ns));
    figures[2].values.push_back(static_cast<double>(rep.runs[i].timeline.device_busy_ns));
    figures[3].values.push_back(static_cast<double>(rep.runs[i].timeline.framework_ops));
  }
  const std::size_t per = rep.runs.size() * 18 + 28;
  w.f("<svg class=\"compare\" viewBox=\"0 0 1000 {}\" width=\"100%\" style=\"max-width:1000px\">", per * figures.size());
  for (std::size_t f = 0; f < figures.size(); ++f) {
    const double y0 = static_cast<double>(f * per);
    double top = 0;
    for (double v : figures[f].values) top = std::max(top, v);
    w.f("<text x=\"0\" y=\"{:.0f}\" style=\"font-weight:700\">{}</text>", y0 + 16, figures[f].name);
    for (std::size_t i = 0; i < rep.runs.size(); ++i) {
      const double y = y0 + 22 + static_cast<double>(i * 18);
      const double v = figures[f].values[i];
      w.f("<text x=\"20\" y=\"{:.0f}\">", y + 11);
      w.text(rep.runs[i].label);
      w.raw("</text>");
      const double width = top > 0 ? 600 * v / top : 0;
      w.f("<rect x=\"200\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"13\" fill=\"{}\"/>", y, std::max(width, 0.5),
          i == 0 ? "var(--host)" : i == 1 ? "var(--dev)" : "var(--eng)");
      w.f("<text x=\"{:.0f}\" y=\"{:.0f}\">{}</text>", 206 + width, y + 11,
          figures[f].time ? report_time(static_cast<std::int64_t>(v)) : fmt::format("{:g}", v));
    }
  }
  w.raw("</svg>\n");
  // Per op: each other run against the first.
  for (std::size_t i = 1; i < rep.runs.size(); ++i) {
    const comparison diff = compare(rep.runs[0].table, rep.runs[i].table, {.label_a = rep.runs[0].label, .label_b = rep.runs[i].label});
    w.raw("<h3>Per op: ");
    w.text(rep.runs[i].label);
    w.raw(" against ");
    w.text(rep.runs[0].label);
    w.f("</h3><table class=\"sortable\" id=\"cmp{}\"><thead><tr><th>Name</th><th>Layer</th><th data-num>Calls A</th><th data-num>Calls B</th>"
        "<th data-num>Self CPU A</th><th data-num>Self CPU B</th><th data-num>B/A</th><th data-num>Device total A</th>"
        "<th data-num>Device total B</th><th data-num>B/A</th></tr></thead><tbody>\n", i);
    std::size_t shown = 0;
    for (const compare_row& c : diff.rows) {
      if (++shown > 500) break;
      w.raw("<tr><td>");
      w.text(c.name);
      w.f("</td><td>{}</td>", c.is_device ? "device" : "host");
      const auto side = [&](const std::optional<average_row>& r, auto field, bool time) {
        if (!r) {
          w.raw("<td data-v=\"-1\">-</td>");
          return;
        }
        const std::int64_t v = static_cast<std::int64_t>(field(*r));
        w.f("<td data-v=\"{}\">{}</td>", v, time ? report_time(v) : std::to_string(v));
      };
      const auto ratio = [&](auto field) {
        const std::optional<double> q = c.a && c.b ? ratio_b_over_a(static_cast<std::int64_t>(field(*c.a)), static_cast<std::int64_t>(field(*c.b)))
                                                   : std::nullopt;
        if (q) w.f("<td data-v=\"{:.6f}\">{:.2f}x</td>", *q, *q);
        else w.raw("<td data-v=\"-1\">--</td>");
      };
      const auto count = [](const average_row& r) { return r.count; };
      const auto self_cpu = [](const average_row& r) { return r.self_cpu_ns; };
      const auto dev = [](const average_row& r) { return r.device_total_ns; };
      side(c.a, count, false);
      side(c.b, count, false);
      side(c.a, self_cpu, true);
      side(c.b, self_cpu, true);
      ratio(self_cpu);
      side(c.a, dev, true);
      side(c.b, dev, true);
      ratio(dev);
      w.raw("</tr>\n");
    }
    w.raw("</tbody></table>\n");
  }
  w.raw("</section>\n");
}

/// The data the page's script reads: per run, its timeline's top ops per bin.
inline void append_data(page_writer& w, const html_report& rep) {
  w.raw("<script type=\"application/json\" id=\"strata-data\">{\"runs\":[");
  for (std::size_t i = 0; i < rep.runs.size(); ++i) {
    const activity& a = rep.runs[i].timeline;
    w.f("{}{{\"label\":", i == 0 ? "" : ",");
    w.json(rep.runs[i].label);
    w.f(",\"begin\":{},\"bins\":{},\"bin_ns\":{:.3f},\"names\":[", a.begin_ns, a.bins,
        a.bins ? static_cast<double>(a.wall_ns()) / static_cast<double>(a.bins) : 0.0);
    for (std::size_t n = 0; n < a.names.size(); ++n) {
      if (n) w.raw(",");
      w.json(a.names[n]);
    }
    w.raw("],\"tracks\":[");
    for (std::size_t t = 0; t < a.tracks.size(); ++t) {
      w.raw(t ? ",{\"name\":" : "{\"name\":");
      w.json(a.tracks[t].label.name);
      w.raw(",\"top\":[");
      for (std::size_t b = 0; b < a.tracks[t].top.size(); ++b) {
        const auto& top = a.tracks[t].top[b];
        if (b) w.raw(",");
        if (top.empty()) {
          w.raw("0");
          continue;
        }
        w.raw("[");
        for (std::size_t k = 0; k < top.size(); ++k) w.f("{}{},{}", k ? "," : "", top[k].first, top[k].second);
        w.raw("]");
      }
      w.raw("]}");
    }
    w.raw("]}");
  }
  w.raw("]}</script>\n");
}

}  // namespace detail

/// The page: a self-contained HTML document (see the top of this header).
///
/// **Example**
/// ```
/// strata::html_report rep;
/// rep.runs.push_back(strata::html_run_of(prof.data(), prof.key_averages(), "my run"));
/// strata::write_html_report(rep, "strata-out/report.html");
/// ```
inline std::string html_page(const html_report& rep) {
  detail::page_writer w;
  w.raw("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<link rel=\"icon\" href=\"data:,\">\n<title>");
  w.text(rep.title);
  w.raw("</title>\n<style>");
  w.raw(detail::page_style);
  w.raw("</style></head><body>\n<header><h1>");
  w.text(rep.title);
  w.raw("</h1><p>");
  for (std::size_t i = 0; i < rep.runs.size(); ++i) {
    if (i) w.raw(" &middot; ");
    w.text(rep.runs[i].label);
    if (!rep.runs[i].sources.empty()) {
      w.raw(": ");
      std::string files;
      for (const std::string& s : rep.runs[i].sources) files += (files.empty() ? "" : ", ") + s;
      w.text(files);
    }
  }
  w.raw("</p></header>\n");
  detail::page_writer body;
  detail::append_summary(body, rep);
  detail::append_timeline(body, rep);
  detail::append_ops(body, rep);
  detail::append_device(body, rep);
  detail::append_distributed(body, rep);
  detail::append_compare(body, rep);
  w.raw("<nav>");
  for (const auto& [id, title] : {std::pair{"summary", "Summary"}, std::pair{"timeline", "Timeline"}, std::pair{"ops", "Ops"},
                                  std::pair{"device", "Device"}, std::pair{"distributed", "Distributed"},
                                  std::pair{"compare", "Compare"}})
    if (body.out.find(fmt::format("<section id=\"{}\">", id)) != std::string::npos) w.f("<a href=\"#{}\">{}</a>", id, title);
  w.raw("</nav>\n<main>\n");
  w.raw(body.out);
  w.raw("</main>\n");
  detail::append_data(w, rep);
  w.raw("<script>");
  w.raw(detail::page_script);
  w.raw("</script>\n</body></html>\n");
  return std::move(w.out);
}

/// Writes `html_page(rep)` to `path` atomically (a temporary file renamed into place: a failed
/// write leaves no file and the previous one whole). Raises `strata::error` naming the path
/// when it cannot be written, or when `rep` has no run.
inline export_result write_html_report(const html_report& rep, const std::filesystem::path& path) {
  if (path.empty()) throw error("write_html_report: no path given; name a file such as report.html");
  if (rep.runs.empty()) throw error("write_html_report: no run to show");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw error("cannot write the report to '" + path.string() + "': it is a directory; name a file in it");
  const std::string page = html_page(rep);
  detail::atomic_file f(path);
  f.write(page);
  f.commit();
  return {path.string(), 1, f.bytes_written()};
}

}  // namespace v1
}  // namespace strata
