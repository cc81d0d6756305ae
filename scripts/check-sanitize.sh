#!/usr/bin/env bash
# `make check-sanitize` (and .ci/run after `make check`): the whole project
# under ASan + UBSan with every unit, lit and e2e test, then the runtime's
# threaded tests (thread pool, track sections, concurrent sessions) under
# TSan. Every sanitizer report fails its test (abort_on_error); there are
# no suppressions. The runtime's arenas, caches and scratch are heap blocks
# of their exact size there (FM_HEAP_HOST_MEMORY), so that overruns trap.
#
#   scripts/check-sanitize.sh [ASAN_BUILD [TSAN_BUILD]]
#     (default build-sanitize and build-tsan; JOBS, default 2)
# A cold run (no build directories, CCACHE_DISABLE=1) prints its time at
# the end; the fuzz targets are not built here (the plain build runs them
# under ASan), nor the benchmarks.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
ASAN_BUILD=${1:-$SRC/build-sanitize}
TSAN_BUILD=${2:-$SRC/build-tsan}
JOBS=${JOBS:-2}
COMPILERS=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22)
start=$(date +%s)

# Reports abort (a signal: `not` and the test scripts see a crash, not a
# clean error exit). detect_stack_use_after_return costs little at -O1.
# allow_user_poisoning=0 is the one relaxation: LLVM's BumpPtrAllocator
# poisons its slabs in header code that is instrumented where fmc's files
# inline it but not in the prebuilt libLLVM/libMLIR, so its manual poisoning
# is wrong in this mixed build (cmake/FmFuzz.cmake has the case); fmc
# poisons nothing by hand.
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:allow_user_poisoning=0
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:second_deadlock_stack=1

echo "check-sanitize: ASan + UBSan build in $ASAN_BUILD"
mkdir -p "$ASAN_BUILD" "$TSAN_BUILD"
cmake -G Ninja -S "$SRC" -B "$ASAN_BUILD" -DCMAKE_BUILD_TYPE=Release "${COMPILERS[@]}" \
  -DFM_SANITIZE=address,undefined -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON > "$ASAN_BUILD/configure.log" 2>&1 \
  || { cat "$ASAN_BUILD/configure.log"; exit 1; }
ninja -C "$ASAN_BUILD" -j"$JOBS"
built=$(date +%s)
(cd "$ASAN_BUILD" && ctest --output-on-failure -j1)
tested=$(date +%s)

echo "check-sanitize: TSan build of the runtime in $TSAN_BUILD"
cmake -G Ninja -S "$SRC" -B "$TSAN_BUILD" -DCMAKE_BUILD_TYPE=Release "${COMPILERS[@]}" \
  -DFM_RUNTIME_ONLY=ON -DFM_WITH_MPI=OFF -DFM_SANITIZE=thread \
  -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON > "$TSAN_BUILD/configure.log" 2>&1 \
  || { cat "$TSAN_BUILD/configure.log"; exit 1; }
ninja -C "$TSAN_BUILD" -j"$JOBS" fm_runtime_test fm_kernels_test
(cd "$TSAN_BUILD" && ctest --output-on-failure -j1 -R '^runtime\.(kernels|loader|executor)$')
done_=$(date +%s)
echo "check-sanitize: passed in $((done_ - start)) s (ASan+UBSan build $((built - start)) s," \
     "tests $((tested - built)) s; TSan build and tests $((done_ - tested)) s)"
