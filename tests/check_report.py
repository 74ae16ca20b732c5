#!/usr/bin/env python3
"""Runs strata-report on traces written here by hand and checks what it prints.

usage: check_report.py STRATA_REPORT PART TRACE_WRITER
       PART: table, options, formats, compare, usage, many, gzip, hostile, torch or written

The expected numbers are worked out by hand from the timestamps below (see the comments).
`written` runs tests/trace_writer basic and reports on the trace the library itself wrote.
"""
import csv
import gzip
import io
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


def x(name, ts, dur, tid=1, cat="framework", dims=None, corr=None):
    """A complete event as strata writes it; ts and dur in microseconds, three decimals."""
    e = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}
    args = {}
    if corr is not None:
        args["correlation_id"] = corr
    if dims is not None:
        args["Input Dims"] = dims
    if args:
        e["args"] = args
    return e


def write_trace(path, events, dropped=0):
    """A strata-format trace; numbers are written with three decimals, as the writer does."""
    doc = {"displayTimeUnit": "ns",
           "otherData": {"strata_version": "0.1.0", "overflow_policy": "drop_newest", "dropped": dropped},
           "strataThreads": [],
           "traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}}]
           + events}
    text = json.dumps(doc)
    # json.dumps writes 1000.0; strata writes 1000.000. Put the three decimals back.
    text = re.sub(r'"(ts|dur)": (-?\d+\.\d+)', lambda m: f'"{m.group(1)}": {float(m.group(2)):.3f}', text)
    with open(path, "w") as f:
        f.write(text)


# Trace A. Track (1, 1):
#   step    [1000, 1010]  holds aten::mm [1002, 1005] and aten::mm [1006, 1007.5]
#   step    [1020, 1025]  holds aten::relu [1021, 1021.25]
# Track (1, 2):
#   aten::mm [1000.5, 1002.5]   (its first event: aten::mm is a top-level row)
# step:       2 calls, CPU total 10 + 5 = 15 us, self (10 - 3 - 1.5) + (5 - 0.25) = 10.25 us
# aten::mm:   3 calls, CPU total = self = 3 + 1.5 + 2 = 6.5 us, avg 2.1667 us
# aten::relu: 1 call, 0.25 us
# Self CPU total 17 us. Rows in first-seen order: step, aten::mm, aten::relu.
A_EVENTS = [
    x("step", 1000.0, 10.0, dims=[[4, 8], [8, 16], []]),
    x("aten::mm", 1002.0, 3.0, dims=[[4, 8], [8, 16]]),
    x("aten::mm", 1006.0, 1.5, dims=[[2, 2], [2, 2]]),
    x("step", 1020.0, 5.0, dims=[[4, 8], [8, 16], []]),
    x("aten::relu", 1021.0, 0.25),
    x("aten::mm", 1000.5, 2.0, tid=2, dims=[[4, 8], [8, 16]]),
    {"ph": "i", "s": "t", "cat": "user", "name": "mark", "pid": 1, "tid": 1, "ts": 1003.0},
]

# Trace B: step [0, 20] holds aten::mm [2, 4] and aten::add [5, 6]:
# step 1 call, CPU total 20, self 17; aten::mm 1 call 2 us; aten::add 1 call 1 us.
B_EVENTS = [
    x("step", 0.0, 20.0),
    x("aten::mm", 2.0, 2.0),
    x("aten::add", 5.0, 1.0),
]


def run(report, *args, code=0):
    r = subprocess.run([report, *args], capture_output=True, text=True)
    if r.returncode != code:
        fail(f"strata-report {' '.join(args)}: exit {r.returncode}, expected {code}\n"
             f"stdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def table_rows(text):
    """The header and the data rows of a text table, each split into cells (2+ spaces apart)."""
    lines = text.splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("-") and set(line) <= {"-", " "}]
    if len(seps) < 3:
        fail(f"not a table:\n{text}")
        return [], []
    split = lambda line: re.split(r"\s{2,}", line.strip())
    header = split(lines[seps[0] + 1])
    rows = [dict(zip(header, split(line))) for line in lines[seps[1] + 1:seps[2]]]
    return header, rows


