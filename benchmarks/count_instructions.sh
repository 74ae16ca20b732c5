#!/usr/bin/env bash
# Counts the instructions one call of each overhead case executes, under valgrind's callgrind.
# Unlike timings, the counts are the same on every run, however busy the machine is.
#
#   benchmarks/count_instructions.sh [BUILD_DIR] [CALLS]
#
# BUILD_DIR (default build/bench) is configured as a release build if it is not yet a Meson
# build directory (set CXX=clang++ for clang), and count_instructions is built in it. Each case
# runs CALLS times (default 1000000) after the session is started and the thread warmed up;
# callgrind collects only inside the case's function (--toggle-collect), so the count is that
# function's own instructions, call return included, divided by CALLS. "instrumentation" is
# the count minus the compiled-out case, which is the same function with the macro compiled out.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build/bench}
calls=${2:-1000000}

command -v valgrind >/dev/null || { echo "count_instructions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
if [[ ! -f $build/build.ninja ]]; then
  meson setup "$build" "$root" --buildtype=release -Dtests=disabled -Dexamples=disabled \
    -Dbenchmarks=enabled >/dev/null
fi
meson compile -C "$build" benchmarks/count_instructions >/dev/null
bin=$build/benchmarks/count_instructions

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# case name (as count_instructions knows it) | the function callgrind collects in
# A pattern must not also match a function the case calls (a lambda of the case is named after
# it): callgrind toggles collection off again on entering it.
cases=(
  "scope_compiled_out|*strata_bench::scope_compiled_out(*"
  "limit_scope|*strata_bench::limit_scope<*"
  "scope_enabled|*strata_bench::scope_user(*"
  "scope_disabled|*strata_bench::scope_user(*"
  "scope_not_captured|*strata_bench::scope_user(*"
  "scope_dynamic_interned|*strata_bench::scope_dynamic(*"
  "limit_instant|*strata_bench::limit_instant<*"
  "instant_enabled|*strata_bench::instant_user(*"
  "counter_enabled|*strata_bench::counter_user(*"
  "c_range_enabled|*strata_bench::c_range(*"
  "scope_framework|*strata_bench::scope_framework(*"
  "scope_args_seen|strata_bench::scope_args_seen(unsigned long)"
)

echo "# $build, $calls calls per case"
printf '%-24s %14s %16s\n' case instructions instrumentation
floor=
for entry in "${cases[@]}"; do
  name=${entry%%|*}
  fn=${entry#*|}
  if ! valgrind --tool=callgrind --callgrind-out-file="$work/$name.out" --toggle-collect="$fn" \
      "$bin" "$name" "$calls" >"$work/$name.log" 2>&1; then
    echo "count_instructions.sh: $name failed:" >&2
    cat "$work/$name.log" >&2
    exit 1
  fi
  total=$(awk '/^totals:/ {print $2}' "$work/$name.out")
  if [[ -z $total || $total == 0 ]]; then
    echo "count_instructions.sh: callgrind collected nothing in '$fn' (renamed?)" >&2
    exit 1
  fi
  per_call=$(awk -v t="$total" -v n="$calls" 'BEGIN {printf "%.2f", t / n}')
  [[ -z $floor ]] && floor=$per_call
  extra=$(awk -v a="$per_call" -v b="$floor" 'BEGIN {printf "%+.2f", a - b}')
  printf '%-24s %14s %16s\n' "$name" "$per_call" "$extra"
done
# What the last run reported: its clock source and compiler.
echo "# $(grep '^count_instructions:' "$work/$name.log")"
