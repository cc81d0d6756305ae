#!/usr/bin/env bash
# Trains the three committed models (each one uninterrupted run of train.py;
# training.json in each directory records its exact command and time).
# As they were run on 2026-12-07 (a 2-core Xeon shared with builds): the
# draft on one thread beside the afm7 target, then the llama twin; about
# 70 minutes in all. Run from the repository root:
#   bash examples/train/train-all.sh [OUT_ROOT]     (default examples/models)
set -euo pipefail
OUT=${1:-examples/models}
PY=/usr/bin/python3
$PY examples/train/train.py --preset llama-draft --steps 350 --threads 1 \
  --out "$OUT/llama-draft" &
draft=$!
$PY examples/train/train.py --preset afm7-target --steps 800 --out "$OUT/afm7-float" \
  --qat-steps 150 --qat-out "$OUT/afm7-qat"
wait "$draft"
$PY examples/train/train.py --preset llama-twin --steps 500 --out "$OUT/llama-twin"
