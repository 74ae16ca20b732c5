#!/usr/bin/env python3
"""Runs `strata-report merge` on rank traces and checks the one trace it writes.

usage: check_merge.py STRATA_REPORT DATA_DIR PART [TENSOR_PARALLEL]
       PART: strata, kineto, ids, perfetto, perfetto_edges, tensor_parallel, bad, usage

DATA_DIR is tests/data/analyze: strata_job/ holds two strata ranks whose clocks differ by 1 ms
(baseTimeNanoseconds 1000000 and 2000000), job/ two Kineto ranks on one clock (rank0.json.gz,
rank1.json). Every expected pid, ts and id below is worked out by hand from those files: rank
R's processes become R * 1000 + 1, + 2, ... in the order the trace sorts them (its
process_sort_index, 0 without one, then first appearance); its ts moves by (its base - the
earliest base) / 1000 us; its flow and correlation ids by R * 1000 (1000: the smallest power of
ten, at least 1000, above every rank's largest id). tensor_parallel runs the example
with a straggler and checks the merged job against its rank traces.
"""
import copy
import decimal
import gzip
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_trace  # noqa: E402  (its flow, nesting and order checks, on the merged trace)
import check_perfetto_trace as pft  # noqa: E402  (the .pftrace decoder and trace_processor's clock rules)

D = decimal.Decimal
failures = []


def fail(message):
    failures.append(message)


def expect(what, got, want):
    if got != want:
        fail(f"{what}: got {got!r}, expected {want!r}")


def run(report, *args, code=0):
    r = subprocess.run([report, "merge", *args], capture_output=True, text=True)
    if r.returncode != code:
        fail(f"strata-report merge {' '.join(args)}: exit {r.returncode}, expected {code}\n"
             f"stdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def load(path):
    """A trace, numbers as Decimal (exact), from plain or gzip-compressed JSON."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw.decode("utf-8"), parse_float=D)


def merged(report, tmp, name, *traces, extra=()):
    out = os.path.join(tmp, name)
    r = run(report, *traces, "-o", out, *extra)
    if r.returncode != 0:
        return None, r
    return load(out), r


def transformed(events, rank, pids, shift_us, id_offset, named):
    """What merge makes of one rank's events, by the rules in the docstring."""
    out = []
    for e in events:
        e = copy.deepcopy(e)
        if "pid" in e:
            e["pid"] = pids[e["pid"]]
        if "ts" in e and shift_us:
            e["ts"] = e["ts"] + shift_us
        for k in ("id", "bind_id"):
            if k in e:
                e[k] = e[k] + id_offset
        args = e.get("args", {})
        for k in ("correlation", "correlation_id", "External id"):
            if k in args:
                args[k] = args[k] + id_offset
        if e.get("ph") == "M" and e.get("name") == "process_name":
            args["name"] = f"rank {rank}: {args['name']}"
        if e.get("ph") == "M" and e.get("name") == "process_sort_index":
            args["sort_index"] = e["pid"]
        out.append(e)
    return out


def added(rank, processes):
    """The metadata merge adds after a rank's events: (new pid, original pid, named, sorted)
    in order of first appearance."""
    out = []
    for new, old, has_name, has_sort in processes:
        if not has_name:
            out.append({"ph": "M", "name": "process_name", "pid": new, "tid": 0,
                        "args": {"name": f"rank {rank}: pid {old}"}})
        if not has_sort:
            out.append({"ph": "M", "name": "process_sort_index", "pid": new, "tid": 0,
                        "args": {"sort_index": new}})
    return out


def normal(value):
    """Events to compare: a decimal number as its text, so 1005.000 and 1005 differ."""
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normal(v) for v in value]
    return str(value) if isinstance(value, D) else value


def ns_of(us):
    """Microseconds (a Decimal) as nanoseconds, halves away from zero, as merge rounds them."""
    return int((D(us) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_UP))


def pf_value(v):
    """A JSON value as its debug annotation decodes: numbers as int or float, an empty object
    as the legacy JSON text '{}'."""
    if isinstance(v, dict):
        return {k: pf_value(x) for k, x in v.items()} if v else ("json", "{}")
    if isinstance(v, list):
        return [pf_value(x) for x in v]
    if isinstance(v, D):
        return float(v)
    return v


def decode_pftrace(path, where):
    """The merged .pftrace, decoded field by field (check_perfetto_trace.decode, whose failures
    become this check's); protoc --decode_raw must accept it too."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    r = subprocess.run(["protoc", "--decode_raw"], input=raw, capture_output=True)
    if r.returncode != 0:
        fail(f"{where}: protoc --decode_raw rejects the .pftrace: {r.stderr.decode(errors='replace')[:300]}")
    del pft.failures[:]
    d = pft.decode(raw)
    for f in pft.failures:
        fail(f"{where}: {f}")
    del pft.failures[:]
    return d


def pf_tracks(d, where):
    """Each event-holding track's events, keyed as the JSON side keys them: (pid, tid) for a
    thread (its overlap lanes with it), ("process", pid), ("counter", pid, name), ("track", pid,
    name) for other named tracks of a process; and the slices, instants and samples on each."""
    key_of = {}
    for uuid, t in d.tracks.items():
        parent = d.tracks.get(t["parent"]) if t["parent"] is not None else None
        if "tid" in t:
            key_of[uuid] = (t["pid"], t["tid"])
        elif "process_name" in t or ("pid" in t and parent is None):
            key_of[uuid] = ("process", t["pid"])
        elif parent is not None and "tid" in parent:
            key_of[uuid] = (parent["pid"], parent["tid"])  # a lane of overlapping slices
        elif parent is not None and "pid" in parent:
            key_of[uuid] = ("counter" if t["counter"] else "track", parent["pid"], t["name"])
        else:
            key_of[uuid] = ("track", None, t["name"])
    slices, instants, samples = defaultdict(list), defaultdict(list), defaultdict(list)
    for uuid, evs in d.events.items():
        key = key_of.get(uuid)
        if key is None:
            fail(f"{where}: events on track {uuid}, which no descriptor describes")
            continue
        s, i, c = pft.slices_of(evs, f"{where} {key}")
        slices[key] += s
        instants[key] += i
        samples[key] += c
    return key_of, slices, instants, samples


def args_key(args):
    """An event's args, comparable: sorted (name, value as its annotation decodes)."""
    return repr(sorted((k, pf_value(v)) for k, v in args.items()))


