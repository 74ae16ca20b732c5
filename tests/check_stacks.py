#!/usr/bin/env python3
"""Runs strata-report stacks on a trace written here by hand and checks the collapsed stacks.

usage: check_stacks.py STRATA_REPORT PART
       PART: format      every line obeys flamegraph.pl's and speedscope's collapsed-stack
                         rules, and the values of the known nesting below are exact
             flamegraph  Brendan Gregg's flamegraph.pl (https://github.com/brendangregg/FlameGraph)
                         reads the same output without ignoring a line and draws every frame;
                         needs STRATA_FLAMEGRAPH_DIR=/path/to/FlameGraph (a clone), else it is
                         skipped (exit 77)

The rules, from the two readers' sources: flamegraph.pl takes a line as
`^(.*)\\s+?(\\d+(?:\\.\\d*)?)$` (stack, count) and, if the stack itself ends in whitespace and
a number, reads that number as a first count of a differential graph; speedscope's importer
takes `^(.*) (\\d+)$` and splits the stack on `;`. Both read the file as UTF-8 text.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

failures = []


def fail(message):
    failures.append(message)


def expect(what, got, want):
    if got != want:
        fail(f"{what}: got {got!r}, expected {want!r}")


def x(name, ts, dur, tid=1, cat="framework", corr=None):
    """A complete event as strata writes it; ts and dur in microseconds."""
    e = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}
    if corr is not None:
        e["args"] = {"correlation_id": corr}
    return e


# Thread 1: forward [0, 100] holds aten::mm [10, 40] (submit [15, 25], id 1) and
#           aten::mm [50, 90] (submit [55, 75], id 2).
# Thread 2: forward [0, 60] holds aten::mm [5, 55] (submit [10, 20], id 3).
# Device (tid 9): tensor_matmul [30, 50] id 1, [80, 110] id 2, [40, 45] id 3; dma [120, 130].
# Self CPU: forward 100-30-40 + 60-50 = 40; aten::mm 20 + 20 + 40 = 80; submit 10+20+10 = 40.
# Self device: tensor_matmul under forward;aten::mm;submit 20+30+5 = 55; dma at the root 10.
# Hostile names on thread 3: a ';', a newline, a tab, a trailing number, invalid UTF-8, quotes.
EVENTS = [
    x("forward", 0.0, 100.0), x("aten::mm", 10.0, 30.0, corr=1), x("submit", 15.0, 10.0, cat="runtime", corr=1),
    x("aten::mm", 50.0, 40.0, corr=2), x("submit", 55.0, 20.0, cat="runtime", corr=2),
    x("forward", 0.0, 60.0, tid=2), x("aten::mm", 5.0, 50.0, tid=2, corr=3),
    x("submit", 10.0, 10.0, tid=2, cat="runtime", corr=3),
    x("tensor_matmul", 30.0, 20.0, tid=9, cat="device", corr=1),
    x("tensor_matmul", 80.0, 30.0, tid=9, cat="device", corr=2),
    x("tensor_matmul", 40.0, 5.0, tid=9, cat="device", corr=3),
    x("dma", 120.0, 10.0, tid=9, cat="device"),
    x("outer;x", 200.0, 50.0, tid=3), x("line\nbreak", 210.0, 10.0, tid=3), x("tab\there", 212.0, 2.0, tid=3),
    x("block 12", 230.0, 5.0, tid=3), x('"quoted" <b>&', 240.0, 3.0, tid=3),
]

CPU_WANT = [
    "forward 40",
    "forward;aten::mm 80",
    "forward;aten::mm;submit 40",
    "outer\\x3bx 32",
    "outer\\x3bx;\"quoted\" <b>& 3",
    "outer\\x3bx;block_12 5",
    "outer\\x3bx;line\\x0abreak 8",
    "outer\\x3bx;line\\x0abreak;tab\\x09here 2",
]
DEVICE_WANT = ["dma 10", "forward;aten::mm;submit;tensor_matmul 55"]

FLAMEGRAPH_LINE = re.compile(rb"^(.*)\s+?(\d+(?:\.\d*)?)$")
SPEEDSCOPE_LINE = re.compile(rb"^(.*) (\d+)$")


def write_trace(path, events):
    doc = {"displayTimeUnit": "ns", "otherData": {"strata_version": "0.1.0"},
           "traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}}] + events}
    with open(path, "w") as f:
        json.dump(doc, f)  # the control bytes become \u escapes, read back as the bytes


def check_lines(what, data):
    """Every line of `data` (bytes) against both readers' rules; returns the text lines."""
    if not data.endswith(b"\n"):
        fail(f"{what}: does not end in a newline")
    lines = data.split(b"\n")[:-1]
    stacks = []
    for raw in lines:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            fail(f"{what}: not UTF-8: {raw!r}")
        if any(b < 0x20 or b == 0x7f for b in raw):
            fail(f"{what}: a control byte in {raw!r}")
        s = SPEEDSCOPE_LINE.match(raw)
        if not s:
            fail(f"{what}: speedscope would skip {raw!r}")
            continue
        stack, count = s.group(1), s.group(2)
        f = FLAMEGRAPH_LINE.match(raw)
        if not f or f.group(1) != stack or f.group(2) != count:
            fail(f"{what}: flamegraph.pl reads {raw!r} differently")
        if FLAMEGRAPH_LINE.match(stack):
            fail(f"{what}: flamegraph.pl would read {raw!r} as a differential line (two counts)")
        if int(count) <= 0 or count.startswith(b"0"):
            fail(f"{what}: count not a positive integer without leading zeros: {raw!r}")
        frames = stack.split(b";")
        if any(fr == b"" for fr in frames):
            fail(f"{what}: an empty frame in {raw!r}")
        stacks.append(stack)
    if stacks != sorted(stacks):
        fail(f"{what}: lines are not sorted")
    if len(set(stacks)) != len(stacks):
        fail(f"{what}: a stack appears twice")
    return [l.decode("utf-8", "replace") for l in lines]


