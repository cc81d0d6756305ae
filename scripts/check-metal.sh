#!/usr/bin/env bash
# check-metal.sh [--sdk macosx|iphoneos] INPUT...: compiles every MSL kernel of
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