def perfetto_agrees(doc, path, where):
    """The merged .pftrace holds what the merged JSON `doc` holds: the same processes (name,
    order), threads (name, order), slices (name, category, start and duration in ns, args),
    instants, counter samples and flows."""
    d = decode_pftrace(path, where)
    events = doc["traceEvents"]
    meta = lambda name: {(e["pid"], e.get("tid")): e["args"] for e in events
                         if e.get("ph") == "M" and e.get("name") == name}
    pnames = {k[0]: a["name"] for k, a in meta("process_name").items()}
    porder = {k[0]: a["sort_index"] for k, a in meta("process_sort_index").items()}
    tnames = {k: a["name"] for k, a in meta("thread_name").items()}
    torder = {k: a["sort_index"] for k, a in meta("thread_sort_index").items()}
    if d.root != {"process_ordering": 1, "thread_ordering": 1}:
        fail(f"{where}: root track {d.root}: processes and threads should be ordered explicitly")
    got_p = {t["pid"]: (t["process_name"], t["rank"]) for t in d.tracks.values() if "process_name" in t}
    want_p = {pid: (pnames.get(pid), porder.get(pid)) for pid in {e["pid"] for e in events if "pid" in e}}
    expect(f"{where}: processes (name, rank)", got_p, want_p)
    got_t = {(t["pid"], t["tid"]): (t["thread_name"], t["rank"]) for t in d.tracks.values() if "tid" in t}
    for key, name in tnames.items():
        expect(f"{where}: thread {key} (name, rank)", got_t.get(key), (name, torder.get(key)))

    key_of, slices, instants, samples = pf_tracks(d, where)
    want_s, want_i, want_c = defaultdict(Counter), defaultdict(Counter), defaultdict(list)
    chain = defaultdict(list)
    for e in events:
        ph = e.get("ph")
        key = (e.get("pid"), e.get("tid"))
        if isinstance(key[1], str):  # a tid that is no number: a track of the process, so named
            key = ("track", key[0], tnames.get(key, key[1]))
        if ph == "X":
            want_s[key][(e["name"], e.get("cat"), ns_of(e["ts"]), ns_of(e["dur"]),
                         args_key(e.get("args", {})))] += 1
        elif ph in ("i", "I"):
            where_i = {"p": ("process", e["pid"]), "g": ("track", None, "global instants")}.get(e.get("s"), key)
            want_i[where_i][(e["name"], e.get("cat"), ns_of(e["ts"]), args_key(e.get("args", {})))] += 1
        elif ph == "C":
            series = e["args"]
            for k, v in series.items():
                name = e["name"] if (k == "value" and len(series) == 1) else f"{e['name']} {k}"
                want_c[("counter", e["pid"], name)].append((ns_of(e["ts"]), pf_value(v)))
        elif ph in ("s", "t", "f"):
            chain[(e.get("cat"), e["id"])].append((key, ns_of(e["ts"])))
    cat = lambda c: None if c == [] else c
    got_s = defaultdict(Counter)
    got_i = defaultdict(Counter)
    for key, ss in slices.items():
        for x in ss:
            got_s[key][(x["name"], cat(x["cat"]), x["ts"], x["dur"], repr(sorted(x["args"].items())))] += 1
    for key, ii in instants.items():
        for x in ii:
            got_i[key][(x["name"], cat(x["cat"]), x["ts"], repr(sorted(x["args"].items())))] += 1
    for what, want, got in (("slices", want_s, got_s), ("instants", want_i, got_i)):
        for key in sorted(set(want) | set(got), key=repr):
            if want[key] != got[key]:
                fail(f"{where}: {what} of {key} differ: only in JSON {list((want[key] - got[key]).elements())[:2]}, "
                     f"only in Perfetto {list((got[key] - want[key]).elements())[:2]}")
    got_c = {k: sorted((c["ts"], c["value"]) for c in v) for k, v in samples.items() if v}
    expect(f"{where}: counter samples", got_c, {k: sorted(v) for k, v in want_c.items()})
    # Flows: each JSON flow's points (thread, ts) are the starts of the slices its Perfetto
    # flow marks, and each Perfetto flow ends exactly once.
    pf_chain = defaultdict(list)
    for key, ss in slices.items():
        for x in ss:
            for fid in x["flows"]:
                pf_chain[fid].append((key, x["ts"], False))
            for fid in x["ends"]:
                pf_chain[fid].append((key, x["ts"], True))
    for fid, points in pf_chain.items():
        if sum(1 for p in points if p[2]) != 1:
            fail(f"{where}: Perfetto flow {fid} does not end exactly once: {points}")
    norm = lambda chains: sorted(sorted((k, t) for k, t, *_ in v) for v in chains)
    expect(f"{where}: flows", norm(pf_chain.values()), norm(chain.values()))
    return d


def table_json(report, *traces):
    r = subprocess.run([report, *traces, "--format", "json"], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"strata-report {' '.join(traces)}: {r.stderr}")
        return None
    return json.loads(r.stdout)


