#!/usr/bin/python3
"""Guided generation in fm-run's text modes (--prompt, --chat) end to end: a tiny
random llama as wide as Qwen3's embedding (151936 logits for 151669 ids) with
Qwen3's tokenizer embedded by fmc compile; outputs checked by independent
validators.

  check_text_guided.py --work DIR [--bin DIR]

  - --prompt --json-schema over schemas x seeds at temperature 1: every output
    parses and validates with python3-jsonschema (test/grammar/
    validate_generated.py, with its negative controls), and the generation
    ends at a stop id once the JSON is complete;
  - --regex outputs match Python's re.fullmatch and fm-grammar --check; a
    --grammar (GBNF) output passes fm-grammar --check;
  - --chat --json-schema over two turns: each reply validates (the constraint
    restarts per reply) and ends at a stop id;
  - --tools --tool-choice required: one JSON line {"name", "arguments"} valid
    against that tool's parameters, after Qwen's forced <tool_call> opener;
  - --tools auto: free text, then the call's line (--prompt and --chat), or the call
    alone; the free text streams (its first bytes come long before the end);
  - a --max-new-tokens cut exits 3 with a note; --tokenizer and a bad --eos
    are clear errors.
Prints one line per check and `N passed, N failed` at the end.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCHEMAS = os.path.join(ROOT, "test", "grammar", "guided")
VALIDATE = os.path.join(ROOT, "test", "grammar", "validate_generated.py")
sys.path.insert(0, HERE)
import check_text as ct  # noqa: E402  (run, check, stats_lines, the checkpoint recipe)
import checks  # noqa: E402  (the count)
import timelimits  # noqa: E402  (every command's time limit)

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 10},
            "unit": {"enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "unit"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "add", "parameters": {"type": "object", "properties": {
            "a": {"type": "integer", "minimum": -9, "maximum": 9},
            "b": {"type": "integer", "minimum": 0, "maximum": 99}},
            "required": ["a", "b"]}}},
]
TOOL_CALL_ID = 151657  # Qwen3's <tool_call>
NEWLINE_ID = 198  # Qwen3's "\n" ("Ċ")
HELLO_ID = 9707  # Qwen3's "Hello"


def fm_run_rc(tool, fmb, *args, stdin=None):
    p = timelimits.run([tool("fm-run"), fmb] + list(args), input=stdin,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8", errors="replace")


def validate(records, work, name):
    path = os.path.join(work, name + ".jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    p = timelimits.run(["/usr/bin/python3", VALIDATE, path], stdout=subprocess.PIPE, text=True)
    ok = p.returncode == 0 and ("%d passed, 0 failed" % len(records)) in p.stdout
    ct.check(ok, "%s: %d outputs validated by python3-jsonschema" % (name, len(records)),
             p.stdout.strip()[-400:])


def prompt_schemas(tool, fmb, work):
    records, ends = [], []
    for schema in ("person.json", "bounded.json", "chain.json", "event.json"):
        for seed in (1, 2):
            out, err = ct.run([tool("fm-run"), fmb, "--prompt", "Describe it as JSON:",
                               "--json-schema", os.path.join(SCHEMAS, schema),
                               "--temperature", "1", "--seed", str(seed),
                               "--max-new-tokens", "400", "--stats"])
            st = ct.stats_lines(err)[-1]
            records.append({"schema": os.path.join(SCHEMAS, schema), "seed": seed,
                            "tokens": len(st["generated_ids"]), "text": out.decode("utf-8")})
            ends.append(st["stop"] == "stop-id")
    validate(records, work, "prompt --json-schema")
    ct.check(all(ends), "every --json-schema generation ended at a stop id once complete")


def prompt_regex_grammar(tool, fmb, work):
    rx = "[a-z]{2,6}-[0-9]{3}"
    for seed in (1, 2, 3):
        out, _ = ct.run([tool("fm-run"), fmb, "--prompt", "A code:", "--regex", rx,
                         "--temperature", "1", "--seed", str(seed), "--max-new-tokens", "64"])
        text = out.decode("utf-8")
        p = timelimits.run([tool("fm-grammar"), "--regex", rx, "--check"], input=out)
        ct.check(re.fullmatch(rx, text) is not None and p.returncode == 0,
                 "--prompt --regex seed %d: %r matches (Python re, fm-grammar --check)" % (seed, text))
    gbnf = os.path.join(work, "list.gbnf")
    # Bounded: a random model may repeat a letter for ever.
    open(gbnf, "w").write('root ::= "[" item ("," item)? "]"\n'
                          'item ::= [0-9] | "\\"" [a-c] [a-c]? [a-c]? "\\""\n')
    for seed in (1, 2):
        out, _ = ct.run([tool("fm-run"), fmb, "--prompt", "A list:", "--grammar", gbnf,
                         "--temperature", "1", "--seed", str(seed), "--max-new-tokens", "100"])
        p = timelimits.run([tool("fm-grammar"), "--grammar", gbnf, "--check"], input=out)
        ct.check(p.returncode == 0 and out.startswith(b"["),
                 "--prompt --grammar seed %d: %r passes fm-grammar --check" % (seed, out.decode()))


def chat_schema(tool, fmb, work):
    schema = os.path.join(SCHEMAS, "person.json")
    turns = os.path.join(work, "turns.txt")
    open(turns, "w", encoding="utf-8").write("Who are you?\n---\nAnd your friend?\n")
    out, err = ct.run([tool("fm-run"), fmb, "--chat", "--chat-file", turns, "--json-schema",
                       schema, "--temperature", "1", "--seed", "3", "--max-new-tokens", "300",
                       "--stats"])
    stats = [s for s in ct.stats_lines(err) if "turn" in s]
    replies = [l for l in out.decode("utf-8").splitlines() if l and not l.startswith("> ")]
    ct.check(len(stats) == 2 and len(replies) == 2, "--chat --json-schema: two turns, two replies",
             repr(out[:300]))
    validate([{"schema": schema, "seed": i, "tokens": 0, "text": r} for i, r in enumerate(replies)],
             work, "chat --json-schema")
    ct.check(all(s["stop"] == "stop-id" for s in stats), "each reply ended at a stop id")


def valid_call(out, params):
    """(True, "") when `out` is one line {"name", "arguments"} whose arguments python3-jsonschema
    validates against that tool's parameters; else (False, why)."""
    import jsonschema
    lines = out.decode("utf-8").splitlines()
    try:
        assert len(lines) == 1, lines
        call = json.loads(lines[0])
        assert set(call) == {"name", "arguments"}, call
        jsonschema.Draft202012Validator(params[call["name"]]).validate(call["arguments"])
        return True, ""
    except Exception as e:  # the caller's check reports it
        return False, "%s: %r" % (e, out[:300])


