#!/usr/bin/env python3
"""Runs tests/trace_writer with --all-formats and holds its Perfetto trace against the JSON trace
of the same session.

usage: check_perfetto_trace.py WRITER MODE      (MODE: basic, hostile, empty, device, steps, spilled or memory)

The .pftrace is decoded here, field by field, with the field numbers of Perfetto's public
.proto files (protos/perfetto/trace/...), independently of the C++ writer; `protoc
--decode_raw` must also accept it. The JSON trace (itself checked by check_trace.py against
hand-written expectations) must then agree with it on every track (process, name, order),
every slice (name, category, start and duration in ns, arguments, nesting), instant, counter
sample, flow and lost-record count. The .json.gz and .pftrace.gz files must decompress to the
plain files' exact bytes. device mode also checks that a NeuronCore shows every engine track
in a fixed order, used or not; steps mode that a thread's steps are a thread track of their own;
memory mode that memory events are counter tracks per device (Kineto's [memory] instants are
JSON only) with the totals worked out by hand.

Timestamps are converted to trace time the way trace_processor v58 does (class Clocks below:
src/trace_processor/importers/common/clock_tracker.cc, util/clock_synchronizer.cc,
importers/proto/proto_trace_reader.cc), and every clock a packet uses must be related to the
trace clock by ClockSnapshots: the clock of a packet's timestamp, and BOOTTIME, which
trace_processor takes as every proto file's own clock (otherwise it reports
clock_sync_unrelatable_clock_domains, or drops the events).
"""
import decimal
import gzip
import os
import struct
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_trace  # noqa: E402  (the JSON side: loading, expected_text)

failures = []


def fail(message):
    failures.append(message)


# --- protobuf wire format ---------------------------------------------------------------------

def fields(buf):
    """[(field number, wire type, value)]: varints as int, fixed64 as 8 raw bytes,
    length-delimited as bytes."""
    out, i = [], 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire} at byte {i}")
        if i > len(buf):
            raise ValueError("field runs past the end of its message")
        out.append((field, wire, value))
    return out


def varint(buf, i):
    shift = value = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def one(fs, number, default=None):
    got = [v for f, _, v in fs if f == number]
    if len(got) > 1:
        raise ValueError(f"field {number} repeated")
    return got[0] if got else default


def many(fs, number):
    return [v for f, _, v in fs if f == number]


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def fixed64(raw):
    return struct.unpack("<Q", raw)[0]


def double(raw):
    return struct.unpack("<d", raw)[0]


# --- Perfetto's messages (field numbers from protos/perfetto/trace/...) -----------------------

class Decoded:
    def __init__(self):
        self.tracks = {}            # uuid -> dict
        self.descriptors = {}       # uuid -> the TrackDescriptor's bytes
        self.events = defaultdict(list)  # track uuid -> [(ts, TrackEvent fields, interned, sequence)]
        self.root = None


BOOTTIME, MONOTONIC, TRACE_FILE = 6, 3, 11


