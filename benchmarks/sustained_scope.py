#!/usr/bin/env python3
"""One STRATA_SCOPE in a sustained session against the limit baseline, each candidate in its own
process, interleaved, over one or more builds.

usage: sustained_scope.py BUILD_DIR [BUILD_DIR ...] [--reps 5] [--threads 1,2]
                          [--calls 1000000] [--warm-up 100000]
                          [--candidates limit,lossless,lossless_lazy,flight] [--ring 65536]
                          [--limit-ring 16384|1048576|4194304]
                          [--seed S] [--raw FILE]

Runs BUILD_DIR/benchmarks/sustained_scope (benchmarks/sustained_scope.cpp) once for every
(build, candidate, thread count) in each repetition, in an order shuffled anew each repetition,
and finishes every combination of repetition r before any of repetition r + 1: so on a shared
machine each candidate, and each build, meets the same disturbances. Several build directories
compare versions of strata (before and after a change), or compilers, in one run.

Prints the machine (lscpu's model name, nproc, load average at the start and the end), each
build (its compiler and source commit), the exact command, then a Markdown table: per build and
thread count, the median over the repetitions of each candidate's ns per call (each run's own
figure is the median over its threads), its ratio to the limit's median of the same build and
thread count, the range over the repetitions, the recording threads' CPU time per call, and the
process's minor page faults and system time during the timed region. --raw FILE keeps every
run's JSON line. Exits 1 if any run failed its checks.
"""
import argparse
import datetime
import json
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys

CANDIDATES = ("limit", "lossless", "lossless_lazy", "flight")


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="STRATA_SCOPE in a sustained session against the limit baseline, interleaved")
    p.add_argument("builds", nargs="+", metavar="BUILD_DIR",
                   help="meson build directories with benchmarks/sustained_scope built")
    p.add_argument("--reps", type=int, default=5, help="repetitions of every combination")
    p.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    p.add_argument("--calls", type=int, default=1000000, help="timed calls per thread")
    p.add_argument("--warm-up", type=int, default=100000, help="calls per thread before timing")
    p.add_argument("--candidates", default=",".join(CANDIDATES),
                   help="comma-separated, of " + ", ".join(CANDIDATES))
    p.add_argument("--ring", type=int, default=None,
                   help="the flight recorder's buffer_capacity (the program's default: 65536)")
    p.add_argument("--limit-ring", type=int, default=None,
                   help="the limit baseline's ring, 16384, 1048576 (the program's default) or "
                        "4194304; 16384 is nearer the flight recorder's 2^16 (L2-resident) ring, "
                        "4194304 writes fresh memory for up to 4 M calls, as a lossless session does")
    p.add_argument("--seed", type=int, default=None, help="the shuffle's seed (default: random)")
    p.add_argument("--raw", metavar="FILE", help="write every run's JSON line to FILE")
    a = p.parse_args(argv)
    a.threads = [int(t) for t in a.threads.split(",") if t]
    a.candidates = [c for c in a.candidates.split(",") if c]
    bad = [c for c in a.candidates if c not in CANDIDATES]
    if bad:
        p.error(f"unknown candidate {', '.join(bad)} (choose from {', '.join(CANDIDATES)})")
    if a.reps < 1 or not a.threads or min(a.threads) < 1 or a.calls < 1:
        p.error("--reps, --threads and --calls must be positive")
    if a.seed is None:
        a.seed = random.randrange(1 << 31)
    return a


def program(build):
    path = os.path.join(build, "benchmarks", "sustained_scope")
    if not os.access(path, os.X_OK):
        sys.exit(f"sustained_scope.py: no {path}; build it with "
                 f"`ninja -C {build} benchmarks/sustained_scope` (configured with -Dbenchmarks=enabled)")
    return path


def run_text(cmd, cwd=None):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine_facts():
    model = "?"
    for line in run_text(["lscpu"]).splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    return {"model": model, "nproc": run_text(["nproc"]) or str(len(os.sched_getaffinity(0))),
            "kernel": platform.release(), "python": platform.python_version()}


def source_commit(build):
    """The commit of the sources the build was configured from, '+dirty' if they differ from it."""
    try:
        with open(os.path.join(build, "meson-info", "meson-info.json")) as f:
            source = json.load(f)["directories"]["source"]
    except (OSError, ValueError, KeyError):
        return "?"
    commit = run_text(["git", "rev-parse", "--short", "HEAD"], cwd=source)
    if not commit:
        return source
    dirty = run_text(["git", "status", "--porcelain", "--untracked-files=no"], cwd=source)
    return f"{source} @ {commit}{'+dirty' if dirty else ''}"


