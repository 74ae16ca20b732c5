#!/usr/bin/env python3
"""Runs tests/env_capture_child under STRATA_* environments and checks what it leaves behind.

usage: check_env_capture.py CHILD

Capture on: the trace appears at exit in STRATA_OUTPUT_DIR with exactly the records the child
made, filtered by STRATA_LAYERS. Capture off or misconfigured: the child still runs to the end
and exits 0, no trace is written, and a bad value is named on stderr.
"""
import json
import os
import subprocess
import sys
import tempfile

failures = []


def run(child, env, cwd):
    full = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    full.update(env)
    return subprocess.run([child], env=full, cwd=cwd, capture_output=True, text=True, timeout=60)


def expect(condition, message):
    if not condition:
        failures.append(message)


def names(trace):
    return sorted(e["name"] for e in trace["traceEvents"] if e["ph"] == "X")


def main():
    child = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="strata-env-") as tmp:
        # Off: nothing written anywhere, nothing said.
        r = run(child, {}, tmp)
        expect(r.returncode == 0 and r.stdout == "child done\n", f"off: child failed: {r}")
        expect(r.stderr == "", f"off: unexpected stderr {r.stderr!r}")
        expect(os.listdir(tmp) == [], f"off: files appeared: {os.listdir(tmp)}")

        r = run(child, {"STRATA_PROFILE": "0"}, tmp)
        expect(r.returncode == 0 and os.listdir(tmp) == [], "STRATA_PROFILE=0 captured")

        # On, default directory relative to the working directory.
        r = run(child, {"STRATA_PROFILE": "1"}, tmp)
        expect(r.returncode == 0 and r.stdout == "child done\n", f"on: child failed: {r}")
        path = os.path.join(tmp, "strata-out", "trace.json")
        expect(os.path.isfile(path), "on: no strata-out/trace.json")
        expect("strata: wrote" in r.stderr and "15 records" in r.stderr,
               f"on: stderr does not report the trace: {r.stderr!r}")
        if os.path.isfile(path):
            trace = json.load(open(path))
            expect(names(trace) == ["main step"] * 5 + ["worker step"] * 10,
                   f"on: unexpected events {names(trace)}")
            expect(trace["otherData"]["dropped"] == 0, "on: records were dropped")

        # Layers and an explicit directory.
        out = os.path.join(tmp, "framework-only")
        r = run(child, {"STRATA_PROFILE": "1", "STRATA_OUTPUT_DIR": out,
                        "STRATA_LAYERS": "framework", "STRATA_OVERFLOW": "flight_recorder",
                        "STRATA_BUFFER_CAPACITY": "1024"}, tmp)
        expect(r.returncode == 0, f"layers: child failed: {r}")
        path = os.path.join(out, "trace.json")
        expect(os.path.isfile(path), "layers: no trace in STRATA_OUTPUT_DIR")
        if os.path.isfile(path):
            trace = json.load(open(path))
            expect(names(trace) == ["worker step"] * 10, f"layers: unexpected events {names(trace)}")
            expect(trace["otherData"]["layers"] == "framework", "layers: otherData.layers")
            expect(trace["otherData"]["overflow_policy"] == "flight_recorder", "overflow policy")
            expect(trace["otherData"]["buffer_capacity"] == 1024, "buffer capacity")

        # STRATA_FORMAT=perfetto: trace.pftrace instead of trace.json, a protobuf Trace whose
        # first bytes are a TracePacket field (field 1, length-delimited: 0x0a).
        out = os.path.join(tmp, "pf")
        r = run(child, {"STRATA_PROFILE": "1", "STRATA_OUTPUT_DIR": out, "STRATA_FORMAT": "perfetto"}, tmp)
        expect(r.returncode == 0, f"perfetto: the child failed: {r.stderr}")
        expect(os.path.isdir(out) and sorted(os.listdir(out)) == ["trace.pftrace"],
               f"perfetto: wrote {os.listdir(out) if os.path.isdir(out) else 'nothing'}")
        if os.path.isfile(os.path.join(out, "trace.pftrace")):
            with open(os.path.join(out, "trace.pftrace"), "rb") as f:
                head = f.read(1)
            expect(head == b"\x0a", f"perfetto: trace.pftrace does not start with a packet: {head!r}")
        expect("trace.pftrace" in r.stderr, f"perfetto: stderr does not name the file: {r.stderr}")

        # Bad values: the program runs normally, the variable is named, nothing is written.
        bad = [
            ({"STRATA_PROFILE": "yes"}, "STRATA_PROFILE"),
            ({"STRATA_PROFILE": "1", "STRATA_LAYERS": "framework,gpu"}, "gpu"),
            ({"STRATA_PROFILE": "1", "STRATA_OVERFLOW": "flight_recorder",
              "STRATA_BUFFER_CAPACITY": "1000"}, "buffer_capacity"),
            ({"STRATA_PROFILE": "1", "STRATA_BUFFER_CAPACITY": "lots"}, "STRATA_BUFFER_CAPACITY"),
            ({"STRATA_PROFILE": "1", "STRATA_OVERFLOW": "block"}, "STRATA_OVERFLOW"),
            ({"STRATA_PROFILE": "1", "STRATA_FORMAT": "protobuf"}, "STRATA_FORMAT"),
            ({"STRATA_PROFILE": "1", "STRATA_OUTPUT_DIR": "/proc/strata-cannot-exist"}, "output_dir"),
        ]
        for env, word in bad:
            scratch = tempfile.mkdtemp(dir=tmp)
            r = run(child, env, scratch)
            expect(r.returncode == 0 and r.stdout == "child done\n", f"{env}: host program hurt: {r}")
            expect(word in r.stderr and "profiling is off" in r.stderr,
                   f"{env}: stderr does not name {word!r}: {r.stderr!r}")
            expect(os.listdir(scratch) == [], f"{env}: files appeared: {os.listdir(scratch)}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if not failures:
        print("env capture: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
