#!/usr/bin/env bash
# The runtime's threaded tests under TSan, in a runtime-only build (no MLIR):
# the thread pool and the kernels that split work over it (f32, quantized,
# vision, flash attention, LoRA and the fused LoRA matmul's in-dispatch
# barrier), track sections and concurrent sessions
# (runtime.executor), the loader, and the tokenizer's and grammar's caches
# shared by threads (runtime.shared_caches). Every report fails its test.
# MLIR and LLVM are hidden from this configuration and fm-run is built too:
# this build is the proof that the runtime compiles and runs without them
# (scripts/check-runtime-standalone.sh --built).
#
#   scripts/check-tsan.sh [TSAN_BUILD [STEP]]   (default build-tsan; JOBS, default 2)
# STEP is configure, build, test or all (the default);
# check-sanitize.sh runs the steps apart, to build beside ASan.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
TSAN_BUILD=${1:-$SRC/build-tsan}
STEP=${2:-all}
JOBS=${JOBS:-2}
source "$SRC/scripts/sanitize-env.sh"
TARGETS=(fm-run fm_kernels_test fm_qkernels_test fm_qgemm_test fm_vision_kernels_test
         fm_attention_flash_test fm_lora_test fm_runtime_test fm_shared_caches_test)
# With the entries that run one CPU-specific path each (.avx512, .gfni,
# .avx512-vnni, .amx: Skipped on a CPU without it).
TESTS='^runtime\.(kernels(\.avx512)?|qkernels(\.gfni)?|qgemm(\.avx512-vnni|\.amx)?|vision_kernels(\.avx512)?|attention_flash|lora|lora_fused|loader|executor|shared_caches)$'

start=$(date +%s)
if [ "$STEP" = configure ] || [ "$STEP" = all ]; then
  mkdir -p "$TSAN_BUILD"
  cmake -G Ninja -S "$SRC" -B "$TSAN_BUILD" -DCMAKE_BUILD_TYPE=Release "${FM_SANITIZE_COMPILERS[@]}" \
    -DFM_RUNTIME_ONLY=ON -DFM_WITH_MPI=OFF -DFM_SANITIZE=thread \
    -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON > "$TSAN_BUILD/configure.log" 2>&1 \
    || { cat "$TSAN_BUILD/configure.log"; exit 1; }
fi
if [ "$STEP" = build ] || [ "$STEP" = all ]; then
  ninja -C "$TSAN_BUILD" -j"$JOBS" "${TARGETS[@]}"
  bash "$SRC/scripts/check-runtime-standalone.sh" --built "$TSAN_BUILD"
fi
built=$(date +%s)
if [ "$STEP" = test ] || [ "$STEP" = all ]; then
  # The tests split their work over threads of their own, but each also has
  # long single-threaded stretches: two at a time keep both cores busy.
  (cd "$TSAN_BUILD" && ctest --output-on-failure --no-tests=error -j"$JOBS" -R "$TESTS")
fi
done_=$(date +%s)
echo "check-tsan: $STEP passed (build $((built - start)) s, tests $((done_ - built)) s)"
