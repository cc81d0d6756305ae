#!/usr/bin/env bash
# Installs every Debian package fmc needs to build, test and benchmark.
# Idempotent: does nothing (and prints nothing) when all packages are present.
#   install-deps.sh          what the compiler, runtime and tests need
#   install-deps.sh --train  also PyTorch (CPU) and python3-regex, for the
#                            training recipe in examples/train only
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache git
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools lld-22 clang-22 libclang-rt-22-dev
  libflatbuffers-dev flatbuffers-compiler libcli11-dev libsodium-dev libpcre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  openmpi-bin libopenmpi-dev
  python3 python3-numpy python3-pil python3-psutil valgrind
  libpng-dev libjpeg-dev libopenblas-dev
  python3-jsonschema libtest-json-schema-acceptance-perl
  g++-aarch64-linux-gnu qemu-user-static
  rapidjson-dev libpcre2-dev libutf8proc-dev pkg-config libicu-dev
  unicode-data python3-jinja2 nodejs
  libdnnl-dev
  mesa-vulkan-drivers libvulkan-dev vulkan-validationlayers glslc spirv-tools
  spirv-cross libspirv-cross-c-shared-dev
  python3.11-doc
  libsodium-dev:arm64 libpcre2-dev:arm64 libutf8proc-dev:arm64 libpng-dev:arm64
  libjpeg-dev:arm64 zlib1g-dev:arm64
)
# The :arm64 libraries: the runtime cross-built for AArch64 and run under
# qemu-user (test/aarch64); Debian's multiarch, so arm64 is added to dpkg's
# architectures (then apt-get update fetches its package lists).
# python3.11-doc: the trained models' corpus (examples/train/corpus.py); the
# perplexity tests rebuild its test split from it.
case "${1:-}" in
  --train) PACKAGES+=(python3-torch python3-regex) ;;
  "") ;;
  *) echo "install-deps: unknown option '$1' (only --train)" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# npm (the tokenizer tests' npm pack) comes with some nodejs builds and is its
# own Debian package otherwise.
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
