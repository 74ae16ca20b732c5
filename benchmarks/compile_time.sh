#!/usr/bin/env bash
# What instrumenting a file costs at compile time (issue 7, target 7: a translation unit that
# includes only what a scope needs gains at most 0.1 s).
#
# Compiles a small function at -O2 -std=c++20 twice per compiler: as it is, and including
# strata/core/macros.hpp with one STRATA_SCOPE in it. Each compile is repeated REPEATS times
# (default 7) and the medians of CPU time (user + system, what the budget is checked on) and of
# wall time are compared. A busy machine inflates both; wall time much more.
#
# usage: benchmarks/compile_time.sh [REPEATS]
#   CXXS="g++ clang++"   compilers to measure (the default)
#   BUDGET=0.1           CPU seconds the instrumented file may add; the exit status is 1 above it
#   SHOW_INCLUDES=1      also print how many headers (g++ -H) come in under each of scope.hpp's
#                        includes (a header is counted under the first one that includes it)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repeats="${1:-7}"
budget="${BUDGET:-0.1}"
read -r -a compilers <<<"${CXXS:-g++ clang++}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

body='int work(const int* values, int n) {
  @SCOPE@
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += values[i] * i;
  return sum;
}'
printf '%s\n' "${body//@SCOPE@/}" >"$work/plain.cpp"
printf '#include "strata/core/macros.hpp"\n\n%s\n' \
  "${body//@SCOPE@/STRATA_SCOPE(\"work\");}" >"$work/instrumented.cpp"

# Medians of REPEATS compiles of FILE, in seconds: "CPU WALL" (CPU is user + system time of the
# compiler's processes, which other load on the machine disturbs much less than wall time).
# Usage: median_time CXX FILE
median_time() {
  python3 - "$repeats" "$work/out.o" "$1" -std=c++20 -O2 -I"$root/include" -c "$2" <<'PY'
import resource, statistics, subprocess, sys, time
repeats, out, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:] + ["-o", sys.argv[2]]
cpu, wall = [], []
for _ in range(repeats):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall.append(time.perf_counter() - start)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
print("%.3f %.3f" % (statistics.median(cpu), statistics.median(wall)))
PY
}

status=0
printf '%-8s %-7s %21s %21s %21s\n' compiler version 'plain: CPU / wall' 'strata: CPU / wall' \
  'added: CPU / wall'
for cxx in "${compilers[@]}"; do
  version="$("$cxx" -dumpversion)"
  "$cxx" -std=c++20 -O2 -I"$root/include" -c "$work/instrumented.cpp" -o "$work/out.o"  # warm up
  read -r plain_cpu plain_wall < <(median_time "$cxx" "$work/plain.cpp")
  read -r strata_cpu strata_wall < <(median_time "$cxx" "$work/instrumented.cpp")
  added_cpu="$(echo "$strata_cpu - $plain_cpu" | bc)"
  added_wall="$(echo "$strata_wall - $plain_wall" | bc)"
  verdict=ok
  if [ "$(echo "$added_cpu > $budget" | bc)" -eq 1 ]; then
    verdict="over the ${budget} s budget"
    status=1
  fi
  printf '%-8s %-7s %10.3f / %7.3f %10.3f / %7.3f %10.3f / %7.3f  %s\n' "$cxx" "$version" \
    "$plain_cpu" "$plain_wall" "$strata_cpu" "$strata_wall" "$added_cpu" "$added_wall" "$verdict"
done
echo "(seconds, medians of $repeats compiles at -O2 -std=c++20; strata: the same function with" \
  "strata/core/macros.hpp and one STRATA_SCOPE; the budget applies to CPU time)"

if [ "${SHOW_INCLUDES:-0}" = 1 ]; then
  echo
  echo "headers pulled in by strata/core/macros.hpp (g++ -H), under the include that first"\
    "brings them:"
  g++ -std=c++20 -O2 -I"$root/include" -H -fsyntax-only "$work/instrumented.cpp" 2>&1 |
    awk '/^\.+ / { depth = index($0, " ") - 1; n++
                   if (depth <= 3) { top = $2; order[++k] = top } count[top]++ }
         END { for (i = 1; i <= k; i++) printf "  %5d  %s\n", count[order[i]], order[i]
               printf "  %5d  headers in all\n", n }'
fi
exit "$status"
