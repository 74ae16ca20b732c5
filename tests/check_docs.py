#!/usr/bin/env python3
"""Every fenced block of the docs is exercised: code is compiled (and run where it makes a
program), commands are run against the build, and a block the checker cannot classify fails.

How a block is treated, by its fence's language and the annotation, an HTML comment on the
lines just above the fence (blank lines between are allowed):

    <!-- check: KIND [OPTIONS] [(reason)]
    optional body: code put before a C/C++ block, or commands run before a shell block
    -->

  cpp, c   With `int main(` in the block: a whole program, compiled, linked and run (no
           annotation needed). Otherwise it needs one of
             `main`     statements: put inside `int main() { ... }` after the body (the
                        block's leading #include lines, or with `at "TEXT"` its lines before
                        the first containing TEXT, stay outside), compiled, linked and run;
             `tu`       declarations: after the body, compiled as a translation unit, not run.
           Options: `writes PATH...`, files the program must have written (relative to the
           scratch directory it runs in); `norun (reason)`, linked but not run.
           C++ is compiled with every --cxx (-std=c++20 -Wall -Wextra -Werror), C with every
           --cc (-std=c11 -pedantic -Wall -Wextra -Werror), all files of a compiler in one call;
           the first compiler of each language builds the programs that are linked and run, the
           others check every file with -fsyntax-only.
           A `#define STRATA_IMPLEMENTATION` line is left out: the build's strata_implementation
           library (--impl) is linked instead of compiling the implementation per snippet.
  sh       Run with bash (-e -o pipefail) from a scratch directory that stands for the clone,
           one directory per document, blocks in document order (a later block may read what
           an earlier one wrote). The documented paths of the build are mapped to this build's
           programs in one place (map_commands). Options: `writes PATH...`, files that must
           exist afterwards; `drop "TEXT"`, leave out the lines containing TEXT (with a reason).
           The annotation's body (setup the reader does not type) names the build's programs
           as variables: "$crash_dump_child", "$strata_report".
  text     Prose, a diagram, a listing: not code. After `<!-- output: PROGRAM ARGS | ... -->`
           (quoted program output, refreshed by scripts/update_doc_outputs.py) the command is
           run and must succeed and print the line its `from "TEXT"` names.
  json     Parsed; `json items` for a block of comma-separated array items.
  any      `skip (reason)`: not exercised, the reason says why (keep these few).

A block with no language, or of another language, needs an annotation.

Commands in a table's cells (a `code span` on a line starting with `|` that begins with
`bash scripts/main.sh` or `build/release/`) are run too, after the document's blocks, and must
exit 0.

usage: check_docs.py --root SOURCE_ROOT --impl LIBSTRATA_IMPLEMENTATION.a
                     --cxx 'COMPILER' [--cxx ...] [--cc 'COMPILER' ...]
                     [--program NAME=PATH ...] [--keep] DOC.md|DIR...
"""
import argparse
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
ANNOTATION_START = "<!-- check:"
TABLE_COMMAND = re.compile(r"`((?:bash scripts/main\.sh|build/release/(?:examples|tools)/)[^`]*)`")
OPTION_WORDS = {"writes", "drop", "at", "norun"}
OUTPUT_SPEC = re.compile(r"<!-- output: (?P<spec>.*?) -->")


class block:
    def __init__(self, doc, line, lang, code, annotation, output_spec):
        self.doc = doc            # path as given
        self.line = line          # 1-based line of the first code line
        self.lang = lang
        self.code = code
        self.annotation = annotation  # (first line text, body lines, body's first line) or None
        self.output_spec = output_spec
        self.kind = None
        self.options = []
        self.reason = ""
        self.body = ""
        self.body_line = 0

    def where(self):
        return f"{self.doc}:{self.line - 1}"


def table_commands(doc):
    """(line, command) of each command in a table cell."""
    found = []
    for n, line in enumerate(pathlib.Path(doc).read_text(encoding="utf-8").split("\n"), 1):
        if line.lstrip().startswith("|"):
            found += [(n, m.group(1)) for m in TABLE_COMMAND.finditer(line)]
    return found