def part_strata(report, data, tmp):
    job = os.path.join(data, "strata_job")
    doc, r = merged(report, tmp, "strata.json", job)
    if doc is None:
        return
    ins = [load(os.path.join(job, f"rank{k}.json")) for k in (0, 1)]
    expect("top-level keys", list(doc), ["displayTimeUnit", "distributedInfo", "baseTimeNanoseconds", "traceEvents"])
    expect("displayTimeUnit", doc["displayTimeUnit"], "ns")
    expect("distributedInfo", doc["distributedInfo"], {"backend": "", "world_size": 2, "ranks": [0, 1]})
    expect("baseTimeNanoseconds", doc["baseTimeNanoseconds"], 1000000)
    # Rank 0: pid 4242 (named "rank", first) -> 1, 16777216 -> 2; rank 1 the same + 1000. No
    # trace sorts its processes, so each gets a process_sort_index: 13 + 13 + 2 + 2 events.
    # Rank 1 began 1 ms later: its ts + 1000 us. Its correlation ids (largest 3) + 1000.
    want = (transformed(ins[0]["traceEvents"], 0, {4242: 1, 16777216: 2}, 0, 0, True)
            + added(0, [(1, 4242, True, False), (2, 16777216, True, False)])
            + transformed(ins[1]["traceEvents"], 1, {4242: 1001, 16777216: 1002}, D(1000), 1000, True)
            + added(1, [(1001, 4242, True, False), (1002, 16777216, True, False)]))
    expect("event count", len(doc["traceEvents"]), 13 + 13 + 4)
    expect("events", normal(doc["traceEvents"]), normal(want))
    # The text itself: rank 0's untouched, rank 1's all-reduce at 50.000 + 1000 us, its id 3 + 1000.
    text = open(os.path.join(tmp, "strata.json"), encoding="utf-8").read()
    for line in ('{"ph":"X","cat":"device","name":"all_reduce","pid":2,"tid":20,"ts":50.000,"dur":30.000,',
                 '{"ph":"X","cat":"device","name":"all_reduce","pid":1002,"tid":20,"ts":1050.000,"dur":30.000,',
                 '"Seq":0,"correlation_id":1003}}',
                 '{"ph":"M","name":"process_name","pid":1002,"tid":0,"args":{"name":"rank 1: NeuronCore 0 (trn1)"}}'):
        if line not in text:
            fail(f"strata: the merged text has no {line!r}")
    if "clocks aligned on baseTimeNanoseconds" not in r.stderr or "30 events" not in r.stderr:
        fail(f"strata: stderr {r.stderr!r}")
    # The files in either order, or named one by one, make the same trace.
    for name, args in (("reversed.json", [os.path.join(job, "rank1.json"), os.path.join(job, "rank0.json")]),):
        other, _ = merged(report, tmp, name, *args)
        if other is not None:
            expect("files in another order", other, doc)


def part_kineto(report, data, tmp):
    job = os.path.join(data, "job")
    for out in ("kineto.json", "kineto.json.gz"):
        doc, _ = merged(report, tmp, out, job)
        if doc is None:
            continue
        raw = open(os.path.join(tmp, out), "rb").read(2)
        expect(f"{out} is gzip", raw == b"\x1f\x8b", out.endswith(".gz"))
        with gzip.open(os.path.join(job, "rank0.json.gz"), "rt") as f:
            rank0 = json.load(f, parse_float=D)
        rank1 = load(os.path.join(job, "rank1.json"))
        expect(f"{out} distributedInfo", doc["distributedInfo"], {"backend": "nccl", "world_size": 2, "ranks": [0, 1]})
        expect(f"{out} baseTimeNanoseconds", doc["baseTimeNanoseconds"], 1000000000000)
        expect(f"{out} displayTimeUnit", doc["displayTimeUnit"], "ms")  # Kineto's default, written by neither
        # pid 100 (python, named) -> 1, pid 0 (the GPU, unnamed) -> 2; one clock: no shift;
        # correlation ids (largest 6) of rank 1 + 1000. Added per rank: a sort index for each
        # process and a name for the GPU's: 16 + 16 + 3 + 3.
        want = (transformed(rank0["traceEvents"], 0, {100: 1, 0: 2}, 0, 0, True)
                + added(0, [(1, 100, True, False), (2, 0, False, False)])
                + transformed(rank1["traceEvents"], 1, {100: 1001, 0: 1002}, 0, 1000, True)
                + added(1, [(1001, 100, True, False), (1002, 0, False, False)]))
        expect(f"{out} event count", len(doc["traceEvents"]), 38)
        expect(f"{out} events", normal(doc["traceEvents"]), normal(want))
        names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "process_name"}
        expect(f"{out} process names", names, {1: "rank 0: python", 2: "rank 0: pid 0", 1001: "rank 1: python",
                                              1002: "rank 1: pid 0"})
        # strata-report reads the merged trace as it reads the ranks: the same table.
        expect(f"{out} key_averages", table_json(report, os.path.join(tmp, out)), table_json(report, job))
        # Rank 1's Seq 1 all-reduce, at its own 450 us, its correlation 3 + 1000.
        seq1 = [(e["pid"], e["ts"], e["args"]["correlation"]) for e in doc["traceEvents"]
                if e.get("args", {}).get("Seq") == 1]
        expect(f"{out} Seq 1", seq1, [(2, 150, 3), (1002, 450, 1003)])


