#!/usr/bin/env python3
"""Runs tests/trace_writer and checks the trace it writes with a real JSON parser.

usage: check_trace.py WRITER MODE      (MODE: basic, hostile, empty, steps or spilled)
       check_trace.py PROGRAM example [ARGS...]  (runs an example with an output directory
                                        argument and ARGS, in a scratch working directory, and
                                        checks every trace it wrote)

Every mode checks the structure: the file is valid UTF-8 and valid JSON, metadata names the
process and every thread, each thread's events come oldest first, X events carry ts and dur
with nanosecond precision and nest properly per thread, counters carry args.value, and the totals agree with the events.
basic also compares the events with what the writer says it recorded (expect.json); hostile
checks that every name comes back exactly as written when it is valid UTF-8, and with one
U+FFFD per invalid byte otherwise (names.json lists the names as byte values). Every trace's
steps tracks (ProfilerStep#N slices of a schedule) must be well formed; steps checks that a
scope left open across step() crosses a step boundary on its thread's own track. spilled
checks a session read back from its spill file: every record there, none from an earlier one.
"""
import decimal
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict

failures = []


def fail(message):
    failures.append(message)


def ns(value):
    """A microsecond Decimal with three decimals as integer nanoseconds (no float error)."""
    if not isinstance(value, decimal.Decimal) or value.as_tuple().exponent != -3:
        raise ValueError(f"not a microsecond value with exactly three decimals: {value!r}")
    return int(value * 1000)


def reject_constant(name):
    raise ValueError(f"JSON has no {name}; the trace must not contain it")


def load_trace(path):
    raw = open(path, "rb").read()
    text = raw.decode("utf-8")  # strict: the trace must be valid UTF-8
    return json.loads(text, parse_float=decimal.Decimal, parse_constant=reject_constant)


def expected_text(data):
    """What the exporter must make of `data` (bytes): valid UTF-8 sequences unchanged, each
    byte that is not part of one replaced by U+FFFD. Independent of strata's own code: the
    validity of a candidate sequence is decided by Python's strict UTF-8 decoder."""
    out = []
    i = 0
    while i < len(data):
        b = data[i]
        n = 1 if b < 0x80 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4
        if b >= 0x80 and i + n <= len(data):
            try:
                out.append(data[i:i + n].decode("utf-8"))
                i += n
                continue
            except UnicodeDecodeError:
                pass
        out.append(chr(b) if b < 0x80 else "\ufffd")
        i += 1
    return "".join(out)


