#!/usr/bin/env bash
# NEVER RUN HERE: this script is for a Mac (macOS with Xcode). The project's
# Linux machines have no Metal; nothing below has been run by the project.
#
# Two modes:
#   check-metal.sh --mac [--build DIR] [--jobs N]   the Metal device, on a Mac
#   check-metal.sh [--sdk macosx|iphoneos] INPUT... the MSL kernels alone
#
# --mac (refuses to run on anything but macOS): configures and builds fmc,
# the runtime and the tools with the Metal device (runtime/hal/metal, built
# only on Apple platforms; needs MLIR 22, glslc and the SPIRV-Cross C API:
# e.g. `brew install llvm shaderc spirv-cross`, MLIR_DIR/LLVM_DIR pointing at
# MLIR 22), runs the unit tests (ctest, runtime.metal among them: every
# Metal kernel against the CPU device; CTEST_ARGS adds arguments), then
# compiles the tiny test models (llama, afm7, pt_moe, and afm7 w2 with an
# int8 KV cache, the test/e2e fixtures) with --target cpu,metal and checks
# `fm-run --device metal` against the numpy reference and against the same
# artifact on `--device cpu --activations f32` (within 1e-4 x max |logit|,
# test/e2e/check_e2e.py, as test/gpu/vulkan_e2e.test does for Vulkan),
# then the image encoders and a VLM on --device metal
# (test/gpu/check_vision_vulkan.py --device metal: numpy and the CPU device),
# printing one PASS/FAIL line per case. Needs /usr/bin/python3 (or PYTHON)
# with numpy. Exit status 0 only when every step passed.
#
# The INPUT mode: compiles every MSL kernel of
# the inputs with Apple's Metal compiler (`xcrun -sdk SDK metal -std=...
# -c`), one line per kernel, and fails if any is rejected. FOR A MAC WITH
# XCODE: it has NOT been run by the project (no Mac and no Metal SDK on the
# Linux machines that build fmc), so the MSL that fmc emits is checked there
# only by SPIRV-Cross's translation, a clang syntax check against a stand-in
# <metal_stdlib> (test/targets/metal.test) and fmc's threadgroup-memory check.
#
# INPUT is one of
#   ARTIFACT.fmb  an artifact compiled with --target metal (needs `fmc` on
#                 PATH, or FMC=path/to/fmc, to extract its MSL);
#   FILE.msl      the MSL executable as `fmc inspect A.fmb --extract-executable
#                 FILE.msl --target metal` writes it on any machine (one
#                 translation unit per kernel, each ending with a NUL byte);
#   FILE.metal    one translation unit (e.g. fm-msl's output for the runtime's
#                 hand-written kernels: `fm-msl -o DIR build/runtime/hal/vulkan/spv/*.spv`).
# Units are compiled with -std=metal2.3 (-std=ios-metal2.3 with --sdk
# iphoneos), the MSL version fmc targets. METAL overrides the compiler command.
set -uo pipefail

