#!/usr/bin/env bash
# Every GPU check of the CUDA target and device in one prepared script, for a
# session that is lent a GPU (the device tool: a bare CUDA image with no MLIR,
# no package registry, at most 64 MiB carried per call).
#
#   scripts/check-cuda.sh --prepare BUILD OUT   (here, after a full build of
#       fmc, fm-run and fm_cuda_test in BUILD): the bundle of
#       scripts/gpu-check.sh (fm_cuda_test with its libraries and loader, the
#       runtime's PTX), fm-run with its libraries, and per e2e case a small
#       artifact compiled `--target cpu,cuda` (generated kernels as PTX
#       beside the CPU's), the numpy reference's logits
#       (test/reference/fm_reference.py) and the CPU device's logits of the
#       same artifact. A few MiB.
#   scripts/check-cuda.sh OUT                   (on the GPU machine): the
#       checks of gpu-check.sh (nvidia-smi, ptxas on the runtime's PTX, the
#       Gpu.* kernel tests against the CPU reference kernels, the matvec
#       bandwidth beside a device-to-device copy), then per case `fm-run
#       --device cuda --score` against the numpy logits (f32 cases) and the
#       CPU device's (every case), then greedy decode tokens/s on cuda with
#       CUDA graphs (the default), on cuda with --no-cuda-graph, and on the
#       CPU beside them, with the graph and direct launch counts of
#       --stats; a LoRA adapter's logits and an image encoder's tokens on
#       cuda against the CPU's
#       (GpuVision.EncoderOnCudaMatchesTheCpu); one summary. Exit status 0
#       when everything passed. (runtime.cuda.emulated runs the Gpu tests
#       here on the CUDA block emulator; this script is for a real GPU.)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
TOKENS=1,17,42,5,9,100,3,4,5,6,7,8,9,10,11,2,30
# name | family | fmc compile flags | rtol vs numpy ("" = none) | rtol vs cpu
# (afm7 tiny is 51 MiB at f32 and 26 MiB at f16: afm7 runs at w4 and w2 only,
# f16 on llama, so that the bundle stays under 64 MiB: 44 MB measured.)
# (mixtral-w4: 17 prompt rows in one prefill, so its matmuls run on the
# tensor-core GEMM, kGemmMinRows = 16.)
CASES="llama|llama|--max-prefill 8|1e-3|1e-4
llama-f16|llama|--max-prefill 8 --quant f16|1e-2|1e-4
afm7-w4kv8|afm7|--max-prefill 8 --quant w4 --kv-bits 8||2e-2
afm7-w2|afm7|--max-prefill 8 --quant w2 --group 32||2e-2
pt_moe|pt_moe|--max-prefill 8|1e-3|1e-4
qwen2_moe|qwen2_moe|--max-prefill 8|1e-3|1e-4
mixtral-w4|mixtral|--max-prefill 32 --quant w4||2e-2"

# fmc compile and the CUDA test binary get 300 s, one fm-run 120 s (tiny
# models: seconds each).
LIMIT_WHO=check-cuda
source "$ROOT/scripts/time-limit.sh"

bundle_binary() { # BIN OUT: the binary (its symbol table stripped: bytes
  # count against the carry limit) and every library it loads into OUT/lib
  cp "$1" "$2/"
  if command -v strip > /dev/null; then strip --strip-unneeded "$2/$(basename "$1")"; fi
  ldd "$1" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }' |
    while read -r lib; do cp -L "$lib" "$2/lib/"; done
}