def check_structure(trace):
    for key in ("displayTimeUnit", "otherData", "strataThreads", "traceEvents"):
        if key not in trace:
            fail(f"top-level key {key} missing")
            return None
    if trace["displayTimeUnit"] != "ns":
        fail("displayTimeUnit is not ns")
    other = trace["otherData"]
    for key, kind in (("strata_version", str), ("clock_source", str), ("overflow_policy", str),
                      ("layers", str), ("buffer_capacity", int), ("recorded", int),
                      ("dropped", int), ("threads", int)):
        if not isinstance(other.get(key), kind):
            fail(f"otherData.{key} missing or not a {kind.__name__}")
    if other.get("overflow_policy") == "lossless":
        # A lossless session's memory: its limit, what it spilled, its peak.
        for key in ("memory_limit", "spilled", "spill_bytes", "peak_memory"):
            if not isinstance(other.get(key), int) or other[key] < 0:
                fail(f"otherData.{key} missing or not a count (a lossless session)")
        if other["spilled"] > other["recorded"]:
            fail("otherData.spilled exceeds the records kept")
        if other["spilled"] > 0 and other["spill_bytes"] < 32 * other["spilled"]:
            fail("otherData.spill_bytes is smaller than the spilled records")
        if "spill_error" in other and not isinstance(other["spill_error"], str):
            fail("otherData.spill_error is not a string")
    for key in ("session_start_us", "session_stop_us"):
        try:
            ns(other.get(key))
        except ValueError as e:
            fail(f"otherData.{key}: {e}")
    forced = os.environ.get("STRATA_CLOCK") == "steady_clock"
    if forced and other.get("clock_source") != "steady_clock":
        fail("STRATA_CLOCK=steady_clock but the trace says " + repr(other.get("clock_source")))
    if other.get("clock_source") == "steady_clock" and other.get("ns_per_tick") != 1:
        fail("steady_clock ticks are nanoseconds, but ns_per_tick is " + repr(other.get("ns_per_tick")))

    events = trace["traceEvents"]
    # The host process comes first; every other pid is a device core's (from 2^24 up), and each
    # process is named exactly once.
    process_names = [e for e in events if e.get("ph") == "M" and e.get("name") == "process_name"]
    if not process_names or events[0] is not process_names[0]:
        fail("the first event must name the host process")
        return None
    host_pid = process_names[0]["pid"]
    named = Counter(e["pid"] for e in process_names)
    for e in process_names:
        if not isinstance(e.get("args", {}).get("name"), str):
            fail(f"process_name without args.name: {e}")
    for pid in {e.get("pid") for e in events}:
        if named[pid] != 1:
            fail(f"pid {pid} is named {named[pid]} times, expected once")
        if pid != host_pid and not (isinstance(pid, int) and pid >= 1 << 24):
            fail(f"pid {pid} is neither the host's ({host_pid}) nor a device core's")
    thread_names, sort_index = {}, {}
    per_thread = defaultdict(list)
    flows = defaultdict(list)
    for e in events:
        ph = e.get("ph")
        for key in ("ph", "name", "pid", "tid"):
            if key not in e:
                fail(f"event without {key}: {e}")
        if ph in ("s", "t", "f"):
            flows[e.get("id")].append(e)
            continue
        if ph == "M":
            if e["name"] == "thread_name":
                thread_names[(e["pid"], e["tid"])] = e["args"]["name"]
            elif e["name"] == "thread_sort_index":
                sort_index[(e["pid"], e["tid"])] = e["args"]["sort_index"]
            continue
        per_thread[(e["pid"], e["tid"])].append(e)
        try:
            ts = ns(e.get("ts"))
        except ValueError as err:
            fail(f"event {e.get('name')!r}: ts: {err}")
            continue
        e["_ts"] = ts
        if ph == "X":
            try:
                dur = ns(e.get("dur"))
            except ValueError as err:
                fail(f"X event {e.get('name')!r}: dur: {err}")
                continue
            if dur < 0:
                fail(f"X event {e['name']!r} has a negative duration")
            e["_begin"], e["_end"] = ts, ts + dur
        elif ph == "i":
            if e.get("s") != "t":
                fail(f"instant {e['name']!r} is not thread-scoped")
        elif ph == "C":
            if "value" not in e.get("args", {}):
                fail(f"counter {e['name']!r} has no args.value")
            elif e["args"]["value"] is not None and not isinstance(e["args"]["value"], (int, decimal.Decimal)):
                fail(f"counter {e['name']!r} value is not a number or null")
        else:
            fail(f"unexpected phase {ph!r}")
        if forced and ts < ns(other["session_start_us"]):
            # steady_clock is one clock for all threads, so nothing precedes the session start.
            fail(f"event {e['name']!r} at {ts} ns precedes the session start")

    listed = {(t["pid"], t["tid"]): t for t in trace["strataThreads"]}
    if len(listed) != other.get("threads"):
        fail("otherData.threads disagrees with strataThreads")
    if sum(t["recorded"] for t in listed.values()) != other.get("recorded"):
        fail("otherData.recorded is not the sum of strataThreads' recorded")
    if sum(t["dropped"] for t in listed.values()) != other.get("dropped"):
        fail("otherData.dropped is not the sum of strataThreads' dropped")
    for tid, t in listed.items():
        if tid not in thread_names or tid not in sort_index:
            fail(f"thread {tid} lacks thread_name or thread_sort_index metadata")
        evs = per_thread.get(tid, [])
        lost = [e for e in evs if e.get("cat") == "strata"]
        records = [e for e in evs if e.get("cat") != "strata"]
        if len(records) != t["recorded"]:
            fail(f"thread {tid}: {len(records)} events but strataThreads says {t['recorded']}")
        if t["dropped"]:
            want = f"strata: {t['dropped']} records lost ({other.get('overflow_policy')})"
            if len(lost) != 1 or lost[0]["name"] != want or lost[0].get("args", {}).get("lost") != t["dropped"]:
                fail(f"thread {tid}: lost-records instant missing or wrong: {lost}")
        elif lost:
            fail(f"thread {tid} lost nothing but has a lost-records instant")
    for tid in per_thread:
        if tid not in listed:
            fail(f"events on thread {tid}, which strataThreads does not list")
    for tid, evs in per_thread.items():
        check_oldest_first(tid, [e for e in evs if e.get("cat") != "strata" and "_ts" in e])
        check_nesting(tid, [e for e in evs if e.get("ph") == "X" and "_begin" in e])
    check_steps_tracks(events, listed, per_thread, thread_names)
    check_flows(flows, per_thread)
    return per_thread, thread_names