def check_row(rows, name, **want):
    got = [r for r in rows if r.get("Name") == name]
    if len(got) != 1:
        fail(f"row {name!r}: found {len(got)} times in {rows}")
        return
    for column, value in want.items():
        expect(f"{name} / {column}", got[0].get(column), value)


def part_table(report, tmp):
    a = os.path.join(tmp, "a.json")
    write_trace(a, A_EVENTS)
    r = run(report, a)
    header, rows = table_rows(r.stdout)
    expect("header", header, ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                              "CPU time avg", "# of Calls"])
    expect("row order", [row["Name"] for row in rows], ["step", "aten::mm", "aten::relu"])
    check_row(rows, "step", **{"Self CPU": "10.250us", "CPU total": "15.000us", "CPU time avg": "7.500us",
                               "Self CPU %": "60.29%", "CPU total %": "88.24%", "# of Calls": "2"})
    check_row(rows, "aten::mm", **{"Self CPU": "6.500us", "CPU total": "6.500us", "CPU time avg": "2.167us",
                                   "Self CPU %": "38.24%", "# of Calls": "3"})
    check_row(rows, "aten::relu", **{"Self CPU": "0.250us", "# of Calls": "1"})
    if "Self CPU time total: 17.000us\n" not in r.stdout:
        fail(f"no 'Self CPU time total: 17.000us' line:\n{r.stdout}")
    if "Records lost" in r.stdout:
        fail("a trace with dropped 0 reports lost records")
    if r.stderr:
        fail(f"stderr not empty: {r.stderr}")

    # Records lost, and a child 2-5 us inside a parent 0-10 us: Self CPU 7.000us.
    lost = os.path.join(tmp, "lost.json")
    write_trace(lost, [x("parent", 0.0, 10.0), x("child", 2.0, 3.0)], dropped=5)
    r = run(report, lost)
    _, rows = table_rows(r.stdout)
    check_row(rows, "parent", **{"Self CPU": "7.000us", "CPU total": "10.000us"})
    check_row(rows, "child", **{"Self CPU": "3.000us"})
    if "Records lost: 5 (lossless); the times above undercount" not in r.stdout:
        fail(f"records lost line missing:\n{r.stdout}")

    # Device time: without an op of the id, the runtime submit that carries it owns its time.
    dev = os.path.join(tmp, "dev.json")
    write_trace(dev, [x("op", 0.0, 10.0), x("submit", 1.0, 1.0, cat="runtime", corr=3),
                      x("kernel", 2.0, 4.0, tid=9, cat="device", corr=3)])
    r = run(report, dev)
    header, rows = table_rows(r.stdout)
    if "Self NEURON" not in header:
        fail(f"no NEURON columns: {header}")
    check_row(rows, "submit", **{"Self NEURON": "4.000us", "NEURON total": "4.000us"})
    check_row(rows, "op", **{"Self NEURON": "0.000us", "NEURON total": "4.000us"})

    # A trace without ops: nothing on stdout, a note on stderr, exit 0.
    empty = os.path.join(tmp, "empty.json")
    write_trace(empty, [])
    r = run(report, empty)
    expect("empty trace stdout", r.stdout, "")
    if "holds no op events" not in r.stderr:
        fail(f"empty trace: stderr {r.stderr!r}")


