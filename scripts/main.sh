#!/usr/bin/env bash
# The main job: build strata's flagship example in release mode and run it. Writes traces and
# tables under strata-out/ (or the directory given as the first argument).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$STRATA_ROOT"

ensure_packages
mkdir -p build
setup_build build/release g++ --buildtype=release -Dtests=disabled -Dbenchmarks=disabled
meson compile -C build/release >/dev/null
# Row softmax three ways on a simulated NeuronCore: tables, a comparison, one trace each.
exec build/release/examples/compare_ops "${1:-strata-out/compare_ops}" "${@:2}"
