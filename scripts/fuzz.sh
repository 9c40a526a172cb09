#!/usr/bin/env bash
# Fuzzes every loader (tests/fuzz/fuzz_<loader>.cpp) from its seed corpus, tests/corpus/<loader>/.
#   scripts/fuzz.sh [SECONDS] [RUNS]
# SECONDS per loader (default 20: the eleven loaders take ~4 minutes), RUNS the
# executions per loader (default: as many as SECONDS allow; the documented local run is
# scripts/fuzz.sh 2400 1000000). Builds build-fuzz (TILESIM_FUZZ=ON: clang, ASan + UBSan) when
# needed. Exit status non-zero on any crash, sanitizer report, timeout (> 10 s) or out-of-memory
# (> 2 GB); the input that caused it is in build-fuzz/findings/<loader>/ (copy it into
# tests/corpus/<loader>/ as a regression seed, and add a test where sensible).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
runs=${2:--1}
mapfile -t loaders < tests/fuzz/loaders.txt  # the one list of loaders

[ -f build-fuzz/build.ninja ] ||
  cmake -S . -B build-fuzz -G Ninja -DTILESIM_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build-fuzz --parallel "$(nproc)"

status=0
for loader in "${loaders[@]}"; do
  work=build-fuzz/corpus/$loader findings=build-fuzz/findings/$loader
  mkdir -p "$work" "$findings"
  log=build-fuzz/findings/$loader.log
  # New inputs go to the work corpus; the seeds stay as committed.
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build-fuzz/tests/fuzz/fuzz_$loader" -max_total_time="$seconds" -runs="$runs" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" \
    "$work" "tests/corpus/$loader" > "$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
  fi
  execs=$(grep -o "stat::number_of_executed_units: *[0-9]*" "$log" | grep -o "[0-9]*$" || echo "?")
  echo "fuzz $loader: $result, $execs executions in at most $seconds s ($log)"
done
exit $status
