#!/usr/bin/env bash
# Proves that runtime/ (and fm-run) need no MLIR or LLVM, in two parts:
#   scripts/check-runtime-standalone.sh OUT          (ctest runtime.standalone)
#     no runtime source includes them, and a FM_RUNTIME_ONLY configuration
#     with MLIR/LLVM hidden from CMake succeeds and refers to neither
#     (seconds: nothing is compiled here);
#   scripts/check-runtime-standalone.sh --built OUT  (check-tsan.sh)
#     OUT is such a configuration that has been built: its build.ninja
#     refers to neither and fm-run is there.
# The compile and the tests of that configuration are the TSan build's
# (scripts/check-tsan.sh: a FM_RUNTIME_ONLY build with MLIR/LLVM hidden that
# builds fm-run and the runtime's tests and runs them under TSan, in CI's
# make check-sanitize). This check rebuilt the runtime on its own before
# (480 s of make check on 2026-12-07): the TSan build already compiled the
# same sources in the same configuration.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
built=0
if [ "${1:-}" = --built ]; then built=1; shift; fi
OUT=${1:?usage: check-runtime-standalone.sh [--built] OUT}

no_mlir_in() { # build.ninja of a runtime-only configuration
  if grep -q -i "mlir\|libLLVM" "$1/build.ninja"; then
    echo "runtime.standalone: the runtime-only build refers to MLIR/LLVM:" >&2
    grep -n -i -m5 "mlir\|libLLVM" "$1/build.ninja" >&2
    exit 1
  fi
}

if [ $built = 1 ]; then
  no_mlir_in "$OUT"
  test -x "$OUT/bin/fm-run" || { echo "runtime.standalone: no fm-run in $OUT" >&2; exit 1; }
  echo "runtime.standalone: $OUT built fm-run and the runtime's tests with no MLIR/LLVM"
  exit 0
fi

if grep -rnE '#include *[<"](mlir|llvm)/' "$SRC/runtime" "$SRC/tools/fm-run" "$SRC/examples/app"; then
  echo "runtime.standalone: the runtime includes MLIR/LLVM headers (above)" >&2
  exit 1
fi
mkdir -p "$OUT"
# The options check-tsan.sh builds with, less the sanitizer.
timeout 300 cmake -G Ninja -S "$SRC" -B "$OUT" -DFM_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON > "$OUT.log" 2>&1 \
  || { cat "$OUT.log"; exit 1; }
no_mlir_in "$OUT"
ninja -C "$OUT" -t query fm-run > /dev/null || { echo "runtime.standalone: no fm-run target" >&2; exit 1; }
echo "runtime.standalone: runtime-only configuration OK (no MLIR/LLVM); its build and tests run in check-tsan.sh"
