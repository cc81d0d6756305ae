#!/usr/bin/env bash
# Fetches a pinned npm package into a cache once (`npm pack`, then unpacked); idempotent: a
# second run with the package present does nothing. Usage: fetch_npm.sh NAME@VERSION CACHE_DIR
# Test data only: nothing here runs at product run time, nothing is committed.
# npm pack: 3 attempts, 120 s each (scripts/npm-pack-pinned.sh's npm_pack_retry). Runs that
# share CACHE_DIR (ctest -j) take turns on CACHE_DIR/.lock; one that cannot get it in 600 s
# fails saying so.
set -euo pipefail
spec="$1"
cache="$2"
dir="$cache/$(echo "$spec" | tr '/@' '__')"
if [ -f "$dir/.done" ]; then
  exit 0
fi
mkdir -p "$cache"
exec {lock_fd}> "$cache/.lock"
if ! flock -w 600 "$lock_fd"; then
  echo "fetch_npm.sh: could not lock $cache/.lock in 600 s: another fetch_npm.sh holds it" \
    "(hung? \`fuser -v $cache/.lock\` names it)" >&2
  exit 1
fi
if [ -f "$dir/.done" ]; then # fetched while this run waited for the lock
  exit 0
fi
# shellcheck source=scripts/npm-pack-pinned.sh
. "$(dirname "$0")/../../scripts/npm-pack-pinned.sh"
tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tarball="$tmp/$(npm_pack_retry fetch_npm.sh "$tmp" "$spec")"
mkdir -p "$tmp/x"
tar -xzf "$tarball" -C "$tmp/x"
rm -rf "$dir"
mv "$tmp/x" "$dir"
touch "$dir/.done"
