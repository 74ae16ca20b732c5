#!/usr/bin/env bash
# What strata costs an engine's build: each kind of file strata asks for, compiled next to
# reference files in the same run.
#
#   plain          a small function, no include
#   <vector>       the same, including <vector>           (the instrumentation header's budget)
#   <regex>        the same, including <regex>            (the session file's budget: 2x;
#                                                          compiled out: 1x)
#   instrumented   the function with <strata/strata.hpp> and one STRATA_SCOPE
#   session        a main() that runs a session, exports and prints a table: <strata/profiler.hpp>
#   session off    the same with -DSTRATA_ENABLED=0
#   implementation the session file with STRATA_IMPLEMENTATION defined (once per program)
#   impl. off      the same with -DSTRATA_ENABLED=0
#   args           a scope with input shapes: <strata/args/op_args.hpp> (Boost.Hana)
#
# Each file is compiled REPEATS times (default 7) at -O2 -std=c++20, interleaved (one round of
# every file, REPEATS rounds), and the medians of CPU time (user + system of the compiler, what
# the budgets are checked on) are compared. The exit status is 1 when a budget is broken.
#
# usage: benchmarks/compile_time.sh [REPEATS]
#   CXXS="g++ clang++"   compilers to measure (the default)
#   SHOW_INCLUDES=1      also list the headers the instrumentation header reads (g++ -H)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repeats="${1:-7}"
read -r -a compilers <<<"${CXXS:-g++ clang++}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

body='int work(const int* values, int n) {
  @SCOPE@
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += values[i] * i;
  return sum;
}'
session_main='#include <cstdio>
int main() {
  strata::profiler prof({.output_dir = "strata-out"});
  prof.start();
  { STRATA_SCOPE("work"); }
  prof.stop();
  prof.export_chrome_trace();
  std::puts(prof.key_averages().table().c_str());
}'
printf '%s\n' "${body//@SCOPE@/}" >"$work/plain.cpp"
printf '#include <vector>\n%s\n' "${body//@SCOPE@/}" >"$work/vector.cpp"
printf '#include <regex>\n%s\n' "${body//@SCOPE@/}" >"$work/regex.cpp"
printf '#include <strata/strata.hpp>\n%s\n' "${body//@SCOPE@/STRATA_SCOPE(\"work\");}" >"$work/instrumented.cpp"
printf '#include <strata/profiler.hpp>\n%s\n' "$session_main" >"$work/session.cpp"
printf '#define STRATA_IMPLEMENTATION\n#include <strata/profiler.hpp>\n%s\n' "$session_main" >"$work/implementation.cpp"
cat >"$work/args.cpp" <<'CPP'
#include <strata/args/op_args.hpp>
struct mm_args {
  BOOST_HANA_DEFINE_STRUCT(mm_args, (strata::shape, self), (strata::shape, mat2));
};
int work(const int* values, int n) {
  STRATA_SCOPE_ARGS(strata::layer::framework, "aten::mm", (mm_args{{n, 4}, {4, n}}));
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += values[i] * i;
  return sum;
}
CPP

# name|file|extra flags
files=(
  "plain|plain.cpp|"
  "<vector>|vector.cpp|"
  "<regex>|regex.cpp|"
  "instrumented|instrumented.cpp|"
  "session|session.cpp|"
  "session off|session.cpp|-DSTRATA_ENABLED=0"
  "implementation|implementation.cpp|"
  "impl. off|implementation.cpp|-DSTRATA_ENABLED=0"
  "args|args.cpp|"
)

status=0
for cxx in "${compilers[@]}"; do
  printf '%s\n' "${files[@]}" >"$work/files.txt"
  python3 - "$repeats" "$cxx" "$root/include" "$work" <<'PY' || status=1
import resource, statistics, subprocess, sys
repeats, cxx, include, work = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
specs = [line.rstrip("\n").split("|") for line in open(f"{work}/files.txt") if line.strip()]
version = subprocess.run([cxx, "-dumpversion"], capture_output=True, text=True).stdout.strip()

def compile_once(source, extra):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([cxx, "-std=c++20", "-O2", "-I" + include, *extra.split(), "-c",
                    f"{work}/{source}", "-o", f"{work}/out.o"], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime

for name, source, extra in specs:  # warm the page cache once
    compile_once(source, extra)
times = {name: [] for name, _, _ in specs}
for _ in range(repeats):
    for name, source, extra in specs:
        times[name].append(compile_once(source, extra))
median = {name: statistics.median(t) for name, t in times.items()}
vec, regex = median["<vector>"], median["<regex>"]
budgets = {"instrumented": ("<vector>", 1.0), "session": ("<regex>", 2.0),
           "session off": ("<regex>", 1.0), "impl. off": ("<regex>", 1.0)}
print(f"{cxx} {version}: median CPU seconds of {repeats} compiles (-O2 -std=c++20)")
print(f"  {'file':<15} {'CPU s':>7} {'/ <vector>':>11} {'/ <regex>':>10}  budget")
broken = False
for name, _, _ in specs:
    m = median[name]
    verdict = ""
    if name in budgets:
        ref, factor = budgets[name]
        ok = m <= factor * median[ref]
        broken |= not ok
        verdict = f"<= {factor:g}x {ref}: {'ok' if ok else 'OVER'}"
    print(f"  {name:<15} {m:7.3f} {m / vec:11.2f} {m / regex:10.2f}  {verdict}")
sys.exit(1 if broken else 0)
PY
done

if [ "${SHOW_INCLUDES:-0}" = 1 ]; then
  echo
  echo "headers <strata/strata.hpp> reads (g++ -H):"
  g++ -std=c++20 -O2 -I"$root/include" -H -fsyntax-only "$work/instrumented.cpp" 2>&1 | grep '^\.' || true
fi
exit "$status"
