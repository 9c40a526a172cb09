#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (as root) or a developer checkout:
#   scripts/bootstrap.sh demo      install what is missing, build, run a shipped sweep
#   scripts/bootstrap.sh test      install what is missing, build, run the whole test suite
#   scripts/bootstrap.sh sanitize  build the tests with address+undefined sanitizers and run them
# Idempotent: installed packages and an up-to-date build are left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(cmake ninja-build g++ libeigen3-dev libtbb-dev nlohmann-json3-dev libgtest-dev
          libgmock-dev libbenchmark-dev libcli11-dev libfmt-dev)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "bootstrap: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
  fi
}

build() {  # build <dir> [cmake args...]
  local dir=$1
  shift
  [ -f "$dir/build.ninja" ] || cmake -S . -B "$dir" -G Ninja "$@"
  cmake --build "$dir" --parallel "$(nproc)"
}

mode=${1:-demo}
install_missing
case "$mode" in
  demo)
    build build -DCMAKE_BUILD_TYPE=Release
    ./build/tools/tilesim sweep configs/sweeps/rule1_a_softmax_16x16384.json
    ;;
  test)
    build build -DCMAKE_BUILD_TYPE=Release
    ctest --test-dir build --output-on-failure --parallel "$(nproc)"
    ;;
  sanitize)
    build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILESIM_SANITIZE=ON -DTILESIM_BUILD_BENCH=OFF
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir build-asan --output-on-failure --parallel "$(nproc)"
    ;;
  *)
    echo "usage: scripts/bootstrap.sh [demo|test|sanitize]" >&2
    exit 2
    ;;
esac