def part_options(report, tmp):
    a = os.path.join(tmp, "a.json")
    write_trace(a, A_EVENTS)
    names = lambda *args: [row["Name"] for row in table_rows(run(report, a, *args).stdout)[1]]
    expect("--row-limit 1", names("--row-limit", "1"), ["step"])
    expect("--row-limit=2", names("--row-limit=2"), ["step", "aten::mm"])
    expect("--row-limit -1", names("--row-limit", "-1"), ["step", "aten::mm", "aten::relu"])
    expect("--row-limit 0", names("--row-limit", "0"), [])
    expect("--sort-by count", names("--sort-by", "count"), ["aten::mm", "step", "aten::relu"])
    expect("--sort-by cpu_time", names("--sort-by", "cpu_time"), ["step", "aten::mm", "aten::relu"])
    expect("--sort-by=self_cpu_time_total", names("--sort-by=self_cpu_time_total"),
           ["step", "aten::mm", "aten::relu"])
    expect("--sort-by count --row-limit 1", names("--sort-by", "count", "--row-limit", "1"), ["aten::mm"])
    # torch's device aliases are accepted (all zero here: stable order).
    expect("--sort-by self_cuda_time_total", names("--sort-by", "self_cuda_time_total"),
           ["step", "aten::mm", "aten::relu"])

    r = run(report, a, "--top-level-only")
    expect("--top-level-only", [row["Name"] for row in table_rows(r.stdout)[1]], ["step", "aten::mm"])
    if "This report only display top-level ops statistics" not in r.stdout:
        fail("--top-level-only: torch's note line is missing")

    r = run(report, a, "--group-by-input-shape")
    header, rows = table_rows(r.stdout)
    expect("grouped header", header[-1], "Input Shapes")
    got = [(row["Name"], row.get("Input Shapes"), row["# of Calls"], row["CPU total"]) for row in rows]
    # aten::relu has no shapes: its Input Shapes cell is blank, so it splits to fewer cells.
    expect("grouped rows", got, [
        ("step", "[[4, 8], [8, 16], []]", "2", "15.000us"),
        ("aten::mm", "[[4, 8], [8, 16]]", "2", "5.000us"),
        ("aten::mm", "[[2, 2], [2, 2]]", "1", "1.500us"),
        ("aten::relu", None, "1", "0.250us"),
    ])


