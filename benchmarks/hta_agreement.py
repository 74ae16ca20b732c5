#!/usr/bin/env python3
"""strata-report analyze against Holistic Trace Analysis (HTA) on the same rank traces.

usage: hta_agreement.py --hta HTA_SRC --strata-report STRATA_REPORT [--python PYTHON]
                        [--hta-rounding] [--tolerance PCT] [TRACE_DIR...]

Runs HTA (its source tree HTA_SRC, or $HTA_SRC; on PYTHON, default /usr/bin/python3, which needs
pandas: Debian's python3-pandas, python3-plotly, python3-networkx, python3-psutil, python3-yaml)
and `strata-report analyze --format json` on each TRACE_DIR (default: HTA's own multi-rank test
data, tests/data/trace_filter and tests/data/nccl_parser_config), and prints, per rank, stream and
category, HTA's figure, strata's and their relative difference. Exit status 1 when any differs by
more than --tolerance percent (default 0.5).

HTA rounds the times of traces with nanosecond timestamps inward to whole microseconds when it
reads them (begin up, end down: its workaround for overlapping events, pytorch/pytorch#122425);
strata keeps the nanoseconds. By default HTA runs with HTA_DISABLE_NS_ROUNDING=1, so both compute
over the same times; --hta-rounding runs HTA as it comes and strata-report analyze with its
--hta-rounding, which rounds the same way.

Not a CI test: HTA is not a dependency of strata.
"""
import argparse
import json
import math
import os
import subprocess
import sys

HTA_SIDE = r'''
import json, logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
ranks = ta.t.get_ranks()
out = {"temporal": {}, "overlap": {}, "idle": [], "launch": {}}
for _, row in ta.get_temporal_breakdown(visualize=False).iterrows():
    out["temporal"][int(row["rank"])] = {k: float(row[k]) for k in
        ("idle_time(us)", "compute_time(us)", "non_compute_time(us)", "kernel_time(us)",
         "idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg")}
for _, row in ta.get_comm_comp_overlap(visualize=False).iterrows():
    out["overlap"][int(row["rank"])] = float(row["comp_comm_overlap_pctg"])
idle, _ = ta.get_idle_time_breakdown(ranks=ranks, visualize=False)
for _, row in idle.iterrows():
    out["idle"].append([int(row["rank"]), int(row["stream"]), str(row["idle_category"]), float(row["idle_time"])])
for rank, df in ta.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False).items():
    out["launch"][int(rank)] = {
        "kernels": int(len(df)),
        "launch_us_total": float(df["cpu_duration"].sum()),
        "device_us_total": float(df["gpu_duration"].sum()),
        "delay_us_total": float(df["launch_delay"].sum()),
        "launch_outliers": int((df["cpu_duration"] > 50).sum()),
        "delay_outliers": int((df["launch_delay"] > 100).sum()),
        "short_kernels": int(((df["cpu_duration"] <= 50) & (df["gpu_duration"] < df["cpu_duration"])).sum()),
    }
print(json.dumps(out))
'''