class Clocks:
    """trace_processor v58's clock rules for a proto trace.

    - The trace clock starts as TRACE_FILE (the file's own timeline); a ClockSnapshot's
      primary_trace_clock sets it (and the default clock of packets that name none); a snapshot
      without one that holds BOOTTIME and not TRACE_FILE makes it BOOTTIME. It cannot change
      once a timestamp was converted.
    - A snapshot relates every pair of its clocks; clocks 64-127 are the sequence's own; only
      those may be incremental; the trace clock must not go back between snapshots of the same
      clocks; a clock that goes back stops being a source of conversions.
    - A packet's timestamp is on its timestamp_clock_id, else its sequence's defaults', else the
      default clock, else it is trace time already. Converting it needs a path of at most 4
      snapshots from its clock to the trace clock: otherwise the packet is dropped.
    - A proto file's own clock is BOOTTIME: at the first conversion BOOTTIME must be the trace
      clock or related to it, unless the trace clock is TRACE_FILE (then trace_processor
      assumes them aligned); otherwise clock_sync_unrelatable_clock_domains.
    """

    def __init__(self):
        self.trace_clock = TRACE_FILE
        self.default_clock = None
        self.converted = False
        self.edges = defaultdict(set)   # node -> {(node, snapshot key)}
        self.series = defaultdict(list)  # snapshot key -> [{node: ns}]
        self.incremental = {}           # node -> True/False
        self.last = {}                  # incremental node -> ns
        self.non_monotonic = set()

    @staticmethod
    def node(clock, seq):
        return (clock, seq if 64 <= clock < 128 else 0)

    def snapshot(self, seq, clocks, primary):
        if primary:
            if self.converted and primary != self.trace_clock:
                fail(f"sequence {seq}: a ClockSnapshot sets the trace clock to {primary} after timestamps were "
                     f"converted on clock {self.trace_clock} (trace_processor keeps the old one)")
            elif not self.converted:
                self.trace_clock = self.default_clock = primary
        elif any(c == BOOTTIME for c, *_ in clocks) and not any(c == TRACE_FILE for c, *_ in clocks):
            if not self.converted:
                self.trace_clock = self.default_clock = BOOTTIME
        values = {}
        for clock, ts, incremental in clocks:
            n = self.node(clock, seq)
            if n in values:
                fail(f"sequence {seq}: clock {clock} twice in one ClockSnapshot (invalid_clock_snapshots)")
                return
            if incremental and not 64 <= clock < 128:
                fail(f"sequence {seq}: builtin clock {clock} marked incremental (invalid_clock_snapshots)")
                return
            if self.incremental.setdefault(n, incremental) != incremental:
                fail(f"sequence {seq}: clock {clock} changes is_incremental (invalid_clock_snapshots)")
                return
            values[n] = ts
        key = frozenset(values)
        if self.series[key]:
            previous = self.series[key][-1]
            for n, ts in values.items():
                if ts < previous[n]:
                    if n[0] == self.trace_clock and n[1] == 0:
                        fail(f"sequence {seq}: the trace clock {n[0]} goes back between snapshots (invalid_clock_snapshots)")
                        return
                    self.non_monotonic.add(n)
                    self.edges[n] = set()
        self.series[key].append(values)
        for n in values:
            if n in self.incremental and self.incremental[n]:
                self.last[n] = values[n]
            for m in values:
                if m != n and n not in self.non_monotonic:
                    self.edges[n].add((m, key))

    def path(self, src, dst):
        """The snapshot hops from src to dst (breadth first, at most 4), or None."""
        if src == dst:
            return []
        queue = [(src, [])]
        while queue:
            n, hops = queue.pop(0)
            if len(hops) >= 4:
                continue
            for m, key in sorted(self.edges[n], key=repr):
                if m == dst:
                    return hops + [(n, m, key)]
                queue.append((m, hops + [(n, m, key)]))
        return None

    def convert(self, seq, clock, ts, where):
        """ts on `clock` as trace time, or None (trace_processor drops the packet)."""
        target = (self.trace_clock, 0)
        if not self.converted:
            self.converted = True
            # The file's own clock, bridged to trace time at the first conversion.
            if self.trace_clock not in (BOOTTIME, TRACE_FILE) and self.path((BOOTTIME, 0), target) is None:
                fail(f"clock_sync_unrelatable_clock_domains: no ClockSnapshot relates BOOTTIME ({BOOTTIME}), "
                     f"the proto file's own clock, to the trace clock {self.trace_clock}")
        n = self.node(clock, seq)
        if self.incremental.get(n):
            self.last[n] += ts
            ns = self.last[n]
        else:
            ns = ts
        hops = self.path(n, target)
        if hops is None:
            fail(f"{where}: clock {clock} is related to the trace clock {self.trace_clock} by no ClockSnapshot "
                 f"(clock_sync_failure): trace_processor drops the packet")
            return None
        for a, b, key in hops:
            series = self.series[key]
            pick = series[0]
            for values in series:
                if values[a] <= ns:
                    pick = values
            ns += pick[b] - pick[a]
        return ns


