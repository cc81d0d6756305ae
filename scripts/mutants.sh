#!/usr/bin/env bash
# Applies each one-line mutant of scripts/mutants.txt in turn (to the source
# tree, restored afterwards), rebuilds BUILD and runs its test suite until the
# first failure; a mutant the suite does not notice SURVIVES. Not part of CI:
# it takes a rebuild and up to a full `ctest` per mutant. The fuzz targets
# are left out unless FUZZ=1 (they take half a minute each).
#
#   scripts/mutants.sh [BUILD [PATTERN]]   (default build; PATTERN: grep -E on
#                                           the mutant lines, e.g. sampler)
# Prints one line per mutant and "N killed, N survived" (exit 1 when any
# survived). Each build and test runs under /tmp/fmc-machine.lock. FIRST (a
# ctest -R regex) runs those tests before the whole suite, so that a mutant
# they kill costs seconds (a survivor still runs everything). STOP_AT (a
# `date +%s` time) leaves the mutants not started by then unrun (counted).
# TARGETS (ninja targets, default all) rebuilds only those, and ONLY_FIRST=1
# runs FIRST alone: a mutant that survives it is reported "SURVIVED FIRST"
# (not the whole suite's verdict), for a quick pass over a subset.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd) # absolute: the tests run inside it
PATTERN=${2:-}
LOCK=${LOCK:-/tmp/fmc-machine.lock}
EXCLUDE=(-LE fuzz -E '^runtime\.standalone$')
[ "${FUZZ:-0}" = 1 ] && EXCLUDE=(-E '^runtime\.standalone$')
[ -f "$BUILD/build.ninja" ] || { echo "mutants: configure and build $BUILD first" >&2; exit 2; }

apply() { # file original mutant -> edits file in place, or fails
  /usr/bin/python3 - "$@" <<'PY'
import sys
path, original, mutant = sys.argv[1:]
lines = open(path).read().split("\n")
hits = [i for i, l in enumerate(lines) if l.strip() == original.strip()]
if len(hits) != 1:
    sys.exit("mutants: %r occurs %d times in %s" % (original.strip(), len(hits), path))
i = hits[0]
indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
lines[i] = indent + mutant.strip()
open(path, "w").write("\n".join(lines))
PY
}

killed=0 survived=0 broken=0 unrun=0
current=""
restore() { [ -n "$current" ] && cp "$current.mutant-orig" "$current" && rm -f "$current.mutant-orig"; current=""; }
trap restore EXIT INT TERM
# The list is read on fd 3: a test reading stdin must not eat the rest of it.
while IFS= read -r line <&3; do
  [[ -z "$line" || "$line" == \#* ]] && continue
  [ -n "$PATTERN" ] && ! grep -qE "$PATTERN" <<<"$line" && continue
  if [ -n "${STOP_AT:-}" ] && [ "$(date +%s)" -ge "$STOP_AT" ]; then
    unrun=$((unrun + 1)); continue
  fi
  file=$(awk -F' [|][|][|] ' '{print $1}' <<<"$line")
  original=$(awk -F' [|][|][|] ' '{print $2}' <<<"$line")
  mutant=$(awk -F' [|][|][|] ' '{print $3}' <<<"$line")
  what=$(awk -F' [|][|][|] ' '{print $4}' <<<"$line")
  cp "$SRC/$file" "$SRC/$file.mutant-orig"
  current="$SRC/$file"
  if ! apply "$SRC/$file" "$original" "$mutant"; then
    broken=$((broken + 1)); restore; continue
  fi
  log="$BUILD/mutant.log"
  if ! flock "$LOCK" ninja -C "$BUILD" -j"${JOBS:-2}" ${TARGETS:-} > "$log" 2>&1 < /dev/null; then
    result="KILLED (does not build)"
    killed=$((killed + 1))
  elif { [ -z "${FIRST:-}" ] || (cd "$BUILD" && flock "$LOCK" ctest -j1 --stop-on-failure -R "$FIRST" >> "$log" 2>&1 < /dev/null); } &&
       { [ "${ONLY_FIRST:-0}" = 1 ] ||
         (cd "$BUILD" && flock "$LOCK" ctest -j1 --stop-on-failure "${EXCLUDE[@]}" >> "$log" 2>&1 < /dev/null); }; then
    result="SURVIVED$([ "${ONLY_FIRST:-0}" = 1 ] && echo " FIRST ($FIRST)")"
    survived=$((survived + 1))
  else
    test=$(grep -oE '[0-9]+ - [^ ]+ \(Failed|[0-9]+ - [^ ]+ \((Failed|SEGFAULT|Subprocess aborted|Timeout)' "$log" | head -1 | sed 's/ (.*//; s/^[0-9]* - //')
    result="KILLED by ${test:-a test}"
    killed=$((killed + 1))
  fi
  printf '%-9s %-40s %s\n' "${result%% *}" "$file" "$what: ${result#* }"
  restore
done 3< "$SRC/scripts/mutants.txt"
# The restored sources, rebuilt, so that BUILD matches the tree again.
flock "$LOCK" ninja -C "$BUILD" -j"${JOBS:-2}" ${TARGETS:-} > /dev/null
echo "mutants: $killed killed, $survived survived$([ $broken -gt 0 ] && echo ", $broken not applicable")$([ $unrun -gt 0 ] && echo ", $unrun not run (STOP_AT)")"
[ "$survived" -eq 0 ]