def check_steps_tracks(events, listed, per_thread, thread_names):
    """A steps track (its thread_name metadata names the thread in args.steps_of) is that
    thread's, in the same process: tid 2^24 + the thread's tid, named after the thread, listed
    with the same steps_of in strataThreads, holding only ProfilerStep#N slices."""
    name_args = {(e["pid"], e["tid"]): e.get("args", {}) for e in events
                 if e.get("ph") == "M" and e.get("name") == "thread_name"}
    for key, args in name_args.items():
        if "steps_of" not in args:
            continue
        of = args["steps_of"]
        if not isinstance(of, int) or key[1] != (1 << 24) + of:
            fail(f"steps track {key}: tid is not 2^24 + steps_of ({of!r})")
            continue
        thread_name = thread_names.get((key[0], of), f"thread {of}")
        if args.get("name") != thread_name + " steps":
            fail(f"steps track {key} is named {args.get('name')!r}, not after its thread {thread_name!r}")
        if listed.get(key, {}).get("steps_of") != of:
            fail(f"steps track {key}: strataThreads does not give steps_of {of}")
        for x in per_thread.get(key, []):
            if x.get("cat") == "strata":
                continue
            if x.get("ph") != "X" or not x.get("name", "").startswith("ProfilerStep#"):
                fail(f"steps track {key} holds {x.get('ph')} {x.get('name')!r}, not a ProfilerStep#N slice")
    for key, t in listed.items():
        if "steps_of" in t and "steps_of" not in name_args.get(key, {}):
            fail(f"strataThreads lists {key} as a steps track, its thread_name metadata does not")


def check_steps(per_thread, thread_names):
    """steps mode: the main thread's scope left open across step() crosses a step boundary, on
    its own track, while the three steps lie on the main thread's steps track."""
    by_name = {name: key for key, name in thread_names.items()}
    if "main" not in by_name or "main steps" not in by_name:
        fail(f"steps: tracks {sorted(thread_names.values())}, expected main and main steps")
        return
    main, steps = by_name["main"], by_name["main steps"]
    if steps[1] != (1 << 24) + main[1]:
        fail(f"steps: the steps track's tid {steps[1]} is not 2^24 + main's {main[1]}")
    marks = [e for e in per_thread.get(steps, []) if e.get("ph") == "X"]
    if [e["name"] for e in marks] != ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"]:
        fail(f"steps: the steps track holds {[e['name'] for e in marks]}")
        return
    if any(e.get("name", "").startswith("ProfilerStep#") for e in per_thread.get(main, [])):
        fail("steps: a ProfilerStep#N slice on the main thread's own track")
    spanning = [e for e in per_thread.get(main, []) if e.get("name") == "spanning"]
    if len(spanning) != 1:
        fail(f"steps: {len(spanning)} spanning scopes on main, expected 1")
        return
    s = spanning[0]
    if not (s["_begin"] < marks[0]["_end"] and s["_end"] > marks[1]["_begin"]):
        fail("steps: the spanning scope does not cross the first step boundary")


def check_flows(flows, per_thread):
    """Each flow: one start, steps, one end, in time order, each bound to a slice that begins
    at the flow event's time on the same track (as Kineto binds them)."""
    for fid, evs in flows.items():
        phases = [e["ph"] for e in evs]
        if not isinstance(fid, int) or phases.count("s") != 1 or phases.count("f") != 1 or \
                phases[0] != "s" or phases[-1] != "f":
            fail(f"flow {fid!r}: phases {phases}, expected s, t..., f")
            continue
        times = [ns(e["ts"]) for e in evs]
        if times != sorted(times):
            fail(f"flow {fid}: events out of time order {times}")
        if evs[-1].get("bp") != "e":
            fail(f"flow {fid}: the end does not bind to its enclosing slice (bp: e)")
        for e in evs:
            starts = {x["_begin"] for x in per_thread.get((e["pid"], e["tid"]), []) if "_begin" in x}
            if ns(e["ts"]) not in starts:
                fail(f"flow {fid}: {e['ph']} at {e['ts']} on {(e['pid'], e['tid'])} binds to no slice")


