#!/usr/bin/env python3
"""One export per process, as a program makes at the end of its session: Chrome JSON, Perfetto
with a thread per core and Perfetto with one thread, interleaved, over one or more builds.

usage: export_once.py BUILD_DIR [BUILD_DIR ...] [--pairs 25]

Runs BUILD_DIR/benchmarks/bench_export --once FORMAT WRITERS (benchmarks/bench_export.cpp: the
session of bench_export, 1M records over 2 threads, built before the clock starts) for every
(build, case) in each round, in a shuffled order, so that on a shared machine every build and
case meets the same disturbances. In one process the repetitions of bench_export reuse the
memory the heap kept from the export before; here every buffer and scratch array is fresh, as
it is for a user's program.

Prints the machine, then per build the median milliseconds of each case, the median over the
rounds of the JSON time over each Perfetto time (the rate ratio), and, for a second build and
after, the median over the rounds of its time over the first build's, case by case.
"""
import argparse
import os
import platform
import random
import statistics
import subprocess
import sys

CASES = (("chrome_json", "1"), ("perfetto", "0"), ("perfetto", "1"))
NAMES = {("chrome_json", "1"): "chrome_json", ("perfetto", "0"): "perfetto, thread per core",
         ("perfetto", "1"): "perfetto, one thread"}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("builds", nargs="+", help="meson build directories with benchmarks enabled")
    p.add_argument("--pairs", type=int, default=25, help="rounds (default 25)")
    p.add_argument("--seed", type=int, default=1, help="of the shuffled order of each round's runs (default 1)")
    args = p.parse_args(argv)
    binaries = [os.path.join(b, "benchmarks", "bench_export") for b in args.builds]
    for b in binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"export_once.py: no {b} (configure with -Dbenchmarks=enabled and build it)")
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
                 platform.processor())
    print(f"machine: {model}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at the start")
    times = {(b, c): [] for b in binaries for c in CASES}
    # Each round runs its cases in a shuffled order: in a fixed order, a case can land on the
    # same CPU round after round (the scheduler alternates), and the two CPUs of a shared
    # virtual machine may run at different speeds for minutes at a time.
    rng = random.Random(args.seed)
    for _ in range(args.pairs):
        jobs = [(b, c) for b in binaries for c in CASES]
        rng.shuffle(jobs)
        for b, c in jobs:
            out = subprocess.run([b, "--once", *c], check=True, capture_output=True, text=True).stdout
            times[(b, c)].append(float(out.split()[0]))
    print(f"load {os.getloadavg()[0]:.2f} at the end; {args.pairs} rounds\n")
    print("| build | case | median ms | JSON time / this time | this build / the first |")
    print("|---|---|---|---|---|")
    first = binaries[0]
    for b in binaries:
        json = times[(b, CASES[0])]
        for c in CASES:
            t = times[(b, c)]
            ratio = statistics.median(j / x for j, x in zip(json, t))
            versus = "" if b == first else f"{statistics.median(x / f for x, f in zip(t, times[(first, c)])):.3f}"
            print(f"| {b} | {NAMES[c]} | {statistics.median(t):.1f} | {ratio:.2f} | {versus} |")


if __name__ == "__main__":
    main(sys.argv[1:])