def stacks_of(report, tmp, metric):
    trace = os.path.join(tmp, "trace.json")
    write_trace(trace, EVENTS)
    out = os.path.join(tmp, metric + ".folded")
    r = subprocess.run([report, "stacks", trace, "-o", out, "--metric", metric], capture_output=True)
    if r.returncode != 0:
        fail(f"strata-report stacks --metric {metric}: exit {r.returncode}: {r.stderr!r}")
        return out, b""
    with open(out, "rb") as f:
        return out, f.read()


def part_format(report, tmp):
    for metric, want in [("self_cpu_time_total", CPU_WANT), ("self_device_time_total", DEVICE_WANT)]:
        _, data = stacks_of(report, tmp, metric)
        expect(metric, check_lines(metric, data), want)
    # A bad metric is refused before anything is written; a bad path leaves no file.
    r = subprocess.run([report, "stacks", os.path.join(tmp, "trace.json"), "-o", os.path.join(tmp, "bad.folded"),
                        "--metric", "cpu_time_total"], capture_output=True, text=True)
    expect("bad metric exit", r.returncode, 2)
    if "self_cpu_time_total or self_device_time_total" not in r.stderr:
        fail(f"bad metric message: {r.stderr!r}")
    r = subprocess.run([report, "stacks", os.path.join(tmp, "trace.json"), "-o", os.path.join(tmp, "no", "x.folded")],
                       capture_output=True, text=True)
    expect("bad path exit", r.returncode, 1)
    leftovers = [n for n in os.listdir(tmp) if n.startswith("bad") or ".tmp." in n]
    expect("files left by failures", leftovers, [])


def part_flamegraph(report, tmp):
    home = os.environ.get("STRATA_FLAMEGRAPH_DIR")
    script = os.path.join(home, "flamegraph.pl") if home else None
    if not script or not os.path.isfile(script):
        print("skipped: set STRATA_FLAMEGRAPH_DIR to a clone of https://github.com/brendangregg/FlameGraph "
              "(git clone https://github.com/brendangregg/FlameGraph; needs perl) to run flamegraph.pl "
              "on strata's stacks")
        return 77
    for metric, want in [("self_cpu_time_total", CPU_WANT), ("self_device_time_total", DEVICE_WANT)]:
        path, _ = stacks_of(report, tmp, metric)
        r = subprocess.run(["perl", script, "--countname", "us", path], capture_output=True)
        if r.returncode != 0 or r.stderr:
            fail(f"flamegraph.pl {metric}: exit {r.returncode}, stderr {r.stderr!r}")
            continue
        svg = r.stdout.decode("utf-8")
        if "No valid input" in svg or "<svg" not in svg:
            fail(f"flamegraph.pl {metric}: no graph drawn")
        # Every line's leaf frame is drawn, with its total (the leaf's own value here, or more
        # where another line goes through it) in its title.
        total = sum(int(l.rsplit(" ", 1)[1]) for l in want)
        if f"all ({total} us, 100%)" not in svg.replace("&lt;", "<").replace("&amp;", "&"):
            fail(f"flamegraph.pl {metric}: the root does not hold {total} us")
        for line in want:
            leaf = line.rsplit(" ", 1)[0].split(";")[-1]
            shown = leaf.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
            if f"<title>{shown} (" not in svg:
                fail(f"flamegraph.pl {metric}: frame {leaf!r} is not drawn")
    return 0


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("format", "flamegraph"):
        print(__doc__, file=sys.stderr)
        return 2
    report, part = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        code = part_format(report, tmp) if part == "format" else part_flamegraph(report, tmp)
    if code == 77:
        return 77
    for f in failures:
        print("FAIL:", f)
    print(f"{'ok' if not failures else 'FAILED'}: {part}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
