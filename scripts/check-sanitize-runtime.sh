#!/usr/bin/env bash
# The sanitizer part of `make check`, sized for CI's 2 cores: the runtime
# (everything a device runs) under ASan + UBSan in a runtime-only build (no
# MLIR: a fraction of the whole project's build), with
#   1. every test of that build (kernels, loader, executor, sessions,
#      tokenizer, chat templates, images, grammars, adapters),
#   2. the end-to-end tests (test/e2e, against the numpy reference) with
#      this fm-run over artifacts that PLAIN_BUILD's fmc compiles,
#   3. the corruption test (test/corrupt/flip_bytes.py) with this fm-run
#      and loader: a changed byte is a clean error or a clean run, and
#      touches no byte it must not;
# then the threaded tests under TSan (scripts/check-tsan.sh). The runtime's
# arenas, caches and scratch are heap blocks of their exact size in these
# builds (FM_HEAP_HOST_MEMORY), so that overruns trap. `make check-sanitize`
# is the whole project under ASan + UBSan (compiler included).
#
#   scripts/check-sanitize-runtime.sh PLAIN_BUILD [ASAN_BUILD [TSAN_BUILD]]
#     (default PLAIN_BUILD-asan-runtime and PLAIN_BUILD-tsan; JOBS, default 2;
#      KEEP_GOING=1 runs every stage after a failing one, and fails at the end)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
PLAIN=$(cd "${1:?usage: check-sanitize-runtime.sh PLAIN_BUILD [ASAN_BUILD [TSAN_BUILD]]}" && pwd)
ASAN_BUILD=${2:-$PLAIN-asan-runtime}
TSAN_BUILD=${3:-$PLAIN-tsan}
JOBS=${JOBS:-2}
source "$SRC/scripts/sanitize-env.sh"
start=$(date +%s)
failed=""
stage() { # NAME COMMAND...: runs it; a failure stops here unless KEEP_GOING=1
  if ! "${@:2}"; then
    [ "${KEEP_GOING:-0}" = 1 ] || { echo "check-sanitize-runtime: $1 failed" >&2; exit 1; }
    failed="$failed $1"
  fi
}

echo "check-sanitize-runtime: ASan + UBSan runtime build in $ASAN_BUILD"
mkdir -p "$ASAN_BUILD"
cmake -G Ninja -S "$SRC" -B "$ASAN_BUILD" -DCMAKE_BUILD_TYPE=Release "${FM_SANITIZE_COMPILERS[@]}" \
  -DFM_RUNTIME_ONLY=ON -DFM_WITH_MPI=OFF -DFM_SANITIZE=address,undefined \
  -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON > "$ASAN_BUILD/configure.log" 2>&1 \
  || { cat "$ASAN_BUILD/configure.log"; exit 1; }
ninja -C "$ASAN_BUILD" -j"$JOBS"
built=$(date +%s)
# Left out: the tests that run no runtime code (python's own checks, ptxas on
# the CUDA sources) and the vision benchmark (timings mean nothing here).
stage units ctest --test-dir "$ASAN_BUILD" --output-on-failure -j1 \
  -E '^(reference\.numpy|runtime\.tokenizer_unicode_table|runtime\.cuda\.ptxas|bench\..*)$'
units=$(date +%s)

# fmc from the plain build, fm-run (and every runtime tool) from this one:
# lit's fm_run_dir puts it first on the tests' PATH. MPI (not in this
# build) and the device tests (need the plain build's GPU layers) are left
# to the plain run.
LIT=$(sed -n 's/^LLVM_LIT:FILEPATH=//p' "$PLAIN/CMakeCache.txt")
stage e2e "$LIT" -sv --param fm_run_dir="$ASAN_BUILD/bin" --filter-out 'mpi|device' "$PLAIN/test/e2e"
lit_done=$(date +%s)
stage flips /usr/bin/python3 "$SRC/test/corrupt/flip_bytes.py" --bin "$ASAN_BUILD/bin" --fmc "$PLAIN/bin/fmc" \
  --work "$ASAN_BUILD/flips" --offsets "${FLIP_OFFSETS:-500}"
e2e=$(date +%s)

stage tsan env JOBS="$JOBS" bash "$SRC/scripts/check-tsan.sh" "$TSAN_BUILD"
done_=$(date +%s)
echo "check-sanitize-runtime: $([ -z "$failed" ] && echo passed || echo "FAILED ($failed )")" \
     "in $((done_ - start)) s (ASan+UBSan build $((built - start)) s, its tests $((units - built)) s," \
     "e2e $((lit_done - units)) s, flips $((e2e - lit_done)) s; TSan $((done_ - e2e)) s)"
[ -z "$failed" ]
