#!/usr/bin/env bash
# Fetches llama.cpp for the side-by-side benchmark, as the pinned npm
# packages of node-llama-cpp carry it: the prebuilt CPU libraries
# (@node-llama-cpp/linux-x64: libllama.so and one ggml CPU backend per x86
# level, AMX included) and the matching source as a git bundle
# (node-llama-cpp's llama/gitRelease.bundle: the headers and gguf-py).
# Checks both by sha256, builds bench/llamacpp/llama_yardstick.cpp against
# them, and prints the directory. Idempotent. Benchmarks only: nothing in
# fmc's build, tests or runtime uses it.
#
#   bench/llamacpp/fetch-llamacpp.sh [CACHE_DIR]  (default ~/.cache/fmc/bench/llamacpp)
#
# Layout: DIR/bin/{llama_yardstick,libllama*.so,libggml*.so}, DIR/src (the
# llama.cpp tree), DIR/release (the llama.cpp release tag).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${1:-$HOME/.cache/fmc/bench/llamacpp}
mkdir -p "$DIR"
VERSION=3.22.1
PACKAGES=(
  "node-llama-cpp a0d9dd80eacd2ab1cfe71aee57ac8a806487fd70b3d2a38fbec637752d9e5c5f"
  "@node-llama-cpp/linux-x64 0d953e1503d5ab4608d8ed5b739132308c81ac05ffeb760d2a7f30e08a9f90e0"
)
STAMP="$DIR/.complete-$VERSION-$(sha256sum "$HERE/llama_yardstick.cpp" | cut -c1-16)"
if [ -f "$STAMP" ]; then echo "$DIR"; exit 0; fi

# shellcheck source=scripts/npm-pack-pinned.sh
. "$HERE/../../scripts/npm-pack-pinned.sh"
for entry in "${PACKAGES[@]}"; do
  read -r name sha <<<"$entry"
  npm_pack_pinned fetch-llamacpp "$DIR" "$name" "$VERSION" "$sha"
done

NLC="$DIR/node-llama-cpp-$VERSION/package"
BINS="$DIR/node-llama-cpp-linux-x64-$VERSION/package/bins/linux-x64"
if [ ! -f "$DIR/src/include/llama.h" ]; then
  rm -rf "$DIR/src"
  git clone -q "$NLC/llama/gitRelease.bundle" "$DIR/src" 2>/dev/null || {
    echo "fetch-llamacpp: cannot clone $NLC/llama/gitRelease.bundle into $DIR/src" >&2; exit 1; }
fi
/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tag"])' \
  "$NLC/llama/llama.cpp.info.json" > "$DIR/release"

rm -rf "$DIR/bin"
mkdir -p "$DIR/bin"
cp "$BINS"/*.so "$DIR/bin/"
CXX=${CXX:-clang++-22}
command -v "$CXX" >/dev/null || CXX=c++
"$CXX" -std=c++17 -O2 -I"$DIR/src/include" -I"$DIR/src/ggml/include" \
  "$HERE/llama_yardstick.cpp" -o "$DIR/bin/llama_yardstick" \
  -L"$DIR/bin" -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so \
  -Wl,-rpath,'$ORIGIN'
rm -f "$DIR"/.complete-*
touch "$STAMP"
echo "$DIR"
