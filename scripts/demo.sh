#!/usr/bin/env bash
# The main job on the bundled examples: the fm IR of a tiny afm7-shaped
# on-device model, a tiny PT-MoE model and a tiny ViTDet encoder goes through
# fm-opt and the pipeline that exists today.
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
for m in afm7-tiny pt-moe-tiny vitdet-tiny; do
  echo "== $m: verify + fm-share-kv"
  "$BUILD/bin/fm-opt" "examples/ir/$m.mlir" --fm-share-kv | grep -E 'fm.model|fm.kv_cache|reuse|fm.track_block|fm.vl_adapter' | cut -c1-160
done
