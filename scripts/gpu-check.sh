#!/usr/bin/env bash
# Every check of the CUDA device that needs a GPU, in one script, for a
# session that is lent one (the device tool: a bare CUDA image without the
# runtime's build dependencies).
#
#   scripts/gpu-check.sh --prepare BUILD OUT   (here, after building
#       fm_cuda_test and fm_cuda_ptx in BUILD): copies the test binary, the
#       shared libraries it loads, glibc's loader and the PTX into OUT (a
#       few MiB, carried to the GPU machine), so that it runs there
#       whatever that machine's libraries are.
#   scripts/gpu-check.sh OUT                   (on the GPU machine): runs,
#       in order, nvidia-smi, ptxas -v on the PTX (where the machine has a
#       ptxas), the Gpu.* tests (each kernel against the CPU reference
#       kernels, and an artifact's logits cuda vs cpu), and the matvec
#       bandwidth bench beside a device-to-device copy; prints one summary.
#       Exit status: 0 when every test passed.
set -uo pipefail

if [ "${1:-}" = "--prepare" ]; then
  BUILD=$2; OUT=$3
  # BUILD's own (bin/), before any build nested inside it.
  bin=$BUILD/bin/fm_cuda_test
  [ -x "$bin" ] || bin=$(find "$BUILD" -name fm_cuda_test -type f -perm -u+x | head -1)
  [ -n "$bin" ] || { echo "gpu-check: no fm_cuda_test under $BUILD (ninja fm_cuda_test)"; exit 1; }
  rm -rf "$OUT" && mkdir -p "$OUT/lib" "$OUT/ptx"
  cp "$bin" "$OUT/"
  # No symbol table: about 0.4 MiB less of the 64 MiB the device tool carries.
  if command -v strip > /dev/null; then strip --strip-unneeded "$OUT/fm_cuda_test"; fi
  # Every shared library it loads, the C library and its loader included
  # (the bundle runs under its own loader, so the host's glibc version does
  # not matter; libcuda.so.1 comes from the host at run time).
  ldd "$bin" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }' |
    while read -r lib; do cp -L "$lib" "$OUT/lib/"; done
  cp $(find "$BUILD" -maxdepth 4 -path '*/runtime/hal/cuda/*.ptx') "$OUT/ptx/"
  cp "$(dirname "$0")/check-ptx.sh" "$OUT/"
  du -sh "$OUT"
  exit 0
fi

OUT=${1:?usage: gpu-check.sh --prepare BUILD OUT | gpu-check.sh OUT}
OUT=$(cd "$OUT" && pwd)
status=0
echo "== gpu-check: $(date -u +%FT%TZ) on $(hostname)"
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv
else
  echo "nvidia-smi: not found"
fi

echo "== ptxas on the embedded PTX"
PTXAS=$(command -v ptxas || true)
[ -z "$PTXAS" ] && [ -x /usr/local/cuda/bin/ptxas ] && PTXAS=/usr/local/cuda/bin/ptxas
"$OUT/check-ptx.sh" "$PTXAS" sm_80,sm_90 "$OUT"/ptx/*.ptx > "$OUT/ptxas.log"
rc=$?
grep -v '^ok:' "$OUT/ptxas.log"
[ $rc = 0 ] || [ $rc = 77 ] || status=1

# The bundle's loader and libraries first, then where drivers live.
loader=$(ls "$OUT"/lib/ld-linux-x86-64.so.2 2>/dev/null || ls "$OUT"/lib/ld-linux*.so* | head -1)
libpath="$OUT/lib:/usr/local/nvidia/lib64:/usr/local/nvidia/lib:/usr/lib/x86_64-linux-gnu:/usr/lib64:/usr/local/cuda/compat"
run_test() { "$loader" --library-path "$libpath" "$OUT/fm_cuda_test" "$@"; }

echo "== Gpu tests (CUDA kernels vs the CPU reference kernels)"
run_test --gtest_filter='Gpu*' --gtest_brief=1 2>&1 | tee "$OUT/gpu-tests.log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
if grep -q "skipped: no CUDA device" "$OUT/gpu-tests.log"; then
  echo "gpu-check: no CUDA device was found: nothing ran on a GPU"
  status=1
fi

echo "== bench: matvec bandwidth beside a device-to-device copy"
run_test --gtest_filter='Gpu.DISABLED_Bench*' --gtest_also_run_disabled_tests 2>&1 |
  grep -E '^(cuda:|bench:)|FAILED' | tee "$OUT/bench.log"

echo "== summary"
echo "ptxas: $(grep -c '^ok:' "$OUT/ptxas.log") kernel builds ok, $(grep -c '^FAIL' "$OUT/ptxas.log") failed"
grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$OUT/gpu-tests.log" | sed 's/^/tests: /'
grep -E '^bench: matvec' "$OUT/bench.log" | sed -E 's/^bench: matvec //'
echo "gpu-check: status $status"
exit $status
