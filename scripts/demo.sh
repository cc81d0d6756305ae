#!/usr/bin/env bash
# The main job on the bundled example: an afm7-shaped on-device model
# (16 layers, the last 8 reusing the KV cache of layer 7) is generated as a
# checkpoint, imported, compiled for this CPU, inspected, and run; then a
# PT-MoE model on 2 MPI ranks; then text from the small models trained here
# (examples/models/) and their perplexity per weight format; an image
# through a VLM.
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
BIN=$BUILD/bin
WORK=$BUILD/demo
mkdir -p "$WORK"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# limit SECONDS COMMAND... (scripts/time-limit.sh; in the foreground, so
# that Ctrl-C still reaches it): fmc gets 300 s, fm-run 120 s, an mpirun job
# 300 s (its own --timeout); each takes seconds.
LIMIT_WHO=demo LIMIT_FOREGROUND=1
DEMO_PROMPT=${DEMO_PROMPT:-"The tutorial shows how"}
source scripts/time-limit.sh

step "checkpoint: examples/gen_checkpoint.py --family afm7 --preset tiny"
/usr/bin/python3 examples/gen_checkpoint.py --family afm7 --preset tiny --out "$WORK/afm7" --seed 7

step "fmc import --print-summary"
limit 300 "$BIN/fmc" import "$WORK/afm7" --print-summary | sed -n '1,8p;$p' | sed 's/^/  /'
echo "  ... (one line per layer; see fmc import --print-summary)"

step "fmc compile"
limit 300 "$BIN/fmc" compile "$WORK/afm7" -o "$WORK/afm7.fmb" --max-prefill 32

step "fmc inspect (first commands of the prefill_last program)"
limit 300 "$BIN/fmc" inspect "$WORK/afm7.fmb" | sed -n '1,9p'

PROMPT=1,17,42,5,9,100,3,4,5,6,7,8,9,10,11,12
for t in 1 2; do
  step "fm-run --threads $t --max-new-tokens 32 --stats"
  limit 120 "$BIN/fm-run" "$WORK/afm7.fmb" --tokens "$PROMPT" --max-new-tokens 32 --threads "$t" --stats
done

step "a PT-MoE model (2 tracks x 2 blocks, MoE, local/global attention) on 2 MPI ranks"
/usr/bin/python3 examples/gen_checkpoint.py --family pt_moe --preset tiny --out "$WORK/pt_moe" --seed 7
limit 300 "$BIN/fmc" compile "$WORK/pt_moe" -o "$WORK/pt_moe.fmb" --devices 2 2>/dev/null | grep -E 'tracks|collectives'
if command -v mpirun > /dev/null; then
  mpirun --allow-run-as-root --oversubscribe --timeout 300 -np 2 "$BIN/fm-run" "$WORK/pt_moe.fmb" \
    --tokens 1,17,42,5,9,100 --max-new-tokens 16 --threads 1 --stats
else
  echo "  (mpirun not installed: skipped; scripts/install-deps.sh installs openmpi-bin)"
fi

# Text from a model trained here (examples/train/: an afm7-shaped decoder of
# 4.2M parameters trained on Python's documentation, then 2-bit
# quantization-aware training), compiled at w2 with a 4-bit embedding and an
# int8 KV cache as its training.json says; then how much quality each
# format keeps on the held-out test split (docs/quality.md has the full table).
step "text: the afm7 model trained here (examples/models/afm7-qat) at w2, 4-bit embedding, int8 KV"
compiled=$(limit 300 "$BIN/fmc" compile examples/models/afm7-qat -o "$WORK/afm7-qat.fmb" \
  --quant w2 --group 64 --embed-bits 4 --kv-bits 8)
grep -E '^  (weights|quantized|tokenizer)' <<< "$compiled" || true
limit 120 "$BIN/fm-run" "$WORK/afm7-qat.fmb" --prompt "$DEMO_PROMPT" --max-new-tokens 64 \
  --temperature 0.7 --top-p 0.9 --seed 3
echo
step "perplexity on the held-out test split: f32, w2 post-training, w2 QAT (bench/quality/quality.py --demo)"
limit 600 /usr/bin/python3 bench/quality/quality.py --demo --build "$BUILD" --work "$WORK/quality" \
  --chunks 256

# An image through a VLM: the afm7 decoder with an RW-ViTDet encoder and the
# VL adapter (docs/vit.md), random weights, with the byte-level tokenizer of
# test/e2e/check_vlm_text.py beside it (its added token <|image_pad|> is the
# config's image_token_index 508). The bundled PNG (128x96) is resized to the
# encoder's 80x80 as its config says; the prompt's <image> marker becomes the
# 9 placeholders that its 9 adapter tokens take; in the chat the image is
# encoded once and turn 2 reuses its placeholders from the KV cache.
step "an image through a VLM (fm_vlm: afm7 + RW-ViTDet, random weights): fm-run --prompt '... <image> ...' --image"
/usr/bin/python3 examples/gen_checkpoint.py --family fm_vlm --preset afm7-rw-tiny --out "$WORK/vlm" --seed 7
/usr/bin/python3 test/e2e/check_vlm_text.py --write-tokenizer "$WORK/vlm"
# fmc's output apart, so that set -e sees a failing compile (only the
# grep may find nothing).
compiled=$(limit 300 "$BIN/fmc" compile "$WORK/vlm" -o "$WORK/vlm.fmb" --max-prefill 32)
grep -E '^  (model|image|weights|tokenizer)' <<< "$compiled" || true
limit 120 "$BIN/fm-run" "$WORK/vlm.fmb" --prompt 'Describe <image> briefly.' --image examples/images/landscape.png \
  --max-new-tokens 16 --stats
printf 'What is in <image>?\n---\nAnd in two words?\n' > "$WORK/vlm_chat.txt"
limit 120 "$BIN/fm-run" "$WORK/vlm.fmb" --chat --chat-file "$WORK/vlm_chat.txt" --image examples/images/landscape.png \
  --max-new-tokens 6 --stats 2>&1 | grep -o '"turn": [0-9]*, "context_tokens": [0-9]*, "reused_tokens": [0-9]*\|"prefilled_images": .*'
limit 120 "$BIN/fm-run" "$WORK/vlm.fmb" --image examples/images/landscape.png \
  --image-tokens-out "$WORK/landscape_tokens.npy" > /dev/null
/usr/bin/python3 -c "import numpy as n, sys; t = n.load(sys.argv[1]); print('  image tokens: %s, max |value| %.3f' % (list(t.shape), abs(t).max()))" "$WORK/landscape_tokens.npy"

step "the hand-written example IR verifies (fm-opt)"
for m in afm7-tiny pt-moe-tiny vitdet-tiny; do
  "$BIN/fm-opt" "examples/ir/$m.mlir" > /dev/null && echo "  examples/ir/$m.mlir: ok"
done
