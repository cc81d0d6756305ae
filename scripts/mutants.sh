#!/usr/bin/env bash
# Applies each one-line mutant of scripts/mutants.txt in turn (to the source
# tree, restored afterwards), rebuilds BUILD and runs its test suite until the
# first failure; a mutant the suite does not notice SURVIVES. Not part of CI:
# it takes a rebuild and up to a full `ctest` per mutant. The fuzz targets
# are left out unless FUZZ=1 (they take half a minute each).
#
#   scripts/mutants.sh [BUILD [PATTERN]]   (default build; PATTERN: grep -E on
#                                           the mutant lines, e.g. sampler)
#   scripts/mutants.sh --check-list [LIST] (no build: LIST, default
#                                           scripts/mutants.txt, only checked)
# A line is FILE ||| ORIGINAL ||| MUTANT ||| WHAT BREAKS: ORIGINAL must equal
# exactly one line of FILE (both stripped of leading and trailing blanks),
# which MUTANT replaces (keeping its indentation).
#
# Prints one line per mutant and "N killed, N survived" (exit 1 when any
# survived, or when any did not apply: a malformed line, a missing FILE, an
# ORIGINAL that occurs 0 or 2+ times or a MUTANT equal to it, each printed
# as N/A with its line number and why, counted "not applicable"; the others
# still run). Each build and test runs under /tmp/fmc-machine.lock (LOCK).
# FIRST (a ctest -R regex) runs those tests before the whole suite, so that
# a mutant they kill costs seconds (a survivor still runs everything).
# STOP_AT (a `date +%s` time) leaves the mutants not started by then unrun
# (counted). TARGETS (ninja targets, default all) rebuilds only those, and
# ONLY_FIRST=1 runs FIRST alone: a mutant that survives it is reported
# "SURVIVED FIRST" (not the whole suite's verdict), for a quick pass over a
# subset. LIST (a file in the format of scripts/mutants.txt, default that
# file) runs another list, e.g. the lines a change touched. The suite runs
# without mutants.list (below), which any applied mutant would fail.
#
# --check-list modifies nothing and needs no build: every line of the list
# (blank lines and # comments aside) must have the 4 fields, its FILE must
# exist, its ORIGINAL occur exactly once there and its MUTANT differ from
# it. One line per problem and exit 1, or "mutants: N lines, all apply" and
# exit 0. ctest runs it as mutants.list (test/CMakeLists.txt), so a mutant
# that no longer applies to today's source fails `make check`.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)

# The list's checks, shared by both modes: `tool check SRC LIST` prints one
# line per problem (exit 1 if any); `tool apply FILE ORIGINAL MUTANT` edits
# FILE in place, or says why not on stderr (exit 1).
tool() {
  /usr/bin/python3 - "$@" <<'PY'
import os, sys

def hits(path, original):
    lines = open(path).read().split("\n")
    return lines, [i for i, l in enumerate(lines) if l.strip() == original.strip()]

if sys.argv[1] == "apply":
    path, original, mutant = sys.argv[2:]
    if not os.path.isfile(path):
        sys.exit("%s does not exist" % path)
    lines, at = hits(path, original)
    if len(at) != 1:
        sys.exit("%r occurs %d times in %s" % (original.strip(), len(at), path))
    if mutant.strip() == original.strip():
        sys.exit("the mutant is the original line")
    i = at[0]
    indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
    lines[i] = indent + mutant.strip()
    open(path, "w").write("\n".join(lines))
    sys.exit(0)

src, listPath = sys.argv[2:]
count = problems = 0
for n, line in enumerate(open(listPath).read().split("\n"), 1):
    if not line or line.startswith("#"):
        continue
    count += 1
    fields = line.split(" ||| ")
    why = None
    if len(fields) != 4 or not all(f.strip() for f in fields):
        why = "not 4 non-empty fields separated by ' ||| ' (%d fields)" % len(fields)
    else:
        path, original, mutant, _ = (f.strip() for f in fields)
        full = os.path.join(src, path)
        if not os.path.isfile(full):
            why = "%s does not exist" % path
        elif original == mutant:
            why = "the mutant is the original line"
        else:
            at = hits(full, original)[1]
            if len(at) != 1:
                why = "%r occurs %d times in %s" % (original, len(at), path)
    if why:
        problems += 1
        print("%s:%d: %s" % (listPath, n, why))
if problems:
    print("mutants: %d of %d lines do not apply" % (problems, count))
    sys.exit(1)
print("mutants: %d lines, all apply" % count)
PY
}

if [ "${1:-}" = --check-list ]; then
  tool check "$SRC" "${2:-$SRC/scripts/mutants.txt}"
  exit
