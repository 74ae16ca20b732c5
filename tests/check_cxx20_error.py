#!/usr/bin/env python3
"""A file that compiles strata's implementation below C++20 fails with one clear error.

Compiles, with -std=c++17, each way of reaching the implementation (STRATA_IMPLEMENTATION then
<strata/strata.h> or <strata/profiler.hpp>, or <strata/implementation.hpp> itself) and checks
that the compiler's first error is strata's "needs C++20" message and that it is the only one.
Then preprocesses the same files with -std=c++20, where the message must not appear (so the
check cannot pass by always failing).

usage: check_cxx20_error.py INCLUDE_DIR -- COMPILER [ARGS...]
"""
import os
import re
import subprocess
import sys
import tempfile

MESSAGE = "strata's implementation needs C++20 (-std=c++20)"
PROBES = {
    "strata.h": "#define STRATA_IMPLEMENTATION\n#include <strata/strata.h>\n",
    "profiler.hpp": "#define STRATA_IMPLEMENTATION\n#include <strata/profiler.hpp>\n",
    "implementation.hpp": "#include <strata/implementation.hpp>\n",
}


def run(compiler, include_dir, std, source, extra):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "probe.cpp")
        with open(path, "w") as f:
            f.write(source)
        return subprocess.run(compiler + ["-std=" + std, "-I", include_dir, *extra, path],
                              capture_output=True, text=True)


def main():
    include_dir = os.path.realpath(sys.argv[1])
    compiler = sys.argv[sys.argv.index("--") + 1:]
    problems = []
    for name, source in PROBES.items():
        r = run(compiler, include_dir, "c++17", source, ["-fsyntax-only"])
        errors = [line for line in r.stderr.splitlines() if re.search(r"\berror\b:", line)]
        if r.returncode == 0:
            problems.append("%s: compiled under -std=c++17 without an error" % name)
        elif not errors or MESSAGE not in errors[0]:
            problems.append("%s: the first error under -std=c++17 is not strata's message:\n  %s"
                            % (name, errors[0] if errors else r.stderr[:400]))
        elif len(errors) != 1:
            problems.append("%s: %d errors under -std=c++17, not one:\n  %s"
                            % (name, len(errors), "\n  ".join(errors[:4])))
        r = run(compiler, include_dir, "c++20", source, ["-E", "-o", os.devnull])
        if r.returncode != 0 or MESSAGE in r.stderr:
            problems.append("%s: preprocessing under -std=c++20 failed:\n  %s" % (name, r.stderr[:400]))
    if problems:
        sys.exit("\n".join(problems))
    print("below C++20, each of %s stops at strata's one error" % ", ".join(PROBES))


if __name__ == "__main__":
    main()
