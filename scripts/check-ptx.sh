#!/usr/bin/env bash
# check-ptx.sh PTXAS ARCHS [--max-regs PREFIX=N]... FILE.ptx...: runs
# `ptxas -arch=A -v` on every PTX for every architecture in the
# comma-separated ARCHS and fails on an error, on any register spill (spill
# stores or loads other than 0), or on a kernel whose name starts with a
# --max-regs PREFIX using more than its N registers (a hot kernel's
# occupancy ceiling); prints one line per kernel (registers, stack,
# spills). Exit 77 (ctest: skipped) when PTXAS is empty or missing.
set -uo pipefail
PTXAS=$1; ARCHS=$2; shift 2
ceilings=()
while [ "${1:-}" = --max-regs ]; do
  ceilings+=("$2"); shift 2
done
# The ceiling of kernel $1 (the first matching prefix), or empty.
ceiling() {
  local c
  for c in "${ceilings[@]+"${ceilings[@]}"}"; do
    [[ "$1" == "${c%=*}"* ]] && { echo "${c##*=}"; return; }
  done
}
if [ -z "$PTXAS" ] || [ ! -x "$PTXAS" ]; then
  echo "skipped: no ptxas (CUDA toolkit bin/ptxas not found; set FM_CUDA_PATH)"
  exit 77
fi
status=0
kernels=0
for arch in ${ARCHS//,/ }; do
  for ptx in "$@"; do
    # One ptxas run, killed after 300 s (a hang; it takes seconds), said in the FAIL line.
    log=$(timeout --kill-after=10 300 "$PTXAS" -arch="$arch" -v "$ptx" -o /dev/null 2>&1)
    rc=$?
    if [ $rc = 124 ] || [ $rc = 137 ]; then
      log+=$'\n'"TIMEOUT: killed after 300 s (its limit; a hang?)"
    fi
    if [ $rc != 0 ]; then
      echo "FAIL: ptxas -arch=$arch $ptx:"; echo "$log"; status=1; continue
    fi
    # A spill in any function of the file (a callee's, too) fails.
    if echo "$log" | grep -Eq '[1-9][0-9]* bytes spill (stores|loads)'; then
      echo "FAIL (spills): ptxas -arch=$arch $ptx:"
      echo "$log" | grep -E 'Function properties|spill'; status=1
    fi
    # ptxas -v: "Compiling entry function 'NAME' for 'ARCH'", then
    # "N bytes stack frame, S bytes spill stores, L bytes spill loads", then
    # "Used R registers, ...".
    while IFS='|' read -r name stack stores loads regs; do
      kernels=$((kernels + 1))
      line="$arch $(basename "$ptx") $name: $regs registers, $stack B stack, spills $stores/$loads B"
      max=$(ceiling "$name")
      if [ "$stores" != 0 ] || [ "$loads" != 0 ]; then
        echo "FAIL (spills): $line"; status=1
      elif [ -n "$max" ] && [ "$regs" -gt "$max" ]; then
        echo "FAIL (over the ceiling of $max registers): $line"; status=1
      else
        echo "ok: $line"
      fi
    done < <(echo "$log" | awk '
      /Compiling entry function/ { match($0, /'"'"'[^'"'"']+'"'"'/); name = substr($0, RSTART + 1, RLENGTH - 2) }
      /bytes stack frame/ { stack = $1; stores = $5; loads = $9 }
      /Used [0-9]+ registers/ { for (i = 1; i <= NF; ++i) if ($i == "Used") regs = $(i + 1);
                                print name "|" stack "|" stores "|" loads "|" regs }')
  done
done
if [ "$kernels" = 0 ]; then
  echo "FAIL: ptxas reported no kernels"; exit 1
fi
echo "check-ptx: $kernels kernel builds checked, status $status"
exit $status
