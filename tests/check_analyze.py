#!/usr/bin/env python3
"""Runs `strata-report analyze` on hand-written rank traces and checks what it prints.

usage: check_analyze.py STRATA_REPORT DATA_DIR PART
       PART: figures, strata, formats, combine, usage, bad, per_rank

DATA_DIR is tests/data/analyze: job/ is a two-rank torch.profiler (Kineto) job, strata_job/ a
two-rank strata job whose clocks differ by 1 ms (baseTimeNanoseconds). Every expected figure is
worked out by hand from their timestamps in the comments below.
"""
import csv
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def fail(message):
    failures.append(message)


def expect(what, got, want):
    if got != want:
        fail(f"{what}: got {got!r}, expected {want!r}")


def run(report, *args, code=0):
    r = subprocess.run([report, "analyze", *args], capture_output=True, text=True)
    if r.returncode != code:
        fail(f"strata-report analyze {' '.join(args)}: exit {r.returncode}, expected {code}\n"
             f"stdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def analyze_json(report, *args):
    r = run(report, *args, "--format", "json")
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError as e:
        fail(f"analyze {' '.join(args)} --format json is not JSON: {e}")
        return {"ranks": [], "stragglers": []}


def us(n):
    return n * 1000


# job/: per rank (times in us), ProfilerStep#1 [0,1000), #2 [1000,2000), #3 [2000,2300);
# cudaLaunchKernel calls of 5 us at 10, 20, 30, 1010, 1020, 2010 (correlation 1..6);
# stream 7: gemm [100,200) (1), gemm [210,300) (2), gemm [1100,1200) (4), gemm [2100,2200) (6);
# stream 40: allreduce Seq 1 [150,400) on rank 0, [450,500) on rank 1 (3); Seq 2 [1150,1300) (5).
# The gemm launched in step 3, the last, is left out (HTA's rule).
JOB_WANT = {
    0: {
        # busy [100,400) + [1100,1300) = 500 of the span 100..1300 = 1200; compute 100+90+100.
        "temporal": {"span_ns": us(1200), "idle_ns": us(700), "compute_ns": us(290), "non_compute_ns": us(210)},
        # allreduce [150,400) under gemm [100,200) and [210,300): 50 + 90; [1150,1300) under [1100,1200): 50.
        "overlap": {"communication_ns": us(400), "overlap_ns": us(190)},
        # stream 7: gap 10 (call 2 began at 20, before 200): kernel wait; gap 800 (call 4 at 1010,
        # after 300): host wait. stream 40: gap 750, call 5 at 1020 after 400: host wait.
        "queues": {"stream 7": (us(800), us(10), 0), "stream 40": (us(750), 0, 0)},
        # delays: 100-15, 210-25, 150-35, 1100-1015, 1150-1025 = 85 185 115 85 125.
        "launch": {"kernels": 5, "launch_ns_total": us(25), "device_ns_total": us(690),
                   "delay_ns_total": us(595), "delay_ns_median": us(115), "delay_ns_max": us(185),
                   "delay_outliers": 3, "launch_outliers": 0},
    },
    1: {
        # busy [100,200) [210,300) [450,500) [1100,1300) = 100+90+50+200 = 440.
        "temporal": {"span_ns": us(1200), "idle_ns": us(760), "compute_ns": us(290), "non_compute_ns": us(150)},
        "overlap": {"communication_ns": us(200), "overlap_ns": us(50)},
        "queues": {"stream 7": (us(800), us(10), 0), "stream 40": (us(650), 0, 0)},
        # delays 85 185 415 85 125.
        "launch": {"kernels": 5, "launch_ns_total": us(25), "device_ns_total": us(490),
                   "delay_ns_total": us(895), "delay_ns_median": us(125), "delay_ns_max": us(415),
                   "delay_outliers": 3, "launch_outliers": 0},
    },
}
# Seq 1 starts at 150 and 450 (median 300): rank 0 150 us early, rank 1 150 us late (step 1);
# Seq 2 at 1150 on both (step 2).
JOB_STRAGGLERS = [(1, 0, -us(150), False), (1, 1, us(150), True), (2, 0, 0, False), (2, 1, 0, False)]


def check_rank(where, got, want):
    for section in ("temporal", "overlap", "launch"):
        for key, value in want[section].items():
            expect(f"{where} {section}.{key}", got[section][key], value)
    queues = {q["queue"]: (q["host_wait_ns"], q["kernel_wait_ns"], q["other_ns"]) for q in got["queues"]}
    expect(f"{where} queues", queues, want["queues"])


def check_stragglers(where, got, want):
    rows = [(s["step"], s["rank"], s["median_late_ns"], s["straggler"]) for s in got]
    expect(f"{where} stragglers", rows, want)


def part_figures(report, data, tmp):
    doc = analyze_json(report, os.path.join(data, "job"))
    expect("ranks", [r["rank"] for r in doc["ranks"]], [0, 1])
    for r in doc["ranks"]:
        if r["rank"] in JOB_WANT:
            check_rank(f"rank {r['rank']}", r, JOB_WANT[r["rank"]])
            expect(f"rank {r['rank']} world_size", r["world_size"], 2)
            expect(f"rank {r['rank']} format", r["format"], "kineto")
    check_stragglers("job", doc["stragglers"], JOB_STRAGGLERS)
    if doc["ranks"]:
        expect("idle %", doc["ranks"][0]["temporal"]["idle_pct"], round(100 * 700 / 1200, 4))
        expect("overlap %", doc["ranks"][0]["overlap"]["overlap_pct"], 47.5)
    # --include-last-step keeps gemm [2100,2200): span 100..2200, one more kernel on stream 7
    # with a gap of 900 after [1100,1200) (call 6 at 2010, after 1200: host wait).
    doc = analyze_json(report, os.path.join(data, "job"), "--include-last-step")
    if doc["ranks"]:
        r0 = doc["ranks"][0]
        expect("last step: span", r0["temporal"]["span_ns"], us(2100))
        expect("last step: stream 7 host wait",
               [q["host_wait_ns"] for q in r0["queues"] if q["queue"] == "stream 7"], [us(1700)])
    # --kernel-wait-us 5: the 10 us gap is no longer kernel wait but other.
    doc = analyze_json(report, os.path.join(data, "job"), "--kernel-wait-us", "5")
    if doc["ranks"]:
        expect("kernel wait 5 us", [(q["kernel_wait_ns"], q["other_ns"]) for q in doc["ranks"][0]["queues"]
                                    if q["queue"] == "stream 7"], [(0, us(10))])
    # --straggler-us 200: 150 us late is no straggler.
    doc = analyze_json(report, os.path.join(data, "job"), "--straggler-us", "200")
    expect("straggler 200 us", [s["straggler"] for s in doc["stragglers"]], [False] * 4)


def part_strata(report, data, tmp):
    # Per rank (us): gelu [5,25) (call [1,3)), gelu [45,65) (call [40,41)) on NeuronCore 0's
    # Kernel track; allreduce [50,80) (call [45,46)) on its Collective queue; the Vector
    # engine's instruction is part of the first gelu. No step is left out of a strata trace.
    doc = analyze_json(report, os.path.join(data, "strata_job"))
    for r in doc["ranks"]:
        where = f"strata rank {r['rank']}"
        expect(f"{where} format", r["format"], "strata")
        # busy [5,25) + [45,80) = 55 of 75; compute 40; the allreduce alone [65,80) = 15.
        expect(f"{where} temporal", r["temporal"], {"span_ns": us(75), "idle_ns": us(20), "compute_ns": us(40),
                                                    "non_compute_ns": us(15), "idle_pct": round(100 * 20 / 75, 4),
                                                    "compute_pct": round(100 * 40 / 75, 4),
                                                    "non_compute_pct": 20.0})
        expect(f"{where} overlap", (r["overlap"]["overlap_ns"], r["overlap"]["communication_ns"]), (us(15), us(30)))
        expect(f"{where} queues", [(q["queue"], q["kernels"], q["host_wait_ns"]) for q in r["queues"]],
               [("NeuronCore 0 (trn1) / Kernel", 2, us(20)), ("NeuronCore 0 (trn1) / Collective queue", 1, 0)])
        # delays 5-3 = 2, 45-41 = 4, 50-46 = 4.
        expect(f"{where} launch", (r["launch"]["kernels"], r["launch"]["launch_ns_total"],
                                   r["launch"]["delay_ns_total"]), (3, us(4), us(10)))
    # Both start the allreduce 50 us into their traces, but rank 1's trace began 1 ms later
    # (baseTimeNanoseconds 2000000 against 1000000): wall starts 1050000 and 2050000 ns, median
    # 1550000.
    check_stragglers("strata", doc["stragglers"], [(0, 0, -500000, False), (0, 1, 500000, True)])


def part_formats(report, data, tmp):
    job = os.path.join(data, "job")
    table = run(report, job).stdout
    for want in ("2 ranks of a world of 2", "Temporal breakdown", "Idle time per device queue",
                 "Communication/computation overlap", "Kernel launches", "Stragglers"):
        if want not in table:
            fail(f"the table has no '{want}':\n{table}")
    # rank 0's temporal row: kernels 5, span 1200 us, idle 700 us (58.33%).
    rows = [line.split() for line in table.splitlines()]
    if ["0", "5", "1200.000", "700.000", "58.33%", "290.000", "24.17%", "210.000", "17.50%"] not in rows:
        fail(f"the table has no temporal row for rank 0:\n{table}")
    if ["1", "1", "1", "150.000", "150.000", "yes"] not in rows:
        fail(f"the table has no straggler row for rank 1 in step 1:\n{table}")
    text = run(report, job, "--format", "csv").stdout
    lines = list(csv.reader(io.StringIO(text)))
    expect("csv header", lines[0] if lines else None, ["analysis", "rank", "queue", "step", "figure", "value"])
    values = {(l[0], l[1], l[2], l[3], l[4]): l[5] for l in lines[1:]}
    expect("csv idle_ns", values.get(("temporal", "0", "", "", "idle_ns")), str(us(700)))
    expect("csv host wait", values.get(("idle", "1", "stream 40", "", "host_wait_ns")), str(us(650)))
    expect("csv straggler", values.get(("straggler", "1", "", "1", "straggler")), "1")
    # The same figures in every format: csv against json.
    doc = analyze_json(report, job)
    for r in doc["ranks"]:
        for key, value in r["launch"].items():
            expect(f"csv launch {key}", values.get(("launch", str(r["rank"]), "", "", key)), str(value))


def part_combine(report, data, tmp):
    """One part per rank, made separately, combined: the same report as one run over both."""
    job = os.path.join(data, "job")
    whole = run(report, job, "--format", "json").stdout
    parts = []
    for name in sorted(os.listdir(job)):
        path = os.path.join(tmp, name + ".part.json")
        with open(path, "w") as f:
            f.write(run(report, os.path.join(job, name), "--format", "json").stdout)
        parts.append(path)
    expect("--combine json", run(report, "--combine", *parts, "--format", "json").stdout, whole)
    expect("--combine in another order", run(report, "--combine", *reversed(parts), "--format", "json").stdout,
           whole)
    expect("--combine table", run(report, "--combine", *parts).stdout, run(report, job).stdout)
    expect("--combine csv", run(report, "--combine", *parts, "--format", "csv").stdout,
           run(report, job, "--format", "csv").stdout)
    # --jobs changes nothing but how many files are read at once.
    expect("--jobs 1", run(report, job, "--format", "json", "--jobs", "1").stdout, whole)
    # A part holding both ranks combines too, and the straggler threshold applies at the reduce.
    both = os.path.join(tmp, "both.json")
    with open(both, "w") as f:
        f.write(whole)
    expect("--combine --straggler-us", run(report, "--combine", both, "--format", "json", "--straggler-us", "200").stdout,
           run(report, job, "--format", "json", "--straggler-us", "200").stdout)
    # Parts analysed with other thresholds do not combine.
    other = os.path.join(tmp, "other.json")
    with open(other, "w") as f:
        f.write(run(report, os.path.join(job, "rank1.json"), "--format", "json", "--kernel-wait-us", "5").stdout)
    r = run(report, "--combine", parts[0], other, code=1)
    if "other options" not in r.stderr:
        fail(f"--combine of parts with other options: {r.stderr!r}")
    # The same rank in two parts is a duplicate.
    r = run(report, "--combine", parts[0], parts[0], code=1)
    if "both rank 0" not in r.stderr:
        fail(f"--combine of one part twice: {r.stderr!r}")
    # Not a part.
    for text, want in (("{}", "no \"strata_analyze\""), ("[", "not valid JSON"),
                       ('{"strata_analyze":1,"options":{}}', "no \"kernel_wait_ns\"")):
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write(text)
        r = run(report, "--combine", bad, code=1)
        if want not in r.stderr or bad not in r.stderr:
            fail(f"--combine of {text!r}: {r.stderr!r}")


def part_usage(report, data, tmp):
    job = os.path.join(data, "job")
    r = run(report, "--help")
    if "--combine" not in r.stdout:
        fail(f"analyze --help: {r.stdout!r}")
    for args, want in ((["--format", "xml", job], "--format is table, csv or json"),
                       ([], "analyze needs a TRACE"),
                       (["--combine"], "--combine needs a PART.json"),
                       (["--jobs", "0", job], "--jobs needs a whole number of at least 1"),
                       (["--kernel-wait-us", "-1", job], "--kernel-wait-us needs a number of microseconds"),
                       (["--straggler-us", job], "--straggler-us needs a number of microseconds"),
                       (["--bogus", job], "unknown option '--bogus' for analyze"),
                       (["--include-last-step=1", job], "--include-last-step takes no value"),
                       (["--combine", "--include-last-step", job], "apply when the traces are read"),
                       (["--combine", "--hta-rounding", job], "apply when the traces are read")):
        r = run(report, *args, code=2)
        if want not in r.stderr or "usage: strata-report analyze" not in r.stderr:
            fail(f"analyze {args}: {r.stderr!r}, expected {want!r}")


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


def rank_doc(rank=None, world=None, kernels=True):
    doc = {"schemaVersion": 1, "traceEvents": []}
    if rank is not None:
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank}
        if world is not None:
            doc["distributedInfo"]["world_size"] = world
    if kernels:
        doc["traceEvents"] = [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0, "dur": 2,
             "args": {"correlation": 1}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
             "args": {"stream": 7, "correlation": 1}}]
    return doc


