#!/bin/sh
# A stand-in for `xcrun metal` in check_metal_script.test (no Metal compiler
# here): `fake_metal.sh -std=S -c UNIT -o OUT` rejects a unit containing
# BROKEN or lacking a kernel function, else writes OUT; it records the
# -std it was given, so the test sees what a Mac's compiler would be asked.
std=$1; unit=$3; out=$5
[ "$2" = -c ] && [ "$4" = -o ] || { echo "fake_metal: bad arguments: $*" >&2; exit 2; }
if grep -q BROKEN "$unit" || ! grep -q '^kernel void ' "$unit"; then
  echo "$unit: error: rejected by the stand-in ($std)" >&2; exit 1
fi
echo "$std" > "$out"