def read_blocks(doc):
    lines = pathlib.Path(doc).read_text(encoding="utf-8").split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if j == len(lines):
            raise SystemExit(f"{doc}:{i + 1}: a fence that is never closed")
        code = "\n".join(l[len(indent):] if l.startswith(indent) else l for l in lines[i + 1:j]) + "\n"
        # The annotation: the nearest non-blank lines above the fence, if they end an HTML comment.
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        annotation, output_spec = None, None
        if k >= 0 and lines[k].rstrip().endswith("-->"):
            start = k
            while start >= 0 and "<!--" not in lines[start]:
                start -= 1
            comment = lines[start:k + 1]
            if comment[0].lstrip().startswith(ANNOTATION_START):
                first = comment[0].lstrip()[len(ANNOTATION_START):]
                body = comment[1:]
                if first.rstrip().endswith("-->"):
                    first, body = first.rstrip()[:-3], []
                elif body:
                    body[-1] = body[-1].rstrip()[:-3]
                annotation = (first.strip(), body, start + 2)
            else:
                m_out = OUTPUT_SPEC.search(" ".join(comment))
                if m_out:
                    output_spec = m_out.group("spec")
        blocks.append(block(doc, i + 2, lang, code, annotation, output_spec))
        i = j + 1
    return blocks


def classify(b):
    """Sets b.kind, or returns what is wrong."""
    if b.annotation:
        first, body, body_line = b.annotation
        m = re.match(r"^(.*?)\s*(?:\((.*)\))?\s*$", first)
        words = shlex.split(m.group(1))
        b.reason = (m.group(2) or "").strip()
        if not words:
            return "an empty <!-- check: --> annotation: name a kind (main, tu, program, sh, json, skip (reason))"
        b.kind, b.options = words[0], words[1:]
        b.body, b.body_line = "\n".join(body).strip("\n"), body_line
        if b.kind == "skip":
            return None if b.reason else "`check: skip` needs a reason in parentheses"
        allowed = {"cpp": {"program", "main", "tu"}, "c": {"program", "main", "tu"}, "sh": {"sh"},
                   "json": {"json"}, "text": {"text"}}
        if b.kind not in allowed.get(b.lang, set()):
            return (f"`check: {b.kind}` does not apply to a ```{b.lang or '(no language)'} block "
                    f"(kinds for it: {', '.join(sorted(allowed.get(b.lang, set())) or ['skip'])})")
        if b.kind == "sh" and "drop" in b.options and not b.reason:
            return "`check: sh drop ...` needs a reason in parentheses"
        return None
    if b.lang in ("cpp", "c"):
        if re.search(r"\bint\s+main\s*\(", b.code):
            b.kind = "program"
            return None
        return (f"a ```{b.lang} block that is not a whole program: annotate it with "
                "<!-- check: main --> (statements), <!-- check: tu --> (declarations), with the "
                "declarations it needs in the comment's body, or <!-- check: skip (reason) -->")
    if b.lang in ("sh", "text", "json"):
        b.kind = b.lang
        return None
    if not b.lang:
        return ("a fence with no language: write ```text for a diagram or listing, ```sh for "
                "commands, or annotate it (<!-- check: skip (reason) -->)")
    return f"a ```{b.lang} block the checker does not run: annotate it (<!-- check: skip (reason) -->)"


# --- C and C++ ---------------------------------------------------------------------------------

def source_text(b, rel_doc):
    """The translation unit of a block, with #line directives pointing back at the doc."""
    code = re.sub(r"^\s*#\s*define\s+STRATA_IMPLEMENTATION\b.*$",
                  "// (STRATA_IMPLEMENTATION: the build's strata_implementation is linked instead)",
                  b.code, flags=re.M)
    parts = []
    if b.body:
        parts.append(f'#line {b.body_line} "{rel_doc}"\n{b.body}\n')
    if b.kind != "main":
        parts.append(f'#line {b.line} "{rel_doc}"\n{code}')
        return "".join(parts)
    # main: the block's first lines stay outside main(): its leading #include and #define
    # lines, or with `at "TEXT"` every line before the first that contains TEXT.
    lines = code.split("\n")
    at = option_value(b, "at")
    if at is not None:
        split = next((i for i, l in enumerate(lines) if at in l), None)
        if split is None:
            raise ValueError(f'`at "{at}"`: no line of the block contains it')
    else:
        split = 0
        while split < len(lines) and (not lines[split].strip() or lines[split].lstrip().startswith(("#", "//"))):
            split += 1
    outside, inside = "\n".join(lines[:split]), "\n".join(lines[split:])
    parts.append(f'#line {b.line} "{rel_doc}"\n{outside}\n')
    parts.append(f'int main({"void" if b.lang == "c" else ""}) {{\n#line {b.line + split} "{rel_doc}"\n{inside}}}\n')
    return "".join(parts)


