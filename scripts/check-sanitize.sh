#!/usr/bin/env bash
# `make check-sanitize`, the sanitizer part of CI (.ci/run), sized for its 2
# cores: the whole project (compiler and runtime; MLIR and LLVM are Debian's
# prebuilt, uninstrumented libraries, so only fmc's own code is checked)
# under ASan + UBSan, with
#   1. every test of that build (kernels, loader, executor, sessions,
#      tokenizer, chat templates, images, grammars, adapters, the compiler's
#      unit tests) and every libFuzzer target (fuzz.*: they are built only
#      here, on this build's objects; cmake/FmFuzz.cmake),
#   2. the lit tests (test/: dialects, passes, import, targets, adapters,
#      the end-to-end runs against the numpy reference, on MPI ranks and on
#      a Vulkan device too) with this build's fmc, fm-opt and fm-run,
#   3. the corruption test (test/corrupt/flip_bytes.py) with this fmc,
#      fm-run and loader: a changed byte is a clean error or a clean run, and
#      touches no byte it must not;
# and the threaded tests under TSan (scripts/check-tsan.sh). The runtime's
# arenas, caches and scratch are heap blocks of their exact size in these
# builds (FM_HEAP_HOST_MEMORY), so that overruns trap. Every sanitizer
# report fails its test (scripts/sanitize-env.sh); the only suppressions
# are the MPI stage's, of Open MPI's own leaks (scripts/lsan-openmpi.supp).
#
# Sized by measurement (docs/ci.md has the numbers): both builds at -O1
# (cmake/FmSanitize.cmake), built side by side so that neither core idles
# in the other's links; only what the stages below run is built (not the
# benchmarks, nor the NEON cross-builds); the tests two at a time;
# the slowest data-driven tests sampled (FM_TEST_SAMPLE);
# the corruption test on fewer fm-run offsets (FLIP_RUN_EVERY) and image
# bytes (FLIP_IMAGE_STRIDE) than the plain build's corrupt.flips, which runs
# the whole set. PLAIN_BUILD gives lit (its CMakeCache's LLVM_LIT).
# Unsampled, by hand:
#   FM_TEST_SAMPLE=1 FLIP_RUN_EVERY=1 FLIP_IMAGE_STRIDE=1 make check-sanitize
#
#   scripts/check-sanitize.sh PLAIN_BUILD [ASAN_BUILD [TSAN_BUILD]]
#     (default PLAIN_BUILD-asan and PLAIN_BUILD-tsan; JOBS, default 2;
#      KEEP_GOING=1 runs every stage after a failing one, and fails at the end)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
PLAIN=$(cd "${1:?usage: check-sanitize.sh PLAIN_BUILD [ASAN_BUILD [TSAN_BUILD]]}" && pwd)
# Absolute: lit runs the e2e tests in their own directories, where a
# relative fm_run_dir would silently leave PLAIN_BUILD's fm-run on the PATH.
ASAN_BUILD=$(mkdir -p "${2:-$PLAIN-asan}" && cd "${2:-$PLAIN-asan}" && pwd)
TSAN_BUILD=$(mkdir -p "${3:-$PLAIN-tsan}" && cd "${3:-$PLAIN-tsan}" && pwd)
JOBS=${JOBS:-2}
source "$SRC/scripts/sanitize-env.sh"
start=$(date +%s)
failed=""
stage() { # NAME COMMAND...: runs it; a failure stops here unless KEEP_GOING=1
  if ! "${@:2}"; then
    [ "${KEEP_GOING:-0}" = 1 ] || { echo "check-sanitize: $1 failed" >&2; exit 1; }
    failed="$failed $1"
  fi
}

echo "check-sanitize: ASan + UBSan build in $ASAN_BUILD, TSan in $TSAN_BUILD"
mkdir -p "$ASAN_BUILD"
cmake -G Ninja -S "$SRC" -B "$ASAN_BUILD" -DCMAKE_BUILD_TYPE=Release "${FM_SANITIZE_COMPILERS[@]}" \
  -DFM_WITH_MPI=ON -DFM_SANITIZE=address,undefined \
  -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON > "$ASAN_BUILD/configure.log" 2>&1 \
  || { cat "$ASAN_BUILD/configure.log"; exit 1; }