def part_bad(report, data, tmp):
    def case(name, docs, code, want, out_want=None):
        d = os.path.join(tmp, name)
        os.mkdir(d)
        for file, doc in docs.items():
            if isinstance(doc, str):
                with open(os.path.join(d, file), "w") as f:
                    f.write(doc)
            else:
                write(os.path.join(d, file), doc)
        r = run(report, d, code=code)
        for w in ([want] if isinstance(want, str) else want):
            if w not in r.stderr:
                fail(f"{name}: stderr {r.stderr!r}, expected {w!r}")
        if out_want is not None and out_want not in r.stdout:
            fail(f"{name}: stdout {r.stdout!r}, expected {out_want!r}")
        return r

    # Two jobs in one directory: their world sizes differ.
    case("mixed", {"a.json": rank_doc(0, 2), "b.json": rank_doc(1, 4)}, 1,
         ["ranks of different jobs", "a.json (world size 2)", "b.json (world size 4)"])
    # Each job's rank 0: said as two jobs, not as a repeated rank.
    case("two_jobs", {"a.json": rank_doc(0, 2), "b.json": rank_doc(0, 128)}, 1, "are ranks of different jobs")
    case("duplicate", {"a.json": rank_doc(1, 2), "b.json": rank_doc(1, 2)}, 1,
         ["a.json and", "b.json are both rank 1"])
    case("rank_too_big", {"a.json": rank_doc(2, 2)}, 1, "is rank 2 of a world of 2")
    # No distributedInfo: rank 0, said on stderr (HTA's rule); two such files are both rank 0.
    case("no_info", {"a.json": rank_doc()}, 0, "has no distributedInfo.rank: taken as rank 0",
         "1 rank\n")
    case("two_without_info", {"a.json": rank_doc(), "b.json": rank_doc()}, 1,
         "(a file without distributedInfo is rank 0)")
    # One rank on the wall clock, one not: no stragglers, said on stderr.
    timed = rank_doc(0, 2)
    timed["baseTimeNanoseconds"] = 1000
    r = case("clocks", {"a.json": timed, "b.json": rank_doc(1, 2)}, 0,
             ["a.json has baseTimeNanoseconds and", "b.json has none: their clocks cannot be aligned"])
    if "not compared: the ranks' clocks cannot be aligned" not in r.stdout:
        fail(f"clocks: {r.stdout!r}")
    # Rank 1 never ran the Seq 2 allreduce that rank 0 did (both ranks of group "0" here).
    with open(os.path.join(data, "job", "rank1.json")) as f:
        hung = json.load(f)
    hung["traceEvents"] = [e for e in hung["traceEvents"] if e.get("args", {}).get("Seq") != 2]
    with gzip.open(os.path.join(data, "job", "rank0.json.gz"), "rt") as f:
        rank0 = json.load(f)
    r = case("hung", {"rank0.json": rank0, "rank1.json": hung}, 0,
             "collective allreduce (group '0', Seq 2) ran on rank 0 but not on rank 1: it never ran there")
    # With only rank 0 of the two, nothing can be said of rank 1.
    d = os.path.join(tmp, "one_of_two")
    os.mkdir(d)
    write(os.path.join(d, "rank0.json"), rank0)
    r = run(report, d)
    if "never ran" in r.stderr:
        fail(f"one_of_two: {r.stderr!r}")
    # No kernels: figures of 0, said on stderr.
    r = case("no_kernels", {"a.json": rank_doc(0, 1, kernels=False)}, 0, "holds no device kernels")
    rows = [line.split() for line in r.stdout.splitlines()]
    if ["0", "0", "0.000", "0.000", "0.00%", "0.000", "0.00%", "0.000", "0.00%"] not in rows:
        fail(f"no_kernels: no zero row:\n{r.stdout}")
    case("not_json", {"a.json": "{\"traceEvents\":["}, 1, ["a.json", "not valid JSON"])
    case("bad_rank", {"a.json": '{"distributedInfo":{"rank":"one"},"traceEvents":[]}'}, 1,
         "distributedInfo.rank is not a count")
    d = os.path.join(tmp, "pftrace")
    os.mkdir(d)
    with open(os.path.join(d, "t.pftrace"), "wb") as f:
        f.write(b"\x0a\x00")
    r = run(report, os.path.join(d, "t.pftrace"), code=1)
    if "Perfetto protobuf" not in r.stderr:
        fail(f"pftrace: {r.stderr!r}")
    r = run(report, os.path.join(tmp, "missing.json"), code=1)
    if "no such file" not in r.stderr:
        fail(f"missing: {r.stderr!r}")
    # Hostile names: quotes, commas, newlines and control bytes in a queue's and a collective's
    # names stay valid JSON and CSV; invalid UTF-8 is refused with the file's name.
    hostile = os.path.join(tmp, "hostile.json")
    name = 'Core "0",\n\x01'
    write(hostile, {"otherData": {"strata_version": "0.1.0"}, "distributedInfo": {"rank": 0, "world_size": 1},
                    "traceEvents": [{"ph": "M", "name": "process_name", "pid": 16777216, "tid": 0,
                                     "args": {"name": name}},
                                    {"ph": "X", "cat": "device", "name": "k", "pid": 16777216, "tid": 0, "ts": 1,
                                     "dur": 2, "args": {"Collective name": 'a"b', "Process Group Name": "g\x02"}}]})
    doc = analyze_json(report, hostile)
    expect("hostile queue", [q["queue"] for r in doc["ranks"] for q in r["queues"]], [name + " / tid 0"])
    expect("hostile collective", [(c["name"], c["group"]) for r in doc["ranks"] for c in r["collectives"]],
           [('a"b', "g\x02")])
    text = run(report, hostile, "--format", "csv").stdout
    rows = list(csv.reader(io.StringIO(text)))
    expect("hostile csv queue", {r[2] for r in rows[1:] if r[0] == "idle"}, {name + " / tid 0"})
    table = run(report, hostile).stdout
    if "Core" not in table:
        fail(f"hostile table: {table!r}")
    # A file name that is not UTF-8 still makes valid JSON (U+FFFD for the bad byte), and
    # --combine reads it back.
    odd = os.path.join(os.fsencode(tmp), b"rank\xff.json")
    with open(odd, "w") as f:
        json.dump(rank_doc(0, 1), f)
    r = subprocess.run([os.fsencode(report), b"analyze", odd, b"--format", b"json"], capture_output=True)
    try:
        doc = json.loads(r.stdout.decode("utf-8"))
        expect("odd name", doc["ranks"][0]["source"], os.path.join(tmp, "rank\ufffd.json"))
        part = os.path.join(tmp, "odd.part.json")
        with open(part, "wb") as f:
            f.write(r.stdout)
        expect("odd name combined", run(report, "--combine", part, "--format", "json").stdout, r.stdout.decode())
    except (ValueError, KeyError, IndexError) as e:
        fail(f"odd name: {e}: {r.stdout!r} {r.stderr!r}")
    bad_utf8 = os.path.join(tmp, "bad_utf8.json")
    with open(bad_utf8, "wb") as f:
        f.write(b'{"traceEvents":[{"ph":"M","name":"process_name","pid":1,"args":{"name":"\xff"}}]}')
    r = run(report, bad_utf8, code=1)
    if "bad_utf8.json" not in r.stderr or "not valid UTF-8" not in r.stderr:
        fail(f"invalid UTF-8: {r.stderr!r}")