def decode(raw):
    """Trace (trace.proto) -> tracks and events with absolute timestamps."""
    d = Decoded()
    d.clocks = clocks = Clocks()
    sequences = {}  # id -> {"interned": {table: {iid: name}}, "track": uuid, "clock": id}
    for f, wire, packet in fields(raw):
        if f != 1 or wire != 2:
            raise ValueError(f"Trace holds field {f}, expected only packets (1)")
        p = fields(packet)
        seq = one(p, 10)                                   # trusted_packet_sequence_id
        descriptor = one(p, 60)                            # track_descriptor
        if descriptor is not None:
            t = fields(descriptor)
            uuid = one(t, 1)
            if uuid == 0:
                d.root = {"process_ordering": one(t, 19), "thread_ordering": one(t, 20)}
                continue
            # A track described again with the same fields is the same track to trace_processor
            # (a file written by several threads describes a shared counter track in each).
            if uuid in d.descriptors:
                if d.descriptors[uuid] != descriptor:
                    fail(f"track {uuid} described twice, differently")
                continue
            d.descriptors[uuid] = descriptor
            track = {"uuid": uuid, "parent": one(t, 5), "name": text(one(t, 2)), "rank": one(t, 12),
                     "child_ordering": one(t, 11), "counter": one(t, 8) is not None}
            process, thread = one(t, 3), one(t, 4)
            if process is not None:
                pf = fields(process)
                track["pid"], track["process_name"] = one(pf, 1), text(one(pf, 6))
            if thread is not None:
                tf = fields(thread)
                track["pid"], track["tid"], track["thread_name"] = one(tf, 1), one(tf, 2), text(one(tf, 5))
            d.tracks[uuid] = track
            continue
        if seq is None:
            fail("a packet other than a track descriptor has no trusted_packet_sequence_id")
            continue
        flags = one(p, 13, 0)                              # sequence_flags
        if flags & 1:                                      # SEQ_INCREMENTAL_STATE_CLEARED
            sequences[seq] = {"interned": defaultdict(dict), "track": None, "clock": None}
        state = sequences.get(seq)
        if state is None:
            fail(f"sequence {seq} used before its incremental state was cleared")
            continue
        defaults = one(p, 59)                              # trace_packet_defaults
        if defaults is not None:
            df = fields(defaults)
            state["clock"] = one(df, 58)
            ted = one(df, 11)
            state["track"] = one(fields(ted), 11) if ted is not None else None
        interned = one(p, 12)                              # interned_data
        if interned is not None:
            for table, entry in ((t, e) for t, _, e in fields(interned)):
                ef = fields(entry)
                iid, name = one(ef, 1), text(one(ef, 2))
                old = state["interned"][table].get(iid)
                if old is not None and old != name:
                    fail(f"sequence {seq}: iid {iid} of table {table} re-interned as another string")
                state["interned"][table][iid] = name
        snapshot = one(p, 6)                               # clock_snapshot
        if snapshot is not None:
            sf = fields(snapshot)
            clock_list = []
            for c in many(sf, 1):
                cf = fields(c)
                if one(cf, 4, 1) != 1:
                    fail(f"sequence {seq}: clock {one(cf, 1)} has a unit other than ns")
                clock_list.append((one(cf, 1), one(cf, 2, 0), bool(one(cf, 3, 0))))
            if not any(c == 64 and incremental for c, _, incremental in clock_list):
                fail(f"sequence {seq}: clock 64 is not an incremental clock of the snapshot: {clock_list}")
            clocks.snapshot(seq, clock_list, one(sf, 2))
            continue
        event = one(p, 11)                                 # track_event
        if event is None:
            fail(f"sequence {seq}: a packet with neither track event nor descriptor nor snapshot")
            continue
        if state["clock"] != 64 or one(p, 58) is not None:
            fail(f"sequence {seq}: an event not timed on the sequence's incremental clock")
            continue
        ts = one(p, 8)                                     # timestamp (a delta on clock 64)
        if ts is None:
            fail(f"sequence {seq}: an event without a timestamp")
            continue
        ts = clocks.convert(seq, state["clock"], ts, f"sequence {seq}")
        if ts is None:
            continue
        ef = fields(event)
        uuid = one(ef, 11, state["track"])                 # track_uuid, else the default
        d.events[uuid].append((ts, ef, state["interned"], seq))
        # Counter samples carried by the event (extra_counter_track_uuids and _values, and
        # their double twins): trace_processor adds each to its track at the event's time.
        for uuids, values, wire in ((31, 12, 0), (45, 46, 1)):
            us, vs = many(ef, uuids), many(ef, values)
            if len(us) != len(vs):
                fail(f"sequence {seq}: {len(us)} extra counter tracks for {len(vs)} values")
            for u, v in zip(us, vs):
                sample = [(9, 0, 4), (30, 0, v)] if wire == 0 else [(9, 0, 4), (44, 1, v)]
                d.events[u].append((ts, sample, state["interned"], seq))
    return d