def option_value(b, name):
    if name in b.options and b.options.index(name) + 1 < len(b.options):
        return b.options[b.options.index(name) + 1]
    return None


def compile_all(work, compilers, flags, files, parts=2):
    """All files through each compiler, in `parts` calls per compiler, all calls side by side:
    one call per compiler left a core idle once the build's other tests were done. The first
    compiler makes objects (to link and run); the others only check (-fsyntax-only: parsing and
    instantiating cost the same, code generation is left out). Returns
    {(compiler, file): (ok, log, object or None)}."""
    results, procs = {}, []
    for n, compiler in enumerate(compilers):
        out = work / f"cc{n}"
        out.mkdir(exist_ok=True)
        mode = ["-c"] if n == 0 else ["-fsyntax-only"]
        for f in files:
            (out / (f.stem + ".o")).unlink(missing_ok=True)
        for part in (files[i::parts] for i in range(parts)):
            if not part:
                continue
            cmd = shlex.split(compiler) + flags + mode + [str(f) for f in part]
            procs.append((n, compiler, out, mode, part,
                          subprocess.Popen(cmd, cwd=out, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, text=True)))
    for n, compiler, out, mode, part, p in procs:
        log, _ = p.communicate()
        for f in part:
            if n == 0:  # an object is left for each file that compiled
                results[(compiler, f)] = ((out / (f.stem + ".o")).exists(), log, out / (f.stem + ".o"))
            elif p.returncode == 0:
                results[(compiler, f)] = (True, "", None)
            else:  # something failed: find out what, file by file
                one = subprocess.run(shlex.split(compiler) + flags + mode + [str(f)], cwd=out,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                results[(compiler, f)] = (one.returncode == 0, one.stdout, None)
    return results


def check_code(blocks, args, work, failures):
    root = pathlib.Path(args.root)
    kinds = {"cpp": (args.cxx, ["-std=c++20", "-Wall", "-Wextra", "-Werror", "-O0", f"-I{root / 'include'}"], ".cpp"),
             "c": (args.cc, ["-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O0", f"-I{root / 'include'}"], ".c")}
    linker = shlex.split(args.cxx[0]) if args.cxx else ["c++"]
    runs = 0
    for lang, (compilers, flags, ext) in kinds.items():
        mine = [b for b in blocks if b.lang == lang and b.kind in ("program", "main", "tu")]
        if not mine:
            continue
        if not compilers:
            failures.append(f"{mine[0].where()}: a ```{lang} block, but no compiler was given for it")
            continue
        files = []
        for b in mine:
            stem = re.sub(r"\W", "_", pathlib.Path(b.doc).stem) + f"_{b.line}"
            f = work / (stem + ext)
            try:
                f.write_text(source_text(b, display_path(b.doc, root)), encoding="utf-8")
            except ValueError as e:
                failures.append(f"{b.where()}: {e}")
                continue
            files.append((b, f))
        if not files:
            continue
        mine = [b for b, _ in files]
        files = [f for _, f in files]
        results = compile_all(work, compilers, flags, files)
        for b, f in zip(mine, files):
            for compiler in compilers:
                ok, log, obj = results[(compiler, f)]
                if not ok:
                    failures.append(f"{b.where()}: does not compile with {compiler}:\n"
                                    + excerpt_log(log, display_path(b.doc, root), b))
                    continue
                if b.kind == "tu" or obj is None:
                    continue
                exe = obj.with_suffix("")
                link = subprocess.run(linker + [str(obj), args.impl, "-o", str(exe), "-pthread", "-lfmt", "-lm"],
                                      capture_output=True, text=True)
                if link.returncode != 0:
                    failures.append(f"{b.where()}: compiled with {compiler} but does not link:\n"
                                    + link.stderr.strip())
                    continue
                if "norun" in b.options:
                    continue
                rundir = pathlib.Path(tempfile.mkdtemp(dir=work, prefix=exe.name + "."))
                run = run_program([str(exe)], rundir, 120)
                runs += 1
                if run is None:
                    failures.append(f"{b.where()}: built with {compiler}, did not finish in 120 s")
                elif run.returncode != 0:
                    failures.append(f"{b.where()}: built with {compiler}, exits {run.returncode}:\n"
                                    + (run.stdout + run.stderr).strip()[-2000:])
                for path in writes(b):
                    if not (rundir / path).exists():
                        failures.append(f"{b.where()}: built with {compiler}, ran but wrote no {path}")
    return runs


def run_program(argv, cwd, seconds):
    """The finished process, or None when it ran out of time (and was killed)."""
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


def writes(b):
    """The paths after `writes`, up to the next option word."""
    if "writes" not in b.options:
        return []
    paths = []
    for word in b.options[b.options.index("writes") + 1:]:
        if word in OPTION_WORDS:
            break
        paths.append(word)
    return paths


def excerpt_log(log, rel_doc, b):
    """The compiler's messages about this block (its lines, its annotation's body included)."""
    first = b.body_line if b.body else b.line
    last = b.line + b.code.count("\n")
    kept, keep = [], False
    for line in log.split("\n"):
        m = re.match(r"^(.+?):(\d+):(\d+:)? ", line)
        if m:
            keep = m.group(1) == rel_doc and first <= int(m.group(2)) <= last
        elif line.startswith(("In file included", "                 from", "compilation terminated")):
            keep = False
        if keep:
            kept.append(line)
    text = "\n".join(kept).strip()
    return (text or log.strip())[:4000]


def display_path(doc, root):
    try:
        return str(pathlib.Path(doc).resolve().relative_to(pathlib.Path(root).resolve()))
    except ValueError:
        return str(doc)


# --- shell -------------------------------------------------------------------------------------

def map_commands(text, programs, shims):
    """The one place where the paths the docs give (a clone, built by scripts/main.sh) become this
    build's programs."""
    text = text.replace("bash scripts/main.sh", f"bash {shims / 'main.sh'}")
    text = re.sub(r"build/release/examples/([A-Za-z_]+)",
                  lambda m: programs.get(m.group(1), m.group(0)), text)
    text = text.replace("build/release/tools/strata-report", programs.get("strata-report", "strata-report"))
    return text


def make_shims(shims, programs):
    """scripts/main.sh does what the real one does once the build exists: run compare_ops."""
    shims.mkdir(exist_ok=True)
    main_sh = shims / "main.sh"
    main_sh.write_text("#!/usr/bin/env bash\nset -euo pipefail\n"
                       f'exec {shlex.quote(programs.get("compare_ops", "compare_ops"))} '
                       '"${1:-strata-out/compare_ops}" "${@:2}"\n', encoding="utf-8")
    main_sh.chmod(0o755)


def run_shell(b, programs, shims, clone, failures):
    code = b.code
    if "drop" in b.options:
        dropped = [b.options[i + 1] for i, o in enumerate(b.options) if o == "drop" and i + 1 < len(b.options)]
        code = "\n".join(l for l in code.split("\n") if not any(d in l for d in dropped))
    script = "set -eo pipefail\n"
    if b.body:
        script += map_commands(b.body, programs, shims) + "\n"
    script += map_commands(code, programs, shims)
    env = dict(os.environ)
    env.update({name.replace("-", "_"): path for name, path in programs.items()})
    try:
        run = subprocess.run(["bash", "-c", script], cwd=clone, capture_output=True, text=True,
                             timeout=600, env=env)
    except subprocess.TimeoutExpired:
        failures.append(f"{b.where()}: the commands did not finish in 600 s")
        return
    if run.returncode != 0:
        failures.append(f"{b.where()}: the commands exit {run.returncode}:\n{b.code.strip()}\n--- output:\n"
                        + (run.stdout + run.stderr).strip()[-3000:])
        return
    for path in writes(b):
        if not (clone / path).exists():
            failures.append(f"{b.where()}: the commands ran but wrote no {path}")


def run_output(b, programs, clone, failures):
    command, _, filters = b.output_spec.partition("|")
    argv = shlex.split(command)
    exe = programs.get(argv[0])
    if exe is None:
        failures.append(f"{b.where()}: <!-- output: {argv[0]} ... --> names no program the build gives "
                        f"(known: {', '.join(sorted(programs))})")
        return
    out = pathlib.Path(tempfile.mkdtemp(dir=clone, prefix="output."))
    run = run_program([exe, str(out / "out")] + argv[1:], out, 600)
    if run is None:
        failures.append(f"{b.where()}: {command.strip()} did not finish in 600 s")
        return
    if run.returncode != 0:
        failures.append(f"{b.where()}: {command.strip()} exits {run.returncode}:\n{run.stderr.strip()[-2000:]}")
        return
    for marker in re.findall(r'from\s+"([^"]*)"', filters):
        if marker not in run.stdout:
            failures.append(f"{b.where()}: {command.strip()} no longer prints {marker!r}, where the quote starts")


def check_json(b, failures):
    text = b.code
    if "items" in b.options:
        text = "[" + text.rstrip().rstrip(",") + "]"
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        failures.append(f"{b.where()}: not valid JSON: {e}")


# --- main --------------------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(usage=__doc__)
    p.add_argument("--root", required=True)
    p.add_argument("--impl", required=True)
    p.add_argument("--cxx", action="append", default=[])
    p.add_argument("--cc", action="append", default=[])
    p.add_argument("--program", action="append", default=[])
    p.add_argument("--keep", action="store_true", help="keep the scratch directory and say where")
    p.add_argument("docs", nargs="+")
    args = p.parse_args()
    args.root = os.path.abspath(args.root)
    args.impl = os.path.abspath(args.impl)
    programs = {}
    for item in args.program:
        name, _, path = item.partition("=")
        programs[name] = os.path.abspath(path)

    started = time.monotonic()
    failures, blocks = [], []
    docs = []
    for item in args.docs:  # a directory stands for its *.md files
        docs += sorted(str(p) for p in pathlib.Path(item).glob("*.md")) if os.path.isdir(item) else [item]
    args.docs = docs
    for doc in args.docs:
        blocks += read_blocks(doc)
    for b in blocks:
        problem = classify(b)
        if problem:
            failures.append(f"{b.where()}: {problem}")

    work = pathlib.Path(tempfile.mkdtemp(prefix="strata-docs-"))
    table_runs = 0
    try:
        runs = check_code(blocks, args, work, failures)
        compiled = time.monotonic()
        shims = work / "shims"
        make_shims(shims, programs)
        for doc in args.docs:
            clone = work / ("clone-" + re.sub(r"\W", "_", pathlib.Path(doc).stem))
            clone.mkdir()
            for b in blocks:
                if b.doc != doc:
                    continue
                if b.kind == "sh":
                    run_shell(b, programs, shims, clone, failures)
                elif b.kind == "text" and b.output_spec:
                    run_output(b, programs, clone, failures)
                elif b.kind == "json":
                    check_json(b, failures)
            for line, command in table_commands(doc):
                table_runs += 1
                cell = block(doc, line + 1, "sh", command + "\n", None, None)
                cell.kind = "sh"
                run_shell(cell, programs, shims, clone, failures)
    finally:
        if args.keep:
            print(f"scratch directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    counts = {}
    for b in blocks:
        counts[b.kind or "unclassified"] = counts.get(b.kind or "unclassified", 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    for f in failures:
        print(f, file=sys.stderr)
        print(file=sys.stderr)
    print(f"{len(blocks)} blocks in {len(args.docs)} files ({summary}); {runs} snippet programs run; "
          f"{table_runs} commands of tables run; "
          f"{len(failures)} problems; {time.monotonic() - started:.1f} s "
          f"(snippets {compiled - started:.1f} s, commands {time.monotonic() - compiled:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
