#!/usr/bin/env python3
"""Turns bench_overhead's JSON output into the Markdown tables of docs/benchmarks.md.

    benchmarks/overhead_table.py overhead.json

The file must come from a run with --benchmark_repetitions and
--benchmark_out_format=json: the tables quote medians of the repetitions, and each ratio
divides two medians of that same run.

"ns" is CPU time per call on each thread. Google Benchmark sums a multi-threaded benchmark's
CPU time and its iterations over the threads, so CPU time per iteration is already per thread;
its wall time per iteration is divided by the thread count, so it is multiplied back here for
the wall-clock ratio. CPU time is the primary figure because on a shared machine a thread that
waits for a core accumulates wall time but no CPU time.
"""
import json
import sys


def medians(path):
    with open(path) as f:
        report = json.load(f)
    found = {}
    for b in report["benchmarks"]:
        if b.get("run_type") != "aggregate":
            continue
        entry = found.setdefault(b["run_name"], {})
        if b["aggregate_name"] == "cv":
            entry["cv"] = b["cpu_time"]
            continue
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
        threads = b.get("threads", 1)
        entry[b["aggregate_name"]] = (b["cpu_time"] * scale, b["real_time"] * scale * threads)
    return report["context"], found


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    context, runs = medians(argv[1])

    def get(name):
        r = runs.get(name)
        if r is None or "median" not in r:
            sys.exit(f"overhead_table.py: no median for {name} in {argv[1]}")
        return r

    def ns(name):
        return get(name)["median"][0]

    def wall(name):
        return get(name)["median"][1]

    def cv(name):
        return f"{100 * get(name)['cv']:.1f}%" if "cv" in get(name) else "-"

    load = ", ".join(f"{x:.2f}" for x in context.get("load_avg", []))
    print(f"<!-- {context.get('compiler', '?')}, {context.get('build', '?')}, "
          f"clock {context.get('strata_clock', '?')}, {context.get('date', '?')}, "
          f"load average at start {load} -->")
    print("| case | threads | ring (records) | strata ns | baseline ns | ratio "
          "| wall-clock ratio | CV strata / baseline |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    pairs = []
    for ring in (1 << 20, 1 << 14):
        for threads in (1, 2):
            pairs.append(("scope, enabled", threads, ring,
                          f"scope/strata_enabled/ring:{ring}/threads:{threads}",
                          f"scope/limit_baseline/ring:{ring}/threads:{threads}"))
    pairs.append(("instant, enabled", 1, 1 << 20, "instant/strata_enabled", "instant/limit_baseline"))
    pairs.append(("counter, enabled", 1, 1 << 20, "counter/strata_enabled", "instant/limit_baseline"))
    for label, threads, ring, case, base in pairs:
        print(f"| {label} | {threads} | 2^{ring.bit_length() - 1} | {ns(case):.2f} | {ns(base):.2f} "
              f"| {ns(case) / ns(base):.2f}x | {wall(case) / wall(base):.2f}x "
              f"| {cv(case)} / {cv(base)} |")

    print()
    floor = ns("scope/strata_compiled_out")
    print("| case (1 thread) | ns per call | minus compiled out | CV |")
    print("|---|---:|---:|---:|")
    for label, case in (("scope, compiled out (call + body only)", "scope/strata_compiled_out"),
                        ("scope, disabled at run time (no session)", "scope/strata_disabled"),
                        ("scope, layer not captured", "scope/strata_not_captured"),
                        ("scope, enabled", "scope/strata_enabled/ring:1048576/threads:1"),
                        ("scope, dynamic name already interned", "scope/strata_dynamic_interned"),
                        ("instant, enabled", "instant/strata_enabled"),
                        ("counter, enabled", "counter/strata_enabled")):
        print(f"| {label} | {ns(case):.2f} | {ns(case) - floor:+.2f} | {cv(case)} |")


if __name__ == "__main__":
    main(sys.argv)