def load():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run_once(exe, candidate, threads, a):
    cmd = [exe, candidate, "--threads", str(threads), "--calls", str(a.calls),
           "--warm-up", str(a.warm_up)]
    if a.ring is not None and candidate == "flight":
        cmd += ["--ring", str(a.ring)]
    if a.limit_ring is not None and candidate == "limit":
        cmd += ["--limit-ring", str(a.limit_ring)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    result = None
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except ValueError:
                pass
            break
    if done.returncode != 0 or result is None or not result.get("ok"):
        sys.stderr.write(f"FAILED (exit {done.returncode}): {shlex.join(cmd)}\n{done.stderr}")
        return cmd, None
    return cmd, result


def fmt_ns(x):
    return f"{x:.2f}"


def main(argv):
    a = parse_args(argv)
    exes = {b: program(b) for b in a.builds}
    facts = machine_facts()
    start = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    load_start = load()

    combos = [(b, c, t) for b in a.builds for c in a.candidates for t in a.threads]
    runs = {combo: [] for combo in combos}
    failed = 0
    rng = random.Random(a.seed)
    raw = open(a.raw, "w") if a.raw else None
    example_cmd = {}
    for r in range(a.reps):
        order = combos[:]
        rng.shuffle(order)
        for b, c, t in order:
            cmd, result = run_once(exes[b], c, t, a)
            example_cmd.setdefault(b, shlex.join(cmd))
            if result is None:
                failed += 1
                continue
            runs[(b, c, t)].append(result)
            if raw:
                raw.write(json.dumps({"build_dir": b, "rep": r, **result}) + "\n")
            sys.stderr.write(f"[rep {r + 1}/{a.reps}] {b} {c} x{t}: {result['ns_per_call']:.2f} ns/call, "
                             f"{result['minor_faults']} minor faults\n")
    if raw:
        raw.close()
    load_end = load()

    print(f"## sustained_scope, {start}\n")
    print(f"- machine: {facts['model']}; nproc {facts['nproc']}; kernel {facts['kernel']}")
    print(f"- load average: {load_start} at the start; {load_end} at the end")
    print(f"- command: `{shlex.join([sys.argv[0]] + list(argv))}` (seed {a.seed})")
    for b in a.builds:
        first = next((runs[(b, c, t)][0] for c in a.candidates for t in a.threads if runs[(b, c, t)]), {})
        print(f"- build `{b}`: {first.get('compiler', '?')}, {first.get('build', '?')}, "
              f"clock {first.get('clock', '?')}; sources {source_commit(b)}")
        print(f"  - e.g. `{example_cmd.get(b, '?')}`")
    print(f"- {a.calls} timed calls per thread after {a.warm_up} of warm-up; {a.reps} repetitions, "
          "each candidate its own process, interleaved; ns/call is steady_clock time per call per "
          "thread (each run: median over its threads), then the median over the repetitions; "
          "faults and sys time are the whole process's during the timed region")
    if failed:
        print(f"- **{failed} run(s) failed** (see stderr); their figures are left out")
    print()
    print("| build | threads | candidate | ns/call | ratio to limit | min–max | CPU ns/call | minor faults | sys ms | start() ms | runs |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b in a.builds:
        for t in a.threads:
            limit = runs.get((b, "limit", t)) or []
            limit_median = statistics.median(x["ns_per_call"] for x in limit) if limit else None
            for c in a.candidates:
                rs = runs[(b, c, t)]
                if not rs:
                    print(f"| `{b}` | {t} | {c} | – | – | – | – | – | – | – | 0 |")
                    continue
                ns = [x["ns_per_call"] for x in rs]
                med = statistics.median(ns)
                ratio = f"{med / limit_median:.2f}x" if limit_median else "–"
                cpu = statistics.median(statistics.median(x["thread_cpu_ns_per_call"]) for x in rs)
                faults = statistics.median(x["minor_faults"] for x in rs)
                sys_ms = statistics.median(1000 * x["sys_s"] for x in rs)
                starts = [x["start_ms"] for x in rs if "start_ms" in x]  # sessions only
                start = f"{statistics.median(starts):.1f}" if starts and c != "limit" else "–"
                print(f"| `{b}` | {t} | {c} | {fmt_ns(med)} | {ratio} | {fmt_ns(min(ns))}–{fmt_ns(max(ns))} "
                      f"| {fmt_ns(cpu)} | {faults:.0f} | {sys_ms:.1f} | {start} | {len(rs)} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
