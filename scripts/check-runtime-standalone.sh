#!/usr/bin/env bash
# Proves that runtime/ (and fm-run) build and pass their tests with no MLIR
# or LLVM: no runtime source includes them, and a FM_RUNTIME_ONLY build with
# MLIR/LLVM hidden from CMake succeeds and runs its tests.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$SRC/build/runtime-only}

if grep -rnE '#include *[<"](mlir|llvm)/' "$SRC/runtime" "$SRC/tools/fm-run" "$SRC/examples/app"; then
  echo "runtime.standalone: the runtime includes MLIR/LLVM headers (above)" >&2
  exit 1
fi
cmake -G Ninja -S "$SRC" -B "$OUT" -DFM_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON > "$OUT.log" 2>&1 \
  || { cat "$OUT.log"; exit 1; }
# The runtime's libraries, fm-run and the tests run below: not the benches,
# fuzzers and other tests (they built all 304 targets, ~390 s of make check).
ninja -C "$OUT" -j2 fm-run fm_kernels_test fm_runtime_test >> "$OUT.log" 2>&1 \
  || { tail -50 "$OUT.log"; exit 1; }
if grep -q -i "mlir\|libLLVM" "$OUT/build.ninja"; then
  echo "runtime.standalone: the runtime-only build refers to MLIR/LLVM" >&2
  exit 1
fi
(cd "$OUT" && ctest --output-on-failure -R '^runtime\.(kernels|loader|executor)$')
test -x "$OUT/bin/fm-run" || test -x "$OUT/tools/fm-run/fm-run"
echo "runtime.standalone: runtime-only build OK (no MLIR/LLVM)"
