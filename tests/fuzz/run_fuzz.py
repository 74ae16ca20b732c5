#!/usr/bin/env python3
"""Runs one libFuzzer target: first every kept crash input once (they must pass now), then
fuzzing for a bounded time from the seed corpus. Fails on any finding.

usage: run_fuzz.py TARGET FUZZ_DIR NAME SECONDS [--seeds DIR]... [-- LIBFUZZER_FLAG...]

FUZZ_DIR/corpus/NAME holds the seeds (read only: new inputs go to a temporary corpus),
FUZZ_DIR/crashes/NAME the inputs that once failed, FUZZ_DIR/NAME.dict a dictionary if present.
SECONDS 0 runs only the kept crash inputs. A finding is printed (path, size, hex) with what to
do with it; docs/testing.md says how to fuzz for longer.
"""
import os
import subprocess
import sys
import tempfile


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        extra = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    seeds = []
    while "--seeds" in args:
        i = args.index("--seeds")
        seeds.append(args[i + 1])
        del args[i:i + 2]
    if len(args) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    target, fuzz_dir, name, seconds = args[0], args[1], args[2], int(args[3])
    # The environment capture's target includes a header that arms a capture at start-up.
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    # Leaks are findings too; the sanitizers' reports must end the run with an error.
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")

    crashes_dir = os.path.join(fuzz_dir, "crashes", name)
    kept = sorted(os.path.join(crashes_dir, f) for f in os.listdir(crashes_dir)
                  if not f.startswith(".") and f != "README.md") if os.path.isdir(crashes_dir) else []
    if kept:
        r = subprocess.run([target, *kept], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr[-6000:], file=sys.stderr)
            print(f"FAIL: {name}: a kept crash input fails again (one of {kept})", file=sys.stderr)
            return 1
        print(f"{name}: {len(kept)} kept crash inputs pass")
    if seconds <= 0:
        return 0

    with tempfile.TemporaryDirectory(prefix=f"strata-fuzz-{name}-") as tmp:
        work = os.path.join(tmp, "corpus")
        os.mkdir(work)
        flags = [f"-max_total_time={seconds}", "-timeout=10", "-rss_limit_mb=2048",
                 "-malloc_limit_mb=512", f"-artifact_prefix={tmp}/", "-print_final_stats=1"]
        dictionary = os.path.join(fuzz_dir, f"{name}.dict")
        if os.path.exists(dictionary):
            flags.append(f"-dict={dictionary}")
        corpora = [work, os.path.join(fuzz_dir, "corpus", name), *seeds]
        r = subprocess.run([target, *flags, *extra, *corpora], env=env, capture_output=True, text=True)
        stats = [line for line in r.stderr.splitlines() if line.startswith("stat::")]
        print(f"{name}: {' '.join(stats)}")
        if r.returncode == 0:
            return 0
        print(r.stderr[-8000:], file=sys.stderr)
        for f in sorted(os.listdir(tmp)):
            path = os.path.join(tmp, f)
            if f == "corpus" or not os.path.isfile(path):
                continue
            data = open(path, "rb").read()
            print(f"FINDING: {name}: {f} ({len(data)} bytes): {data[:4096].hex()}", file=sys.stderr)
        print(f"FAIL: {name}: libFuzzer found an input that fails (exit {r.returncode}). Save it "
              f"(bytes above, hex) as tests/fuzz/crashes/{name}/<what-it-breaks>, fix the code, and "
              f"it is run again on every CI run.", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