def text(raw):
    if raw is None:
        return None
    return raw.decode("utf-8")  # strict: names must be valid UTF-8


def annotation_value(af, interned):
    """A DebugAnnotation (debug_annotation.proto) as a Python value."""
    for number, kind in ((2, "bool"), (3, "uint"), (4, "int"), (5, "double"), (6, "string"), (9, "json")):
        v = one(af, number)
        if v is None:
            continue
        if kind == "bool":
            return bool(v)
        if kind == "uint":
            return v
        if kind == "int":
            return signed(v)
        if kind == "double":
            return double(v)
        if kind == "string":
            return text(v)
        return None if text(v) == "null" else ("json", text(v))
    arrays = many(af, 12)
    if arrays:
        return [annotation_value(fields(a), interned) for a in arrays]
    entries = many(af, 11)
    if entries:
        return {text(one(fields(e), 10)): annotation_value(fields(e), interned) for e in entries}
    return []  # a name without a value: an empty array


def event_view(ts, ef, interned):
    """(type, name, category, args, flow ids, terminating flow ids, counter value)."""
    name_iid = one(ef, 10)
    name = interned[2].get(name_iid) if name_iid is not None else text(one(ef, 23))
    if name_iid is not None and name is None:
        fail(f"event name iid {name_iid} was never interned on its sequence")
    cats = [interned[1].get(c) for c in many(ef, 3)]
    if None in cats:
        fail("a category iid was never interned on its sequence")
    args = {}
    for a in many(ef, 4):
        af = fields(a)
        key = interned[3].get(one(af, 1))
        if key is None:
            fail("an annotation name iid was never interned on its sequence")
        args[key] = annotation_value(af, interned)
    value = one(ef, 30)
    value = signed(value) if value is not None else (double(one(ef, 44)) if one(ef, 44) is not None else None)
    return {"type": one(ef, 9), "ts": ts, "name": name, "cat": cats[0] if len(cats) == 1 else cats,
            "args": args, "flows": flow_ids(ef, 47, 36), "ends": flow_ids(ef, 48, 42), "value": value}


def flow_ids(ef, new, old):
    """A TrackEvent's flow ids as trace_processor reads them: the fixed64 field if present, else
    the varint field of the same meaning (flow_ids_old, terminating_flow_ids_old)."""
    if many(ef, new):
        return [fixed64(v) for v in many(ef, new)]
    return many(ef, old)


def in_time_order(events, where):
    """A slice track's events as trace_processor reads them, by time. A long track is written as
    several sequences (spans) that may interleave in the file: each must lie wholly after the
    one before it in time (no slice open across a cut, no two at one instant), so that the
    order of equal timestamps never depends on how the file interleaves them."""
    by_sequence = defaultdict(list)
    for e in events:
        by_sequence[e[3]].append(e)
    spans = sorted(by_sequence.values(), key=lambda evs: evs[0][0])
    for before, after in zip(spans, spans[1:]):
        if max(e[0] for e in before) >= after[0][0]:
            fail(f"{where}: sequences {before[0][3]} and {after[0][3]} overlap in time "
                 f"(to {max(e[0] for e in before)} and from {after[0][0]})")
    return [e for evs in spans for e in evs]


def slices_of(events, where):
    """Slices from BEGIN/END pairs (a stack per track), instants and counter samples."""
    slices, instants, counters, stack = [], [], [], []
    last = None
    for ts, ef, interned, _ in events:
        e = event_view(ts, ef, interned)
        # A counter track is shared by the threads of a process, each writing its samples on
        # its own sequence, so its samples interleave in file order (trace_processor sorts
        # them); slices and instants come from one sequence and must be in time order.
        if e["type"] != 4:
            if last is not None and ts < last:
                fail(f"{where}: events out of time order")
            last = ts
        if e["type"] == 1:
            e["depth"] = len(stack)
            stack.append(e)
        elif e["type"] == 2:
            if not stack:
                fail(f"{where}: a slice end with no slice open")
                continue
            b = stack.pop()
            b["dur"] = ts - b["ts"]
            slices.append(b)
        elif e["type"] == 3:
            instants.append(e)
        elif e["type"] == 4:
            counters.append(e)
        else:
            fail(f"{where}: event of type {e['type']}")
    if stack:
        fail(f"{where}: {len(stack)} slices never ended")
    return slices, instants, counters


