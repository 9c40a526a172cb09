#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (as root) or a developer checkout:
#   scripts/bootstrap.sh demo      install what is missing, build tilesim only, run a shipped
#                                  sweep (GroupNorm's loop count: a U-shaped curve) and plot it
#   scripts/bootstrap.sh test      install what is missing, build, run the whole test suite (the
#                                  Python module's pytest suite included)
#   scripts/bootstrap.sh sanitize  build the tests with address+undefined sanitizers and run them
#   scripts/bootstrap.sh fuzz [S]  build the libFuzzer targets with clang and fuzz every loader for
#                                  S seconds each (default 20: ~2.5 minutes; scripts/fuzz.sh)
# Idempotent: installed packages and an up-to-date build are left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(cmake ninja-build g++ libeigen3-dev libtbb-dev nlohmann-json3-dev libgtest-dev
          libgmock-dev libbenchmark-dev libcli11-dev libfmt-dev libsimdjson-dev libzstd-dev libjemalloc-dev
          libboost-dev pkgconf
          pybind11-dev python3-dev python3-pytest python3-pandas python3-matplotlib
          python3-distributed python3-mesonpy python3-hypothesis python3-tqdm python3-jsonschema)
# Only the fuzz mode needs clang and its fuzzer runtime.
FUZZ_PACKAGES=(clang libclang-rt-14-dev)

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

build() {  # build <dir> <target or "" for all> [cmake args...]
  local dir=$1 target=$2
  shift 2
  [ -f "$dir/build.ninja" ] || cmake -S . -B "$dir" -G Ninja "$@"
  cmake --build "$dir" --parallel "$(nproc)" ${target:+--target "$target"}
}

mode=${1:-demo}
[ "$mode" = fuzz ] && PACKAGES+=("${FUZZ_PACKAGES[@]}")
install_missing
case "$mode" in
  demo)
    build build tilesim -DCMAKE_BUILD_TYPE=Release
    mkdir -p build/demo
    ./build/tools/tilesim sweep configs/sweeps/rule2_groupnorm_16x64x256x256_loops.json \
      --svg build/demo/groupnorm_loops.svg
    echo "bootstrap: the curve is in build/demo/groupnorm_loops.svg (open it in a browser)"
    ;;
  test)
    # A unity build, as the sanitize mode's: batches of a library's files compile as one unit, so
    # each header is parsed once per batch. A plain cmake build (docs/install.md, pip) stays one
    # unit per file and so checks each file's own includes.
    build build "" -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON
    ctest --test-dir build --output-on-failure --parallel "$(nproc)"
    ;;
  sanitize)
    # A unity build: each library compiles in a few big units, so the headers and their templates
    # are parsed and instrumented once per batch rather than once per file (the libraries' compile
    # time halves: 23 -> 16 minutes in all on 2 cores).
    # The tests that lock the model's figures run in the test mode only (TILESIM_FIGURE_TESTS,
    # tests/CMakeLists.txt): same figures, and no code path the other tests leave unrun.
    build build-asan "" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILESIM_SANITIZE=ON -DTILESIM_BUILD_BENCH=OFF \
      -DCMAKE_UNITY_BUILD=ON -DTILESIM_FIGURE_TESTS=OFF
    # A 16 MB quarantine and 4 frames of allocation stack (ASan's defaults: 256 MB, 30): the model
    # allocates in short bursts, and the defaults spent a third of its time recording stacks and
    # faulting in fresh pages (perf; SweepReport.TableFitsOneHundredTwentyColumns: 36-47 s -> 31 s).
    ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16:malloc_context_size=4 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir build-asan --output-on-failure --parallel "$(nproc)"
    ;;
  fuzz)
    scripts/fuzz.sh "${2:-20}"
    ;;
  *)
    echo "usage: scripts/bootstrap.sh [demo|test|sanitize|fuzz [SECONDS]]" >&2
    exit 2
    ;;
esac
