#!/usr/bin/env python3
"""strata-report analyze on a big distributed job, against Holistic Trace Analysis (HTA).

usage: job_scale.py STRATA_REPORT [--ranks 64] [--size-mb 80] [--jobs 2] [--keep DIR]
                    [--hta HTA_SRC] [--hta-ranks 1,2,4] [--python PYTHON] [--rounds 1]

Writes --ranks rank traces of about --size-mb MB each, by repeating in time the events of HTA's
own two real rank traces (HTA_SRC/tests/data/trace_filter/sampled_rank-{0,1}.json.gz: 4,855 and
4,720 events of a recommendation model's training step, with NCCL kernels on their own stream):
rank r repeats sampled_rank-(r % 2), each repetition shifted by the trace's span plus 1 ms, its
External ids and correlations shifted past the last repetition's, and its distributedInfo says
rank r of --ranks. Then it times, each as its own process under GNU time (wall seconds, peak
resident set):

- `strata-report analyze DIR --format json --jobs J` on all the ranks;
- for each size in --hta-ranks, HTA (temporal breakdown, idle-time breakdown, communication /
  computation overlap and kernel launch statistics, as benchmarks/hta_agreement.py runs them)
  and strata-report analyze on a directory of that many of the ranks, so the two are compared
  on the same files in the same run.

HTA holds every rank's events in pandas frames at once, so it is run on subsets; the machine's
memory decides how large. Not a CI test: HTA is not a dependency of strata.
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile

from big_trace import measure  # wall time and peak RSS of a child, under GNU time

HTA_SIDE = r'''
import logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
ranks = ta.t.get_ranks()
ta.get_temporal_breakdown(visualize=False)
ta.get_comm_comp_overlap(visualize=False)
ta.get_idle_time_breakdown(ranks=ranks, visualize=False)
ta.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
print(len(ranks))
'''

ID_KEYS = ("External id", "correlation")


def load_sample(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def write_rank_body(sample, path, size_mb):
    """The events of `sample` repeated in time until the file holds about size_mb MB, as the
    tail of a trace: its traceEvents member and the closing brace. Each rank's file is its own
    head (distributedInfo) followed by this tail. Returns (events, repetitions)."""
    events = sample["traceEvents"]
    timed = [e for e in events if e.get("ph") == "X"]
    start = min(e["ts"] for e in timed)
    period = max(e["ts"] + e.get("dur", 0) for e in timed) - start + 1000
    ids = [e["args"][k] for e in timed for k in ID_KEYS if k in e.get("args", {})]
    id_stride = max(ids) - min(ids) + 1
    count = 0
    reps = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(' "traceEvents": [\n')
        first = True
        for e in events:  # metadata once
            if e.get("ph") == "M":
                f.write(("" if first else ",\n") + json.dumps(e))
                first = False
                count += 1
        while f.tell() < size_mb * 1e6:
            out = []
            for e in timed:
                c = dict(e, ts=e["ts"] + reps * period)
                if "args" in e:
                    a = dict(e["args"])
                    for k in ID_KEYS:
                        if k in a:
                            a[k] += reps * id_stride
                    c["args"] = a
                out.append(json.dumps(c))
            f.write(",\n" + ",\n".join(out))
            count += len(out)
            reps += 1
        f.write('\n ]\n}\n')
    return count, reps


def write_job(hta_src, where, ranks, size_mb):
    data = os.path.join(hta_src, "tests", "data", "trace_filter")
    bodies = []
    for parity in (0, 1):
        sample = load_sample(os.path.join(data, f"sampled_rank-{parity}.json.gz"))
        body = os.path.join(where, f"body{parity}.part")
        bodies.append((body,) + write_rank_body(sample, body, size_mb))
    files = []
    for r in range(ranks):
        body = bodies[r % 2][0]
        head = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": r, "world_size": ranks}}
        path = os.path.join(where, "job", f"rank{r}.pt.trace.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out, open(body, "rb") as src:
            out.write(("{\n" + json.dumps(head)[1:-1] + ",\n").encode())
            while chunk := src.read(1 << 22):
                out.write(chunk)
        files.append(path)
    for body, *_ in bodies:
        os.remove(body)
    return files, bodies


def subset(where, files, n):
    d = os.path.join(where, f"ranks{n}")
    os.makedirs(d, exist_ok=True)
    for i, f in enumerate(files[:n]):
        # HTA reads a rank's world size from the file, so a subset is a job of its own size.
        link = os.path.join(d, os.path.basename(f))
        if not os.path.exists(link):
            with open(f, "rb") as src, open(link, "wb") as out:
                head = src.readline() + src.readline()
                out.write(head.replace(f'"world_size": {len(files)}'.encode(), f'"world_size": {n}'.encode()))
                while chunk := src.read(1 << 22):
                    out.write(chunk)
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--size-mb", type=float, default=80)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", help="write the traces in this directory and keep them")
    ap.add_argument("--hta", default=os.environ.get("HTA_SRC"), help="HTA's source tree (or $HTA_SRC)")
    ap.add_argument("--hta-ranks", default="1,2,4", help="subset sizes HTA runs on; empty for none")
    ap.add_argument("--python", default="/usr/bin/python3", help="a Python with pandas, for HTA")
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    if not a.hta:
        sys.exit("job_scale: give --hta HTA_SRC (its traces are the sample; HTA itself runs on the subsets)")

    tmp = tempfile.TemporaryDirectory(prefix="strata-job-scale-")
    where = a.keep or tmp.name
    os.makedirs(where, exist_ok=True)
    files, bodies = write_job(a.hta, where, a.ranks, a.size_mb)
    sizes = [os.path.getsize(f) for f in files]
    print(f"job: {a.ranks} ranks, {statistics.mean(sizes) / 1e6:.1f} MB each ({sum(sizes) / 1e9:.2f} GB); "
          f"{bodies[0][1]:,} and {bodies[1][1]:,} events a rank ({bodies[0][2]} and {bodies[1][2]} repetitions)")

    def strata(d):
        return measure([a.report, "analyze", d, "--format", "json", "--jobs", str(a.jobs)])

    def hta(d):
        return measure([a.python, "-c", HTA_SIDE, d], env=dict(os.environ, PYTHONPATH=a.hta))

    rows = []
    for _ in range(a.rounds):
        rows.append(("strata-report analyze", a.ranks, strata(os.path.join(where, "job"))))
    for n in [int(x) for x in a.hta_ranks.split(",") if x]:
        d = subset(where, files, n)
        for _ in range(a.rounds):
            rows.append(("strata-report analyze", n, strata(d)))
            rows.append(("HTA", n, hta(d)))
    print(f"| tool | ranks | wall time | peak RSS | per rank | RSS / largest trace |")
    print("|---|---:|---:|---:|---:|---:|")
    largest = max(sizes)
    for tool, n, _ in dict.fromkeys((t, n, None) for t, n, _ in rows):
        runs = [m for t, k, m in rows if t == tool and k == n]
        wall = statistics.median(w for w, _ in runs)
        rss = statistics.median(r for _, r in runs)
        print(f"| {tool} | {n} | {wall:.1f} s | {rss / 2**20:.0f} MiB | {wall / n:.2f} s | {rss / largest:.2f} |")


if __name__ == "__main__":
    main()
