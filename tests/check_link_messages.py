#!/usr/bin/env python3
"""Mistakes with STRATA_IMPLEMENTATION are named by the linker, and its place does not matter.

Compiles and links small programs with the given compilers and checks what the linker says:

- a program that runs a session (<strata/profiler.hpp>) or calls the C API (<strata/strata.h>,
  from C and from C++) without the implementation fails to link, and the linker's output
  names STRATA_IMPLEMENTATION; so does one whose only define comes after the includes;
- a program that compiles the implementation in two files fails to link, and the first
  "multiple definition" the linker prints names STRATA_IMPLEMENTATION;
- the implementation is compiled whichever strata header follows the define (strata.hpp alone,
  profiler.hpp), also when the define stands between the includes: each such file links with a
  program that runs a session, which then records its scope;
- a file that only records (<strata/strata.hpp>, no session anywhere) still links without the
  implementation, as the instrumentation header promises.

usage: check_link_messages.py INCLUDE_DIR [--cc CC...] -- CXX [ARGS...]
"""
import concurrent.futures
import os
import subprocess
import sys
import tempfile

NAME = "STRATA_IMPLEMENTATION"
FLAGS = ["-std=c++20", "-O0", "-g0"]

SESSION = r"""
#include <strata/profiler.hpp>
#include <cstdio>
int main(int argc, char** argv) {
  strata::profiler prof({.output_dir = argc > 1 ? argv[1] : "strata-out"});
  prof.start();
  { STRATA_SCOPE("work"); }
  prof.stop();
  std::printf("recorded %llu\n", static_cast<unsigned long long>(prof.stats().recorded));
}
"""
C_API = r"""
#include <strata/strata.h>
int main(void) { return strata_start("strata-out") == 0 ? strata_stop_and_export() : 1; }
"""
RECORD_ONLY = r"""
#include <strata/strata.hpp>
int main() { STRATA_SCOPE("work"); return 0; }
"""
# Files that compile the implementation: the define before or between the includes.
IMPLEMENTATIONS = {
    "define, strata.hpp": "#define STRATA_IMPLEMENTATION\n#include <strata/strata.hpp>\n",
    "define, profiler.hpp": "#define STRATA_IMPLEMENTATION\n#include <strata/profiler.hpp>\n",
    "profiler.hpp, define, strata.hpp":
        "#include <strata/profiler.hpp>\n#define STRATA_IMPLEMENTATION\n#include <strata/strata.hpp>\n",
}
TOO_LATE = "#include <strata/profiler.hpp>\n#include <strata/strata.h>\n#define STRATA_IMPLEMENTATION\n"

failures = []


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def compile_object(compiler, flags, tmp, name, text, suffix=".cpp"):
    source = os.path.join(tmp, name + suffix)
    with open(source, "w") as f:
        f.write(text)
    obj = os.path.join(tmp, name + ".o")
    done = run(compiler + flags + ["-c", source, "-o", obj])
    if done.returncode != 0:
        failures.append("%s does not compile:\n%s" % (name + suffix, done.stderr))
        return None
    return obj


def link(cxx, tmp, objects, exe):
    return run(cxx + [*objects, "-o", os.path.join(tmp, exe), "-pthread"])


def expect_named(what, done):
    """A link that must fail and name STRATA_IMPLEMENTATION."""
    if done.returncode == 0:
        failures.append("%s: linked, but must not" % what)
    elif NAME not in done.stderr + done.stdout:
        failures.append("%s: the linker's output does not name %s:\n%s" % (what, NAME, done.stderr))


def main():
    args = sys.argv[1:]
    if "--" not in args:
        sys.exit(__doc__)
    cxx = args[args.index("--") + 1:]
    options = args[:args.index("--")]
    include = options[0]
    cc = options[options.index("--cc") + 1:] if "--cc" in options else []
    flags = FLAGS + ["-I", include]

    with tempfile.TemporaryDirectory(prefix="strata-link-") as tmp:
        session = compile_object(cxx, flags, tmp, "session", SESSION)
        c_api_cpp = compile_object(cxx, flags, tmp, "c_api_cpp", C_API)
        c_api_c = (compile_object(cc, ["-std=c11", "-I", include], tmp, "c_api_c", C_API, ".c")
                   if cc else None)
        record_only = compile_object(cxx, flags, tmp, "record_only", RECORD_ONLY)
        too_late = compile_object(cxx, flags, tmp, "too_late", TOO_LATE)
        # The implementation files take most of the time: two at once.
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            jobs = {label: pool.submit(compile_object, cxx, flags, tmp, "impl_%d" % i, text)
                    for i, (label, text) in enumerate(IMPLEMENTATIONS.items())}
            impls = {label: job.result() for label, job in jobs.items()}
        if failures:
            return report()

        expect_named("a session without the implementation", link(cxx, tmp, [session], "no_impl"))
        expect_named("the C API (compiled as C++) without the implementation",
                     link(cxx, tmp, [c_api_cpp], "no_impl_c_api"))
        if c_api_c:
            expect_named("the C API (compiled as C) without the implementation",
                         link(cxx, tmp, [c_api_c], "no_impl_c"))
        expect_named("the define after every include (compiles nothing)",
                     link(cxx, tmp, [session, too_late], "too_late"))

        two = list(impls.values())[:2]
        done = link(cxx, tmp, [session, *two], "twice")
        first = next((line for line in (done.stderr + done.stdout).splitlines()
                      if "multiple definition" in line), None)
        if done.returncode == 0:
            failures.append("two files that define %s: linked, but must not" % NAME)
        elif first is None or NAME not in first:
            failures.append("two files that define %s: the first multiple definition does not "
                            "name it: %r\n%s" % (NAME, first, done.stderr[:2000]))

        for i, (label, obj) in enumerate(impls.items()):
            exe = "order_%d" % i
            done = link(cxx, tmp, [session, obj], exe)
            if done.returncode != 0:
                failures.append("%s: does not link with a session:\n%s" % (label, done.stderr[:2000]))
                continue
            ran = run([os.path.join(tmp, exe), os.path.join(tmp, "out_%d" % i)])
            if ran.returncode != 0 or ran.stdout.strip() != "recorded 1":
                failures.append("%s: the session ran with exit %d, printing %r (expected "
                                "'recorded 1')\n%s" % (label, ran.returncode, ran.stdout, ran.stderr))

        done = link(cxx, tmp, [record_only], "record_only")
        if done.returncode != 0:
            failures.append("a file that only records needs no implementation, yet:\n%s" % done.stderr)
        elif run([os.path.join(tmp, "record_only")]).returncode != 0:
            failures.append("a file that only records, without the implementation, did not exit 0")
    return report()


def report():
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if not failures:
        print("link messages: a missing or doubled %s is named; the implementation is compiled "
              "whatever the order of the define and the includes" % NAME)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