def ids_job(tmp):
    """Two ranks with flows, sort indices, a string pid and every kind of id, rank 1's clock
    500 ns after rank 0's."""
    d = os.path.join(tmp, "ids_job")
    os.makedirs(d, exist_ok=True)
    for rank, base in ((0, 1000000000), (1, 1000000500)):
        events = [
            {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "host"}},
            {"ph": "M", "name": "process_sort_index", "pid": 7, "tid": 0, "args": {"sort_index": 5}},
            {"ph": "M", "name": "process_name", "pid": 9, "tid": 0, "args": {"name": "dev"}},
            {"ph": "M", "name": "process_sort_index", "pid": 9, "tid": 0, "args": {"sort_index": 2}},
            {"ph": "M", "name": "thread_sort_index", "pid": 9, "tid": 3, "args": {"sort_index": 4}},
            {"ph": "X", "name": "op", "pid": 7, "tid": 1, "ts": 10, "dur": 5, "args": {"correlation_id": 4}},
            {"ph": "s", "name": "flow", "cat": "f", "id": 4, "pid": 7, "tid": 1, "ts": 10},
            {"ph": "X", "name": "kernel", "pid": 9, "tid": 3, "ts": 12.25, "dur": 1,
             "args": {"correlation_id": 4, "External id": 2}},
            {"ph": "f", "bp": "e", "name": "flow", "cat": "f", "id": 4, "pid": 9, "tid": 3, "ts": 12.25},
            {"ph": "b", "name": "async", "cat": "a", "id": "0x1f", "pid": 7, "tid": 1, "ts": -3},
            {"ph": "e", "name": "async", "cat": "a", "id": "0x1f", "pid": 7, "tid": 1, "ts": "1e1"},
            {"ph": "i", "name": "mark", "pid": "Spans", "tid": 1, "ts": 0, "s": "t", "id": "abc"},
            {"ph": "X", "name": "flow_out", "pid": 9, "tid": 3, "ts": 20, "dur": 1, "bind_id": 30,
             "flow_out": True},
        ]
        text = json.dumps({"distributedInfo": {"backend": "gloo", "rank": rank, "world_size": 2},
                           "traceEvents": events, "baseTimeNanoseconds": base})
        text = text.replace('"ts": "1e1"', '"ts": 1e1')  # a number in exponent form
        with open(os.path.join(d, f"r{rank}.json"), "w") as f:
            f.write(text)
    return d


def part_ids(report, data, tmp):
    d = ids_job(tmp)
    out = os.path.join(tmp, "ids.json")
    r = run(report, d, "-o", out)
    if r.returncode != 0:
        return
    text = open(out, encoding="utf-8").read()
    doc = json.loads(text, parse_float=D)
    ev = doc["traceEvents"]
    expect("ids baseTimeNanoseconds", doc["baseTimeNanoseconds"], 1000000000)
    expect("ids backend", doc["distributedInfo"]["backend"], "gloo")
    # Order within a rank: "Spans" (no sort index: 0), pid 9 (2), pid 7 (5): 1, 2, 3. Rank 1:
    # 1001, 1002, 1003. Ids: the largest is 0x1f = 31, so the stride is 1000.
    by_name = lambda rank_pids, name, ph: [e for e in ev if e.get("name") == name and e.get("ph") == ph
                                           and e.get("pid") in rank_pids]
    r0, r1 = {1, 2, 3, "Spans"}, {1001, 1002, 1003}
    expect("rank 0 host", [e["pid"] for e in by_name(r0, "op", "X")], [3])
    expect("rank 1 host", [e["pid"] for e in by_name(r1, "op", "X")], [1003])
    expect("sort indices", [(e["pid"], e["args"]["sort_index"]) for e in ev if e.get("name") == "process_sort_index"],
           [(3, 3), (2, 2), (1, 1), (1003, 1003), (1002, 1002), (1001, 1001)])
    expect("thread_sort_index kept", [e["args"]["sort_index"] for e in ev if e.get("name") == "thread_sort_index"],
           [4, 4])
    expect("added names", [(e["pid"], e["args"]["name"]) for e in ev if e.get("name") == "process_name"],
           [(3, "rank 0: host"), (2, "rank 0: dev"), (1, 'rank 0: pid "Spans"'),
            (1003, "rank 1: host"), (1002, "rank 1: dev"), (1001, 'rank 1: pid "Spans"')])
    # Rank 1 is 0.5 us later: 10 -> 10.5, 12.25 -> 12.75, -3 -> -2.5, 1e1 -> 10.5, 0 -> 0.5.
    ts = [e["ts"] for e in ev if e.get("pid") in r1 and e.get("ph") != "M"]
    expect("rank 1 ts", ts, [D("10.5"), D("10.5"), D("12.75"), D("12.75"), D("-2.5"), D("10.5"), D("0.5"), D("20.5")])
    ts0 = [e["ts"] for e in ev if e.get("pid") in r0 and e.get("ph") != "M"]
    expect("rank 0 ts", ts0, [10, 10, D("12.25"), D("12.25"), -3, D("1e1"), 0, 20])
    if '"ts":1e1' not in text:
        fail("rank 0's ts 1e1 is not kept as written")
    # Flows: rank 1's flow 4 is 1004, its async id 0x1f is 0x407 (1031), bind_id 30 -> 1030,
    # correlation 4 -> 1004, External id 2 -> 1002; an id that is no number is named by rank.
    flows = {}
    for e in ev:
        if e.get("ph") in ("s", "f"):
            flows.setdefault(e["id"], []).append((e["ph"], e["pid"]))
    expect("flows", flows, {4: [("s", 3), ("f", 2)], 1004: [("s", 1003), ("f", 1002)]})
    expect("async ids", [e["id"] for e in ev if e.get("ph") in ("b", "e")], ["0x1f", "0x1f", "0x407", "0x407"])
    expect("bind_id", [e["bind_id"] for e in ev if "bind_id" in e], [30, 1030])
    expect("kernel ids", [(e["args"]["correlation_id"], e["args"]["External id"]) for e in ev if e.get("name") == "kernel"],
           [(4, 2), (1004, 1002)])
    expect("other ids", [e["id"] for e in ev if e.get("ph") == "i"], ["rank 0:abc", "rank 1:abc"])
    # 13 + 13 events, and for each rank a name for "Spans" and a sort index for it.
    expect("ids event count", len(ev), 13 + 13 + 2 + 2)
    # --no-align keeps each clock: rank 1's op stays at 10, and no base is claimed.
    out2 = os.path.join(tmp, "ids_noalign.json")
    if run(report, d, "-o", out2, "--no-align").returncode == 0:
        doc2 = load(out2)
        expect("--no-align base", "baseTimeNanoseconds" in doc2, False)
        expect("--no-align ts", [e["ts"] for e in doc2["traceEvents"] if e.get("pid") == 1003 and e.get("name") == "op"],
               [10])


