#!/usr/bin/env bash
# `make check-sanitize`: the whole project (compiler included) under ASan +
# UBSan with every unit, lit and e2e test, then the runtime's threaded tests
# under TSan (scripts/check-tsan.sh). Every sanitizer report fails its test
# (scripts/sanitize-env.sh); there are no suppressions. The runtime's
# arenas, caches and scratch are heap blocks of their exact size there
# (FM_HEAP_HOST_MEMORY), so that overruns trap. `.ci/run` runs a sampled
# version of this (scripts/check-sanitize-runtime.sh: the same ASan build,
# the slowest data-driven tests on 1/4 of their cases; see the README).
#
#   scripts/check-sanitize.sh [ASAN_BUILD [TSAN_BUILD]]
#     (default build-sanitize and build-tsan; JOBS, default 2)
# Prints its time at the end; the fuzz targets are not built here (the
# plain build runs them under ASan), nor the benchmarks.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
ASAN_BUILD=${1:-$SRC/build-sanitize}
TSAN_BUILD=${2:-$SRC/build-tsan}
JOBS=${JOBS:-2}
source "$SRC/scripts/sanitize-env.sh"
start=$(date +%s)

echo "check-sanitize: ASan + UBSan build in $ASAN_BUILD"
mkdir -p "$ASAN_BUILD"
cmake -G Ninja -S "$SRC" -B "$ASAN_BUILD" -DCMAKE_BUILD_TYPE=Release "${FM_SANITIZE_COMPILERS[@]}" \
  -DFM_SANITIZE=address,undefined -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON > "$ASAN_BUILD/configure.log" 2>&1 \
  || { cat "$ASAN_BUILD/configure.log"; exit 1; }
ninja -C "$ASAN_BUILD" -j"$JOBS"
built=$(date +%s)
(cd "$ASAN_BUILD" && ctest --output-on-failure -j1)
tested=$(date +%s)

JOBS=$JOBS bash "$SRC/scripts/check-tsan.sh" "$TSAN_BUILD"
done_=$(date +%s)
echo "check-sanitize: passed in $((done_ - start)) s (ASan+UBSan build $((built - start)) s," \
     "tests $((tested - built)) s; TSan build and tests $((done_ - tested)) s)"
