#!/usr/bin/env python3
"""Crash dumps end to end: check_crash_dump.py CHILD STRATA_REPORT CASE.

A child (crash_dump_child.cpp) records known scopes with profiler_config::crash_dump on and
crashes; it must die of the same signal it would have died of without strata, name the dump in
one line on stderr, and leave a dump that `strata-report convert` turns into a trace holding
every record made before the crash.
Cases: segv, abort (each lossless and flight), env (STRATA_CRASH_DUMP=1 with the environment
capture), exit (a normal stop leaves no dump), truncated (a cut or garbage dump: a clear error).

ASan and UBSan builds: ASan's own handlers for these signals would report the crash and exit
with status 1, hiding the signal; the child runs with them off (ASAN_OPTIONS handle_segv=0 ...)
so that strata's handler chains to the default action, as in a build without sanitizers.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile

child, report, case = sys.argv[1], sys.argv[2], sys.argv[3]

EXPECTED = {
    "main scope": 5000,
    "worker scope": 3000,
    "parked scope": 1000,
    'hostile "name" \\ with\x01 control\n bytes\t': 1,
}


def child_env(extra=None):
    env = dict(os.environ)
    off = "handle_segv=0:handle_abort=0:handle_sigbus=0:handle_sigill=0:handle_sigfpe=0"
    env["ASAN_OPTIONS"] = (env["ASAN_OPTIONS"] + ":" if env.get("ASAN_OPTIONS") else "") + off
    for k in list(env):
        if k.startswith("STRATA_") and k != "STRATA_CLOCK":
            del env[k]
    env.update(extra or {})
    return env


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def run_child(mode, overflow, out, extra_env=None):
    return subprocess.run([child, mode, overflow, out], env=child_env(extra_env),
                          capture_output=True, text=True, timeout=120)


def dumps_in(out):
    return glob.glob(os.path.join(out, "strata-crash-*.dump"))


def check_crash(mode, overflow, sig, extra_env=None):
    with tempfile.TemporaryDirectory() as out:
        if extra_env:
            extra_env = {k: v.replace("{out}", out) for k, v in extra_env.items()}
        p = run_child(mode, overflow, out, extra_env)
        if p.returncode != -sig:
            fail(f"{mode}/{overflow}: exit status {p.returncode}, expected death by signal {sig}\n"
                 f"stderr: {p.stderr}")
        dumps = dumps_in(out)
        if len(dumps) != 1:
            fail(f"{mode}/{overflow}: expected one dump in {out}, found {os.listdir(out)}")
        said = f"strata: crash dump written to {dumps[0]} (strata-report convert {dumps[0]} -o crash.json)"
        if said not in p.stderr.splitlines():
            fail(f"{mode}/{overflow}: stderr does not name the dump: {p.stderr!r}")
        trace = os.path.join(out, "trace.json")
        c = subprocess.run([report, "convert", dumps[0], "-o", trace], capture_output=True,
                           text=True, timeout=120)
        if c.returncode != 0:
            fail(f"convert failed ({c.returncode}): {c.stderr}")
        if "leaves out" in c.stderr:
            fail(f"the dump left something out: {c.stderr}")
        with open(trace, encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
        counts = {}
        for e in events:
            if e.get("ph") == "X":
                counts[e["name"]] = counts.get(e["name"], 0) + 1
        for name, n in EXPECTED.items():
            if counts.get(name, 0) != n:
                fail(f"{mode}/{overflow}: {counts.get(name, 0)} events named {name!r}, expected {n}; "
                     f"all: { {k: v for k, v in counts.items()} }")
        extra = {k: v for k, v in counts.items() if k not in EXPECTED}
        if extra:
            fail(f"{mode}/{overflow}: unexpected events {extra}")
        durations = [e["dur"] for e in events if e.get("ph") == "X"]
        if any(d < 0 for d in durations):
            fail("negative durations")
        # The table of the dump itself.
        t = subprocess.run([report, dumps[0], "--row-limit", "-1"], capture_output=True,
                           text=True, timeout=120)
        if t.returncode != 0 or "main scope" not in t.stdout:
            fail(f"strata-report DUMP: {t.returncode} {t.stdout} {t.stderr}")
        row = [l for l in t.stdout.splitlines() if l.strip().startswith("main scope")]
        if not row or row[0].split()[-1] != "5000":
            fail(f"strata-report DUMP: main scope row {row}")
        print(f"ok: {mode}/{overflow}: signal {sig}, {sum(counts.values())} records converted")
        return dumps[0]


if case in ("segv", "abort"):
    sig = signal.SIGSEGV if case == "segv" else signal.SIGABRT
    for overflow in ("lossless", "flight"):
        check_crash(case, overflow, sig)
elif case == "env":
    check_crash("env-segv", "lossless", signal.SIGSEGV,
                {"STRATA_PROFILE": "1", "STRATA_CRASH_DUMP": "1", "STRATA_OUTPUT_DIR": "{out}"})
    with tempfile.TemporaryDirectory() as out:
        p = run_child("env-segv", "lossless", out,
                      {"STRATA_PROFILE": "1", "STRATA_CRASH_DUMP": "yes", "STRATA_OUTPUT_DIR": out})
        if "STRATA_CRASH_DUMP='yes'" not in p.stderr or dumps_in(out):
            fail(f"a bad STRATA_CRASH_DUMP is named and turns capture off: {p.stderr}")
        print("ok: env")
elif case == "exit":
    for overflow in ("lossless", "flight"):
        with tempfile.TemporaryDirectory() as out:
            p = run_child("exit", overflow, out)
            if p.returncode != 0 or "child done" not in p.stdout:
                fail(f"exit/{overflow}: status {p.returncode}: {p.stderr}")
            if dumps_in(out):
                fail(f"exit/{overflow}: a normal stop left {dumps_in(out)}")
    print("ok: exit leaves no dump")
elif case == "truncated":
    with tempfile.TemporaryDirectory() as out:
        p = run_child("segv", "lossless", out)
        if p.returncode != -signal.SIGSEGV or len(dumps_in(out)) != 1:
            fail(f"the child to cut a dump from: status {p.returncode}: {p.stderr}")
        dump = dumps_in(out)[0]
        data = open(dump, "rb").read()
        cases = {
            "half": data[: len(data) // 2],
            "header": data[:40],
            "no end": data[:-20],
            "garbage": b"not a dump at all",
            "version": data[:8] + b"\x63\x00\x00\x00" + data[12:],
            "empty": b"",
        }
        expect = {"half": "truncated", "header": "truncated", "no end": "truncated",
                  "garbage": "", "version": "version 99", "empty": ""}
        for name, body in cases.items():
            bad = os.path.join(out, "bad.dump")
            with open(bad, "wb") as f:
                f.write(body)
            c = subprocess.run([report, "convert", bad, "-o", os.path.join(out, "t.json")],
                               capture_output=True, text=True, timeout=60)
            if c.returncode != 1 or "dump" not in c.stderr or expect[name] not in c.stderr:
                fail(f"{name}: status {c.returncode}, stderr {c.stderr!r}")
            if os.path.exists(os.path.join(out, "t.json")):
                fail(f"{name}: a trace was written from a bad dump")
        u = subprocess.run([report, "convert", dump], capture_output=True, text=True, timeout=60)
        if u.returncode != 2 or "-o" not in u.stderr:
            fail(f"convert without -o: {u.returncode} {u.stderr}")
    print("ok: bad dumps give clear errors")
else:
    fail(f"unknown case {case}")
