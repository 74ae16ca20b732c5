#!/usr/bin/env python3
"""Compiled out, instrumentation costs nothing: a function instrumented with STRATA_* macros and
built with STRATA_ENABLED=0 compiles to the same instructions as the function without them.

Compiles SOURCE twice at -O2 with the given compiler: once as it is, with -DSTRATA_ENABLED=0
(or --enabled VALUE), and once with the strata include and every line that starts with STRATA_
deleted. Compares the disassembly of each function (objdump -d -r, one section per function so
offsets are relative to the function; relocations show what each call and load refers to), and
prints a diff of each function that differs. Fails when one of the source's functions differs
or is missing, or when strata adds code run at start-up; inline functions of the headers that the
compiler emits out of line (merged at link time, called by none of the source's functions) are
listed, not failed.

usage: check_compiled_out.py [--enabled 0|1] [--expect-difference] SOURCE INCLUDE_DIR -- CXX...

--expect-difference inverts the verdict, for checking that the comparison can fail: with
--enabled 1 the functions must differ.
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

MACRO_LINE = re.compile(r"^\s*STRATA_[A-Z_]+\(.*\);\s*(//.*)?$")
STRATA_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]strata/')
STARTUP = re.compile(r"^(_GLOBAL__sub_I|global constructors keyed to)")
FLAGS = ["-std=c++20", "-O2", "-g0", "-ffunction-sections", "-fno-asynchronous-unwind-tables"]


def strip_instrumentation(text):
    """The source without its strata include and its STRATA_ lines, and how many were removed."""
    kept, removed = [], 0
    for line in text.splitlines(keepends=True):
        if MACRO_LINE.match(line) or STRATA_INCLUDE.match(line):
            removed += 1
            kept.append("\n")  # keeps line numbers (and so __LINE__) where they were
        else:
            kept.append(line)
    return "".join(kept), removed


def compile_object(cxx, args, source, obj):
    cmd = cxx + FLAGS + args + ["-c", source, "-o", obj]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("compile failed: %s\n%s" % (" ".join(cmd), done.stderr))


def functions(obj, objdump):
    """{function name: [normalised instruction and relocation lines]} of an object file."""
    out = subprocess.run([objdump, "-d", "-r", "-C", "--no-show-raw-insn", "-w", obj],
                         capture_output=True, text=True, check=True).stdout
    result, current = {}, None
    for line in out.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if header:
            current = result.setdefault(header.group(1), [])
            continue
        if current is None or not line.strip():
            continue
        insn = re.match(r"^\s*[0-9a-f]+:\s*(.*)$", line)
        if not insn:
            continue
        text = insn.group(1).strip()
        reloc = re.match(r"^(R_\S+)\s+(.*)$", text)
        if reloc:
            text = "reloc %s %s" % (reloc.group(1), reloc.group(2))
        # Jump and call targets are offsets in the function's own section: identical code has
        # identical offsets, so only the spacing is normalised.
        current.append(re.sub(r"\s+", " ", text))
    return result


def sections(obj, objdump):
    """The names of an object file's sections."""
    out = subprocess.run([objdump, "-h", "-w", obj], capture_output=True, text=True,
                         check=True).stdout
    return {m.group(1) for m in re.finditer(r"^\s*\d+\s+(\S+)", out, re.M)}


def startup_sections(names):
    return {n for n in names if n.startswith((".init_array", ".ctors", ".preinit_array"))}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--enabled", default="0")
    parser.add_argument("--expect-difference", action="store_true")
    parser.add_argument("source")
    parser.add_argument("include_dir")
    parser.add_argument("cxx", nargs="+")
    args = parser.parse_args()
    objdump = shutil.which("objdump")
    if objdump is None:
        sys.exit("objdump not found: apt-get install binutils")

    text = open(args.source, encoding="utf-8").read()
    baseline_text, removed = strip_instrumentation(text)
    if removed < 2:
        sys.exit("%s: found no STRATA_ lines to remove" % args.source)

    with tempfile.TemporaryDirectory(prefix="strata-compiled-out-") as work:
        baseline_src = os.path.join(work, "baseline.cpp")
        with open(baseline_src, "w", encoding="utf-8") as f:
            f.write(baseline_text)
        instrumented_obj = os.path.join(work, "instrumented.o")
        baseline_obj = os.path.join(work, "baseline.o")
        compile_object(args.cxx, ["-I" + args.include_dir, "-DSTRATA_ENABLED=" + args.enabled],
                       args.source, instrumented_obj)
        compile_object(args.cxx, [], baseline_src, baseline_obj)
        instrumented = functions(instrumented_obj, objdump)
        baseline = functions(baseline_obj, objdump)
        instrumented_sections = sections(instrumented_obj, objdump)
        baseline_sections = sections(baseline_obj, objdump)

    if not baseline:
        sys.exit("no functions found in the baseline object: is objdump working?")
    # The verdict is on the source's own functions, and on code that runs at start-up. Inline
    # functions of the headers that the compiler emits out of line (in COMDAT sections, merged
    # at link time and not called by the functions above) are listed but are not failures.
    report, notes = [], []
    for name in sorted(set(instrumented) | set(baseline)):
        if name not in baseline:
            line = "only with STRATA_ENABLED=%s: %s" % (args.enabled, name)
            if STARTUP.search(name):
                report.append(line + " (runs at start-up)")
            else:
                notes.append(line)
        elif name not in instrumented:
            report.append("only without strata: %s" % name)
        elif instrumented[name] != baseline[name]:
            report.append("%s differs:" % name)
            report.extend(difflib.unified_diff(baseline[name], instrumented[name],
                                               "without strata",
                                               "STRATA_ENABLED=" + args.enabled, lineterm=""))
    for section in sorted(startup_sections(instrumented_sections) - baseline_sections):
        report.append("only with STRATA_ENABLED=%s: section %s (code run at start-up)"
                      % (args.enabled, section))
    compared = len(set(instrumented) & set(baseline))
    what = "%d functions of %s, %d instrumentation lines, compiled by %s" % (
        compared, os.path.basename(args.source), removed, " ".join(args.cxx))
    if args.expect_difference:
        if any(line.endswith(" differs:") for line in report):
            print("as expected, the comparison fails with STRATA_ENABLED=%s (%s):"
                  % (args.enabled, what))
            print("\n".join(report[:12]))
            return 0
        print("the comparison found no difference with STRATA_ENABLED=%s (%s): it cannot fail"
              % (args.enabled, what), file=sys.stderr)
        return 1
    if report:
        print("STRATA_ENABLED=%s changes the code of instrumented functions (%s):\n%s"
              % (args.enabled, what, "\n".join(report)), file=sys.stderr)
        return 1
    print("same instructions with and without the instrumentation: %s" % what)
    if notes:
        print("header functions emitted out of line, not called by the functions above:\n  "
              + "\n  ".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
