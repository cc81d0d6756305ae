#!/usr/bin/python3
"""Speculative decoding with text and guided generation (fm-run --prompt /
--tokens --tokenizer with --draft or --lookup) against the same fm-run
commands without a drafter.

  check_speculative_text.py --work DIR [--bin DIR]

The target: a tiny random llama whose vocabulary is examples/train's 4096-id
byte-level BPE (in the repository), compiled at f32 with the tokenizer
embedded; the draft: the same checkpoint at w2 (it agrees with the target at
some positions). Greedy, with the draft and with --lookup 2, against plain:
  - --prompt: the same generated ids and the same text, at --draft-max 2
    and 5;
  - --prompt --stop S (S taken from the middle of plain's text): the text
    ends before S in both, stop "stop-string";
  - --prompt --logit-bias EOS=8: both end at the end-of-sequence id at the
    same token (stop "stop-id"); --logit-bias on a plain id: the same text;
  - --prompt --json-schema and --tokens --tokenizer --regex: the same output;
  - LoRA adapters (gen_checkpoint.py --lora-out, strength 1): --adapter on the
    model with a draft gives plain --adapter's ids; --draft-adapter (compiled
    for the draft) changes what the draft proposes (other acceptance counts)
    but not the output;
  - sampled (temperature 1, seeds 1-4) --prompt --json-schema with the
    draft: every output validates against the schema (python3-jsonschema),
    and every generation ended at a stop id.
It also leaves, for the lit file's refusals: WORK/vocab.fmb (4160 logits,
the same tokenizer), WORK/othertok.fmb (another tokenizer_config.json),
WORK/notok.fmb (no tokenizer) and WORK/ranks2.fmb (a pt_moe of the same
vocabulary partitioned over 2 ranks).
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
TOKDIR = os.path.join(ROOT, "examples", "train", "tokenizer")
SCHEMAS = os.path.join(ROOT, "test", "grammar", "guided")
VALIDATE = os.path.join(ROOT, "test", "grammar", "validate_generated.py")
sys.path.insert(0, HERE)
import checks  # noqa: E402
from checks import check  # noqa: E402
import timelimits  # noqa: E402

EOS = 4095  # <|endoftext|>, the tokenizer's eos_token


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", default="")
    args = ap.parse_args()
    tool = lambda name: os.path.join(args.bin, name) if args.bin else name
    os.makedirs(args.work, exist_ok=True)
    w = lambda name: os.path.join(args.work, name)

    def checkpoint(name, family, seed, sets, tokenizer=True, config_edit=None):
        cmd = ["/usr/bin/python3", GEN, "--family", family, "--preset", "tiny",
               "--out", w(name), "--seed", str(seed)]
        for s in sets:
            cmd += ["--set", s]
        checks.run(cmd)
        if tokenizer:
            for f in ("tokenizer.json", "tokenizer_config.json"):
                shutil.copy(os.path.join(TOKDIR, f), w(name))
        if config_edit:
            path = w(os.path.join(name, "tokenizer_config.json"))
            c = json.load(open(path, encoding="utf-8"))
            c.update(config_edit)
            json.dump(c, open(path, "w", encoding="utf-8"))

    def compile_(ckpt, fmb, extra=()):
        checks.run([tool("fmc"), "compile", w(ckpt), "-o", w(fmb), "--max-prefill", "16"] +
                   list(extra))

    checkpoint("target", "llama", 0, ["vocab_size=4096"])
    compile_("target", "target.fmb")
    compile_("target", "draft.fmb", ["--quant", "w2", "--group", "32"])
    drafters = {"draft": ["--draft", w("draft.fmb")], "lookup": ["--lookup", "2"]}

    def fm_run(extra):
        out, err = checks.run([tool("fm-run"), w("target.fmb"), "--stats"] + extra,
                              ok=(0, 3))
        stats = [json.loads(l) for l in err.splitlines() if l.startswith("{")]
        return out.decode("utf-8"), stats[-1] if stats else None

    prompt = ["--prompt", "The compiler reads the model. The compiler reads", "--max-new-tokens",
              "48"]
    plain, pst = fm_run(prompt)
    for name, d in drafters.items():
        for k in ("2", "5"):
            text, st = fm_run(prompt + d + ["--draft-max", k])
            check(st["generated_ids"] == pst["generated_ids"] and text == plain,
                  "--prompt with --%s --draft-max %s: plain's %d ids and text (%d accepted)" % (
                      name, k, len(st["generated_ids"]), st["accepted"]),
                  "%s\n%s" % (st["generated_ids"], pst["generated_ids"]))

    # A stop string from the middle of plain's text.
    mid = plain[len(plain) // 2:len(plain) // 2 + 3]
    cut, cst = fm_run(prompt + ["--stop", mid])
    for name, d in drafters.items():
        text, st = fm_run(prompt + ["--stop", mid] + d)
        check(text == cut and st["stop"] == cst["stop"] == "stop-string" and mid not in text,
              "--prompt --stop %r with --%s: plain's text, cut before it" % (mid, name),
              "%r vs %r" % (text, cut))

    # The end-of-sequence id, biased up until it is the argmax somewhere.
    bias = prompt + ["--logit-bias", "%d=8" % EOS]
    btext, bst = fm_run(bias)
    check(bst["stop"] == "stop-id" and bst["generated_ids"][-1] == EOS,
          "--logit-bias %d=8 ends plain generation at the end-of-sequence id (token %d)" % (
              EOS, len(bst["generated_ids"])))
    for name, d in drafters.items():
        text, st = fm_run(bias + d)
        check(st["generated_ids"] == bst["generated_ids"] and st["stop"] == "stop-id" and
              text == btext, "--logit-bias %d=8 with --%s: the same ids up to the "
              "end-of-sequence id" % (EOS, name), "%s\n%s" % (st["generated_ids"],
                                                              bst["generated_ids"]))
    favoured = pst["generated_ids"][3]
    ftext, fst = fm_run(prompt + ["--logit-bias", "%d=2.5" % favoured])
    text, st = fm_run(prompt + ["--logit-bias", "%d=2.5" % favoured] + drafters["draft"])
    check(st["generated_ids"] == fst["generated_ids"] and text == ftext,
          "--logit-bias %d=2.5 with --draft: plain's ids" % favoured)

    # Guided, greedy: the same output.
    schema = os.path.join(SCHEMAS, "person.json")
    guided = ["--prompt", "A person as JSON:", "--json-schema", schema,
              "--max-new-tokens", "200"]
    gplain, gst = fm_run(guided)
    for name, d in drafters.items():
        text, st = fm_run(guided + d)
        check(text == gplain and st["generated_ids"] == gst["generated_ids"],
              "--prompt --json-schema with --%s: plain's output (%d ids)" % (
                  name, len(gst["generated_ids"])), "%r\n%r" % (text, gplain))
    rx = ["--tokens", "1,300,400", "--tokenizer", os.path.join(TOKDIR, "tokenizer.json"),
          "--regex", "[a-z ]{1,60}\\.", "--max-new-tokens", "40"]
    out_plain, _ = checks.run([tool("fm-run"), w("target.fmb")] + rx)
    for name, d in drafters.items():
        out, _ = checks.run([tool("fm-run"), w("target.fmb")] + rx + d)
        check(out == out_plain, "--tokens --tokenizer --regex with --%s: plain's text %r" % (
            name, out.decode()))

    # Adapters: the model's own (--adapter) and the draft's (--draft-adapter).
    checks.run(["/usr/bin/python3", GEN, "--family", "llama", "--preset", "tiny",
                "--set", "vocab_size=4096", "--lora-out", w("lora"), "--lora-strength", "1"])
    checks.run([tool("fmc"), "compile-adapter", w("lora"), "--base", w("target.fmb"), "-o",
                w("target.fmba")])
    checks.run([tool("fmc"), "compile-adapter", w("lora"), "--base", w("draft.fmb"), "-o",
                w("draft.fmba")])
    _, ast = fm_run(prompt + ["--adapter", w("target.fmba")])
    _, st = fm_run(prompt + ["--adapter", w("target.fmba")] + drafters["draft"])
    check(st["generated_ids"] == ast["generated_ids"] and ast["generated_ids"] !=
          pst["generated_ids"], "--adapter with --draft: plain --adapter's ids (not the "
          "model's without it)")
    _, dst = fm_run(prompt + drafters["draft"] + ["--draft-adapter", w("draft.fmba")])
    _, nst = fm_run(prompt + drafters["draft"])
    check(dst["generated_ids"] == pst["generated_ids"] and
          dst["accepted_by_position"] != nst["accepted_by_position"],
          "--draft-adapter: plain's ids, other drafts (accepted by position %s, without it "
          "%s)" % (dst["accepted_by_position"], nst["accepted_by_position"]))

    # Sampled and guided: valid outputs.
    records, ends = [], []
    for seed in (1, 2, 3, 4):
        text, st = fm_run(guided + ["--temperature", "1", "--seed", str(seed)] +
                          drafters["draft"])
        records.append({"schema": schema, "seed": seed, "tokens": len(st["generated_ids"]),
                        "text": text})
        ends.append(st["stop"] == "stop-id")
    path = w("sampled.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    p = timelimits.run(["/usr/bin/python3", VALIDATE, path], stdout=subprocess.PIPE, text=True)
    check(p.returncode == 0 and "4 passed, 0 failed" in p.stdout,
          "sampled --json-schema with --draft: 4 outputs validated by python3-jsonschema",
          p.stdout.strip()[-400:])
    check(all(ends), "every sampled --json-schema generation ended at a stop id")

    # The refusals' artifacts.
    checkpoint("vocab", "llama", 0, ["vocab_size=4160"])
    compile_("vocab", "vocab.fmb")
    checkpoint("othertok", "llama", 0, ["vocab_size=4096"],
               config_edit={"model_max_length": 2048})
    compile_("othertok", "othertok.fmb")
    checkpoint("notok", "llama", 0, ["vocab_size=4096"], tokenizer=False)
    compile_("notok", "notok.fmb")
    checkpoint("ranks2", "pt_moe", 0, ["vocab_size=4096"])
    compile_("ranks2", "ranks2.fmb", ["--ranks", "2"])
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
