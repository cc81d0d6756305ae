#!/usr/bin/env bash
# grammar.generate: constrained random generation over Qwen3's vocabulary (grammar_generate),
# then the independent validation of every output (validate_generated.py).
# Usage: generate_check.sh GENERATOR TOKENIZER.json OUT.jsonl PYTHON SCHEMA.json...
# FM_TEST_SAMPLE=N (the sanitizer run, scripts/check-sanitize.sh): 1/N of the 8 seeds.
set -euo pipefail
gen="$1" tokenizer="$2" out="$3" python="$4"
shift 4
here="$(cd "$(dirname "$0")" && pwd)"
"$gen" "$tokenizer" '<|endoftext|>,<|im_end|>' "$out" $(( (8 + ${FM_TEST_SAMPLE:-1} - 1) / ${FM_TEST_SAMPLE:-1} )) 3 "$@"
"$python" "$here/validate_generated.py" "$out"