if [ "${1:-}" = "--mac" ]; then
  shift
  if [ "$(uname -s)" != "Darwin" ]; then
    echo "check-metal.sh --mac: this is $(uname -s), not macOS: the Metal device is built and run only on a Mac (never here)" >&2
    exit 2
  fi
  SRC=$(cd "$(dirname "$0")/.." && pwd)
  BUILD="$SRC/build-metal"
  JOBS=$(sysctl -n hw.ncpu 2>/dev/null || echo 4)
  while [ $# -gt 0 ]; do
    case "$1" in
      --build) BUILD=${2:?--build needs a directory}; shift 2 ;;
      --jobs) JOBS=${2:?--jobs needs a number}; shift 2 ;;
      *) echo "check-metal.sh --mac: unknown argument '$1' (usage: check-metal.sh --mac [--build DIR] [--jobs N])" >&2; exit 2 ;;
    esac
  done
  PY=${PYTHON:-/usr/bin/python3}
  fails=0
  step() { # NAME COMMAND...: one PASS/FAIL line
    local name=$1; shift
    if "$@" > "$BUILD/check-metal-$name.log" 2>&1; then
      echo "PASS: $name"
    else
      echo "FAIL: $name (log: $BUILD/check-metal-$name.log)"; fails=$((fails + 1))
    fi
  }
  mkdir -p "$BUILD"
  step configure cmake -G Ninja -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
  if ! grep -q "fm runtime: Metal device" "$BUILD/check-metal-configure.log"; then
    echo "FAIL: the configure found no Metal device (needs glslc and the SPIRV-Cross C API; see $BUILD/check-metal-configure.log)"
    exit 1
  fi
  step build cmake --build "$BUILD" -j "$JOBS"
  [ $fails -eq 0 ] || { echo "$fails failed (the build did not finish: nothing else runs)"; exit 1; }
  step unit-tests ctest --test-dir "$BUILD" --output-on-failure ${CTEST_ARGS:-}
  # The MSL of the runtime's kernels and of one artifact through Apple's
  # compiler (the INPUT mode below).
  step msl-runtime-kernels bash "$0" "$BUILD"/runtime/hal/metal/msl/*.metal
  BIN="$BUILD/bin"
  [ -x "$BIN/fm-run" ] || BIN=$(dirname "$(find "$BUILD" -name fm-run -type f -perm -u+x | head -1)")
  e2e() { # NAME CHECK_E2E_ARGS...
    local name=$1; shift
    step "e2e-$name" "$PY" "$SRC/test/e2e/check_e2e.py" --bin "$BIN" --work "$BUILD/check-metal/$name" \
      --device metal --threads 1 --peer-args "--device cpu --activations f32" "$@"
  }
  e2e llama --family llama --preset odd --compile-args "--target cpu,metal"
  # afm7's peer bound is 1e-3 as on Vulkan (test/gpu/vulkan_e2e.test): with
  # prefill chunk 1 the CPU rounds one K value to int8 the other way.
  e2e afm7 --family afm7 --preset tiny --compile-args "--target cpu,metal" --peer-rtol 1e-3
  e2e pt_moe --family pt_moe --preset tiny --compile-args "--target cpu,metal"
  e2e afm7-w2-kv8 --family afm7 --preset small --qat-grid 32 --rtol 1e-4 --skip-generate \
    --compile-args "--target cpu,metal --quant w2 --group 32 --kv-bits 8"
  e2e llama-w4 --family llama --preset tiny --rtol 0.35 --min-argmax-agree 0.6 --skip-generate \
    --compile-args "--target cpu,metal --quant w4 --group 32"
  # The image encoders and the VLM image splice (test/gpu/vulkan_vision.test's
  # cases and bounds, on --device metal).
  vision() { # NAME CHECK_VISION_ARGS...
    local name=$1; shift
    step "vision-$name" env PATH="$BIN:$PATH" "$PY" "$SRC/test/gpu/check_vision_vulkan.py" --device metal \
      --work "$BUILD/check-metal/vision-$name" "$@"
  }
  vision rw-vitdet --family fm_vit --preset rw-vitdet-tiny
  vision vit --family fm_vit --preset vit-tiny
  vision w4 --family fm_vit --preset rw-vitdet-tiny --vision-quant w4
  vision vlm --family fm_vlm --preset afm7-rw-tiny --rtol 1e-4 --peer-rtol 1e-4
  # A generated executable through Apple's compiler too.
  [ -f "$BUILD/check-metal/llama/model.fmb" ] &&
    step msl-artifact env FMC="$BIN/fmc" bash "$0" "$BUILD/check-metal/llama/model.fmb"
  echo "$fails failed"
  [ $fails -eq 0 ]
  exit $?
fi

SDK=macosx
if [ "${1:-}" = "--sdk" ]; then
  SDK=${2:-}; shift 2
fi
case "$SDK" in
  macosx) STD=metal2.3 ;;
  iphoneos) STD=ios-metal2.3 ;;
  *) echo "check-metal.sh: --sdk '$SDK': expected macosx or iphoneos" >&2; exit 2 ;;
esac
if [ $# -eq 0 ]; then
  echo "usage: check-metal.sh [--sdk macosx|iphoneos] ARTIFACT.fmb|FILE.msl|FILE.metal..." >&2
  exit 2
fi
METAL=${METAL:-xcrun -sdk $SDK metal}
FMC=${FMC:-fmc}
if [ -z "${METAL_SKIP_PROBE:-}" ] && ! $METAL -v >/dev/null 2>&1; then
  echo "check-metal.sh: '$METAL' does not run (this needs macOS with Xcode's Metal toolchain)" >&2
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/check-metal.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Splits a NUL-separated MSL executable into $2/unitN.metal.
split_units() {
  perl -e 'local $/ = "\0"; my $i = 0;
           while (<STDIN>) { chomp; next if $_ eq "";
             open(my $f, ">", sprintf("%s/unit%03d.metal", $ARGV[0], $i++)) or die "$!";
             print $f $_; close $f }' "$2" < "$1"
}

status=0; kernels=0; failed=0; n=0
for input in "$@"; do
  n=$((n + 1)); dir="$work/$n"; mkdir -p "$dir"
  case "$input" in
    *.fmb)
      if ! "$FMC" inspect "$input" --extract-executable "$dir/all.msl" --target metal >/dev/null; then
        echo "FAIL: $input: fmc could not extract a metal executable"; status=1; continue
      fi
      split_units "$dir/all.msl" "$dir" ;;
    *.msl) split_units "$input" "$dir" ;;
    *.metal) cp "$input" "$dir/unit000.metal" ;;
    *) echo "FAIL: $input: expected .fmb, .msl or .metal"; status=1; continue ;;
  esac
  for unit in "$dir"/unit*.metal; do
    [ -e "$unit" ] || { echo "FAIL: $input: no MSL units"; status=1; break; }
    kernels=$((kernels + 1))
    name=$(sed -n 's/^kernel void \([A-Za-z0-9_]*\)(.*/\1/p' "$unit" | head -1)
    if log=$($METAL -std=$STD -c "$unit" -o "${unit%.metal}.air" 2>&1); then
      echo "ok: $(basename "$input") ${name:-?}"
    else
      echo "FAIL: $(basename "$input") ${name:-?}:"; echo "$log"
      failed=$((failed + 1)); status=1
    fi
  done
done
echo "$kernels kernels, $failed rejected ($SDK, -std=$STD)"
exit $status
