#!/usr/bin/env python3
"""The instrumentation header stays as light as <cstdint> and <cstddef>.

Lists the files the compiler reads for a translation unit that includes <strata/strata.hpp>
(with strata enabled and compiled out), and fails when any of them is neither one of strata's
own headers nor one that <cstdint> and <cstddef> already bring in: a heavier standard header,
{fmt} or Boost. Also checks that the profiler's header pulls in neither {fmt} nor Boost (they
belong to the implementation and to the argument header).

usage: check_light_header.py INCLUDE_DIR [--also-include HEADER] -- COMPILER [ARGS...]
  --also-include HEADER  add `#include HEADER` to the probe (shows the check can fail)
"""
import os
import subprocess
import sys
import tempfile


def headers_read(compiler, include_dir, source, extra=()):
    """The files the preprocessor opens for `source` (the compiler's -M list)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "probe.cpp")
        with open(path, "w") as f:
            f.write(source)
        out = subprocess.run(compiler + ["-std=c++20", "-I", include_dir, *extra, "-M", path],
                             check=True, capture_output=True, text=True).stdout
    files = out.replace("\\\n", " ").split(":", 1)[1].split()
    return {os.path.realpath(f) for f in files if not f.endswith("probe.cpp")}


def main():
    include_dir = os.path.realpath(sys.argv[1])
    options = sys.argv[2:sys.argv.index("--")]
    also = "#include %s\n" % options[1] if options[:1] == ["--also-include"] else ""
    compiler = sys.argv[sys.argv.index("--") + 1:]
    allowed = headers_read(compiler, include_dir, "#include <cstdint>\n#include <cstddef>\n")
    problems = []
    for extra in ([], ["-DSTRATA_ENABLED=0"]):
        read = headers_read(compiler, include_dir, "#include <strata/strata.hpp>\n" + also, extra)
        own = {f for f in read if f.startswith(include_dir + os.sep)}
        heavier = sorted(read - own - allowed)
        if heavier:
            problems.append("strata/strata.hpp %s reads headers beyond <cstdint> and <cstddef>:\n  %s"
                            % (" ".join(extra) or "(enabled)", "\n  ".join(heavier)))
        if not own:
            problems.append("no strata header was read: is %s the include directory?" % include_dir)
    profiler = headers_read(compiler, include_dir, "#include <strata/profiler.hpp>\n")
    for marker in ("/fmt/", "/boost/"):
        found = sorted(f for f in profiler if marker in f)
        if found:
            problems.append("strata/profiler.hpp pulls in %s:\n  %s" % (marker.strip("/"),
                                                                        "\n  ".join(found[:5])))
    if problems:
        sys.exit("\n".join(problems))
    print("strata/strata.hpp reads %d strata headers and nothing heavier than <cstdint>/<cstddef>"
          % len(own))


if __name__ == "__main__":
    main()
