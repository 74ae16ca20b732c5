#!/usr/bin/env python3
"""Refreshes the program output quoted in the docs by running the examples.

A quoted block in a Markdown file looks like

    <!-- output: compare_ops --rows 256 --cols 512 --iters 3 | from "== side by side" -->
    ```text
    ...replaced...
    ```
    <!-- end output -->

The first word names an executable of build/release/examples (or --build DIR); the rest are its
arguments after an output directory, which the script supplies (a scratch one). After `|`,
`from "TEXT"` keeps the output from the first line containing TEXT, `to "TEXT"` stops before
the first later line containing it, and `lines N` keeps at most N lines.

usage: scripts/update_doc_outputs.py [--build DIR] FILE.md...
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"(<!-- output: (?P<spec>.*?) -->\n)```text\n.*?```\n(<!-- end output -->)", re.S)


def excerpt(build, spec):
    command, _, filters = spec.partition("|")
    argv = shlex.split(command)
    exe = os.path.abspath(os.path.join(build, "examples", argv[0]))
    with tempfile.TemporaryDirectory(prefix="strata-doc-") as out:
        run = subprocess.run([exe, os.path.join(out, "out")] + argv[1:], capture_output=True,
                             text=True, cwd=out, timeout=600)
    if run.returncode != 0:
        raise SystemExit(f"{spec}: exit {run.returncode}\n{run.stderr}")
    lines = run.stdout.rstrip("\n").split("\n")
    for key, value in re.findall(r'(from|to|lines)\s+("[^"]*"|\d+)', filters):
        value = value.strip('"')
        if key == "from":
            lines = lines[next((i for i, l in enumerate(lines) if value in l), 0):]
        elif key == "to":
            lines = lines[:next((i for i, l in enumerate(lines) if i > 0 and value in l), len(lines))]
        else:
            lines = lines[:int(value)]
    # Paths of the scratch directory say nothing to a reader.
    return "\n".join(re.sub(r"/tmp/strata-doc-[^/]+/out", "OUT", l).rstrip() for l in lines)


def main():
    args = sys.argv[1:]
    build = "build/release"
    if args[:1] == ["--build"]:
        build, args = args[1], args[2:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    for path in args:
        text = open(path, encoding="utf-8").read()
        new = BLOCK.sub(lambda m: f"{m.group(1)}```text\n{excerpt(build, m.group('spec'))}\n```\n{m.group(3)}", text)
        if new != text:
            open(path, "w", encoding="utf-8").write(new)
            print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
