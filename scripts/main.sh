#!/usr/bin/env bash
# The main job: build strata's flagship example in release mode and run it. Writes traces and
# tables under strata-out/ (or the directory given as the first argument).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$STRATA_ROOT"

ensure_packages
mkdir -p build
# -Dtools=enabled: strata-report, which reads the traces back, is part of the release build
# (ensure_packages installed RapidJSON and zlib for it).
setup_build build/release g++ --buildtype=release -Dtests=disabled -Dbenchmarks=disabled -Dtools=enabled
# A build directory set up before the option was passed keeps its own: turn it on there too.
if [ ! -x build/release/tools/strata-report ]; then meson configure build/release -Dtools=enabled >/dev/null; fi
meson compile -C build/release >/dev/null
# Row softmax three ways on a simulated NeuronCore: tables, a comparison, one trace each. Its exit
# status is the job's; the last lines say where strata-report is, to read the traces again.
out="${1:-strata-out/compare_ops}"
status=0
build/release/examples/compare_ops "$out" "${@:2}" || status=$?
report="$STRATA_ROOT/build/release/tools/strata-report"
printf '\nstrata-report, the tables of saved traces: %s\n' "$report"
printf '  e.g. %s %s/eager/trace.json --compare %s/nki/trace.json\n' "$report" "$out" "$out"
exit "$status"