JOBS="$JOBS" bash "$SRC/scripts/check-tsan.sh" "$TSAN_BUILD" configure
# The targets of `all` (each directory's expanded) but what no stage below
# runs: the benchmarks (bench/, *-bench, fm-gemm-yardstick, fm-stream-read:
# timings mean nothing here), the NEON cross-builds and checks
# (test/unit/neon, fm_vision_neon_check: uninstrumented, their qemu tests are
# left out below; their ASan + UBSan builds, with the AArch64 gcc, run in
# make check: cmake/FmNeonSanitize.cmake) and the example app (no test).
# awk reads all of ninja's output (an early exit would leave ninja writing
# into a closed pipe).
inputs() { ninja -C "$ASAN_BUILD" -t query "$1" | awk '/^  outputs:/ {out = 1} !out && /^    / {print $1}'; }
leaves() { inputs "$1" | while read -r t; do
  case "$t" in */all) leaves "$t" ;; *) echo "$t" ;; esac
done; }
ASAN_TARGETS=$(leaves all | grep -Ev '^(bench/|test/unit/neon/)|/(fm_vision_neon_check(_sanitize)?|fm-gemm-yardstick|fm-stream-read|fm-example-generate|[^/]*-bench)$')
# Both builds at once, each with JOBS jobs: while one links (one job), the
# other compiles.
ninja -C "$ASAN_BUILD" -j"$JOBS" $ASAN_TARGETS > "$ASAN_BUILD/build.log" 2>&1 &
asan_pid=$!
tsan_ok=1
JOBS="$JOBS" bash "$SRC/scripts/check-tsan.sh" "$TSAN_BUILD" build > "$TSAN_BUILD/build.log" 2>&1 \
  || tsan_ok=0
asan_ok=1
wait "$asan_pid" || asan_ok=0
[ "$asan_ok" = 1 ] || { tail -50 "$ASAN_BUILD/build.log"; echo "check-sanitize: ASan build failed" >&2; exit 1; }
[ "$tsan_ok" = 1 ] || { tail -50 "$TSAN_BUILD/build.log"; echo "check-sanitize: TSan build failed" >&2; exit 1; }
built=$(date +%s)
# Left out: the tests that run no fmc code (python's own checks, ptxas on
# the CUDA sources, the NEON check's uninstrumented cross-build under qemu,
# the layering grep, the mutant list's check, the standalone runtime
# rebuild), the vision benchmark, runtime.mpi and runtime.mpi.* (the mpi
# stage below runs them), and the tests the stages below run their own way
# (lit, corrupt.flips).
# Two at a time: most are single-threaded (one process after another), and
# the threaded ones have serial stretches. FM_TEST_SAMPLE (default 4) has the
# slowest data-driven tests (the JSON Schema suite, fm-run's guided modes,
# constrained generation) run 1/N of their cases: each case costs ~30x
# under ASan, every code path still runs, and the plain build runs them all.
# No Vulkan driver is visible to any stage but the vulkan one
# (scripts/sanitize-env.sh): a process that does not need a device never
# loads one, and a driver's own leaks cannot fail a test of fmc's CPU code.
# `install` checks packaging (cmake --install, out-of-tree builds against the
# prefix): an instrumented libfmrt.a cannot link into a plain application,
# and the plain build runs it.
export "${FM_NO_VULKAN_DRIVER_ENV[@]}"
stage units env FM_TEST_SAMPLE="${FM_TEST_SAMPLE:-4}" ctest --test-dir "$ASAN_BUILD" --output-on-failure --no-tests=error -j"$JOBS" \
  -LE '^vulkan$' -E '^(reference\.numpy|runtime\.tokenizer_unicode_table|runtime\.cuda\.ptxas|runtime\.vision_kernels\.neon(\.sanitize)?|runtime\.neon\..*|bench\..*|lit|lit\.gpu|corrupt\.flips|layers|mutants\.list|install|runtime\.standalone|runtime\.mpi(\..*)?)$'
units=$(date +%s)

