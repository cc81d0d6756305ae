#!/usr/bin/env bash
# fm_run_nodriver.sh FM_RUN MODEL.fmb: where no CUDA driver is installed,
# `fm-run --list-devices` lists cuda as absent with the reason and
# `fm-run MODEL --device cuda` fails with a clear error (exit 77, skipped,
# where a driver is installed: the GPU tests apply there); --no-cuda-graph is
# accepted and --stats says the CPU counts no launches.
set -uo pipefail
FM_RUN=$1; MODEL=$2
# fm_run ARGS...: fm-run, killed after 120 s (a hang: each run takes well under a second),
# said on the script's stderr (fd 3) whatever the call redirects.
exec 3>&2
fm_run() {
  local rc=0
  timeout --kill-after=10 120 "$FM_RUN" "$@" || rc=$?
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    echo "FAIL: TIMEOUT: fm-run $* killed after 120 s (its limit; a hang?)" >&3
  fi
  return $rc
}
list=$(fm_run --list-devices) || { echo "FAIL: fm-run --list-devices: exit $?"; exit 1; }
echo "$list"
if echo "$list" | grep -Eq '^cuda +present'; then
  echo "skipped: a CUDA device is present here"; exit 77
fi
if ! echo "$list" | grep -Eq '^cuda +absent +no CUDA driver here \(.*libcuda\.so\.1'; then
  echo "FAIL: cuda is not listed as absent for want of libcuda.so.1"; exit 1
fi
err=$(fm_run "$MODEL" --tokens 1 --device cuda 2>&1)
rc=$?
echo "$err"
if [ $rc = 0 ]; then echo "FAIL: fm-run --device cuda succeeded without a driver"; exit 1; fi
if ! echo "$err" | grep -q "fm-run: error: .*cuda_nodriver.fmb: device 'cuda' is not available here: no CUDA driver here"; then
  echo "FAIL: not the expected error"; exit 1
fi
# Without --device the CPU runs it.
fm_run "$MODEL" --tokens 1 --max-new-tokens 1 > /dev/null || { echo "FAIL: the default device did not run it"; exit 1; }
# --no-cuda-graph is taken whatever the device (only CUDA's reads it), and
# --stats counts no launches where the device does not record them.
stats=$(fm_run "$MODEL" --tokens 1 --max-new-tokens 1 --no-cuda-graph --stats 2> /dev/null) ||
  { echo "FAIL: fm-run --no-cuda-graph --stats: exit $?"; exit 1; }
echo "$stats"
if ! echo "$stats" | grep -q '"graph_launches": null, "direct_launches": null}'; then
  echo "FAIL: the CPU's --stats line does not say null graph and direct launches"; exit 1
fi
echo "runtime.cuda.fm-run: ok"