def part_formats(report, tmp):
    a = os.path.join(tmp, "a.json")
    write_trace(a, A_EVENTS)
    r = run(report, a, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    expect("csv names", [row["Name"] for row in rows], ["step", "aten::mm", "aten::relu"])
    expect("csv step", {k: rows[0][k] for k in ("Self CPU", "CPU total", "# of Calls", "Top Level", "Is Device")},
           {"Self CPU": "10250", "CPU total": "15000", "# of Calls": "2", "Top Level": "1", "Is Device": "0"})
    expect("csv mm self", rows[1]["Self CPU"], "6500")
    expect("csv relu top level", rows[2]["Top Level"], "0")

    r = run(report, a, "--format=json", "--group-by-input-shape")
    doc = json.loads(r.stdout)
    expect("json device_name", doc["device_name"], "NEURON")
    expect("json self cpu total", doc["self_cpu_time_total_ns"], 17000)
    got = [(row["name"], row["input_shapes"], row["count"], row["self_cpu_time_total_ns"]) for row in doc["rows"]]
    expect("json rows", got, [("step", "[[4, 8], [8, 16], []]", 2, 10250),
                              ("aten::mm", "[[4, 8], [8, 16]]", 2, 5000),
                              ("aten::mm", "[[2, 2], [2, 2]]", 1, 1500),
                              ("aten::relu", "", 1, 250)])
    r = run(report, a, "--format", "table")
    expect("--format table", [row["Name"] for row in table_rows(r.stdout)[1]], ["step", "aten::mm", "aten::relu"])


def part_compare(report, tmp):
    a, b = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
    write_trace(a, A_EVENTS)
    write_trace(b, B_EVENTS)
    r = run(report, a, "--compare", b)
    if not r.stdout.startswith(f"A: {a}\nB: {b}\n"):
        fail(f"compare: no A/B legend:\n{r.stdout}")
    header, rows = table_rows(r.stdout)
    expect("compare header", header, ["Name", "Calls A", "Calls B", "Calls B/A", "Self CPU A", "Self CPU B",
                                      "Self CPU B/A", "CPU total A", "CPU total B", "CPU total B/A"])
    expect("compare rows", [row["Name"] for row in rows], ["step", "aten::mm", "aten::relu", "aten::add"])
    # step: calls 2 -> 1, self 10.25 -> 17 us (1.66x), total 15 -> 20 us (1.33x)
    check_row(rows, "step", **{"Calls A": "2", "Calls B": "1", "Calls B/A": "0.50x", "Self CPU A": "10.250us",
                               "Self CPU B": "17.000us", "Self CPU B/A": "1.66x", "CPU total B/A": "1.33x"})
    # aten::mm: 3 calls, 6.5 us -> 1 call, 2 us
    check_row(rows, "aten::mm", **{"Calls B/A": "0.33x", "Self CPU B": "2.000us", "Self CPU B/A": "0.31x"})
    check_row(rows, "aten::relu", **{"Calls A": "1", "Calls B": "-", "Calls B/A": "--"})
    check_row(rows, "aten::add", **{"Calls A": "-", "Calls B": "1", "Self CPU B": "1.000us"})

    r = run(report, a, "--compare", b, "--row-limit", "2")
    expect("compare --row-limit 2", [row["Name"] for row in table_rows(r.stdout)[1]], ["step", "aten::mm"])

    r = run(report, a, "--compare", b, "--format", "json")
    doc = json.loads(r.stdout)
    by_name = {row["name"]: row for row in doc}
    expect("compare json step", (by_name["step"]["count_a"], by_name["step"]["count_b"],
                                 by_name["step"]["count_ratio"]), (2, 1, 0.5))
    expect("compare json add", (by_name["aten::add"]["count_a"], by_name["aten::add"]["count_ratio"]), (None, None))

    r = run(report, a, "--compare", b, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    expect("compare csv", [(row["Name"], row["Self CPU A"], row["Self CPU B"]) for row in rows],
           [("step", "10250", "17000"), ("aten::mm", "6500", "2000"), ("aten::relu", "250", ""),
            ("aten::add", "", "1000")])

    r = run(report, a, "--compare", os.path.join(tmp, "missing.json"), code=1)
    if "missing.json" not in r.stderr:
        fail(f"compare with a missing file: {r.stderr!r}")


def part_usage(report, tmp):
    a = os.path.join(tmp, "a.json")
    write_trace(a, A_EVENTS)
    usage_line = "usage: strata-report TRACE"
    for args, says in [
        ([a, "--bogus"], "unknown option '--bogus'"),
        ([a, "--row-limit"], "--row-limit needs a value"),
        ([a, "--row-limit", "ten"], "--row-limit needs a whole number, not 'ten'"),
        ([a, "--row-limit", "99999999999"], "--row-limit needs a whole number"),
        ([a, "--sort-by", "fastest"], "unknown sort_by key 'fastest'"),
        ([a, "--sort-by"], "--sort-by needs a value"),
        ([a, "--format", "xml"], "--format is table, csv or json, not 'xml'"),
        ([a, "--compare"], "--compare needs a value"),
        ([a, "--format", "csv", "--sort-by", "count"], "--sort-by applies to --format table only"),
        ([a, "--format", "json", "--row-limit", "3"], "--row-limit applies to --format table only"),
        ([a, "--compare", a, "--sort-by", "count"], "--sort-by does not apply to --compare"),
        ([a, "--top-level-only=yes"], "--top-level-only takes no value"),
        ([a, "--profile-memory=1"], "--profile-memory takes no value"),
        ([], "no TRACE given"),
        ([a, a, "--per-file", "--format", "csv"], "--per-file applies to --format table only"),
        ([a, "--per-file", "--compare", a], "--per-file does not apply to --compare"),
        ([a, "--jobs", "0"], "--jobs needs at least 1, not 0"),
        ([a, "--peak-tflops", "95"], "--peak-tflops and --peak-hbm-gbps go with --utilization"),
        ([a, "--utilization", "--peak-hbm-gbps", "fast"], "--peak-hbm-gbps needs a positive number, not 'fast'"),
        ([a, "--utilization", "--peak-tflops", "-1"], "--peak-tflops needs a positive number, not '-1'"),
        ([a, "--utilization", "--compare", a], "--utilization does not apply to --compare"),
    ]:
        r = run(report, *args, code=2)
        lines = r.stderr.splitlines()
        if not lines or says not in lines[0] or not lines[0].startswith("strata-report: "):
            fail(f"{args}: first stderr line {lines[:1]!r} should say {says!r}")
        if len(lines) < 2 or not lines[1].startswith(usage_line):
            fail(f"{args}: no usage after the message: {r.stderr!r}")
        expect(f"{args}: stdout", r.stdout, "")

    r = run(report, "--help")
    if not r.stdout.startswith(usage_line) or "--group-by-input-shape" not in r.stdout:
        fail(f"--help: {r.stdout!r}")
    # Every form of the command is in the usage text, convert among them.
    usage_lines = r.stdout.split("\n\n")[0].splitlines()
    for form in ("usage: strata-report TRACE...", "       strata-report convert DUMP -o TRACE.json",
                 "       strata-report --help"):
        if not any(line.startswith(form) for line in usage_lines):
            fail(f"--help: the usage lines {usage_lines!r} do not hold {form!r}")

    # convert's mistakes are followed by convert's own usage line.
    convert_usage = "usage: strata-report convert DUMP -o TRACE.json"
    for args, says in [(["convert", "x.dump"], "convert needs -o TRACE.json"),
                       (["convert"], "convert needs a DUMP"),
                       (["convert", "x.dump", "-o"], "-o needs a file name"),
                       (["convert", "x.dump", "y.dump", "-o", "t.json"], "convert takes one DUMP"),
                       (["convert", "x.dump", "--sort-by", "count"], "unknown option '--sort-by' for convert")]:
        r = run(report, *args, code=2)
        lines = r.stderr.splitlines()
        if not lines or lines[0] != "strata-report: " + says:
            fail(f"{args}: first stderr line {lines[:1]!r} should be 'strata-report: {says}'")
        if lines[1:] != [convert_usage]:
            fail(f"{args}: convert's usage should follow the message: {r.stderr!r}")
    r = run(report, "convert", "--help")
    expect("convert --help", r.stdout, convert_usage + "\n")

    # A bad --sort-by key is refused before any trace is read, whatever the trace holds.
    empty = os.path.join(tmp, "empty.json")
    write_trace(empty, [])
    for trace in (empty, a):
        r = run(report, trace, "--sort-by", "fastest", code=2)
        if not r.stderr.startswith("strata-report: unknown sort_by key 'fastest': use self_cpu_time_total, "
                                   "cpu_time_total, cpu_time, self_device_time_total, device_time_total, "
                                   "device_time, count, cpu_memory_usage, self_cpu_memory_usage, "
                                   "device_memory_usage, self_device_memory_usage or flops\n"):
            fail(f"--sort-by fastest on {trace}: {r.stderr!r}")

    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents": [\n{"ph": "X", "ts": }]}')
    no_events = os.path.join(tmp, "no_events.json")
    with open(no_events, "w") as f:
        f.write('{"otherData": {}}')
    deep = os.path.join(tmp, "deep.json")
    with open(deep, "w") as f:
        f.write('{"traceEvents":' + "[" * 100000 + "]" * 100000 + "}")
    pftrace = os.path.join(tmp, "trace.pftrace")
    with open(pftrace, "wb") as f:
        f.write(b"\x0a\x04\x08\x01\x10\x02")  # protobuf bytes: a JSON parser would fail at once
    no_traces = os.path.join(tmp, "no_traces")
    os.mkdir(no_traces)
    with open(os.path.join(no_traces, "notes.txt"), "w") as f:
        f.write("not a trace")
    for path, says in [(os.path.join(tmp, "missing.json"), "no such file"),
                       (deep, "nest more than 256 levels deep"),
                       (bad, "is not valid JSON: line 2"),
                       (no_events, "has no traceEvents array"),
                       (no_traces, "holds no trace files (*.json, *.json.gz)"),
                       (pftrace, "is a Perfetto protobuf trace; strata-report reads Chrome trace JSON"),
                       (pftrace + ".gz", "write the session as JSON too (STRATA_FORMAT=json")]:
        if path.endswith(".gz"):
            write_gzip(path, b"\x0a\x04\x08\x01\x10\x02")
        r = run(report, path, code=1)
        if path not in r.stderr or says not in r.stderr or len(r.stderr.splitlines()) != 1:
            fail(f"{path}: stderr {r.stderr!r} should name the file and say {says!r}")
        expect(f"{path}: stdout", r.stdout, "")


def write_gzip(path, data):
    with gzip.open(path, "wb") as f:
        f.write(data)


def part_many(report, tmp):
    """Several traces: one table over all of them (A and B), per file, from a directory."""
    a, b = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
    write_trace(a, A_EVENTS)
    write_trace(b, B_EVENTS)
    # A + B: step 2 + 1 calls, CPU total 15 + 20 = 35 us, self 10.25 + 17 = 27.25 us;
    # aten::mm 3 + 1 calls, 6.5 + 2 = 8.5 us; aten::relu 0.25 us; aten::add 1 us (B only, so
    # after A's rows). Self CPU total 17 + 20 = 37 us.
    r = run(report, a, b)
    header_line = r.stdout.splitlines()[1] if len(r.stdout.splitlines()) > 1 else ""
    expect("combined header", header_line, f"2 traces: {a}, {b}")
    _, rows = table_rows(r.stdout)
    expect("combined rows", [row["Name"] for row in rows], ["step", "aten::mm", "aten::relu", "aten::add"])
    check_row(rows, "step", **{"# of Calls": "3", "CPU total": "35.000us", "Self CPU": "27.250us"})
    check_row(rows, "aten::mm", **{"# of Calls": "4", "Self CPU": "8.500us"})
    check_row(rows, "aten::add", **{"# of Calls": "1", "Self CPU": "1.000us"})
    if "Self CPU time total: 37.000us\n" not in r.stdout:
        fail(f"combined: no 'Self CPU time total: 37.000us':\n{r.stdout}")

    # A directory: its *.json and *.json.gz in name order, nothing else. B compressed here.
    d = os.path.join(tmp, "ranks")
    os.mkdir(d)
    write_trace(os.path.join(d, "rank0.json"), A_EVENTS)
    with open(b, "rb") as f:
        write_gzip(os.path.join(d, "rank1.pt.trace.json.gz"), f.read())
    with open(os.path.join(d, "README.txt"), "w") as f:
        f.write("not a trace")
    csv_of = lambda *args: run(report, *args, "--format", "csv").stdout
    expect("directory = its files", csv_of(d), csv_of(a, b))
    expect("one file, one job", csv_of(a, b, "--jobs", "1"), csv_of(a, b))

    # --per-file: each file's own table, under its name.
    r = run(report, a, b, "--per-file")
    parts = r.stdout.split("\n\n")
    expect("per-file tables", len(parts), 2)
    if len(parts) == 2:
        expect("per-file first name", parts[0].splitlines()[1], a)
        expect("per-file second name", parts[1].splitlines()[1], b)
        expect("per-file A", [(row["Name"], row["# of Calls"]) for row in table_rows(parts[0])[1]],
               [("step", "2"), ("aten::mm", "3"), ("aten::relu", "1")])
        expect("per-file B", [(row["Name"], row["Self CPU"]) for row in table_rows(parts[1])[1]],
               [("step", "17.000us"), ("aten::mm", "2.000us"), ("aten::add", "1.000us")])

    # --compare takes a directory as OTHER, and several TRACEs as A.
    r = run(report, a, "--compare", d, "--format", "csv")
    rows = {row["Name"]: row for row in csv.DictReader(io.StringIO(r.stdout))}
    expect("compare with a directory: step calls", (rows["step"]["Calls A"], rows["step"]["Calls B"]), ("2", "3"))

    # A file that cannot be read fails the run: exit 1, one line that names it.
    with open(os.path.join(d, "rank2.json"), "w") as f:
        f.write('{"traceEvents": [')
    for args in ([d], [d, "--per-file"], [a, os.path.join(d, "rank2.json"), b]):
        r = run(report, *args, code=1)
        lines = r.stderr.splitlines()
        if len(lines) != 1 or os.path.join(d, "rank2.json") not in lines[0] or "is not valid JSON" not in lines[0]:
            fail(f"{args}: stderr {r.stderr!r} should be one line naming rank2.json")
        expect(f"{args}: stdout", r.stdout, "")


# tests/data/kineto_two_steps.json, worked out by hand from its timestamps (both steps alike):
# aten::addmm [25, 105] holds cudaLaunchKernel [60, 100]: self 40 us; its sgemm kernel runs
# 200 us. aten::copy_ [282, 845] holds cudaMemcpyAsync (10 us) and cudaStreamSynchronize
# (538 us): self 15 us; its DtoH copy runs 40 us. Kernels and copies per step: 200 + 10 + 30 +
# 40 = 280 us, so 560 us for the two steps.
KINETO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "kineto_two_steps.json")


def part_gzip(report, tmp):
    with open(KINETO, "rb") as f:
        plain = f.read()
    gz = os.path.join(tmp, "host_4242.pt.trace.json.gz")
    write_gzip(gz, plain)
    r = run(report, gz)
    header, rows = table_rows(r.stdout)
    if "Self CUDA" not in header:
        fail(f"Kineto trace: no CUDA columns: {header}")
    check_row(rows, "aten::addmm", **{"Self CPU": "80.000us", "Self CUDA": "400.000us", "# of Calls": "2"})
    check_row(rows, "aten::copy_", **{"Self CPU": "30.000us", "Self CUDA": "80.000us", "CPU total": "1.126ms"})
    check_row(rows, "cudaLaunchKernel", **{"# of Calls": "6", "CPU total": "220.000us", "Self CUDA": "0.000us"})
    check_row(rows, "ampere_sgemm_64x32_sliced1x4_tn", **{"Self CUDA": "400.000us", "# of Calls": "2"})
    if "Self CUDA time total: 560.000us\n" not in r.stdout:
        fail(f"Kineto .gz: no 'Self CUDA time total: 560.000us':\n{r.stdout}")
    expect("the .gz gives the plain file's table", r.stdout, run(report, KINETO).stdout)
    # gzip is told by its magic bytes, not by the name.
    disguised = os.path.join(tmp, "trace.json")
    write_gzip(disguised, plain)
    expect("gzip named .json", run(report, disguised).stdout, r.stdout)


def part_hostile(report, tmp):
    """Saved traces that are not traces: each is refused with exit 1 and one line naming it."""
    with open(KINETO, "rb") as f:
        plain = f.read()
    cases = {
        "truncated.json": (plain[: len(plain) // 2], "is not valid JSON"),
        "truncated.json.gz": (gzip.compress(plain)[:200], "gzip data ends early"),
        "corrupt.json.gz": (b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4, "gzip data is corrupt"),
        "binary.json": (bytes(range(256)) * 16, "is not valid JSON"),
        "nested.json": (b'{"traceEvents": [' + b'{"a":' * 300 + b"1" + b"}" * 300 + b"]}", "nest more than 256"),
        "huge.json": (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": ' + b"9" * 5000 + b', "dur": 1}]}',
                      "number too big"),
        "huge_ts.json": (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1e300, "dur": 1}]}',
                         "ts is missing or not a number"),
        "empty.json": (b"", "the document is empty"),
        "latin1.json": ('{"traceEvents": [{"ph": "X", "name": "caf\u00e9", "ts": 1, "dur": 1}]}'.encode("latin-1"),
                        "not valid UTF-8"),
    }
    for name, (data, says) in cases.items():
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        r = run(report, path, code=1)
        lines = r.stderr.splitlines()
        if len(lines) != 1 or path not in lines[0] or says not in lines[0]:
            fail(f"{name}: stderr {r.stderr!r} should be one line naming the file and saying {says!r}")
        expect(f"{name}: stdout", r.stdout, "")


TORCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "torch")


def part_torch(report, tmp):
    """strata-report's table of a trace torch.profiler wrote is the table torch printed for it.

    tests/data/torch holds NAME.json and NAME.KEY.txt (torch's key_averages().table(sort_by=KEY,
    row_limit=-1)), written by tests/data/torch/make_fixtures.py with torch 1.13.1.
    """
    found = 0
    for txt in sorted(os.listdir(TORCH)):
        if not txt.endswith(".txt"):
            continue
        name, key = txt[: -len(".txt")].split(".", 1)
        with open(os.path.join(TORCH, txt)) as f:
            want = f.read()
        r = run(report, os.path.join(TORCH, name + ".json"), "--sort-by", key, "--row-limit", "-1")
        expect(f"{txt}: strata-report's table", r.stdout, want)
        found += 1
    expect("torch fixtures found", found > 0, True)
    # The memory columns come with the trace's [memory] events, or with --profile-memory.
    memory = os.path.join(TORCH, "memory.json")
    header, rows = table_rows(run(report, memory).stdout)
    expect("memory trace: columns", [h for h in header if "Mem" in h or "FLOPs" in h],
           ["CPU Mem", "Self CPU Mem", "CUDA Mem", "Self CUDA Mem", "Total MFLOPs"])
    check_row(rows, "aten::addmm", **{"Self CPU Mem": "1.41 Mb", "Total MFLOPs": "251.658"})
    schedule = os.path.join(TORCH, "schedule.json")
    header, rows = table_rows(run(report, schedule).stdout)
    expect("no [memory] events: no memory columns", [h for h in header if "Mem" in h], [])
    header, rows = table_rows(run(report, schedule, "--profile-memory", "--with-flops").stdout)
    expect("--profile-memory: the host columns", [h for h in header if "Mem" in h or "FLOPs" in h],
           ["CPU Mem", "Self CPU Mem"])
    check_row(rows, "aten::addmm", **{"CPU Mem": "0 b"})
    rows = list(csv.DictReader(io.StringIO(run(report, memory, "--format", "csv").stdout)))
    by_name = {row["Name"]: row for row in rows}
    expect("csv: addmm memory and FLOPs", (by_name["aten::addmm"]["Self CPU Mem"], by_name["aten::addmm"]["Total FLOPs"]),
           ("1474560", "251658240"))
    # Every ProfilerStep#N of a scheduled run is one ProfilerStep* row, as torch prints it.
    header, rows = table_rows(run(report, os.path.join(TORCH, "schedule.json")).stdout)
    check_row(rows, "ProfilerStep*", **{"# of Calls": "3"})
    expect("no ProfilerStep#N row", [row["Name"] for row in rows if row["Name"].startswith("ProfilerStep#")], [])


