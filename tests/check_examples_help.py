#!/usr/bin/env python3
"""Every example answers --help: exit 0, a usage line, every option its source parses, and the
files it writes; an unknown option is refused with exit 2 and named.

The options are read from the example's source, not from the program: each string literal that
looks like an option ("--rows") must be named by --help, so an option added to the parser but
not to the help fails here.

usage: check_examples_help.py [--also-expect FLAG] SOURCE PROGRAM [SOURCE PROGRAM ...]
(--also-expect adds a flag that every help must name: the companion test that shows the check
fails when one is missing.)
"""
import pathlib
import re
import subprocess
import sys

OPTION = re.compile(r'"(--[a-z][a-z0-9-]*)"')


def check(source, program, extra):
    name = pathlib.Path(program).name
    problems = []
    flags = sorted(set(OPTION.findall(pathlib.Path(source).read_text(encoding="utf-8"))) - {"--help"})
    flags += extra
    run = subprocess.run([program, "--help"], capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        problems.append(f"--help exited {run.returncode}: {run.stderr.strip()}")
    help_text = run.stdout
    words = set(re.findall(r"--[a-z][a-z0-9-]*", help_text))
    if "usage: " + name not in help_text:
        problems.append(f"--help prints no 'usage: {name} ...' line")
    for flag in flags:
        if flag not in words:
            problems.append(f"--help does not name {flag}, which {source} parses")
    writes = help_text.split("\nwrites:\n", 1)
    if len(writes) < 2 or not writes[1].strip():
        problems.append("--help has no 'writes:' section naming the files the example writes")
    bad = subprocess.run([program, "--no-such-option"], capture_output=True, text=True, timeout=60)
    if bad.returncode != 2 or "--no-such-option" not in bad.stderr:
        problems.append(f"--no-such-option: exit {bad.returncode} (want 2) and stderr {bad.stderr.strip()!r} "
                        "(want it named)")
    for p in problems:
        print(f"{name}: {p}", file=sys.stderr)
    if not problems:
        print(f"{name}: --help names {', '.join(flags) or 'no options'} and what it writes")
    return not problems


def main(argv):
    extra = []
    while argv and argv[0] == "--also-expect":
        extra.append(argv[1])
        argv = argv[2:]
    if not argv or len(argv) % 2:
        sys.exit(__doc__)
    pairs = list(zip(argv[0::2], argv[1::2]))
    ok = [check(source, program, extra) for source, program in pairs]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
