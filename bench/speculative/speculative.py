#!/usr/bin/python3
"""Speculative decoding on the trained pair: acceptance and decode speed.

The target (default examples/models/afm7-qat, compiled for "w2" with the
flags its training.json's qat.fmc gives, and at f16 with the same KV format;
or examples/models/llama-twin: w2 g64 and f16) and the draft
(examples/models/llama-draft, the same tokenizer; "w2" is w2 g64 for it, it
had no QAT) are compiled into --work. The prompts are --prompts passages of
the held-out test split (examples/train/corpus.py --out WORK/corpus writes
WORK/corpus/test.txt), --prompt-chars characters each, cut at a space,
evenly spaced through it. Each prompt runs greedy for --tokens tokens with
fm-run --prompt-file, plain and then with --draft --draft-max k for every k
and with --lookup 3 --draft-max 4, one after the other (the same machine
state for all of a prompt's runs), and for each format and drafter it
prints:
  - the acceptance rate (accepted / drafted), and by position: of the
    verified drafts that had a token at position i, the share whose token
    there was accepted;
  - the mean accepted length (accepted drafts per verification pass) and the
    tokens per target pass (that plus the target's own token);
  - decode tok/s, plain and speculative, medians over the prompts, and the
    median of the per-prompt ratios;
  - how many outputs are plain's token for token (greedy: all of them, up
    to near ties; docs/speculative.md).
Prints numbers, asserts none. Each fmc and fm-run holds the machine lock
(/tmp/fmc-machine.lock) while it runs.

Usage: speculative.py [--build BUILD] [--work DIR] [--target DIR] [--draft DIR]
                      [--formats w2,f16] [--k 2,4,8] [--prompts 8] [--tokens 128]
                      [--prompt-chars 600] [--threads 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LOCK = "/tmp/fmc-machine.lock"


def run(cmd):
    p = subprocess.run(["flock", LOCK, "nice", "-n", "10"] + [str(c) for c in cmd],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit("%s failed (%d):\n%s" % (" ".join(map(str, cmd)), p.returncode,
                                          (p.stdout + p.stderr).decode(errors="replace")[-4000:]))
    return p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def qat_flags(model_dir):
    """The fmc flags of the directory's training.json (qat.fmc), or None."""
    path = os.path.join(model_dir, "training.json")
    if not os.path.exists(path):
        return None
    qat = json.load(open(path)).get("qat")
    if not qat or "fmc" not in qat:
        return None
    words = qat["fmc"].split()
    return words[words.index("DIR") + 1:]  # "fmc compile DIR --quant w2 ..."


def without(flags, names):
    """`flags` without the options in `names` and their values."""
    out, skip = [], False
    for f in flags:
        if skip:
            skip = False
        elif f in names:
            skip = True
        else:
            out.append(f)
    return out


