#!/usr/bin/env python3
"""strata-report on a big torch.profiler (Kineto) trace, against Python's json.load of the same file.

usage: big_trace.py STRATA_REPORT [--size-mb 80] [--rounds 3] [--keep DIR] [--parsers BIN]
                    [--without-shapes]

Writes a Kineto trace of about --size-mb MB by repeating the events of
tests/data/kineto_two_steps.json in time (ids shifted so each repetition is a new step), and a
gzip copy of it. Then, in each round, runs one after the other: strata-report on the trace,
strata-report on the .gz, and `python3 -c json.load` on the trace; each is its own process, so
its wall time and peak RSS (wait4's ru_maxrss) are its own. Prints the medians over the rounds
and the ratios of medians, measured in this one run, since the machine may be shared.
--parsers BIN also runs benchmarks/json_parsers.cpp, built as BIN, on the trace (same rounds).
--without-shapes drops the arguments that torch.profiler's record_shapes adds (Input Dims,
Input type, Input Strides, Concrete Inputs): torch's default, with more events per MB.
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "tests", "data", "kineto_two_steps.json")
PERIOD_US = 2000.0  # the sample's two steps fit in 2 ms
ID_STRIDE = 1000    # its External ids and correlation ids are below this


def number(v):
    return f"{v:.3f}" if isinstance(v, float) else json.dumps(v)


def event_text(e):
    """One event in the layout Kineto writes: ph/cat/name/pid/tid on a line, ts/dur on the next,
    then one args entry per line."""
    head = [k for k in ("ph", "cat", "name", "pid", "tid", "id") if k in e]
    lines = ["  {", "    " + ", ".join(f'"{k}": {json.dumps(e[k])}' for k in head) + ","]
    times = [f'"ts": {number(e["ts"])}'] + ([f'"dur": {number(e["dur"])}'] if "dur" in e else [])
    times += [f'"{k}": {json.dumps(v)}' for k, v in e.items() if k not in head and k not in ("ts", "dur", "args")]
    if "args" in e:
        lines.append("    " + ", ".join(times) + ",")
        lines.append('    "args": {')
        lines.append(",\n".join(f'      "{k}": {f"{v:.6f}" if isinstance(v, float) else json.dumps(v)}'
                                for k, v in e["args"].items()))
        lines.append("    }")
    else:
        lines.append("    " + ", ".join(times))
    lines.append("  }")
    return "\n".join(lines)


SHAPE_ARGS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")


def without_shapes(e):
    if "args" in e:
        e = dict(e)
        e["args"] = {k: v for k, v in e["args"].items() if k not in SHAPE_ARGS}
    return e


def shifted(e, k):
    e = dict(e)
    e["ts"] = e["ts"] + k * PERIOD_US
    if "id" in e:
        e["id"] = e["id"] + k * ID_STRIDE
    if "args" in e:
        args = dict(e["args"])
        for key in ("External id", "correlation"):
            if key in args:
                args[key] = args[key] + k * ID_STRIDE
        e["args"] = args
    return e


def write_big_trace(path, size_mb, shapes=True):
    doc = json.load(open(SAMPLE))
    events = doc.pop("traceEvents")
    if not shapes:
        events = [without_shapes(e) for e in events]
        doc["record_shapes"] = 0
    once = [e for e in events if e["ph"] == "M" or e.get("cat") == "Trace" or e["ph"] == "i"]
    repeated = [e for e in events if e not in once]
    head = json.dumps({k: v for k, v in doc.items() if k not in ("traceName", "displayTimeUnit",
                                                                   "baseTimeNanoseconds")}, indent=2)
    count = 0
    with open(path, "w") as f:
        f.write(head[:-2] + ',\n  "traceEvents": [\n')
        f.write(",\n".join(event_text(e) for e in once))
        count += len(once)
        k = 0
        while f.tell() < size_mb * 1e6:
            f.write(",\n" + ",\n".join(event_text(shifted(e, k)) for e in repeated))
            count += len(repeated)
            k += 1
        f.write('\n  ],\n  "traceName": "big.pt.trace.json",\n  "displayTimeUnit": "ms"\n}\n')
    return count, k


def measure(cmd, env=None):
    """Wall seconds and peak RSS (bytes) of one child process (environment `env`, default this
    one's); its stdout is discarded.

    Run under GNU time (Debian's `time` package): a child forked straight from this Python
    process would start with Python's resident size as its peak (Linux keeps the peak across
    exec), so each command is forked by the small `time` process instead."""
    p = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr}")
    wall, kib = p.stderr.strip().splitlines()[-1].split()
    return float(wall), int(kib) * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report")
    ap.add_argument("--size-mb", type=float, default=80)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", help="write the traces in this directory and keep them")
    ap.add_argument("--parsers", help="the built benchmarks/json_parsers.cpp")
    ap.add_argument("--without-shapes", action="store_true", help="no record_shapes arguments")
    a = ap.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="strata-big-trace-")
    where = a.keep or tmp.name
    os.makedirs(where, exist_ok=True)
    trace = os.path.join(where, "big.pt.trace.json")
    events, reps = write_big_trace(trace, a.size_mb, shapes=not a.without_shapes)
    with open(trace, "rb") as src, gzip.open(trace + ".gz", "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    size = os.path.getsize(trace)
    gz_size = os.path.getsize(trace + ".gz")
    print(f"trace: {size / 1e6:.1f} MB, {events} events ({reps} repetitions of {SAMPLE}); "
          f"gzip: {gz_size / 1e6:.1f} MB")

    runs = {
        "strata-report": [a.report, trace],
        "strata-report .gz": [a.report, trace + ".gz"],
        "python json.load": [sys.executable, "-c", "import json, sys; json.load(open(sys.argv[1]))", trace],
    }
    if a.parsers:
        for parser in ("rapidjson-sax", "nlohmann-sax", "simdjson-ondemand"):
            runs[parser] = [a.parsers, parser, trace]
    times = {name: [] for name in runs}
    rss = {name: [] for name in runs}
    for _ in range(a.rounds):
        for name, cmd in runs.items():
            wall, peak = measure(cmd)
            times[name].append(wall)
            rss[name].append(peak)

    print(f"{'':24}{'median s':>10}{'MB/s':>9}{'peak RSS MB':>13}{'RSS/file':>10}   (all rounds, s)")
    for name in runs:
        t = statistics.median(times[name])
        m = statistics.median(rss[name])
        print(f"{name:24}{t:10.3f}{size / 1e6 / t:9.1f}{m / 1e6:13.1f}{m / size:10.2f}   "
              + " ".join(f"{x:.3f}" for x in times[name]))
    py = statistics.median(times["python json.load"])
    for name in runs:
        if name != "python json.load":
            print(f"python json.load / {name}: {py / statistics.median(times[name]):.1f}x")


if __name__ == "__main__":
    main()