# --- the comparison with the JSON trace -------------------------------------------------------

def plain(v):
    """JSON values (Decimal floats) and Perfetto values in one comparable form."""
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def compare(trace, d, mode):
    events = trace["traceEvents"]
    host_pid = events[0]["pid"]
    # Tracks: JSON (pid, tid) -> name and sort index; Perfetto tracks by (pid, name).
    process_names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    if "distributedInfo" in trace:  # a rank's processes are named after it in the protobuf
        rank = trace["distributedInfo"]["rank"]
        process_names = {pid: f"rank {rank}: {name}" for pid, name in process_names.items()}
    thread_names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    sort_index = {(e["pid"], e["tid"]): e["args"]["sort_index"] for e in events if e.get("name") == "thread_sort_index"}
    process_order = {e["pid"]: e["args"]["sort_index"] for e in events if e.get("name") == "process_sort_index"}
    if d.root != {"process_ordering": 1, "thread_ordering": 1}:
        fail(f"root track descriptor {d.root}: processes and threads should be ordered explicitly")

    processes = {t["pid"]: t for t in d.tracks.values() if "process_name" in t}
    if {p: t["process_name"] for p, t in processes.items()} != process_names:
        fail(f"processes {[(p, t['process_name']) for p, t in processes.items()]}, JSON has {process_names}")
    for pid, t in processes.items():
        if t["rank"] != process_order.get(pid, 0):
            fail(f"process {pid} has rank {t['rank']}, JSON sort index {process_order.get(pid, 0)}")
    key_of = {}  # Perfetto uuid -> JSON (pid, tid)
    by_name = {(pid, name): key for key, name in thread_names.items() for pid in [key[0]]}
    for uuid, t in d.tracks.items():
        if "tid" in t:
            key = (t["pid"], t["tid"])
            if t["pid"] != host_pid or thread_names.get(key) != t["thread_name"]:
                fail(f"thread track {key} named {t['thread_name']!r}; JSON: {thread_names.get(key)!r}")
        elif t["parent"] is not None and d.tracks.get(t["parent"], {}).get("name") == "engines":
            group = d.tracks[t["parent"]]
            pid = d.tracks[group["parent"]]["pid"]
            if group["child_ordering"] != 3:
                fail(f"the engines track of {pid} does not order its children explicitly")
            key = by_name.get((pid, t["name"]))
            if key is None:
                fail(f"device track {t['name']!r} of {pid} is not in the JSON trace")
                continue
        else:
            continue
        key_of[uuid] = key
        if t["rank"] != sort_index.get(key):
            fail(f"track {key} ranked {t['rank']}, JSON sort index {sort_index.get(key)}")
    if sorted(key_of.values()) != sorted(thread_names):
        fail(f"tracks {sorted(key_of.values())}, JSON threads {sorted(thread_names)}")

    # Events per track.
    json_x, json_i = defaultdict(list), defaultdict(list)
    json_c = defaultdict(list)
    for e in events:
        key = (e.get("pid"), e.get("tid"))
        if e.get("ph") == "X":
            json_x[key].append(e)
        elif e.get("ph") == "i" and e.get("name") != "[memory]":  # the Perfetto trace has counters only
            json_i[key].append(e)
        elif e.get("ph") == "C":
            json_c[(e["pid"], e["name"])].append(e)
    pf_slices, pf_counters = {}, defaultdict(list)
    counter_tracks = {uuid: t for uuid, t in d.tracks.items() if t["counter"]}
    for uuid, evs in d.events.items():
        where = key_of.get(uuid, uuid)
        if uuid not in counter_tracks:
            evs = in_time_order(evs, where)
        slices, instants, counters = slices_of(evs, where)
        if uuid in counter_tracks:
            if slices or instants:
                fail(f"counter track {uuid} holds slices or instants")
            parent = d.tracks[counter_tracks[uuid]["parent"]]
            pf_counters[(parent["pid"], counter_tracks[uuid]["name"])] += counters
            continue
        if uuid not in key_of:
            fail(f"events on track {uuid}, which is no thread or device track")
            continue
        pf_slices[where] = (slices, instants)
        for c in counters:
            fail(f"{where}: a counter sample on a slice track")

    def x_key(name, cat, ts, dur, args):
        return (name, cat, ts, dur, repr(sorted((k, plain(v)) for k, v in args.items())))

    for key in thread_names:
        slices, instants = pf_slices.get(key, ([], []))
        want = Counter(x_key(e["name"], e["cat"], check_trace.ns(e["ts"]), check_trace.ns(e["dur"]), e.get("args", {}))
                       for e in json_x[key])
        got = Counter(x_key(s["name"], s["cat"], s["ts"], s["dur"], s["args"]) for s in slices)
        if want != got:
            fail(f"{thread_names[key]!r}: slices differ: only in JSON {list((want - got).elements())[:3]}, "
                 f"only in Perfetto {list((got - want).elements())[:3]}")
        want_i = Counter(x_key(e["name"], e["cat"], check_trace.ns(e["ts"]), 0, e.get("args", {})) for e in json_i[key])
        got_i = Counter(x_key(s["name"], s["cat"], s["ts"], 0, s["args"]) for s in instants)
        if want_i != got_i:
            fail(f"{thread_names[key]!r}: instants differ: JSON {sorted(want_i)[:3]}, Perfetto {sorted(got_i)[:3]}")
        # Nesting: a slice's depth is the number of slices of its track that contain it.
        for s in slices:
            enclosing = sum(1 for o in slices if o is not s and o["ts"] <= s["ts"] and s["ts"] + s["dur"] <= o["ts"] + o["dur"]
                            and (o["ts"], -o["dur"]) < (s["ts"], -s["dur"]))
            if enclosing != s["depth"]:
                fail(f"{thread_names[key]!r}: {s['name']!r} at depth {s['depth']} lies within {enclosing} slices")
    # A counter track's samples as trace_processor orders them: by time (the samples of several
    # threads, written on sequences of their own, interleave in the file in no set order).
    samples = lambda v: sorted(v, key=lambda c: (c[0], repr(c[1])))
    want_c = {k: samples([(check_trace.ns(e["ts"]), plain(e["args"]["value"])) for e in v]) for k, v in json_c.items()}
    got_c = {k: samples([(c["ts"], None if c["value"] != c["value"] or abs(c["value"]) == float("inf") else c["value"])
                         for c in v]) for k, v in pf_counters.items()}
    if want_c != got_c:
        fail(f"counters differ: JSON {sorted(want_c)}, Perfetto {sorted(got_c)}")

    # Flows: each as its chain of (track, slice start) in order.
    json_flows = defaultdict(list)
    for e in events:
        if e.get("ph") in ("s", "t", "f"):
            json_flows[e["id"]].append((e["ph"], (e["pid"], e["tid"]), check_trace.ns(e["ts"])))
    pf_flows = defaultdict(list)
    for key, (slices, _) in pf_slices.items():
        for s in slices:
            for fid in s["flows"]:
                pf_flows[fid].append(("s", key, s["ts"]))
            for fid in s["ends"]:
                pf_flows[fid].append(("f", key, s["ts"]))
    in_order = lambda v: sorted(v, key=lambda x: (x[2], x[0] == "f"))
    chains = lambda flows: sorted(tuple((k, t) for _, k, t in in_order(v)) for v in flows.values())
    # An id is free again once a flow ends with it (trace_processor reads the points in time
    # order): the writer reuses ids, so the Perfetto chains are split at each end.
    pf_chains = defaultdict(list)
    for fid, points in pf_flows.items():
        n = 0
        for p in in_order(points):
            pf_chains[(fid, n)].append(p)
            n += p[0] == "f"
        if points and in_order(points)[-1][0] != "f":
            fail(f"Perfetto flow {fid} does not end")
    if chains(json_flows) != chains(pf_chains):
        fail(f"flows differ: JSON {chains(json_flows)[:3]}, Perfetto {chains(pf_chains)[:3]}")
    return thread_names, pf_slices


