#!/bin/sh
# A stand-in for ptxas (FM_PTXAS) in test/targets/cuda.test: with
# FAKE_PTXAS=spill it reports a spilling kernel, with FAKE_PTXAS=fail it
# refuses the PTX as ptxas does.
case "$FAKE_PTXAS" in
spill)
  echo "ptxas info    : 0 bytes gmem" >&2
  echo "ptxas info    : Compiling entry function 'fmk_k0_entry' for 'sm_80'" >&2
  echo "ptxas info    : Function properties for fmk_k0_entry" >&2
  echo "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads" >&2
  echo "ptxas info    : Used 255 registers, 368 bytes cmem[0]" >&2
  exit 0 ;;
fail)
  echo "ptxas fatal   : Unresolved extern function 'missing'" >&2
  exit 255 ;;
esac
exit 1
