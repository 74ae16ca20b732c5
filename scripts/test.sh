#!/usr/bin/env bash
# The whole test suite: builds and runs the tests under g++ and clang (warnings are errors),
# under ASan+UBSan with the parsers fuzzed for a bounded time (libFuzzer, tests/fuzz), and the
# threaded tests under TSan; ends with one "N passed, N failed" line.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$STRATA_ROOT"

ensure_packages || exit 1
require_tools || exit 1
mkdir -p build

# A run must leave the machine as it found it: each build's tests get a temp directory of their
# own (TMPDIR, which the tests, Python's tempfile and mktemp all use), and whatever is left in
# it afterwards, a mount above all, fails the run. Prints what was left; lazily unmounts and
# removes it so the next run starts clean.
left_behind() {
  local tmp="$1" mounts entries
  mounts=$(awk -v t="$tmp/" 'index($2, t) == 1 {print $2}' /proc/mounts)
  entries=$(find "$tmp" -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null)
  [ -z "$mounts$entries" ] && return 1
  [ -n "$mounts" ] && log "tests left mounted: $(echo $mounts)"
  [ -n "$entries" ] && log "tests left in their temp directory $tmp: $entries"
  local m
  for m in $(sort -r <<<"$mounts"); do umount -l "$m" 2>/dev/null; done
  return 0
}

# Debug information: line tables only in the sanitizer builds (-g1), so that their reports
# still name file and line, and none in the plain builds (-O2 without -g), which no test reads:
# a test program compiles in 14% less time without it (sim_tests under g++: 33 s against 38 s
# with -g1, itself a quarter less than -g). Each build is one translation unit per test program
# (tests/meson.build), so the compile, not the tests, is most of this script's time.
PLAIN="-Doptimization=2 -Ddebug=false"

# name | compiler | meson options. The plain builds are optimised as users build (-O2). The
# sanitizer builds are built for their compile time, which is most of what they cost: their
# instrumentation sees every access unoptimised or not. ASan+UBSan unoptimised (-O0): clang
# compiles its analysis_tests file in 36 s of CPU against 132 s at -O1 (the whole build: 3.5
# minutes on two cores), and its tests take 2.5 minutes (1.8 at -O1, in CI). TSan at -O1: under
# g++ -O0 saves it 7 s of compile and costs its thousands of threads 28 s of tests. The
# benchmarks are built by the g++ build only (they are measured from release builds of both
# compilers, docs/benchmarks.md). ASan+UBSan is clang's, and the libFuzzer targets build
# beside the tests (-Dfuzz=true), without a build of their own; each fuzz test runs its kept
# crash inputs, then fuzzes for fuzz_seconds (15 s). The TSan build leaves strata-report out
# (79 s of its compile under TSan): of its tests only c_env_crash would run it, to convert a
# dump the plain builds convert too, and its threads (several traces read at once) are
# threaded_tests' to check.
ASAN="-Doptimization=0 -Ddebug=true -Dcpp_args=-g1"
TSAN="-Doptimization=1 -Ddebug=true -Dcpp_args=-g1"
BUILDS=(
  "gcc|g++|$PLAIN -Dwerror=true -Dbenchmarks=enabled"
  "clang|clang++|$PLAIN -Dwerror=true -Dbenchmarks=disabled"
  "asan-ubsan|clang++|$ASAN -Dwerror=true -Db_sanitize=address,undefined -Dfuzz=true -Dbenchmarks=disabled -Dexamples=disabled"
  "tsan|g++|$TSAN -Db_sanitize=thread -Dtsan_only=true -Dbenchmarks=disabled -Dexamples=disabled -Dtools=disabled"
)

passed=0
failed=0
for spec in "${BUILDS[@]}"; do
  IFS='|' read -r name compiler options <<<"$spec"
  dir="build/test-$name"
  started=$SECONDS
  log "== $name: build"
  # shellcheck disable=SC2086
  if ! setup_build "$dir" "$compiler" -Dtests=enabled $options ||
     ! meson compile -C "$dir" >"$dir.compile.log" 2>&1; then
    tail -n 60 "$dir.compile.log" >&2 2>/dev/null
    log "== $name: BUILD FAILED (full log: $dir.compile.log)"
    failed=$((failed + 1))
    continue
  fi
  built=$SECONDS
  log "== $name: test"
  env_prefix=()
  if [ "$name" = tsan ] && setarch "$(uname -m)" -R true 2>/dev/null; then
    # TSan's shadow memory clashes with the kernel's high-entropy mmap randomisation; running
    # without address-space randomisation is the documented workaround.
    env_prefix=(setarch "$(uname -m)" -R)
  fi
  tmp="$STRATA_ROOT/$dir.tmp"
  rm -rf "$tmp" && mkdir -p "$tmp"
  TMPDIR="$tmp" "${env_prefix[@]}" meson test -C "$dir" --print-errorlogs --num-processes 2 >"$dir.test.log" 2>&1
  leftover=0
  if left_behind "$tmp"; then leftover=1; fi
  rm -rf "$tmp"
  log_json="$dir/meson-logs/testlog.json"
  if [ ! -f "$log_json" ]; then
    tail -n 40 "$dir.test.log" >&2
    log "== $name: no test log"
    failed=$((failed + 1))
    continue
  fi
  # The counts, then the slowest tests: where a build's test time goes.
  read -r p f slowest < <(python3 - "$log_json" <<'PY'
import json, sys
p = f = 0
took = []
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    t = json.loads(line)
    r = t.get("result")
    if r in ("OK", "EXPECTEDFAIL"):
        p += 1
    elif r != "SKIP":
        f += 1
    took.append((t.get("duration", 0), t.get("name", "?").split(" / ")[-1]))
took.sort(reverse=True)
print(p, f, ", ".join(f"{name} {d:.0f} s" for d, name in took[:3]))
PY
)
  grep -E '^(Ok|Fail|Expected Fail|Unexpected Pass|Skipped|Timeout):' "$dir.test.log" | tr '\n' ' ' >&2
  echo >&2
  if [ "$f" -ne 0 ]; then
    grep -E '(FAIL|TIMEOUT)' "$dir.test.log" | head -n 20 >&2
    # Each failed test's own last lines: a run in a throw-away root (CI) keeps only this log.
    python3 - "$log_json" >&2 <<'PY'
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line) if line.strip() else {}
    if t and t.get("result") not in ("OK", "EXPECTEDFAIL", "SKIP"):
        for stream in ("stdout", "stderr"):
            out = (t.get(stream) or "").rstrip().splitlines()
            if out:
                print(f"--- {t.get('name')}: {t.get('result')}, the last {min(len(out), 30)} lines of its {stream}")
                print("\n".join(out[-30:]))
PY
    log "== $name: failures above; full log: $dir.test.log"
  fi
  if [ "$leftover" -ne 0 ]; then
    log "== $name: the tests left files or mounts behind (above); counted as a failure"
    f=$((f + 1))
  fi
  passed=$((passed + p))
  failed=$((failed + f))
  log "== $name: $p passed, $f failed, $((SECONDS - started)) s (build $((built - started)) s, tests $((SECONDS - built)) s; slowest: $slowest)"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