def check_oldest_first(tid, evs):
    """A thread's events come oldest first (the format's promise; of events on one tick, in
    an order this check leaves alone, since distinct ticks may share a nanosecond)."""
    for a, b in zip(evs, evs[1:]):
        if b["_ts"] < a["_ts"]:
            fail(f"thread {tid}: {b['name']!r} at {b['_ts']} ns comes after {a['name']!r} at {a['_ts']} ns")
            return


def check_spilled(per_thread, thread_names, expect):
    """spilled mode: the main thread's records, most of them read back from the spill file,
    are all there (counts by name, counter values in order) and the scope opened in the
    earlier session is not."""
    by_name = {name: key for key, name in thread_names.items()}
    if "main" not in by_name:
        fail(f"spilled: no main thread among {sorted(thread_names.values())}")
        return
    evs = [e for e in per_thread.get(by_name["main"], []) if e.get("cat") != "strata"]
    got_x = dict(Counter(e["name"] for e in evs if e["ph"] == "X"))
    got_i = dict(Counter(e["name"] for e in evs if e["ph"] == "i"))
    got_c = defaultdict(list)
    for e in evs:
        if e["ph"] == "C":
            got_c[e["name"]].append(e["args"]["value"])
    if got_x != expect["X"]:
        fail(f"spilled: X events {got_x}, expected {expect['X']}")
    if got_i != expect["i"]:
        fail(f"spilled: instants {got_i}, expected {expect['i']}")
    if dict(got_c) != expect["C"]:
        fail("spilled: the counter's values are not 0, 1, 2, ... in order")
    if evs and evs[0]["name"] != "session":
        fail(f"spilled: the first event is {evs[0]['name']!r}, not the scope enclosing the others")


def check_nesting(tid, xs):
    """Any two X events of a thread are disjoint or one contains the other."""
    xs = sorted(xs, key=lambda e: (e["_begin"], -e["_end"]))
    stack = []
    for e in xs:
        while stack:
            top = stack[-1]
            if e["_end"] <= top["_end"]:
                break  # e lies within top (sorted: e does not begin before it)
            if top["_end"] <= e["_begin"]:
                stack.pop()  # disjoint: top is finished
                continue
            fail(f"thread {tid}: {e['name']!r} [{e['_begin']}, {e['_end']}] partially overlaps "
                 f"{top['name']!r} [{top['_begin']}, {top['_end']}]")
            return
        stack.append(e)