def check_device(trace, d, thread_names):
    """Every engine of NeuronCore 0 (trn1: 16 DMA queues) is a named track, in a fixed order."""
    want = ["Kernel", "Tensor", "Vector", "Scalar", "GpSimd"] + [f"DMA queue {q}" for q in range(16)]
    sort_index = {(e["pid"], e["tid"]): e["args"]["sort_index"] for e in trace["traceEvents"]
                  if e.get("name") == "thread_sort_index"}
    device = sorted((sort_index[k], name) for k, name in thread_names.items() if k[0] == 1 << 24)
    if [n for _, n in device] != want:
        fail(f"JSON device tracks in order {[n for _, n in device]}, expected {want}")
    engines = [t for t in d.tracks.values() if t["name"] == "engines"]
    if len(engines) != 1:
        fail(f"{len(engines)} engine groups, expected 1")
        return
    children = sorted((t["rank"], t["name"]) for t in d.tracks.values() if t["parent"] == engines[0]["uuid"])
    if [n for _, n in children] != want:
        fail(f"Perfetto engine tracks in rank order {[n for _, n in children]}, expected {want}")
    tensor = [e for e in trace["traceEvents"] if thread_names.get((e.get("pid"), e.get("tid"))) == "Tensor"
              and e.get("ph") == "X"]
    if tensor:
        fail("the softmax-like kernel used the Tensor engine; the check needs an idle engine")