if [ "${1:-}" = "--prepare" ]; then
  BUILD=$(cd "$2" && pwd); OUT=$3
  for t in fmc fm-run fm_cuda_test; do
    [ -x "$BUILD/bin/$t" ] || { echo "check-cuda: no $BUILD/bin/$t (ninja $t)"; exit 1; }
  done
  "$HERE/gpu-check.sh" --prepare "$BUILD" "$OUT" > /dev/null || exit 1
  bundle_binary "$BUILD/bin/fm-run" "$OUT"
  cp "$HERE/gpu-check.sh" "$OUT/"
  mkdir -p "$OUT/cases" "$OUT/.work"
  echo "$CASES" > "$OUT/cases/list"
  echo "$CASES" | while IFS='|' read -r name family flags rtolNumpy _; do
    ckpt="$OUT/.work/$family"
    [ -d "$ckpt" ] || /usr/bin/python3 "$ROOT/examples/gen_checkpoint.py" --family "$family" \
      --preset tiny --out "$ckpt" > /dev/null || exit 1
    # shellcheck disable=SC2086
    # No CPU GEMM copies: a CPU-only layout that would double the bundle's
    # low-bit artifacts (the CPU device repacks at load instead).
    limit 300 "$BUILD/bin/fmc" compile "$ckpt" -o "$OUT/cases/$name.fmb" --target cpu,cuda $flags \
      --no-cpu-gemm-copies \
      > "$OUT/cases/$name.compile.txt" 2>&1 || { cat "$OUT/cases/$name.compile.txt"; exit 1; }
    # The numpy logits only where the case compares against them (bytes
    # count: the bundle must fit the device tool's 64 MiB carry limit).
    if [ -n "$rtolNumpy" ]; then
      /usr/bin/python3 "$ROOT/test/reference/fm_reference.py" "$ckpt" --tokens "$TOKENS" \
        --out "$OUT/cases/$name.numpy.npy" || exit 1
    fi
    limit 120 "$BUILD/bin/fm-run" "$OUT/cases/$name.fmb" --device cpu --tokens "$TOKENS" --score \
      --logits-out "$OUT/cases/$name.cpu.npy" > /dev/null || exit 1
  done || exit 1
  # A LoRA adapter on the llama case (scale 0.5, stored 8-bit: the q8
  # side path), and the CPU device's logits with it.
  /usr/bin/python3 "$ROOT/examples/gen_checkpoint.py" --family llama --preset tiny \
    --lora-out "$OUT/.work/lora" --lora-rank 4 > /dev/null || exit 1
  limit 300 "$BUILD/bin/fmc" compile-adapter "$OUT/.work/lora" --base "$OUT/cases/llama.fmb" \
    -o "$OUT/cases/llama-lora.fmba" --quant w8 > /dev/null 2>&1 || exit 1
  limit 120 "$BUILD/bin/fm-run" "$OUT/cases/llama.fmb" --device cpu --activations f32 --tokens "$TOKENS" \
    --score --adapter "$OUT/cases/llama-lora.fmba:0.5" \
    --logits-out "$OUT/cases/llama-lora.cpu.npy" > /dev/null || exit 1
  # The image encoder (every command a CUDA micro-kernel, CudaVision.cpp).
  /usr/bin/python3 "$ROOT/examples/gen_checkpoint.py" --family fm_vit --preset rw-vitdet-tiny \
    --out "$OUT/.work/vit" > /dev/null || exit 1
  limit 300 "$BUILD/bin/fmc" compile "$OUT/.work/vit" -o "$OUT/cases/vit.fmb" --target cpu,cuda \
    > "$OUT/cases/vit.compile.txt" 2>&1 || { cat "$OUT/cases/vit.compile.txt"; exit 1; }
  rm -rf "$OUT/.work"
  bytes=$(du -sb "$OUT" | cut -f1)
  echo "check-cuda: bundle $OUT is $bytes bytes (carry limit 67108864 = 64 MiB)"
  if [ "$bytes" -gt 67108864 ]; then
    echo "check-cuda: the bundle exceeds the device tool's 64 MiB carry limit"; exit 1
  fi
  exit 0
fi

OUT=$(cd "${1:?usage: check-cuda.sh --prepare BUILD OUT | check-cuda.sh OUT}" && pwd)
status=0
# NCCL: the machine's, else the copy PyTorch's wheels carry
# (nvidia/nccl/lib), for GpuNccl.OneRankAllReduceDirectAndInAGraph (one
# rank's communicator, its all-reduce direct and in a CUDA graph).
if [ -z "${FM_NCCL_LIBRARY:-}" ] && ! ldconfig -p 2> /dev/null | grep -q 'libnccl\.so\.2 '; then
  nccl=$(find /usr /opt /root /home -name libnccl.so.2 -path '*nvidia/nccl/lib*' 2> /dev/null | head -1)
  [ -n "$nccl" ] && export FM_NCCL_LIBRARY="$nccl"
fi
echo "check-cuda: NCCL library: ${FM_NCCL_LIBRARY:-libnccl.so.2 on the loader path, if any}"
"$OUT/gpu-check.sh" "$OUT" 2>&1 | tee "$OUT/gpu-check.log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

loader=$(ls "$OUT"/lib/ld-linux-x86-64.so.2 2>/dev/null || ls "$OUT"/lib/ld-linux*.so* | head -1)
libpath="$OUT/lib:/usr/local/nvidia/lib64:/usr/local/nvidia/lib:/usr/lib/x86_64-linux-gnu:/usr/lib64:/usr/local/cuda/compat"
fm_run() { limit 120 "$loader" --library-path "$libpath" "$OUT/fm-run" "$@"; }

# max |got - want| <= rtol * max |want| and the same argmax per position.
compare() { # GOT WANT RTOL
  python3 - "$1" "$2" "$3" <<'EOF'
import sys
import numpy as np
got, want, rtol = np.load(sys.argv[1]), np.load(sys.argv[2]), float(sys.argv[3])
if got.shape != want.shape:
    print("shape %s vs %s FAIL" % (got.shape, want.shape)); sys.exit(1)
d = float(np.max(np.abs(got - want))) / max(float(np.max(np.abs(want))), 1e-30)
same = float(np.mean(np.argmax(got, -1) == np.argmax(want, -1)))
ok = np.isfinite(got).all() and d <= rtol and same == 1.0
print("rel %.2e (rtol %s), argmax %.0f%% %s" % (d, sys.argv[3], 100 * same, "ok" if ok else "FAIL"))
sys.exit(0 if ok else 1)
EOF
}