def check_basic(trace, per_thread, thread_names, expect):
    other = trace["otherData"]
    names = [e for e in trace["traceEvents"] if e.get("name") == "process_name"]
    if names and names[0]["args"]["name"] != expect["process_name"]:
        fail(f"process name {names[0]['args']['name']!r}")
    for key in ("buffer_capacity", "overflow_policy"):
        if other.get(key) != expect[key]:
            fail(f"otherData.{key} is {other.get(key)!r}, expected {expect[key]!r}")
    if other.get("layers") != "framework,runtime,device,user":
        fail(f"otherData.layers is {other.get('layers')!r}")
    by_name = {name: tid for tid, name in thread_names.items()}
    if sorted(by_name) != sorted(expect["threads"]):
        fail(f"threads {sorted(by_name)}, expected {sorted(expect['threads'])}")
        return
    listed = {(t["pid"], t["tid"]): t for t in trace["strataThreads"]}
    for name, want in expect["threads"].items():
        tid = by_name[name]
        evs = [e for e in per_thread.get(tid, []) if e.get("cat") != "strata"]
        got_x = Counter(e["name"] for e in evs if e["ph"] == "X")
        got_i = Counter(e["name"] for e in evs if e["ph"] == "i")
        got_c = defaultdict(list)
        for e in evs:
            if e["ph"] == "C":
                got_c[e["name"]].append(e["args"]["value"])
        if dict(got_x) != want["X"]:
            fail(f"{name}: X events {dict(got_x)}, expected {want['X']}")
        if dict(got_i) != want["i"]:
            fail(f"{name}: instants {dict(got_i)}, expected {want['i']}")
        if dict(got_c) != want["C"]:
            fail(f"{name}: counters {dict(got_c)}, expected {want['C']}")
        if listed[tid]["dropped"] != want["lost"]:
            fail(f"{name}: {listed[tid]['dropped']} lost, expected {want['lost']}")
        if listed[tid]["exited"] != want["exited"]:
            fail(f"{name}: exited is {listed[tid]['exited']}, expected {want['exited']}")
    # Device tracks live in the device core's process, named after the core.
    core_names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    for name in ("Tensor", "Scalar"):
        pid = by_name[name][0]
        if pid != (1 << 24) or core_names.get(pid) != "NeuronCore 0":
            fail(f"device track {name} is in pid {pid} named {core_names.get(pid)!r}")
    # Device timestamps (steady_clock ns) land inside the session, like the host's.
    start, stop = ns(other["session_start_us"]), ns(other["session_stop_us"])
    for name in ("Tensor", "Scalar"):
        for e in per_thread[by_name[name]]:
            if "_begin" in e and not (start <= e["_begin"] and e["_end"] <= stop):
                fail(f"device event {e['name']!r} at [{e['_begin']}, {e['_end']}] outside the session [{start}, {stop}]")
    # Correlation 7: op -> submit, then submit -> Tensor's and Scalar's first records.
    flows = defaultdict(list)
    for e in trace["traceEvents"]:
        if e.get("ph") in ("s", "t", "f"):
            flows[e["id"]].append((e["ph"], thread_names.get((e["pid"], e["tid"]))))
    want = {1: [("s", "main"), ("f", "main")], 2: [("s", "main"), ("f", "Tensor")],
            3: [("s", "main"), ("f", "Scalar")]}
    if dict(flows) != want:
        fail(f"flows {dict(flows)}, expected {want}")
    # The exception unwound inner before outer: inner lies within outer.
    w0 = [e for e in per_thread[by_name["worker 0"]] if e["ph"] == "X"]
    outer = [e for e in w0 if e["name"] == "throwing outer"]
    inner = [e for e in w0 if e["name"] == "throwing inner"]
    if outer and inner and not (outer[0]["_begin"] <= inner[0]["_begin"] and inner[0]["_end"] <= outer[0]["_end"]):
        fail("the scope the exception left first does not lie within the outer one")


def check_hostile(trace, thread_names, names):
    events = trace["traceEvents"]
    process = [e["args"]["name"] for e in events if e.get("name") == "process_name" and e.get("ph") == "M"]
    want_process = expected_text(bytes(names["process"]))
    if process != [want_process]:
        fail(f"process name {process!r}, expected {want_process!r}")
    want_threads = sorted(expected_text(bytes(n)) for n in names["threads"])
    if sorted(thread_names.values()) != want_threads:
        fail(f"thread names {sorted(thread_names.values())!r}, expected {want_threads!r}")
    if sorted(t["name"] for t in trace["strataThreads"]) != want_threads:
        fail("strataThreads names differ from the expected thread names")
    want_scopes = sorted(expected_text(bytes(n)) for n in names["scopes"])
    got_scopes = sorted(e["name"] for e in events if e.get("ph") == "X" and e["name"] != "hostile args")
    if got_scopes != want_scopes:
        missing = sorted(set(want_scopes) - set(got_scopes))
        extra = sorted(set(got_scopes) - set(want_scopes))
        fail(f"scope names differ: missing {missing!r}, unexpected {extra!r}")
    # Argument values go through the same escaping, inside args.
    want_notes = sorted(expected_text(bytes(n)) for n in names["args"])
    with_args = [e for e in events if e.get("ph") == "X" and e["name"] == "hostile args"]
    got_notes = sorted(e["args"]["note"] for e in with_args)
    if got_notes != want_notes:
        fail(f"argument values differ: got {len(got_notes)}, expected {len(want_notes)}; "
             f"first difference {next((g, w) for g, w in zip(got_notes + [None] * len(want_notes), want_notes) if g != w)!r}")
    for e in with_args:
        if e["args"].get("Input Dims") != [[1, 2], []] or e["args"].get("Input Names") != ["input", "note"]:
            fail(f"hostile args event with args {e['args']!r}")
    # Valid UTF-8 names must come back byte for byte.
    valid = 0
    for n in names["scopes"] + names["threads"] + [names["process"]]:
        raw = bytes(n)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        valid += 1
        if expected_text(raw) != text:
            fail(f"internal: the expectation changed a valid name {text!r}")
    if valid < 5:
        fail("the hostile name list should hold valid UTF-8 names too")


