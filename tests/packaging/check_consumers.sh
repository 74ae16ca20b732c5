#!/usr/bin/env bash
# Checks that strata can be consumed the supported ways, from a copy of the source tree:
#   0. plain: `g++ -std=c++20 -Iinclude -pthread` and nothing else (and clang++), warning free;
#      the same program linked with -lfmt too; the C engine example (gcc -std=c11 -pedantic);
#   1. installed, through pkg-config (any build system), and uninstalled (meson-uninstalled/);
#   2. as a Meson subproject, through dependency('strata');
#   3. installed, through CMake's find_package(strata) (the target strata::strata);
#   4. as a CMake subdirectory of a checkout (add_subdirectory, as FetchContent does).
# Each consumer builds the README's quickstart (or the C example) and runs it; the trace it
# writes must parse. Routes 1-4 compile the quickstart's session file with the flags the route
# gives and link strata's implementation compiled once, in step 0, from the same headers with
# the same flags (-I and {fmt}'s headers): compiling it once per route would test nothing new
# and cost a minute. That object is the C engine's c_engine_strata.o: the whole implementation,
# C API included, so a C++ program links it as it links examples/strata_implementation.cpp.
# Usage: check_consumers.sh SOURCE_ROOT
set -euo pipefail
src="$(cd "$1" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

trace_ok() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["otherData"]["recorded"] > 0' "$1"
}

# 0. The README's plain build: no link flags but -pthread, under both compilers.
for cxx in g++ clang++; do
  "$cxx" -std=c++20 -Wall -Wextra -Werror -I"$src/include" "$src/examples/quickstart.cpp" \
    -o "$work/quickstart_$cxx" -pthread
  (cd "$work" && rm -rf strata-out && "./quickstart_$cxx") && trace_ok "$work/strata-out/trace.json"
  echo "plain $cxx -std=c++20 -Iinclude -pthread: ok"
done
# A program that uses {fmt} as a library itself, with strata's implementation in the same file
# (under clang++, which compiles the implementation unoptimised in half the time g++ takes; the
# C engine's file below is g++'s).
cat >"$work/with_libfmt.cpp" <<'CPP'
#define STRATA_IMPLEMENTATION
#include <strata/profiler.hpp>
#include <fmt/format.h>
int main() {
  strata::profiler prof({.output_dir = "libfmt-out"});
  prof.start();
  { STRATA_SCOPE("with libfmt"); }
  prof.stop();
  fmt::print("{} records\n", prof.export_chrome_trace().events);
}
CPP
clang++ -std=c++20 -Wall -Wextra -Werror -I"$src/include" "$work/with_libfmt.cpp" -o "$work/with_libfmt" \
  -pthread -lfmt
(cd "$work" && ./with_libfmt) && trace_ok "$work/libfmt-out/trace.json"
echo "linked with -lfmt as well: ok"
# The C API from C11, strata's implementation in one C++ file.
gcc -std=c11 -Wall -Wextra -pedantic -Werror -I"$src/include" -c "$src/examples/c_engine.c" -o "$work/c_engine.o"
g++ -std=c++20 -Wall -Wextra -Werror -I"$src/include" -c "$src/examples/c_engine_strata.cpp" -o "$work/c_engine_strata.o"
g++ "$work/c_engine.o" "$work/c_engine_strata.o" -o "$work/c_engine" -pthread -lm
(cd "$work" && ./c_engine c-out 8) && trace_ok "$work"/c-out/trace_step*.json
# The README's other way to link: the C compiler, with the C++ library named.
gcc "$work/c_engine.o" "$work/c_engine_strata.o" -o "$work/c_engine_gcc" -lstdc++ -lm -pthread
(cd "$work" && ./c_engine_gcc c-gcc-out 8) && trace_ok "$work"/c-gcc-out/trace_step*.json
echo "C engine (gcc -std=c11 -pedantic; linked by g++, and by gcc -lstdc++): ok"

# The quickstart with its implementation in a file of its own, as an engine of many files has it;
# the routes below compile main.cpp and link the C engine's implementation file, compiled above.
grep -v '^#define STRATA_IMPLEMENTATION' "$src/examples/quickstart.cpp" >"$work/main.cpp"
if grep -q STRATA_IMPLEMENTATION "$work/main.cpp"; then echo "main.cpp still compiles strata"; exit 1; fi
impl="$work/c_engine_strata.o"

# strata-report is left out of both (-Dtools=disabled): it is not what a consumer includes, and
# building it would add a 20 s compile to each check.
# 1. Install into a staging prefix, then build with nothing but the compiler and pkg-config.
meson setup "$work/build" "$src" --prefix="$work/prefix" -Dtests=disabled -Dexamples=disabled \
  -Dbenchmarks=disabled -Dtools=disabled >"$work/setup.log" 2>&1 || { cat "$work/setup.log"; exit 1; }