def part_perfetto(report, data, tmp):
    """-o JOB.pftrace: the job of each kind merged as JSON and as Perfetto's protobuf, which
    must hold the same tracks, slices, instants, counters and flows, on the same aligned clock;
    and REALTIME in the clock snapshots is the wall clock of the merged trace's 0."""
    for job in ("strata_job", "job"):
        doc, _ = merged(report, tmp, f"{job}.json", os.path.join(data, job))
        if doc is None:
            continue
        for out in (f"{job}.pftrace", f"{job}.pftrace.gz"):
            r = run(report, os.path.join(data, job), "-o", os.path.join(tmp, out))
            if r.returncode != 0:
                continue
            if "not in the Perfetto trace" in r.stderr or "Perfetto packets" not in r.stderr:
                fail(f"{out}: stderr {r.stderr!r}")
            d = perfetto_agrees(doc, os.path.join(tmp, out), out)
            base = doc.get("baseTimeNanoseconds")
            walls = {v - d.clocks.series[k][0][(11, 0)] for k in d.clocks.series for v in
                     [d.clocks.series[k][0].get((1, 0))] if v is not None}
            expect(f"{out}: REALTIME - trace time in every snapshot", walls, {base} if base is not None else set())


def part_perfetto_edges(report, data, tmp):
    """What Chrome's JSON has and Perfetto's tracks say otherwise, on one hand-written rank:
    B/E pairs, a slice crossing its parent's end (a lane of its own), process and global
    instants, an async b/n/e, a counter with two series, a string tid, flows bound to the
    enclosing and to the next slice, a bind_id flow, sub-ns rounding, and what cannot be
    carried (an E without a B, phase P), said on stderr; a ts before 0 is an error."""
    ev = [
        {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "eng"}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 1, "args": {"name": "main"}},
        {"ph": "X", "name": "outer", "cat": "c", "pid": 7, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "name": "cross", "cat": "c", "pid": 7, "tid": 1, "ts": 5, "dur": 10},
        {"ph": "B", "name": "b1", "pid": 7, "tid": 1, "ts": 1, "args": {"a": 1}},
        {"ph": "E", "pid": 7, "tid": 1, "ts": 3, "args": {"b": "x"}},
        {"ph": "E", "pid": 7, "tid": 1, "ts": 4},
        {"ph": "i", "name": "pi", "s": "p", "pid": 7, "tid": 1, "ts": 2},
        {"ph": "i", "name": "gi", "s": "g", "pid": 7, "tid": 1, "ts": 2},
        {"ph": "b", "name": "req", "cat": "async", "id": 5, "pid": 7, "tid": 1, "ts": 1},
        {"ph": "n", "name": "mark", "cat": "async", "id": 5, "pid": 7, "tid": 1, "ts": 2},
        {"ph": "e", "name": "req", "cat": "async", "id": 5, "pid": 7, "tid": 1, "ts": 6},
        {"ph": "C", "name": "mem", "pid": 7, "tid": 1, "ts": 2, "args": {"hbm": 5, "sram": 1.5}},
        {"ph": "X", "name": "k", "pid": 7, "tid": "stream 3", "ts": 2, "dur": 1},
        {"ph": "s", "name": "fl", "cat": "f", "id": 9, "pid": 7, "tid": 1, "ts": 0},
        {"ph": "f", "name": "fl", "cat": "f", "id": 9, "pid": 7, "tid": "stream 3", "ts": 1.5},
        {"ph": "X", "name": "v2a", "pid": 7, "tid": 2, "ts": 20, "dur": 1, "bind_id": 11, "flow_out": True},
        {"ph": "X", "name": "v2b", "pid": 7, "tid": 2, "ts": 30, "dur": 1, "bind_id": 11, "flow_in": True},
        {"ph": "P", "name": "sample", "pid": 7, "tid": 1, "ts": 3},
        {"ph": "X", "name": "frac", "pid": 7, "tid": 2, "ts": 40.0005, "dur": 0.0004},
    ]
    rank = os.path.join(tmp, "rank0.json")
    with open(rank, "w") as f:
        json.dump({"traceEvents": ev}, f)
    out = os.path.join(tmp, "edges.pftrace")
    r = run(report, rank, "-o", out)
    if r.returncode != 0:
        return
    for said in ("1 slice ends (E) with no slice begun (B) on their thread not in the Perfetto trace",
                 "1 events of phase 'P' not in the Perfetto trace"):
        if said not in r.stderr:
            fail(f"edges: stderr does not say {said!r}: {r.stderr!r}")
    d = decode_pftrace(out, "edges")
    _, slices, instants, samples = pf_tracks(d, "edges")
    view = lambda xs: sorted((x["name"], x["ts"], x.get("dur"), x["args"]) for x in xs)
    expect("edges: thread main's slices", view(slices[(1, 1)]),
           [("b1", 1000, 2000, {"a": 1, "b": "x"}), ("cross", 5000, 10000, {}), ("outer", 0, 10000, {})])
    lanes = [t for t in d.tracks.values() if t["name"] == "main (overlapping 1)"]
    expect("edges: the lane of the crossing slice", len(lanes), 1)
    expect("edges: string tid's track", view(slices[("track", 1, "stream 3")]), [("k", 2000, 1000, {})])
    expect("edges: async track", view(slices[("track", 1, "req")]), [("req", 1000, 5000, {})])
    expect("edges: async instant", view(instants[("track", 1, "req")]), [("mark", 2000, None, {})])
    expect("edges: process instant", view(instants[("process", 1)]), [("pi", 2000, None, {})])
    expect("edges: global instant", view(instants[("track", None, "global instants")]), [("gi", 2000, None, {})])
    expect("edges: counters", {k: [(c["ts"], c["value"]) for c in v] for k, v in samples.items() if v},
           {("counter", 1, "mem hbm"): [(2000, 5)], ("counter", 1, "mem sram"): [(2000, 1.5)]})
    expect("edges: sub-ns rounding", view(slices[(1, 2)])[0], ("frac", 40001, 0, {}))
    marks = {x["name"]: (x["flows"], x["ends"]) for v in slices.values() for x in v if x["flows"] or x["ends"]}
    expect("edges: flow-bound slices", sorted(marks), ["k", "outer", "v2a", "v2b"])
    if sorted(marks) == ["k", "outer", "v2a", "v2b"]:
        expect("edges: v1 flow", (marks["outer"][0], marks["k"][1]) == (marks["outer"][0], marks["outer"][0]), True)
        expect("edges: v2 flow", (marks["v2a"][0], marks["v2b"][1]) == (marks["v2a"][0], marks["v2a"][0]), True)
        expect("edges: flows apart", marks["outer"][0] != marks["v2a"][0], True)
    # A ts before the merged trace's 0 cannot be a Perfetto timestamp: an error, no file.
    with open(rank, "w") as f:
        json.dump({"traceEvents": [{"ph": "X", "name": "early", "pid": 1, "tid": 1, "ts": -1, "dur": 1}]}, f)
    bad = os.path.join(tmp, "bad.pftrace")
    r = run(report, rank, "-o", bad, code=1)
    if "lies before the trace's 0" not in r.stderr or os.path.exists(bad):
        fail(f"edges: ts -1: {r.stderr!r}, file left: {os.path.exists(bad)}")