def tools_required(tool, fmb, work):
    tools = os.path.join(work, "tools.json")
    json.dump(TOOLS, open(tools, "w"))
    params = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    for seed in (1, 2, 3):
        out, err = ct.run([tool("fm-run"), fmb, "--prompt", "Call a tool.", "--tools", tools,
                           "--tool-choice", "required", "--temperature", "1", "--seed",
                           str(seed), "--max-new-tokens", "200", "--stats"])
        st = ct.stats_lines(err)[-1]
        ok, why = valid_call(out, params)
        ct.check(ok and st["generated_ids"][0] == TOOL_CALL_ID,
                 "--prompt --tools required seed %d: one call line, valid arguments, after "
                 "<tool_call>" % seed, why or str(st["generated_ids"][:4]))


def tools_auto(tool, fmb, work):
    """--tool-choice auto: the text is free until the model writes <tool_call>; a random model
    rarely does, so --logit-bias makes it (the bias comes before the constraint)."""
    tools = os.path.join(work, "tools.json")
    params = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    for seed in (1, 2):
        out, err = ct.run([tool("fm-run"), fmb, "--prompt", "Call a tool.", "--tools", tools,
                           "--logit-bias", "%d=100" % TOOL_CALL_ID, "--temperature", "1",
                           "--seed", str(seed), "--max-new-tokens", "200", "--stats"])
        st = ct.stats_lines(err)[-1]
        ok, why = valid_call(out, params)
        ct.check(ok and st["generated_ids"][:2] == [TOOL_CALL_ID, NEWLINE_ID],
                 "--tools auto seed %d: the biased <tool_call> opens a call, printed as one "
                 "valid JSON line" % seed, why or str(st["generated_ids"][:4]))
    # Free text stays free in auto mode: a bias on a plain token is followed (the text repeats
    # it); in required mode the same bias cannot break the call.
    out, err = ct.run([tool("fm-run"), fmb, "--prompt", "Call a tool.", "--tools", tools,
                       "--logit-bias", "%d=100" % HELLO_ID, "--max-new-tokens", "6", "--stats"])
    st = ct.stats_lines(err)[-1]
    ct.check(st["generated_ids"] == [HELLO_ID] * 6 and out.decode() == "Hello" * 6 + "\n",
             "--tools auto: free text where the model writes no opener (the bias followed)",
             "%r %s" % (out, st["generated_ids"]))
    out, _ = ct.run([tool("fm-run"), fmb, "--prompt", "Call a tool.", "--tools", tools,
                     "--tool-choice", "required", "--logit-bias", "%d=100" % HELLO_ID,
                     "--max-new-tokens", "200"])
    ok, _ = valid_call(out, params)
    ct.check(ok, "--tools required: a valid call despite a bias on a plain token", repr(out))