def run_hta(python, hta_src, trace_dir, rounding):
    env = dict(os.environ, PYTHONPATH=hta_src)
    if not rounding:
        env["HTA_DISABLE_NS_ROUNDING"] = "1"
    r = subprocess.run([python, "-c", HTA_SIDE, trace_dir], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"hta_agreement: HTA failed on {trace_dir}:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_strata(report, trace_dir, rounding):
    r = subprocess.run([report, "analyze", trace_dir, "--format", "json"] + (["--hta-rounding"] if rounding else []),
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"hta_agreement: strata-report analyze failed on {trace_dir}:\n{r.stderr}")
    return json.loads(r.stdout)


def relative(hta, strata):
    if hta == strata:
        return 0.0
    if hta == 0:
        return math.inf
    return 100.0 * abs(strata - hta) / abs(hta)


def compare(trace_dir, hta, st):
    """Rows (rank, stream, figure, HTA's, strata's) of every figure both compute."""
    rows = []
    ranks = {r["rank"]: r for r in st["ranks"]}
    for rank_text, t in sorted(hta["temporal"].items(), key=lambda kv: int(kv[0])):
        rank = int(rank_text)
        s = ranks.get(rank)
        if s is None:
            rows.append((rank, "", "rank missing in strata", 1, 0))
            continue
        st_t = s["temporal"]
        rows += [(rank, "", "idle time (us)", t["idle_time(us)"], st_t["idle_ns"] / 1000),
                 (rank, "", "compute time (us)", t["compute_time(us)"], st_t["compute_ns"] / 1000),
                 (rank, "", "non-compute time (us)", t["non_compute_time(us)"], st_t["non_compute_ns"] / 1000),
                 (rank, "", "kernel span (us)", t["kernel_time(us)"], st_t["span_ns"] / 1000),
                 (rank, "", "idle %", t["idle_time_pctg"], round(st_t["idle_pct"], 2)),
                 (rank, "", "compute %", t["compute_time_pctg"], round(st_t["compute_pct"], 2)),
                 (rank, "", "non-compute %", t["non_compute_time_pctg"], round(st_t["non_compute_pct"], 2))]
        if rank_text in hta["overlap"]:
            rows.append((rank, "", "comm/comp overlap %", hta["overlap"][rank_text], round(s["overlap"]["overlap_pct"], 2)))
        queues = {q["queue"]: q for q in s["queues"]}
        for h_rank, stream, category, value in hta["idle"]:
            if h_rank != rank:
                continue
            q = queues.get(f"stream {stream}")
            key = {"host_wait": "host_wait_ns", "kernel_wait": "kernel_wait_ns", "other": "other_ns"}[category]
            rows.append((rank, f"stream {stream}", f"idle: {category} (us)", value,
                         round(q[key] / 1000, 2) if q else math.nan))
        if rank_text in hta["launch"]:
            h = hta["launch"][rank_text]
            l = s["launch"]
            rows += [(rank, "", "launches: kernels", h["kernels"], l["kernels"]),
                     (rank, "", "launches: call time (us)", h["launch_us_total"], l["launch_ns_total"] / 1000),
                     (rank, "", "launches: device time (us)", h["device_us_total"], l["device_ns_total"] / 1000),
                     (rank, "", "launches: delay (us)", h["delay_us_total"], l["delay_ns_total"] / 1000),
                     (rank, "", "launches: call outliers", h["launch_outliers"], l["launch_outliers"]),
                     (rank, "", "launches: delay outliers", h["delay_outliers"], l["delay_outliers"]),
                     (rank, "", "launches: short kernels", h["short_kernels"], l["short_kernels"])]
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hta", default=os.environ.get("HTA_SRC"), help="HTA's source tree (default $HTA_SRC)")
    p.add_argument("--strata-report", required=True)
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--hta-rounding", action="store_true", help="both round ns timestamps to whole us, as HTA does")
    p.add_argument("--tolerance", type=float, default=0.5, help="largest relative difference, percent")
    p.add_argument("trace_dirs", nargs="*")
    a = p.parse_args()
    if not a.hta:
        p.error("--hta HTA_SRC (or $HTA_SRC) is needed")
    dirs = a.trace_dirs or [os.path.join(a.hta, "tests", "data", d) for d in ("trace_filter", "nccl_parser_config")]
    worst = 0.0
    for d in dirs:
        hta = run_hta(a.python, a.hta, d, a.hta_rounding)
        st = run_strata(a.strata_report, d, a.hta_rounding)
        rows = compare(d, hta, st)
        print(f"\n{d}  ({'both rounding ns times to whole us' if a.hta_rounding else 'HTA without its ns rounding'})")
        print(f"{'rank':>4}  {'stream':<10} {'figure':<28} {'HTA':>16} {'strata':>16} {'diff %':>8}")
        for rank, stream, figure, h, s in rows:
            diff = relative(h, s) if not (isinstance(s, float) and math.isnan(s)) else math.inf
            worst = max(worst, diff)
            mark = "" if diff <= a.tolerance else "  <-- over"
            print(f"{rank:>4}  {stream:<10} {figure:<28} {h:>16.3f} {s:>16.3f} {diff:>8.4f}{mark}")
    print(f"\nlargest relative difference: {worst:.4f}% (tolerance {a.tolerance}%)")
    return 0 if worst <= a.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