def part_per_rank(report, data, tmp):
    """strata-report --per-rank: key_averages tables, one per distributedInfo.rank."""
    job = os.path.join(data, "job")
    # Each rank: six cudaLaunchKernel calls of 5 us; allreduce 250 + 150 us on rank 0, 50 + 150
    # on rank 1.
    r = subprocess.run([report, job, "--per-rank"], capture_output=True, text=True)
    expect("--per-rank exit", r.returncode, 0)
    sections = r.stdout.split("rank ")
    heads = [line for line in r.stdout.splitlines() if line.startswith("rank ")]
    expect("--per-rank headers", heads, [f"rank 0: {os.path.join(job, 'rank0.json.gz')}",
                                         f"rank 1: {os.path.join(job, 'rank1.json')}"])
    if len(sections) == 3:
        if "400.000us" not in sections[1] or "200.000us" not in sections[2]:
            fail(f"--per-rank allreduce totals:\n{r.stdout}")
    # Two files of rank 1 (two windows of one schedule) make one table; a file without
    # distributedInfo is rank 0, said on stderr.
    d = os.path.join(tmp, "windows")
    os.mkdir(d)
    shutil.copy(os.path.join(job, "rank1.json"), os.path.join(d, "w1.json"))
    shutil.copy(os.path.join(job, "rank1.json"), os.path.join(d, "w2.json"))
    write(os.path.join(d, "x.json"), rank_doc())
    r = subprocess.run([report, d, "--per-rank"], capture_output=True, text=True)
    expect("windows exit", r.returncode, 0)
    heads = [line for line in r.stdout.splitlines() if line.startswith("rank ")]
    expect("windows headers", heads, [f"rank 0: {os.path.join(d, 'x.json')}",
                                      f"rank 1: {os.path.join(d, 'w1.json')}, {os.path.join(d, 'w2.json')}"])
    rows = [line.split() for line in r.stdout.splitlines()]
    if not any(row[:1] == ["cudaLaunchKernel"] and row[-1] == "12" for row in rows):
        fail(f"windows: rank 1's two files do not make 12 launches:\n{r.stdout}")
    if "x.json has no distributedInfo.rank: taken as rank 0" not in r.stderr:
        fail(f"windows stderr: {r.stderr!r}")
    for args, want in ((["--per-rank", "--per-file"], "two ways to split"),
                       (["--per-rank", "--format", "csv"], "--per-rank applies to --format table only"),
                       (["--per-rank", "--compare", job], "--per-rank does not apply to --compare")):
        r = subprocess.run([report, job, *args], capture_output=True, text=True)
        expect(f"{args} exit", r.returncode, 2)
        if want not in r.stderr:
            fail(f"{args}: {r.stderr!r}")


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    report, data, part = sys.argv[1:]
    parts = {"figures": part_figures, "strata": part_strata, "formats": part_formats, "combine": part_combine,
             "usage": part_usage, "bad": part_bad, "per_rank": part_per_rank}
    if part not in parts:
        print(__doc__, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="strata-analyze-") as tmp:
        parts[part](report, data, tmp)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if not failures:
        print(f"analyze check ({part}): ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
