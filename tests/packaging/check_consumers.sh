#!/usr/bin/env bash
# Checks that strata can be consumed the two supported ways, from a copy of the source tree:
#   1. installed, through pkg-config (any build system);
#   2. as a Meson subproject, through dependency('strata').
# Each consumer builds the README's quickstart and runs it; the trace it writes must parse.
# Usage: check_consumers.sh SOURCE_ROOT
set -euo pipefail
src="$(cd "$1" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# strata-report is left out of both (-Dtools=disabled): it is not what a consumer includes, and
# building it would add a 20 s compile to each check.
# 1. Install into a staging prefix, then build with nothing but the compiler and pkg-config.
meson setup "$work/build" "$src" --prefix="$work/prefix" -Dtests=disabled -Dexamples=disabled \
  -Dbenchmarks=disabled -Dtools=disabled >"$work/setup.log" 2>&1 || { cat "$work/setup.log"; exit 1; }
meson install -C "$work/build" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
pc_dir="$(dirname "$(find "$work/prefix" -name strata.pc | head -n 1)")"
flags="$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs strata)"
# shellcheck disable=SC2086
c++ "$src/examples/quickstart.cpp" -o "$work/quickstart_pc" $flags
(cd "$work" && ./quickstart_pc && mv strata-out pc-out)
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["otherData"]["recorded"] > 0' \
  "$work/pc-out/trace.json"
echo "pkg-config consumer: ok"

# 2. A Meson project with strata under subprojects/.
mkdir -p "$work/app/subprojects"
ln -s "$src" "$work/app/subprojects/strata"
cp "$src/examples/quickstart.cpp" "$work/app/main.cpp"
cat >"$work/app/meson.build" <<'MESON'
project('strata_consumer', 'cpp', default_options : ['cpp_std=c++20'])
strata = dependency('strata', fallback : ['strata', 'strata_dep'],
  default_options : ['tests=disabled', 'examples=disabled', 'benchmarks=disabled',
                     'tools=disabled'])
executable('app', 'main.cpp', dependencies : strata)
MESON
meson setup "$work/app/build" "$work/app" --force-fallback-for=strata >"$work/app-setup.log" 2>&1 || { cat "$work/app-setup.log"; exit 1; }
meson compile -C "$work/app/build" >"$work/app-compile.log" 2>&1 || { cat "$work/app-compile.log"; exit 1; }
(cd "$work" && ./app/build/app)
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["otherData"]["recorded"] > 0' \
  "$work/strata-out/trace.json"
echo "meson subproject consumer: ok"
