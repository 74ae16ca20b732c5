# Shared by scripts/main.sh and scripts/test.sh: install what is missing, then get out of the way.
# shellcheck shell=bash

STRATA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# Debian packages strata needs to build, test and benchmark. Nothing else is downloaded.
STRATA_PACKAGES=(
  g++ clang meson ninja-build pkg-config python3
  libfmt-dev libboost-dev doctest-dev libbenchmark-dev
  protobuf-compiler zlib1g-dev cmake rapidjson-dev time libclang-rt-14-dev
  chromium  # tests/check_html_report.py opens the HTML report in it, headless
)

# The programs the builds and tests run, each with the package above that provides it: checked
# after the install, so that a missing tool stops the run with its name instead of failing
# inside a test (a CMake consumer once needed `make`, which a fresh machine does not have).
STRATA_TOOLS=(
  g++:g++ gcc:g++ clang++:clang clang:clang meson:meson ninja:ninja-build
  pkg-config:pkg-config python3:python3 protoc:protobuf-compiler cmake:cmake
  objdump:g++ setarch:util-linux
)

log() { printf '[strata] %s\n' "$*" >&2; }

# Fails, naming each missing program and its package, when a tool the tests use is not on PATH.
require_tools() {
  local entry tool package missing=()
  for entry in "${STRATA_TOOLS[@]}"; do
    tool=${entry%%:*}
    package=${entry#*:}
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool (Debian package $package)")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "missing tools the tests need: ${missing[*]}; install them and run again"
  return 1
}

# Installs the packages that are not installed yet; quick (no apt at all) when nothing is missing.
ensure_packages() {
  local missing=() p
  for p in "${STRATA_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing missing Debian packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
      log "not root and no sudo: install them yourself with apt-get install ${missing[*]}"
      return 1
    fi
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# meson setup once; later runs only rebuild what changed (ninja re-runs meson when needed).
# Usage: setup_build DIR COMPILER [meson options...]
setup_build() {
  local dir="$1" compiler="$2"
  shift 2
  if [ -f "$dir/build.ninja" ]; then return 0; fi
  CXX="$compiler" meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || {
    cat "$dir.setup.log" >&2
    return 1
  }
}