def check_work(trace, slices):
    """FLOPs and bytes: a scope's count and a kernel execution's work are args in the JSON and
    debug annotations in Perfetto; the core's peaks are in otherData."""
    want = {"aten::mm": {"flops": 1024}, "softmax_kernel": {"flops": 0, "bytes": 2 * 128 * 64 * 4}}
    for name, args in want.items():
        js = [e.get("args", {}) for e in trace["traceEvents"] if e.get("name") == name and e.get("ph") == "X"]
        pf = [s["args"] for track, _ in slices.values() for s in track if s["name"] == name]
        for side, found in (("JSON", js), ("Perfetto", pf)):
            if len(found) != 1 or any(found[0].get(k) != v for k, v in args.items()):
                fail(f"{side}: {name} has args {found}, expected {args}")
    other = trace.get("otherData", {})
    if other.get("peak_tflops") != 95 or other.get("peak_hbm_gbps") != 410:
        fail(f"otherData peaks {other.get('peak_tflops')}, {other.get('peak_hbm_gbps')}: expected trn1's 95, 410")


def check_steps(d):
    """The main thread's steps are a thread track of their own in the host process, tid
    2^24 + main's, so that main's scope left open across step() is whole on main's track."""
    threads = {t["thread_name"]: t for t in d.tracks.values() if "tid" in t}
    if "main" not in threads or "main steps" not in threads:
        fail(f"thread tracks {sorted(threads)}, expected main and main steps")
        return
    main, steps = threads["main"], threads["main steps"]
    if steps["pid"] != main["pid"] or steps["tid"] != (1 << 24) + main["tid"]:
        fail(f"the steps track is pid {steps['pid']} tid {steps['tid']}, main is {main['pid']} {main['tid']}")


def check_hostile(d, names):
    """Names come back as the JSON shows them: valid UTF-8 unchanged, U+FFFD per invalid byte."""
    want_threads = sorted(check_trace.expected_text(bytes(n)) for n in names["threads"])
    got = sorted(t["thread_name"] for t in d.tracks.values() if "tid" in t)
    if got != want_threads:
        fail(f"thread names {got!r}, expected {want_threads!r}")
    want_process = check_trace.expected_text(bytes(names["process"]))
    got_process = [t["process_name"] for t in d.tracks.values() if "process_name" in t]
    if got_process != [want_process]:
        fail(f"process names {got_process!r}, expected {[want_process]!r}")


def check_memory(trace, d):
    """trace_writer memory: the [memory] instants of the JSON and the counter tracks of both."""
    events = trace["traceEvents"]
    memory = [e["args"] for e in events if e.get("name") == "[memory]"]
    got = [(a["Device Type"], a["Device Id"], a["Bytes"], a["Total Allocated"], a["Total Reserved"]) for a in memory]
    # In time order: the unpaired free and the reservations make no instant.
    want = [(0, -1, 100, 100, 0), (20, 0, 1000, 1000, 1 << 20), (0, -1, 200, 300, 0), (0, -1, -100, 200, 0),
            (20, 1, 64, 64, 0), (20, 0, -1000, 0, 1 << 20)]
    if got != want:
        fail(f"[memory] instants {got}, want {want}")
    other = trace["otherData"]
    if (other.get("memory_unpaired_frees"), other.get("memory_leaks"), other.get("memory_leaked_bytes")) != (1, 2, 264):
        fail(f"otherData memory facts {other}")
    names = {t["name"]: uuid for uuid, t in d.tracks.items() if t["counter"]}
    values = lambda name: [c["value"] for c in slices_of(d.events.get(names.get(name), []), name)[2]]
    expected = {"Allocated CPU": [100, 300, 200], "Allocated NEURON:0": [1000, 0], "Allocated NEURON:1": [64],
                "Reserved NEURON:0": [1 << 20, 0]}
    for name, want_values in expected.items():
        if values(name) != want_values:
            fail(f"Perfetto counter {name!r}: {values(name)}, want {want_values}")