meson install -C "$work/build" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
pc_dir="$(dirname "$(find "$work/prefix" -name strata.pc | head -n 1)")"
flags="$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs strata)"
case "$flags" in *-std=*|*-lfmt*) echo "strata.pc forces a language standard or libfmt: $flags"; exit 1;; esac
# shellcheck disable=SC2086
c++ -std=c++20 -Wall -Wextra -Werror "$work/main.cpp" "$impl" -o "$work/quickstart_pc" $flags
(cd "$work" && ./quickstart_pc && mv strata-out pc-out)
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["otherData"]["recorded"] > 0' \
  "$work/pc-out/trace.json"
echo "pkg-config consumer: ok"
# The uninstalled .pc of the build directory carries the source tree's include path.
flags="$(PKG_CONFIG_PATH="$work/build/meson-uninstalled" pkg-config --cflags --libs strata-uninstalled)"
case "$flags" in *-std=*) echo "strata-uninstalled.pc forces a language standard: $flags"; exit 1;; esac
# shellcheck disable=SC2086
c++ -std=c++20 -Wall -Wextra -Werror "$work/main.cpp" "$impl" -o "$work/quickstart_upc" $flags
(cd "$work" && rm -rf strata-out && ./quickstart_upc) && trace_ok "$work/strata-out/trace.json"
echo "uninstalled pkg-config consumer: ok"

# 2. A Meson project with strata under subprojects/.
mkdir -p "$work/app/subprojects"
ln -s "$src" "$work/app/subprojects/strata"
cp "$work/main.cpp" "$work/app/main.cpp"
cat >"$work/app/meson.build" <<'MESON'
project('strata_consumer', 'cpp', default_options : ['cpp_std=c++20'])
strata = dependency('strata', fallback : ['strata', 'strata_dep'],
  default_options : ['tests=disabled', 'examples=disabled', 'benchmarks=disabled',
                     'tools=disabled'])
executable('app', 'main.cpp', dependencies : strata, link_args : get_option('impl'))
MESON
echo "option('impl', type : 'string')" >"$work/app/meson_options.txt"
meson setup "$work/app/build" "$work/app" --force-fallback-for=strata -Dimpl="$impl" >"$work/app-setup.log" 2>&1 || { cat "$work/app-setup.log"; exit 1; }
meson compile -C "$work/app/build" >"$work/app-compile.log" 2>&1 || { cat "$work/app-compile.log"; exit 1; }
(cd "$work" && ./app/build/app)
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["otherData"]["recorded"] > 0' \
  "$work/strata-out/trace.json"
echo "meson subproject consumer: ok"

# 3 and 4. CMake: the same consumer project, once with the installed package and once with the
# checkout as a subdirectory. It also checks what strata::strata imposes on the program: C++20
# as a compile feature, and neither libfmt nor FMT_HEADER_ONLY (strata uses {fmt}'s headers
# only; see cmake/strataConfig.cmake.in).
mkdir -p "$work/cmake-app"
cp "$work/main.cpp" "$work/cmake-app/main.cpp"
cat >"$work/cmake-app/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(strata_cmake_consumer CXX)
if(STRATA_SOURCE)
  add_subdirectory("${STRATA_SOURCE}" strata)
else()
  find_package(strata 0.1 REQUIRED)
endif()
get_target_property(features strata::strata INTERFACE_COMPILE_FEATURES)
get_target_property(libraries strata::strata INTERFACE_LINK_LIBRARIES)
get_target_property(definitions strata::strata INTERFACE_COMPILE_DEFINITIONS)
if(NOT "cxx_std_20" IN_LIST features)
  message(FATAL_ERROR "strata::strata does not require cxx_std_20: ${features}")
endif()
if(libraries MATCHES "fmt" OR definitions MATCHES "FMT_HEADER_ONLY")
  message(FATAL_ERROR "strata::strata imposes fmt on the program: ${libraries} ${definitions}")
endif()
add_executable(app main.cpp)
target_link_libraries(app PRIVATE strata::strata "${STRATA_IMPL_OBJECT}")
CMAKE
pkg_cmake_dir="$(dirname "$(find "$work/prefix" -name strataConfig.cmake | head -n 1)")"
for route in package subdirectory; do
  if [ "$route" = package ]; then
    where=(-DCMAKE_PREFIX_PATH="$work/prefix" -Dstrata_DIR="$pkg_cmake_dir")
  else
    where=(-DSTRATA_SOURCE="$src")
  fi
  cmake -G Ninja -S "$work/cmake-app" -B "$work/cmake-$route" -DSTRATA_IMPL_OBJECT="$impl" "${where[@]}" \
    >"$work/cmake-$route.log" 2>&1 || { cat "$work/cmake-$route.log"; exit 1; }
  cmake --build "$work/cmake-$route" >>"$work/cmake-$route.log" 2>&1 || { cat "$work/cmake-$route.log"; exit 1; }
  rm -rf "$work/strata-out"
  (cd "$work" && "./cmake-$route/app")
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["otherData"]["recorded"] > 0' \
    "$work/strata-out/trace.json"
  echo "cmake $route consumer: ok"
done
