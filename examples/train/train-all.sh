#!/usr/bin/env bash
# Trains the three committed models, one after the other (each one
# uninterrupted run of train.py; training.json in each directory records its
# exact command and time). About 50 minutes on a 2-core machine; on
# 2026-12-07 the runs shared the machine with builds and took 59 min (afm7
# float + QAT), 16 min (twin) and 12 min (draft). Run from the repository
# root:
#   bash examples/train/train-all.sh [OUT_ROOT]     (default examples/models)
set -euo pipefail
OUT=${1:-examples/models}
PY=/usr/bin/python3
$PY examples/train/train.py --preset afm7-target --steps 800 --out "$OUT/afm7-float" \
  --qat-steps 150 --qat-out "$OUT/afm7-qat"
$PY examples/train/train.py --preset llama-twin --steps 450 --out "$OUT/llama-twin"
$PY examples/train/train.py --preset llama-draft --steps 700 --out "$OUT/llama-draft"