echo "== e2e: fm-run --device cuda --score against numpy and the CPU device"
summary=""
while IFS='|' read -r name _ _ rtolNumpy rtolCpu; do
  fmb="$OUT/cases/$name.fmb"
  if ! fm_run "$fmb" --device cuda --tokens "$TOKENS" --score \
      --logits-out "$OUT/cases/$name.cuda.npy" > "$OUT/cases/$name.cuda.txt" 2>&1; then
    echo "$name: fm-run --device cuda failed:"; cat "$OUT/cases/$name.cuda.txt"
    status=1; summary+="e2e $name: FAIL (fm-run)"$'\n'; continue
  fi
  line="e2e $name:"
  if [ -n "$rtolNumpy" ]; then
    r=$(compare "$OUT/cases/$name.cuda.npy" "$OUT/cases/$name.numpy.npy" "$rtolNumpy") || status=1
    line+=" vs numpy $r;"
  fi
  r=$(compare "$OUT/cases/$name.cuda.npy" "$OUT/cases/$name.cpu.npy" "$rtolCpu") || status=1
  line+=" vs cpu $r"
  echo "$line"; summary+="$line"$'\n'
done < "$OUT/cases/list"

echo "== LoRA: an 8-bit adapter on the llama case, on cuda against the CPU device"
if fm_run "$OUT/cases/llama.fmb" --device cuda --tokens "$TOKENS" --score \
    --adapter "$OUT/cases/llama-lora.fmba:0.5" --logits-out "$OUT/cases/llama-lora.cuda.npy" \
    > "$OUT/cases/llama-lora.cuda.txt" 2>&1; then
  r=$(compare "$OUT/cases/llama-lora.cuda.npy" "$OUT/cases/llama-lora.cpu.npy" 1e-4) || status=1
  line="lora llama (w8, scale 0.5): vs cpu $r"
else
  cat "$OUT/cases/llama-lora.cuda.txt"; status=1; line="lora llama: FAIL (fm-run)"
fi
echo "$line"; summary+="$line"$'\n'

echo "== vision: an image encoder (rw-vitdet-tiny) on cuda against the CPU device"
vision=$(FM_CUDA_TEST_VISION_FMB="$OUT/cases/vit.fmb" limit 300 "$loader" --library-path "$libpath" \
  "$OUT/fm_cuda_test" --gtest_filter=GpuVision.EncoderOnCudaMatchesTheCpu 2>&1)
echo "$vision"
line="vision rw-vitdet-tiny: $(echo "$vision" | grep -m1 '^image tokens:')"
echo "$vision" | grep -q '^\[  PASSED  \] 1 test' || { status=1; line+=" FAIL"; }
summary+="$line"$'\n'

echo "== decode: greedy tokens/s, cuda with and without CUDA graphs beside the CPU (same artifact)"
# run label | fm-run flags
RUNS="cuda|--device cuda
cuda-no-graph|--device cuda --no-cuda-graph
cpu|--device cpu"
stats_field() { # FILE KEY: the number after "KEY": in fm-run's --stats line
  grep -Eo "\"$2\": [0-9.]+" "$1" | grep -Eo '[0-9.]+$'
}
for name in llama-f16 afm7-w4kv8; do
  while IFS='|' read -r run flags; do
    stats="$OUT/cases/$name.$run.stats"
    # shellcheck disable=SC2086
    fm_run "$OUT/cases/$name.fmb" $flags --tokens "$TOKENS" --max-new-tokens 64 \
      --stats > "$stats" 2>&1 < /dev/null || status=1
    tps=$(stats_field "$stats" decode_tokens_per_s)
    line="decode $name on $run: ${tps:-no stats (see cases/$name.$run.stats)} tokens/s"
    graphs=$(stats_field "$stats" graph_launches)
    [ -n "$graphs" ] && line+=" ($graphs graph launches, $(stats_field "$stats" direct_launches) direct)"
    # A notice means the graphs fell back to direct launches.
    notice=$(grep -m1 'CUDA graphs off' "$stats")
    [ -n "$notice" ] && line+=" [$notice]"
    echo "$line"; summary+="$line"$'\n'
  done <<< "$RUNS"
done

echo "== check-cuda summary"
grep -E '^(ptxas|tests|gpu-check):' "$OUT/gpu-check.log"
grep -E '^NCCL .*: one rank on' "$OUT/gpu-check.log"
grep -E 'GB/s' "$OUT/gpu-check.log" | tail -20
printf '%s' "$summary"
echo "check-cuda: status $status"
exit $status