fi

BUILD=$(cd "${1:-$SRC/build}" && pwd) # absolute: the tests run inside it
PATTERN=${2:-}
LOCK=${LOCK:-/tmp/fmc-machine.lock}
# mutants.list is left out: with a mutant applied its original is gone, so
# it would "kill" every mutant.
EXCLUDE=(-LE fuzz -E '^(runtime\.standalone|mutants\.list)$')
[ "${FUZZ:-0}" = 1 ] && EXCLUDE=(-E '^(runtime\.standalone|mutants\.list)$')
[ -f "$BUILD/build.ninja" ] || { echo "mutants: configure and build $BUILD first" >&2; exit 2; }

killed=0 survived=0 broken=0 unrun=0
current=""
restore() { [ -n "$current" ] && cp "$current.mutant-orig" "$current" && rm -f "$current.mutant-orig"; current=""; }
trap restore EXIT INT TERM
# The list is read on fd 3: a test reading stdin must not eat the rest of it.
n=0
while IFS= read -r line <&3; do
  n=$((n + 1))
  [[ -z "$line" || "$line" == \#* ]] && continue
  [ -n "$PATTERN" ] && ! grep -qE "$PATTERN" <<<"$line" && continue
  if [ -n "${STOP_AT:-}" ] && [ "$(date +%s)" -ge "$STOP_AT" ]; then
    unrun=$((unrun + 1)); continue
  fi
  file=$(awk -F' [|][|][|] ' '{print $1}' <<<"$line")
  original=$(awk -F' [|][|][|] ' '{print $2}' <<<"$line")
  mutant=$(awk -F' [|][|][|] ' '{print $3}' <<<"$line")
  what=$(awk -F' [|][|][|] ' '{print $4}' <<<"$line")
  fields=$(awk -F' [|][|][|] ' '{print NF}' <<<"$line")
  # A line that does not apply is reported, counted and fails the run.
  why=""
  if [ "$fields" != 4 ]; then
    why="not 4 fields separated by ' ||| ' ($fields)"
  elif [ ! -f "$SRC/$file" ]; then
    why="$file does not exist"
  else
    cp "$SRC/$file" "$SRC/$file.mutant-orig"
    current="$SRC/$file"
    if why=$(tool apply "$SRC/$file" "$original" "$mutant" 2>&1); then
      why=""
    else
      why=${why:-the mutant could not be applied}
      restore
    fi
  fi
  if [ -n "$why" ]; then
    printf '%-9s %-40s %s\n' "N/A" "$file" "line $n of mutants.txt does not apply: $why"
    broken=$((broken + 1)); continue
  fi
  log="$BUILD/mutant.log"
  if ! flock "$LOCK" ninja -C "$BUILD" -j"${JOBS:-2}" ${TARGETS:-} > "$log" 2>&1 < /dev/null; then
    result="KILLED (does not build)"
    killed=$((killed + 1))
  elif { [ -z "${FIRST:-}" ] || (cd "$BUILD" && flock "$LOCK" ctest -j1 --stop-on-failure -R "$FIRST" -E '^mutants\.list$' >> "$log" 2>&1 < /dev/null); } &&
       { [ "${ONLY_FIRST:-0}" = 1 ] ||
         (cd "$BUILD" && flock "$LOCK" ctest -j1 --stop-on-failure "${EXCLUDE[@]}" >> "$log" 2>&1 < /dev/null); }; then
    # (Not result="SURVIVED$(...)": a failing substitution ends the script
    # under set -e.)
    result="SURVIVED"
    if [ "${ONLY_FIRST:-0}" = 1 ]; then result="SURVIVED FIRST ($FIRST)"; fi
    survived=$((survived + 1))
  else
    test=$(grep -oE '[0-9]+ - [^ ]+ \(Failed|[0-9]+ - [^ ]+ \((Failed|SEGFAULT|Subprocess aborted|Timeout)' "$log" | head -1 | sed 's/ (.*//; s/^[0-9]* - //' || true)
    result="KILLED by ${test:-a test}"
    killed=$((killed + 1))
  fi
  printf '%-9s %-40s %s\n' "${result%% *}" "$file" "$what: ${result#* }"
  restore
done 3< "${LIST:-$SRC/scripts/mutants.txt}"
# The restored sources, rebuilt, so that BUILD matches the tree again.
flock "$LOCK" ninja -C "$BUILD" -j"${JOBS:-2}" ${TARGETS:-} > /dev/null
echo "mutants: $killed killed, $survived survived$([ $broken -gt 0 ] && echo ", $broken not applicable")$([ $unrun -gt 0 ] && echo ", $unrun not run (STOP_AT)")"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]