def split_call(text, ids, params):
    """Checks that `text` is the free text of the ids before <tool_call> ("Hello" each), a
    newline when it left the line open, then one call line; (ok, why)."""
    k = ids.index(TOOL_CALL_ID) if TOOL_CALL_ID in ids else -1
    if k < 0 or ids[:k] != [HELLO_ID] * k:
        return False, "ids %s" % ids[:8]
    prefix = "Hello" * k + ("\n" if k else "")
    if not text.startswith(prefix):
        return False, "the free text %r is not %r" % (text[:80], prefix)
    return valid_call(text[len(prefix):].encode("utf-8"), params)


def tools_prefix_then_call(tool, fmb, work):
    """--tool-choice auto with the model drawn between "Hello" and <tool_call> (both biased,
    temperature 1): the free text before the call is printed (it used to be dropped), then the
    call's line; with no text before it, the call's line alone."""
    tools = os.path.join(work, "tools.json")
    params = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    seen = set()
    for seed in range(1, 9):
        out, err = ct.run([tool("fm-run"), fmb, "--prompt", "Call a tool.", "--tools", tools,
                           "--logit-bias", "%d=100" % HELLO_ID, "--logit-bias",
                           "%d=100" % TOOL_CALL_ID, "--temperature", "1", "--seed", str(seed),
                           "--max-new-tokens", "200", "--stats"])
        ids = ct.stats_lines(err)[-1]["generated_ids"]
        kind = "prefix" if ids and ids[0] == HELLO_ID else "bare"
        seen.add(kind)
        ok, why = split_call(out.decode("utf-8"), ids, params)
        ct.check(ok, "--tools auto seed %d: %s, then one valid call line" % (
            seed, "'Hello' x %d" % ids.index(TOOL_CALL_ID) if kind == "prefix"
            else "no free text"), why)
        if len(seen) == 2:
            break
    ct.check(len(seen) == 2, "seeds 1-8 gave a call after free text and one without", str(seen))
    # A chat reply likewise: the text, then the call's line, then the next turn.
    turns = os.path.join(work, "tool_turns.txt")
    open(turns, "w", encoding="utf-8").write("Call a tool.\n---\nAgain.\n")
    out, err = ct.run([tool("fm-run"), fmb, "--chat", "--chat-file", turns, "--tools", tools,
                       "--logit-bias", "%d=100" % HELLO_ID, "--logit-bias",
                       "%d=100" % TOOL_CALL_ID, "--temperature", "1", "--seed", "2",
                       "--max-new-tokens", "200", "--stats"])
    stats = [st for st in ct.stats_lines(err) if "turn" in st]
    replies = re.split(r"^> .*\n", out.decode("utf-8"), flags=re.M)[1:]
    results = [split_call(r, st["generated_ids"], params) for r, st in zip(replies, stats)]
    ct.check(len(replies) == 2 and len(stats) == 2 and all(ok for ok, _ in results),
             "--chat --tools: each reply is its free text, then one valid call line",
             "%r %s" % (out[:300], [why for _, why in results]))