# Every lit test with this build's fmc, fm-opt and fm-run (its
# lit.site.cfg's tools dir), the e2e runs included, those on a Vulkan device
# too (lavapipe: fmc's side of the device layer is instrumented, Mesa's
# driver is not; the plain build runs them as ctest lit.gpu). The MPI runs
# are the next stage.
LIT=(/usr/bin/python3 "$SRC/test/lit_checked.py" "$SRC/test/may-be-unsupported.txt"
     "$(sed -n 's/^LLVM_LIT:FILEPATH=//p' "$PLAIN/CMakeCache.txt")")
VULKAN_LIT='fm :: (gpu/.*|e2e/device\.test)$'
stage lit "${LIT[@]}" -sv -j"$JOBS" --filter-out "fm :: e2e/[^ ]*_mpi\.test|$VULKAN_LIT" "$ASAN_BUILD/test"
lit_done=$(date +%s)
# The processes that load a Vulkan driver (Mesa's lavapipe: the ctest label
# `vulkan`, lit's gpu/ and device.test), with the driver preloaded and its
# suppressions (scripts/sanitize-env.sh: a driver's own blocks, such as the
# one lavapipe keeps on AMD Zen). lit.gpu is ctest's name for the lit run
# below.
[ -n "$FM_LAVAPIPE_ICD" ] || { echo "check-sanitize: no lavapipe ICD (mesa-vulkan-drivers)" >&2; exit 1; }
mapfile -t vulkan_vars < <(fm_vulkan_sanitize_env "$FM_LAVAPIPE_ICD")
vulkan_env=(env "${vulkan_vars[@]}")
stage vulkan "${vulkan_env[@]}" ctest --test-dir "$ASAN_BUILD" --output-on-failure --no-tests=error -j"$JOBS" \
  -L '^vulkan$' -E '^lit\.gpu$'
stage vulkan-lit "${vulkan_env[@]}" "${LIT[@]}" -sv -j"$JOBS" --filter "$VULKAN_LIT" "$ASAN_BUILD/test"
vulkan_done=$(date +%s)
# The MPI runs (runtime.mpi, runtime.mpi.cuda-nccl, lit's e2e/*_mpi.test: mpirun starts this
# build's fm-run on every rank), with Open MPI's own leaks suppressed by
# library (scripts/lsan-openmpi.supp says why; fmc's leaks are still
# reported) and the slow unwinder that reaches those libraries' frames.
mpi_env=(ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"
         LSAN_OPTIONS="suppressions=$SRC/scripts/lsan-openmpi.supp")
stage mpi env "${mpi_env[@]}" ctest --test-dir "$ASAN_BUILD" --output-on-failure --no-tests=error -R '^runtime\.mpi(\..*)?$'
stage mpi-lit env "${mpi_env[@]}" "${LIT[@]}" -sv -j"$JOBS" --filter 'fm :: e2e/[^ ]*_mpi\.test' "$ASAN_BUILD/test"
mpi_done=$(date +%s)
stage flips /usr/bin/python3 "$SRC/test/corrupt/flip_bytes.py" --bin "$ASAN_BUILD/bin" --fmc "$ASAN_BUILD/bin/fmc" \
  --work "$ASAN_BUILD/flips" --offsets "${FLIP_OFFSETS:-500}" --run-every "${FLIP_RUN_EVERY:-5}" \
  --image-stride "${FLIP_IMAGE_STRIDE:-4}"
flips=$(date +%s)

stage tsan env JOBS="$JOBS" bash "$SRC/scripts/check-tsan.sh" "$TSAN_BUILD" test
done_=$(date +%s)
echo "check-sanitize: $([ -z "$failed" ] && echo passed || echo "FAILED ($failed )")" \
     "in $((done_ - start)) s (ASan+UBSan and TSan builds $((built - start)) s, ASan tests $((units - built)) s," \
     "lit $((lit_done - units)) s, Vulkan $((vulkan_done - lit_done)) s, MPI $((mpi_done - vulkan_done)) s, flips $((flips - mpi_done)) s," \
     "TSan tests $((done_ - flips)) s)"
[ -z "$failed" ]