def part_written(report, tmp, writer):
    w = subprocess.run([writer, "basic", tmp], capture_output=True, text=True)
    if w.returncode != 0:
        fail(f"trace_writer basic failed: {w.stderr}")
        return
    trace = os.path.join(tmp, "trace.json")
    r = run(report, trace)
    names = {row["Name"] for row in table_rows(r.stdout)[1]}
    want = {"main: run", "step", "submit", "execute", "kernel", "throwing outer", "throwing inner",
            "aten::mm", "matmul", "activation(exp)"}
    expect("scope names in the table", names, want)
    if "Records lost: 44 (lossless)" not in r.stdout:
        fail(f"the writer's 44 lost records are not reported:\n{r.stdout}")
    rows = list(csv.DictReader(io.StringIO(run(report, trace, "--format", "csv").stdout)))
    calls = {row["Name"]: int(row["# of Calls"]) for row in rows}
    expect("calls", calls, {"main: run": 1, "step": 30, "submit": 31, "execute": 30, "kernel": 30,
                            "throwing outer": 1, "throwing inner": 1, "aten::mm": 1, "matmul": 3,
                            "activation(exp)": 2})
    device = {row["Name"] for row in rows if row["Is Device"] == "1"}
    expect("device rows", device, {"execute", "matmul", "activation(exp)"})
    # The writer's device records of correlation id 7 (matmul 100 + 150 ns, activation 30 ns)
    # belong to aten::mm, not to the runtime submit inside it.
    by_name = {row["Name"]: row for row in rows}
    expect("aten::mm NEURON total (ns)", float(by_name["aten::mm"]["NEURON total"]), 280.0)
    expect("aten::mm Self NEURON (ns)", float(by_name["aten::mm"]["Self NEURON"]), 280.0)
    expect("submit Self NEURON (ns)", float(by_name["submit"]["Self NEURON"]), 0.0)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    report, part, writer = sys.argv[1:]
    parts = {"table": part_table, "options": part_options, "formats": part_formats,
             "compare": part_compare, "usage": part_usage, "many": part_many, "gzip": part_gzip,
             "hostile": part_hostile, "torch": part_torch}
    with tempfile.TemporaryDirectory(prefix="strata-report-") as tmp:
        if part == "written":
            part_written(report, tmp, writer)
        elif part in parts:
            parts[part](report, tmp)
        else:
            print(__doc__, file=sys.stderr)
            return 2
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if not failures:
        print(f"report check ({part}): ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