def tools_text_streams(tool, fmb, work):
    """The free text reaches stdout while the generation goes on: the first bytes come long
    before the end (printed whole at the end, they came at it)."""
    import time
    tools = os.path.join(work, "tools.json")
    cmd = [tool("fm-run"), fmb, "--prompt", "Call a tool.", "--tools", tools,
           "--logit-bias", "%d=100" % HELLO_ID, "--max-new-tokens", "1500", "--stats"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with timelimits.killed_after(p, cmd):
        first = os.read(p.stdout.fileno(), 5)
        t_first = time.monotonic()
        rest = p.stdout.read()
        t_end = time.monotonic()
        err = p.stderr.read().decode()
        p.wait()
    st = ct.stats_lines(err)[-1] if ct.stats_lines(err) else {"total_ms": 0, "generated_ids": []}
    after_ms = (t_end - t_first) * 1000.0
    ct.check(p.returncode == 0 and first + rest == b"Hello" * len(st["generated_ids"]) + b"\n"
             and after_ms > 0.5 * st["total_ms"],
             "--tools auto: the free text streams (%.0f of the generation's %.0f ms came after "
             "its first bytes)" % (after_ms, st["total_ms"]), "rc %d, %r" % (p.returncode, first))


def logit_bias(tool, fmb, work):
    out, err = ct.run([tool("fm-run"), fmb, "--prompt", "x", "--logit-bias", "%d=50" % HELLO_ID,
                       "--logit-bias", "%d=50" % HELLO_ID, "--max-new-tokens", "4", "--stats"])
    ct.check(ct.stats_lines(err)[-1]["generated_ids"] == [HELLO_ID] * 4,
             "--prompt --logit-bias: the biased token is generated")
    tok_ids = ct.stats_lines(err)[-1]["prompt_ids"]
    out, _ = ct.run([tool("fm-run"), fmb, "--tokens", ",".join(map(str, tok_ids)),
                     "--logit-bias", "%d=100" % HELLO_ID, "--max-new-tokens", "3"])
    ct.check(out.decode().split() == [str(HELLO_ID)] * 3, "--tokens --logit-bias: likewise")
    for value, want in (("%d=1" % 151936, "token id 151936 is out of range (the model has 151936"),
                        ("5=inf", "the bias 'inf' is not a finite number"),
                        ("5", "expected ID=BIAS"), ("x=1", "the token id 'x' is not an integer")):
        rc, _, err = fm_run_rc(tool, fmb, "--prompt", "x", "--logit-bias", value)
        ct.check(rc == 1 and ("--logit-bias '%s': " % value) in err and want in err,
                 "--logit-bias %s is refused: %s" % (value, want), err)


def cut_and_errors(tool, fmb, work):
    rc, out, err = fm_run_rc(tool, fmb, "--prompt", "x", "--json-schema",
                             os.path.join(SCHEMAS, "person.json"), "--max-new-tokens", "3")
    ct.check(rc == 3 and "before the grammar was complete" in err and out.startswith('{"'),
             "a --max-new-tokens cut exits 3 with a note, the prefix printed", "%d %r %r" % (rc, out, err))
    rc, _, err = fm_run_rc(tool, fmb, "--prompt", "x", "--regex", "a", "--tokenizer", work)
    ct.check(rc == 1 and "--tokenizer is for --tokens" in err, "--tokenizer with --prompt is refused",
             err)
    rc, _, err = fm_run_rc(tool, fmb, "--prompt", "x", "--regex", "a", "--eos", "<nope>")
    ct.check(rc == 1 and "--eos: '<nope>' is not a token" in err, "a bad --eos is a clear error", err)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--bin", default="", help="directory of fmc, fm-run, fm-grammar (default: PATH)")
    args = ap.parse_args()
    tool = ct.start(args)
    fmb = ct.build_model(tool, "qwen3", args.work)["fmb"]
    prompt_schemas(tool, fmb, args.work)
    prompt_regex_grammar(tool, fmb, args.work)
    chat_schema(tool, fmb, args.work)
    tools_required(tool, fmb, args.work)
    tools_auto(tool, fmb, args.work)
    tools_prefix_then_call(tool, fmb, args.work)
    tools_text_streams(tool, fmb, args.work)
    logit_bias(tool, fmb, args.work)
    cut_and_errors(tool, fmb, args.work)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