def self_test():
    """The expectation function itself, on cases worked out by hand."""
    cases = {
        b"plain": "plain",
        b"\xc3\xa9": "\u00e9",
        b"\xf4\x8f\xbf\xbf": "\U0010ffff",
        b"\xc0\x80": "\ufffd\ufffd",
        b"\xed\xa0\x80": "\ufffd" * 3,
        b"\xf4\x90\x80\x80": "\ufffd" * 4,
        b"\xe2\x82": "\ufffd\ufffd",
        b"\xe2\x82A": "\ufffd\ufffdA",
        b"\xc3\xc3\xa9": "\ufffd\u00e9",
        b"\x00\x1f\"\\": "\x00\x1f\"\\",
    }
    for raw, want in cases.items():
        if expected_text(raw) != want:
            fail(f"self-test: expected_text({raw!r}) = {expected_text(raw)!r}, not {want!r}")


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in ("basic", "hostile", "empty", "steps", "spilled", "example") or \
            (sys.argv[2] != "example" and len(sys.argv) != 3):
        print(__doc__, file=sys.stderr)
        return 2
    writer, mode = sys.argv[1], sys.argv[2]
    self_test()
    with tempfile.TemporaryDirectory(prefix="strata-check-") as tmp:
        if mode == "example":
            # Examples take an output directory; those that don't write to ./strata-out.
            out = os.path.join(tmp, "out")
            run = subprocess.run([os.path.abspath(writer), out] + sys.argv[3:], capture_output=True,
                                 text=True, cwd=tmp)
            trace_dir = out if os.path.isdir(out) else os.path.join(tmp, "strata-out")
        else:
            run = subprocess.run([writer, mode, tmp], capture_output=True, text=True)
            trace_dir = tmp
        if run.returncode != 0:
            print(f"{writer} {mode} failed ({run.returncode}):\n{run.stdout}{run.stderr}", file=sys.stderr)
            return 1
        if mode == "example":
            # An example writes trace.json, or one file per window, possibly in a folder per
            # implementation: every one of them is checked.
            paths = sorted(os.path.join(root, f) for root, _, files in os.walk(trace_dir)
                           for f in files if f.endswith(".json"))
            if not paths:
                print(f"{writer} wrote no trace under {trace_dir}", file=sys.stderr)
                return 1
            for path in paths:
                # trace.json, a window's, an on-demand capture's, or tensorboard_trace_handler's
                # <worker>.<time_ns>.pt.trace.json (a rank's trace)
                if not (os.path.basename(path) == "trace.json" or path.endswith(".pt.trace.json") or
                        os.path.basename(path).startswith(("trace_step", "ondemand-"))):
                    fail(f"unexpected file {path}")
                    continue
                try:
                    trace = load_trace(path)
                except (ValueError, UnicodeDecodeError) as e:
                    fail(f"{path} is not valid JSON: {e}")
                    continue
                if check_structure(trace) is not None and not trace["strataThreads"]:
                    fail(f"{path}: the example recorded no thread")
        else:
            try:
                trace = load_trace(os.path.join(trace_dir, "trace.json"))
            except (ValueError, UnicodeDecodeError) as e:
                print(f"trace.json is not valid JSON: {e}", file=sys.stderr)
                return 1
            checked = check_structure(trace)
            if checked is not None:
                per_thread, thread_names = checked
                if mode == "basic":
                    expect = json.load(open(os.path.join(tmp, "expect.json")))
                    check_basic(trace, per_thread, thread_names, expect)
                elif mode == "hostile":
                    names = json.load(open(os.path.join(tmp, "names.json")))
                    check_hostile(trace, thread_names, names)
                elif mode == "empty":
                    if trace["traceEvents"][1:] or trace["strataThreads"]:
                        fail("an empty session's trace holds events beyond the process name")
                elif mode == "steps":
                    check_steps(per_thread, thread_names)
                elif mode == "spilled":
                    expect = json.load(open(os.path.join(tmp, "expect.json")))
                    check_spilled(per_thread, thread_names, expect)
            leftovers = sorted(set(os.listdir(trace_dir)) - {"trace.json", "expect.json", "names.json"})
            if leftovers:
                fail(f"files left beside the trace: {leftovers}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if not failures:
        print(f"trace check ({mode}): ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
