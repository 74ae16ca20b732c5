#!/usr/bin/env python3
"""A program compiled with STRATA_ENABLED=0 (its implementation too) runs as usual, writes no
trace, and says once on stderr that strata is compiled out; stats() says so too.

usage: check_compiled_out_run.py PROGRAM
"""
import os
import subprocess
import sys
import tempfile


def main():
    with tempfile.TemporaryDirectory(prefix="strata-off-") as tmp:
        out = os.path.join(tmp, "out")
        run = subprocess.run([sys.argv[1], out], capture_output=True, text=True, timeout=60)
        problems = []
        if run.returncode != 0:
            problems.append(f"exit status {run.returncode}")
        said = [l for l in run.stderr.splitlines() if "compiled out" in l]
        if len(said) != 1:
            problems.append(f"expected one 'compiled out' line on stderr, got {len(said)}: {run.stderr!r}")
        if run.stdout.count("compiled_out=1 recorded=0") != 2:
            problems.append(f"stats() should say compiled out, twice: {run.stdout!r}")
        if run.stdout.count("written: '' events=0") != 2:
            problems.append(f"export should write nothing: {run.stdout!r}")
        if os.path.exists(out) and os.listdir(out):
            problems.append(f"files were written: {os.listdir(out)}")
        if problems:
            sys.exit("\n".join(problems))
    print("compiled-out program: ran, wrote nothing, said so once")


if __name__ == "__main__":
    main()