def sequences(d):
    """How many packet sequences carry events in `d`."""
    return len({e[3] for evs in d.events.values() for e in evs})


def decoded(files, name):
    """The Perfetto file `name` decoded, or None (a failure) if it does not decode."""
    try:
        return decode(files[name])
    except (ValueError, UnicodeDecodeError) as e:
        fail(f"{name} does not decode: {e}")
        return None


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("basic", "hostile", "empty", "device", "steps", "spilled", "memory"):
        print(__doc__, file=sys.stderr)
        return 2
    writer, mode = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="strata-perfetto-") as tmp:
        run = subprocess.run([writer, mode, tmp, "--all-formats"], capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{writer} {mode} failed ({run.returncode}):\n{run.stdout}{run.stderr}", file=sys.stderr)
            return 1
        files = {f: open(os.path.join(tmp, f), "rb").read()
                 for f in ("trace.json", "trace.pftrace", "trace.json.gz", "trace.pftrace.gz", "trace.threads.pftrace",
                           "trace.spans.pftrace")}
        for plain_name in ("trace.json", "trace.pftrace"):
            if gzip.decompress(files[plain_name + ".gz"]) != files[plain_name]:
                fail(f"{plain_name}.gz does not decompress to {plain_name}")
        raw = subprocess.run(["protoc", "--decode_raw"], input=files["trace.pftrace"], capture_output=True)
        if raw.returncode != 0:
            fail(f"protoc --decode_raw rejects trace.pftrace: {raw.stderr.decode(errors='replace')}")
        trace = check_trace.load_trace(os.path.join(tmp, "trace.json"))
        d = decoded(files, "trace.pftrace")
        if d is not None:
            # A profiler's session knows BOOTTIME, so its trace clock is MONOTONIC: steady_clock,
            # the clock of the JSON's ts.
            if d.clocks.trace_clock != MONOTONIC and mode != "empty":
                fail(f"the trace clock is {d.clocks.trace_clock}, expected CLOCK_MONOTONIC ({MONOTONIC})")
            thread_names, slices = compare(trace, d, mode)
            if mode == "hostile":
                check_hostile(d, check_trace.json.load(open(os.path.join(tmp, "names.json"))))
            elif mode == "device":
                check_device(trace, d, thread_names)
                check_work(trace, slices)
            elif mode == "steps":
                check_steps(d)
            elif mode == "memory":
                check_memory(trace, d)
            elif mode == "basic":
                lost = [e for e in trace["traceEvents"] if e.get("cat") == "strata"]
                if not lost:
                    fail("the basic session should have lost records to check")
            # The same session written by three threads: the same tracks, events and flows.
            threaded = decoded(files, "trace.threads.pftrace")
            if threaded is not None:
                compare(trace, threaded, mode)
            # And with its long tracks cut into spans of a few records, written as sequences
            # of their own by three threads: the same again.
            spans = decoded(files, "trace.spans.pftrace")
            if spans is not None:
                compare(trace, spans, mode)
                if mode in ("basic", "steps") and sequences(spans) <= sequences(d):
                    fail(f"trace.spans.pftrace has {sequences(spans)} sequences, trace.pftrace {sequences(d)}: "
                         "no track was cut")
            ratio = len(files["trace.pftrace"]) / max(1, len(files["trace.json"]))
            print(f"{mode}: {len(files['trace.pftrace'])} bytes Perfetto, {len(files['trace.json'])} bytes JSON "
                  f"({ratio:.2f})")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if not failures:
        print(f"perfetto trace check ({mode}): ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