def prompts(test_txt, n, chars):
    text = open(test_txt, encoding="utf-8").read()
    out = []
    for i in range(n):
        at = (len(text) - chars) * (2 * i + 1) // (2 * n)
        at = text.index(" ", at) + 1
        piece = text[at:at + chars]
        out.append(piece[:piece.rindex(" ")])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/fm_speculative")
    ap.add_argument("--target", default=os.path.join(ROOT, "examples", "models", "afm7-qat"))
    ap.add_argument("--draft", default=os.path.join(ROOT, "examples", "models", "llama-draft"))
    ap.add_argument("--formats", default="w2,f16")
    ap.add_argument("--k", default="2,4,8")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--prompt-chars", type=int, default=600)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    fmc = os.path.join(args.build, "bin", "fmc")
    fm_run = os.path.join(args.build, "bin", "fm-run")
    os.makedirs(args.work, exist_ok=True)
    w = lambda name: os.path.join(args.work, name)
    for d in (args.target, args.draft):
        if not os.path.exists(os.path.join(d, "config.json")):
            sys.exit("%s: no config.json: the trained models are written by "
                     "examples/train/train-all.sh" % d)

    corpus = w("corpus")
    if not os.path.exists(os.path.join(corpus, "test.txt")):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "train", "corpus.py"),
                        "--out", corpus], check=True, stdout=subprocess.DEVNULL)
    texts = prompts(os.path.join(corpus, "test.txt"), args.prompts, args.prompt_chars)
    files = []
    for i, t in enumerate(texts):
        files.append(w("prompt%d.txt" % i))
        open(files[-1], "w", encoding="utf-8").write(t)

    qat = qat_flags(args.target)
    kv = [f for f in (qat or []) if f == "--kv-bits"] and ["--kv-bits", "8"]
    target_flags = {"w2": qat or ["--quant", "w2", "--group", "64"],
                    "f16": ["--quant", "f16"] + (kv or [])}
    draft_flags = {"w2": ["--quant", "w2", "--group", "64"], "f16": ["--quant", "f16"]}
    ks = [int(k) for k in args.k.split(",")]
    print("target %s, draft %s; %d prompts of the test split (%d chars), %d tokens greedy, "
          "%d threads" % (os.path.basename(args.target), os.path.basename(args.draft),
                          len(files), args.prompt_chars, args.tokens, args.threads))
    for fmt in args.formats.split(","):
        target, draft = w("target_%s.fmb" % fmt), w("draft_%s.fmb" % fmt)
        run([fmc, "compile", args.target, "-o", target] + target_flags[fmt])
        run([fmc, "compile", args.draft, "-o", draft] + draft_flags[fmt])
        drafters = [("draft k=%d" % k, ["--draft", draft, "--draft-max", str(k)]) for k in ks]
        drafters.append(("lookup 3, k=4", ["--lookup", "3", "--draft-max", "4"]))
        base = [fm_run, target, "--max-new-tokens", str(args.tokens), "--threads",
                str(args.threads), "--stats"]
        plain_tps, plain_ids = [], []
        res = {name: [] for name, _ in drafters}
        for f in files:
            _, err = run(base + ["--prompt-file", f])
            st = json.loads([l for l in err.splitlines() if l.startswith("{")][-1])
            plain_tps.append(st["decode_tokens_per_s"])
            plain_ids.append(st["generated_ids"])
            for name, extra in drafters:
                _, err = run(base + ["--prompt-file", f] + extra)
                res[name].append(json.loads([l for l in err.splitlines()
                                             if l.startswith("{")][-1]))
        print("\ntarget %s (%s), draft %s (%s)\n" % (fmt, " ".join(target_flags[fmt]), fmt,
                                                      " ".join(draft_flags[fmt])))
        print("| drafter | acceptance | by position | accepted per pass | tokens per "
              "target pass | decode tok/s plain | speculative | ratio (median) | outputs "
              "= plain |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for name, _ in drafters:
            runs = res[name]
            drafted = sum(r["drafted"] for r in runs)
            accepted = sum(r["accepted"] for r in runs)
            passes = sum(r["target_passes"] for r in runs)
            verify = sum(r["verify_passes"] for r in runs)
            width = max(len(r["drafted_by_position"]) for r in runs)
            by = []
            for i in range(width):
                d = sum(r["drafted_by_position"][i] for r in runs
                        if i < len(r["drafted_by_position"]))
                a = sum(r["accepted_by_position"][i] for r in runs
                        if i < len(r["accepted_by_position"]))
                by.append("%.2f" % (a / d) if d else "-")
            tps = [r["decode_tokens_per_s"] for r in runs]
            ratios = [s / p for s, p in zip(tps, plain_tps) if p > 0]
            same = sum(r["generated_ids"] == ids for r, ids in zip(runs, plain_ids))
            print("| %s | %.3f | %s | %.2f | %.2f | %.0f | %.0f | %.2f | %d/%d |" % (
                name, accepted / drafted if drafted else 0.0, " ".join(by),
                accepted / verify if verify else 0.0, (accepted + passes) / passes,
                statistics.median(plain_tps), statistics.median(tps),
                statistics.median(ratios), same, len(runs)))


if __name__ == "__main__":
    main()