def part_tensor_parallel(report, data, tmp, program):
    ranks, straggler = 3, 2
    out_dir = os.path.join(tmp, "tp")
    cmd = [program, out_dir, "--ranks", str(ranks), "--layers", "2", "--tokens", "8",
           "--straggler", str(straggler), "--delay-us", "20000"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        fail(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr}")
        return
    files = sorted(f for f in os.listdir(out_dir) if f.endswith(".pt.trace.json"))
    expect("rank traces", len(files), ranks)
    inputs = {}
    for f in files:
        t = load(os.path.join(out_dir, f))
        inputs[t["distributedInfo"]["rank"]] = t
    out = os.path.join(tmp, "job.json.gz")
    if run(report, out_dir, "-o", out).returncode != 0:
        return
    doc = load(out)
    # The same job as a Perfetto trace holds the same (imports into the format's checker).
    pf_out = os.path.join(tmp, "job.pftrace")
    r = run(report, out_dir, "-o", pf_out)
    if r.returncode == 0:
        if "not in the Perfetto trace" in r.stderr:
            fail(f"tp job.pftrace: {r.stderr!r}")
        perfetto_agrees(doc, pf_out, "tp job.pftrace")
    base = min(t["baseTimeNanoseconds"] for t in inputs.values())
    expect("tp baseTimeNanoseconds", doc["baseTimeNanoseconds"], base)
    expect("tp distributedInfo", doc["distributedInfo"], {"backend": "ccom", "world_size": ranks,
                                                          "ranks": list(range(ranks))})
    ev = doc["traceEvents"]
    # Every rank's events, in its order, on its own pids (rank R: R*1000 + k), ts moved by its
    # base's lead over the earliest, exactly; then only the metadata merge adds.
    rank_of = lambda pid: pid // 1000
    extra = 0
    for rank, t in sorted(inputs.items()):
        mine = [e for e in ev if rank_of(e["pid"]) == rank]
        pids = {}
        for e in t["traceEvents"]:
            pids.setdefault(e["pid"], None)
        named = {e["pid"] for e in t["traceEvents"] if e.get("name") == "process_name"}
        sorted_ = {e["pid"] for e in t["traceEvents"] if e.get("name") == "process_sort_index"}
        extra_here = sum(p not in named for p in pids) + sum(p not in sorted_ for p in pids)
        extra += extra_here
        expect(f"rank {rank} event count", len(mine), len(t["traceEvents"]) + extra_here)
        shift = D(t["baseTimeNanoseconds"] - base) / 1000
        got = [(e["ph"], e["name"], e.get("ts")) for e in mine[:len(t["traceEvents"])]]
        want = [(e["ph"], e["name"], None if "ts" not in e else e["ts"] + shift) for e in t["traceEvents"]]
        expect(f"rank {rank} events and aligned ts", got, want)
        for e in mine:
            if e.get("name") == "process_name" and not e["args"]["name"].startswith(f"rank {rank}: "):
                fail(f"rank {rank}: process named {e['args']['name']!r}")
    expect("tp event count", len(ev), sum(len(t["traceEvents"]) for t in inputs.values()) + extra)
    # Each process named once and sorted once, sort index = pid, so ranks come in order.
    for kind in ("process_name", "process_sort_index"):
        per_pid = {}
        for e in ev:
            if e.get("ph") == "M" and e["name"] == kind:
                per_pid[e["pid"]] = per_pid.get(e["pid"], 0) + 1
        expect(f"tp {kind} per pid", per_pid, {p: 1 for p in {e["pid"] for e in ev}})
    expect("tp sort index = pid", [e["pid"] for e in ev if e.get("name") == "process_sort_index"],
           [e["args"]["sort_index"] for e in ev if e.get("name") == "process_sort_index"])
    # Flows never join two ranks.
    flows = {}
    for e in ev:
        if e.get("ph") in ("s", "t", "f"):
            flows.setdefault(e["id"], set()).add(rank_of(e["pid"]))
    if not flows or any(len(r) != 1 for r in flows.values()):
        fail(f"tp: flows across ranks: {[k for k, r in flows.items() if len(r) != 1]}")
    # One collective (by Seq) ends at one time on every rank, once their clocks are aligned
    # (each rank's base is the best of five bracketed clock reads: well within 1 us). Which rank
    # arrives last is the example's timing, checked by check_tensor_parallel.py, not here.
    ends = {}
    for e in ev:
        if e.get("ph") == "X" and e["name"].startswith("AllReduce"):
            ends.setdefault(e["args"]["Seq"], []).append(e["ts"] + e["dur"])
    expect("tp collectives", sorted(ends), [1, 2, 3])
    for seq, got in ends.items():
        if len(got) != ranks or max(got) - min(got) > 1:
            fail(f"tp: Seq {seq} ends at {got}: not one aligned time within 1 us on {ranks} ranks")
    # strata-report's table of the merged trace is the ranks' table, less the device's peaks
    # (otherData, a session's facts, is not carried over) and so MFU and MBU.
    tables = [table_json(report, out_dir), table_json(report, out)]
    if None not in tables:
        for t in tables:
            for key in ("peak_tflops", "peak_hbm_gbps"):
                t.pop(key)
            for row in t["rows"]:
                row.pop("mfu"), row.pop("mbu")
            # Rows come in the order their ops first appear: the ranks' files one after the
            # other, the merged trace's events interleaved by time. The rows themselves agree.
            t["rows"].sort(key=lambda r: (r["name"], r["input_shapes"], r["is_device"]))
        expect("tp key_averages of the merged trace", tables[1], tables[0])
    # check_trace's checks on every track: flows bound to slices in time order, slices nested,
    # events oldest first (a strata trace's ts keep their three decimals through the shift).
    per_thread = {}
    flow_events = {}
    for e in ev:
        if e["ph"] in ("s", "t", "f"):
            flow_events.setdefault(e["id"], []).append(e)
        elif e["ph"] != "M":
            x = dict(e)
            x["_ts"] = check_trace.ns(e["ts"])
            if e["ph"] == "X":
                x["_begin"], x["_end"] = x["_ts"], x["_ts"] + check_trace.ns(e["dur"])
            per_thread.setdefault((e["pid"], e["tid"]), []).append(x)
    check_trace.check_flows(flow_events, per_thread)
    for key, evs in per_thread.items():
        check_trace.check_oldest_first(key, evs)
        check_trace.check_nesting(key, [x for x in evs if x["ph"] == "X"])
    failures.extend(f"tp (check_trace): {m}" for m in check_trace.failures)


def rank_doc(rank=None, world=None, backend="nccl", base=None):
    doc = {"traceEvents": [{"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 2}]}
    if rank is not None:
        doc["distributedInfo"] = {"backend": backend, "rank": rank}
        if world is not None:
            doc["distributedInfo"]["world_size"] = world
    if base is not None:
        doc["baseTimeNanoseconds"] = base
    return doc


def part_bad(report, data, tmp):
    out_dir = os.path.join(tmp, "out")
    os.mkdir(out_dir)
    out = os.path.join(out_dir, "job.json")

    def case(name, files, want, code=1, args=(), output=out):
        """Merges the `files` (name: a doc, a str or bytes) in a directory of their own; the
        merge fails with `code` and every `want` on stderr, leaving nothing in out/ but what was
        there (an earlier job.json, unchanged)."""
        d = os.path.join(tmp, name)
        os.mkdir(d)
        for file, doc in files.items():
            mode = "wb" if isinstance(doc, bytes) else "w"
            with open(os.path.join(d, file), mode) as f:
                f.write(doc if isinstance(doc, (str, bytes)) else json.dumps(doc))
        with open(out, "w") as f:
            f.write("earlier")
        r = run(report, d, "-o", output, *args, code=code)
        for w in ([want] if isinstance(want, str) else want):
            if w not in r.stderr:
                fail(f"{name}: stderr {r.stderr!r}, expected {w!r}")
        expect(f"{name}: out/ afterwards", sorted(os.listdir(out_dir)), ["job.json"])
        expect(f"{name}: the earlier job.json", open(out).read(), "earlier")
        return r, d

    case("not_a_trace", {"a.json": {"displayTimeUnit": "ns"}}, ["a.json", "has no traceEvents array"])
    case("not_json", {"a.json": "hello"}, ["a.json", "is not valid JSON"])
    rank1 = open(os.path.join(data, "job", "rank1.json")).read()
    case("truncated", {"rank1.json": rank1[:len(rank1) // 2]}, ["rank1.json", "is not valid JSON"])
    gz = open(os.path.join(data, "job", "rank0.json.gz"), "rb").read()
    case("truncated_gz", {"rank0.json.gz": gz[:len(gz) // 2]}, ["rank0.json.gz", "its gzip data ends early"])
    case("mixed_world", {"a.json": rank_doc(0, 2), "b.json": rank_doc(1, 4)},
         ["a.json (world size 2)", "b.json (world size 4)", "are ranks of different jobs: give strata-report merge one job's"])
    case("mixed_backend", {"a.json": rank_doc(0, 2), "b.json": rank_doc(1, 2, backend="gloo")},
         ["a.json (backend 'nccl')", "b.json (backend 'gloo') are ranks of different jobs"])
    case("duplicate", {"a.json": rank_doc(1, 2), "b.json": rank_doc(1, 2)},
         ["a.json and", "b.json are both rank 1: merge takes one trace per rank"])
    case("rank_too_big", {"a.json": rank_doc(2, 2)}, "is rank 2 of a world of 2")
    case("two_without_info", {"a.json": rank_doc(), "b.json": rank_doc()},
         ["has no distributedInfo.rank: taken as rank 0", "(a file without distributedInfo is rank 0)"])
    case("bad_rank", {"a.json": '{"distributedInfo":{"rank":"one"},"traceEvents":[]}'},
         ["a.json", "distributedInfo.rank is not a count"])
    case("bad_base", {"a.json": '{"baseTimeNanoseconds":1.5,"traceEvents":[]}'},
         ["a.json", "baseTimeNanoseconds is not a whole number"])
    case("clocks", {"a.json": rank_doc(0, 2, base=1000), "b.json": rank_doc(1, 2)},
         ["b.json has no baseTimeNanoseconds but", "a.json has", "--no-align"])
    case("bad_utf8", {"a.json": b'{"traceEvents":[{"ph":"M","name":"process_name","pid":1,"args":{"name":"\xff"}}]}'},
         ["a.json", "not valid UTF-8"])
    # Rank 1's trace fails only as it is written (a ts to shift that is not a number): the
    # output written so far is removed, the earlier file stays.
    late = rank_doc(1, 2, base=2000)
    late["traceEvents"].append({"ph": "i", "name": "x", "pid": 1, "tid": 1, "ts": "soon"})
    case("late_failure", {"a.json": rank_doc(0, 2, base=1000), "b.json": late},
         ["b.json", "traceEvents[1]: ts is not a number of microseconds"])
    # A merge's own output among the traces.
    d = os.path.join(tmp, "remerge")
    os.mkdir(d)
    if run(report, os.path.join(data, "strata_job"), "-o", os.path.join(d, "job.json")).returncode == 0:
        r = run(report, d, "-o", os.path.join(tmp, "again.json"), code=1)
        if "is a merged job trace" not in r.stderr:
            fail(f"remerge: {r.stderr!r}")
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    r = run(report, empty, "-o", out, code=1)
    if "holds no trace files" not in r.stderr:
        fail(f"empty directory: {r.stderr!r}")
    r = run(report, os.path.join(tmp, "missing.json"), "-o", out, code=1)
    if "no such file" not in r.stderr:
        fail(f"missing trace: {r.stderr!r}")
    pf = os.path.join(tmp, "t.pftrace")
    with open(pf, "wb") as f:
        f.write(b"\x0a\x00")
    r = run(report, pf, "-o", out, code=1)
    if "Perfetto protobuf" not in r.stderr:
        fail(f"pftrace input: {r.stderr!r}")
    job = os.path.join(data, "strata_job")
    r = run(report, job, "-o", os.path.join(tmp, "no_such_dir", "job.json"), code=1)
    if "cannot write" not in r.stderr or "choose a writable output directory" not in r.stderr:
        fail(f"unwritable -o: {r.stderr!r}")
    # A file where the output directory should be: not writable whoever runs the test.
    blocker = os.path.join(tmp, "blocker")
    open(blocker, "w").close()
    r = run(report, job, "-o", os.path.join(blocker, "job.json"), code=1)
    if "cannot write" not in r.stderr:
        fail(f"-o under a file: {r.stderr!r}")
    # One trace without distributedInfo is rank 0 (HTA's rule), said on stderr.
    d = os.path.join(tmp, "alone")
    os.mkdir(d)
    with open(os.path.join(d, "a.json"), "w") as f:
        json.dump(rank_doc(), f)
    r = run(report, d, "-o", os.path.join(tmp, "alone.json"))
    if "taken as rank 0" not in r.stderr or "no trace has baseTimeNanoseconds" not in r.stderr:
        fail(f"alone: {r.stderr!r}")
    if r.returncode == 0:
        expect("alone distributedInfo", load(os.path.join(tmp, "alone.json"))["distributedInfo"], {"ranks": [0]})


def part_usage(report, data, tmp):
    job = os.path.join(data, "strata_job")
    r = run(report, "--help")
    if not r.stdout.startswith("usage: strata-report merge") or "--no-align" not in r.stdout:
        fail(f"merge --help: {r.stdout!r}")
    for args, want in (([job], "merge needs -o JOB.json"),
                       (["-o", os.path.join(tmp, "x.json")], "merge needs a TRACE"),
                       ([job, "-o"], "-o needs a file name"),
                       ([job, "--bogus", "-o", "x.json"], "unknown option '--bogus' for merge"),
                       ([job, "-o", "a.json", "-o", "b.json"], "give -o once"),
                       ([job, "-o", os.path.join(tmp, "job.txt")], "name the merged trace .json (Chrome trace JSON) or .pftrace"),
                       ([job, "-o", os.path.join(tmp, "job.json.txt")], "name the merged trace .json"),
                       ([job, "-o", os.path.join(job, "rank1.json")], "is one of the traces to merge")):
        r = run(report, *args, code=2)
        if want not in r.stderr or "usage: strata-report merge" not in r.stderr:
            fail(f"merge {args}: {r.stderr!r}, expected {want!r}")
    if os.listdir(tmp):
        fail(f"bad usage left {os.listdir(tmp)}")
    # The tool's own usage and help name the command.
    r = subprocess.run([report, "--help"], capture_output=True, text=True)
    if "strata-report merge TRACE... -o JOB.json|JOB.pftrace [--no-align]" not in r.stdout:
        fail(f"strata-report --help does not name merge: {r.stdout!r}")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    report, data, part = sys.argv[1], sys.argv[2], sys.argv[3]
    parts = {"strata": part_strata, "kineto": part_kineto, "ids": part_ids, "perfetto": part_perfetto,
             "perfetto_edges": part_perfetto_edges,
             "bad": part_bad, "usage": part_usage}
    with tempfile.TemporaryDirectory(prefix="strata-merge-") as tmp:
        if part == "tensor_parallel":
            if len(sys.argv) != 5:
                sys.exit(__doc__)
            part_tensor_parallel(report, data, tmp, sys.argv[4])
        elif part in parts:
            parts[part](report, data, tmp)
        else:
            sys.exit(__doc__)
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print(f"check_merge {part}: ok")


if __name__ == "__main__":
    main()
