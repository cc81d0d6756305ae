#!/usr/bin/env bash
# The MPI check of the runtime's track partitioning: the hand-built PT-MoE
# model (test/unit/runtime/TrackModel.h: 4 tracks, 2 blocks, MoE in every
# track, one AllReduce per block) partitioned over 2 ranks and run by
# `mpirun -np 2 fm-run` must give the logits of the 1-rank model run in
# one process (and both the reference's); generation must pick the same
# tokens; wrong rank counts must fail with a clear message.
#
#   test/unit/runtime/mpi_check.sh BUILD_DIR [WORK_DIR]
#
# BUILD_DIR holds bin/fm-run (built with MPI found) and bin/fm-test-artifacts;
# WORK_DIR (default: a new temporary directory) receives the models and
# logits. Needs mpirun and python3 (no numpy). Exits 0 when all checks pass.
set -euo pipefail

build=${1:?usage: mpi_check.sh BUILD_DIR [WORK_DIR]}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
fm_run=$build/bin/fm-run
# The prompt of tracks_ref.npy (kTokens of test/unit/runtime/write_test_artifacts.cpp).
tokens=3,17,0,39,5,5,22,11,8,1,30,2,14
# Time limits (a hang fails here in minutes, naming the command; generous for
# the sanitizer builds): Open MPI aborts a job, every rank, after 300 s
# (mpirun --timeout); one fm-run process gets 120 s (the model is tiny).
mpirun=(mpirun --allow-run-as-root --oversubscribe --timeout 300)
failures=0

# limit SECONDS COMMAND... (scripts/time-limit.sh).
LIMIT_WHO=mpi_check
source "$(dirname "$0")/../../../scripts/time-limit.sh"

limit 300 "$build/bin/fm-test-artifacts" track-models "$work" >/dev/null

# compare A B RTOL: max |a - b| <= RTOL * (1 + |b|) over same-shaped .npy files.
compare() {
  python3 - "$@" <<'PY'
import ast, struct, sys
from array import array

def load(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path + ": not an .npy file"
    major = data[6]
    if major == 1:
        (n,) = struct.unpack("<H", data[8:10]); start = 10
    else:
        (n,) = struct.unpack("<I", data[8:12]); start = 12
    header = ast.literal_eval(data[start:start + n].decode("latin1"))
    assert header["descr"] == "<f4", path + ": not float32"
    values = array("f")
    values.frombytes(data[start + n:])
    return tuple(header["shape"]), values

(sa, a), (sb, b) = load(sys.argv[1]), load(sys.argv[2])
rtol = float(sys.argv[3])
if sa != sb:
    print("shape %s vs %s" % (sa, sb)); sys.exit(1)
worst = max(abs(x - y) / (1.0 + abs(y)) for x, y in zip(a, b))
print("shape %s, max rel diff %.3g (tolerance %g)" % (sa, worst, rtol))
sys.exit(0 if worst <= rtol else 1)
PY
}

check() { # NAME COMMAND...: runs a check, reports PASS/FAIL
  local name=$1
  shift
  if out=$("$@" 2>&1); then
    echo "PASS $name: $out"
  else
    echo "FAIL $name: $out"
    failures=$((failures + 1))
  fi
}

# One process, the 1-rank model.
limit 120 "$fm_run" "$work/tracks_d1.fmb" --tokens $tokens --score \
  --logits-out "$work/d1.npy" --threads 2 >/dev/null
check "1 process vs reference" compare "$work/d1.npy" "$work/tracks_ref.npy" 1e-4

# Two ranks, the 2-rank model: whole prompt and the decode path, 1 and 2
# threads per rank.
for chunk in 0 1; do
  for threads in 1 2; do
    out=$work/d2_c${chunk}_t${threads}.npy
    "${mpirun[@]}" -np 2 "$fm_run" "$work/tracks_d2.fmb" --tokens $tokens \
      --score --logits-out "$out" --prefill-chunk $chunk --threads $threads >/dev/null
    check "2 ranks chunk=$chunk threads=$threads vs 1 process" \
      compare "$out" "$work/d1.npy" 1e-5
  done
done

# Generation: the same tokens, and the same logits rows.
g1=$(limit 120 "$fm_run" "$work/tracks_d1.fmb" --tokens 1,2,3 --max-new-tokens 6 \
  --logits-out "$work/g1.npy" --threads 1)
g2=$("${mpirun[@]}" -np 2 "$fm_run" "$work/tracks_d2.fmb" --tokens 1,2,3 \
  --max-new-tokens 6 --logits-out "$work/g2.npy" --threads 1 --stats)
tokens2=$(echo "$g2" | head -1)
stats2=$(echo "$g2" | tail -1)
if [ "$g1" = "$tokens2" ]; then
  echo "PASS generation: 1 process '$g1', 2 ranks '$tokens2'"
else
  echo "FAIL generation: 1 process '$g1', 2 ranks '$tokens2'"
  failures=$((failures + 1))
fi
check "generation logits" compare "$work/g2.npy" "$work/g1.npy" 1e-5
case $stats2 in
*'"ranks": 2'*'"collectives_per_token": 2'*) echo "PASS stats: $stats2" ;;
*) echo "FAIL stats: $stats2"; failures=$((failures + 1)) ;;
esac

# Rank counts that do not match the partition.
expect_error() { # NAME MESSAGE COMMAND...
  local name=$1 message=$2
  shift 2
  if out=$("$@" 2>&1); then
    echo "FAIL $name: succeeded"
    failures=$((failures + 1))
  elif [[ $out == *"$message"* ]]; then
    echo "PASS $name: $message"
  else
    echo "FAIL $name: $out"
    failures=$((failures + 1))
  fi
}
expect_error "4 processes for 2 ranks" \
  "tracks_d2.fmb is partitioned over 2 ranks but mpirun started 4 processes" \
  "${mpirun[@]}" -np 4 "$fm_run" "$work/tracks_d2.fmb" --tokens 1,2,3
expect_error "1 process for 2 ranks" \
  "tracks_d2.fmb is partitioned over 2 ranks: run it on as many (mpirun -np 2)" \
  limit 120 "$fm_run" "$work/tracks_d2.fmb" --tokens 1,2,3
expect_error "2 processes for 1 rank" \
  "tracks_d1.fmb is partitioned over 1 rank but mpirun started 2 processes" \
  "${mpirun[@]}" -np 2 "$fm_run" "$work/tracks_d1.fmb" --tokens 1,2,3

if [ $failures -eq 0 ]; then
  echo "mpi_check: all passed"
else
  echo "mpi_check: $failures failed"
  exit 1
fi
