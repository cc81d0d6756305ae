#!/usr/bin/env bash
# grammar.fm_run_guided: fm-run end to end on a random-weight model as wide as Qwen3's
# vocabulary (make_guided_model), with Qwen3's tokenizer: --json-schema outputs over several
# schemas and seeds at temperature 1 are validated by python3-jsonschema
# (validate_generated.py); --regex and --grammar outputs by fm-grammar --check; --tools calls
# (required, and auto) by the validator against the tool's parameters; a --max-new-tokens cut
# exits 3 with a note; bad options are clear errors.
# Usage: fm_run_guided.sh FM_RUN FM_GRAMMAR MAKE_MODEL KERNELS.so TOKENIZER_DIR WORK PYTHON SCHEMA_DIR
# FM_TEST_SAMPLE=N (the sanitizer run, scripts/check-sanitize.sh) runs 1/N of each loop's
# seeds (at least one): every mode and schema still runs, at a fraction of the ASan time.
set -euo pipefail
fmrun="$1" fmgrammar="$2" make="$3" kernels="$4" tok="$5" work="$6" python="$7" schemas="$8"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$work"
# limit SECONDS COMMAND... (scripts/time-limit.sh). Generous for the
# sanitizer run: one fm-run 120 s (this is a tiny model, ~0.5 s here),
# fm-grammar --check 60 s, building the model or a python3 validation 300 s.
source "$here/../../scripts/time-limit.sh"
model="$work/qwen-width.fmb"
# 151936: Qwen3's embedding width, past the tokenizer's 151669 ids (padding never generated).
limit 300 "$make" 151936 "$kernels" "$model"
out="$work/outputs.jsonl"
: >"$out"
fail() { echo "FAIL: $*" >&2; exit 1; }
seeds() { seq 1 $(( ($1 + ${FM_TEST_SAMPLE:-1} - 1) / ${FM_TEST_SAMPLE:-1} )); } # 1..N, sampled
quote() { "$python" -c 'import json,sys; print(json.dumps(sys.stdin.read().rstrip("\n")))'; }

n=0
for schema in "$schemas"/*.json; do
  for seed in $(seeds 3); do
    text=$(limit 120 "$fmrun" "$model" --tokens 1,2,3 --tokenizer "$tok" --json-schema "$schema" \
      --temperature 1 --seed "$seed" --max-new-tokens 800 2>"$work/err") ||
      fail "$(basename "$schema") seed $seed: exit $? $(cat "$work/err")"
    printf '{"schema": "%s", "seed": %d, "tokens": 0, "text": %s}\n' "$schema" "$seed" \
      "$(printf '%s' "$text" | quote)" >>"$out"
    n=$((n + 1))
  done
done
limit 300 "$python" "$here/validate_generated.py" "$out"
echo "json-schema: $n fm-run outputs validated"

# --regex and --grammar: checked by fm-grammar --check (the byte-level matcher).
re='[a-z]{2,6}-[0-9]{3}'
m=0
for seed in $(seeds 4); do
  m=$((m + 1))
  limit 120 "$fmrun" "$model" --tokens 5 --tokenizer "$tok" --regex "$re" --temperature 1 --seed "$seed" \
    --max-new-tokens 64 >"$work/re.txt" 2>"$work/err" || fail "regex seed $seed: $(cat "$work/err")"
  head -c -1 "$work/re.txt" | limit 60 "$fmgrammar" --regex "$re" --check || fail "regex output $(cat "$work/re.txt")"
  "$python" -c 'import re,sys; t=open(sys.argv[1]).read()[:-1]; sys.exit(0 if re.fullmatch(sys.argv[2], t) else 1)' \
    "$work/re.txt" "$re" || fail "python re rejects $(cat "$work/re.txt")"
done
cat >"$work/list.gbnf" <<'G'
root ::= "[" item ("," item)? "]"
item ::= [0-9] | "\"" [a-c]+ "\""
G
for seed in $(seeds 4); do
  m=$((m + 1))
  limit 120 "$fmrun" "$model" --tokens 5 --tokenizer "$tok" --grammar "$work/list.gbnf" --temperature 1 \
    --seed "$seed" --max-new-tokens 200 >"$work/g.txt" 2>"$work/err" || fail "gbnf seed $seed: $(cat "$work/err")"
  head -c -1 "$work/g.txt" | limit 60 "$fmgrammar" --grammar "$work/list.gbnf" --check || fail "gbnf output $(cat "$work/g.txt")"
done
echo "regex, gbnf: $m outputs checked"

# Tool calls: required -> one JSON line {"name", "arguments"} valid for that tool.
cat >"$work/tools.json" <<'T'
[{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
  "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
  "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"], "additionalProperties": false}}},
 {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
  "properties": {"a": {"type": "integer", "minimum": -9, "maximum": 9}, "b": {"type": "integer", "minimum": 0, "maximum": 99}},
  "required": ["a", "b"]}}}]
T
c=0
for seed in $(seeds 6); do
  c=$((c + 1))
  limit 120 "$fmrun" "$model" --tokens 5 --tokenizer "$tok" --tools "$work/tools.json" --tool-choice required \
    --temperature 1 --seed "$seed" --max-new-tokens 200 >"$work/call.txt" 2>"$work/err" ||
    fail "tools seed $seed: $(cat "$work/err")"
  "$python" - "$work/tools.json" "$work/call.txt" <<'P' || fail "tool call $(cat "$work/call.txt")"
import json, sys
import jsonschema
tools = {t["function"]["name"]: t["function"]["parameters"] for t in json.load(open(sys.argv[1]))}
lines = open(sys.argv[2]).read().splitlines()
assert len(lines) == 1, lines
call = json.loads(lines[0])
assert set(call) == {"name", "arguments"}, call
jsonschema.Draft202012Validator(tools[call["name"]]).validate(call["arguments"])
P
done
echo "tools: $c required calls validated"

# A cut before the grammar is complete: exit 3, a note, the prefix printed.
set +e
limit 120 "$fmrun" "$model" --tokens 5 --tokenizer "$tok" --json-schema "$schemas/tool_call.json" \
  --max-new-tokens 3 >"$work/cut.txt" 2>"$work/err"
rc=$?
set -e
[ "$rc" = 3 ] || fail "a cut output exited $rc, not 3"
grep -q "before the grammar was complete" "$work/err" || fail "no note: $(cat "$work/err")"
[ -s "$work/cut.txt" ] || fail "the cut output printed nothing"

# Bad input: clear errors naming the file / option, exit 1.
expect_error() { # WANT ARGS...
  local want="$1"; shift
  set +e; limit 120 "$fmrun" "$model" --tokens 5 "$@" >/dev/null 2>"$work/err"; local rc=$?; set -e
  [ "$rc" = 1 ] || fail "$* exited $rc"
  grep -qF -- "$want" "$work/err" || fail "$*: wanted '$want', got: $(cat "$work/err")"
}
echo '{"type": "object", "minProperties": 1}' >"$work/bad.json"
echo '[{"name": "a", "parameters": {"type": "objekt"}}]' >"$work/badtools.json"
expect_error "need --tokenizer" --json-schema "$work/bad.json"
expect_error "bad.json: schema /minProperties: unsupported keyword" --tokenizer "$tok" --json-schema "$work/bad.json"
expect_error "badtools.json: /0/parameters" --tokenizer "$tok" --tools "$work/badtools.json"
expect_error "--regex: " --tokenizer "$tok" --regex "a("
expect_error "cannot read" --tokenizer "$tok" --grammar "$work/none.gbnf"
echo "cut and errors: ok"
