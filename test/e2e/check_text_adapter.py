#!/usr/bin/python3
"""fm-run --adapter in the text modes: a tiny random llama with Mistral's
tokenizer embedded and a random PEFT LoRA (gen_checkpoint.py --lora-out),
compiled with fmc compile-adapter.

  check_text_adapter.py --work DIR [--bin DIR]

  - --prompt with --adapter FILE:scale generates exactly the ids fm-run
    --tokens generates from the same prompt ids with the same adapter (the
    text path runs the adapted session), and they differ from the base's
    (the adapter is not ignored);
  - --chat with the adapter over two turns: each reply is what --tokens
    generates with the adapter from that turn's whole context.
Prints one line per check and `N passed, N failed` at the end.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_text as ct  # noqa: E402
import checks  # noqa: E402


def tokens_run(tool, fmb, ids, n, adapter):
    args = [tool("fm-run"), fmb, "--tokens", ",".join(map(str, ids)), "--max-new-tokens", str(n)]
    if adapter:
        args += ["--adapter", adapter]
    out, _ = ct.run(args)
    return [int(t) for t in out.split()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", default="")
    args = ap.parse_args()
    tool = ct.start(args)
    lora = os.path.join(args.work, "lora")
    m = ct.build_model(tool, "mistral", args.work,
                       ["--lora-out", lora, "--lora-rank", "4", "--lora-alpha", "16"],
                       chat_template=ct.INST_TEMPLATE)
    fmb = m["fmb"]
    fmba = os.path.join(args.work, "a.fmba")
    ct.run([tool("fmc"), "compile-adapter", lora, "--base", fmb, "-o", fmba])
    adapter = fmba + ":1.5"

    prompt = "The quick brown fox jumps over the lazy dog."
    base = ct.stats_lines(ct.run([tool("fm-run"), fmb, "--prompt", prompt, "--max-new-tokens",
                                  "12", "--stats"])[1])[-1]
    out, err = ct.run([tool("fm-run"), fmb, "--prompt", prompt, "--max-new-tokens", "12",
                       "--adapter", adapter, "--stats"])
    st = ct.stats_lines(err)[-1]
    gen = st["generated_ids"]
    ct.check("fm-run: adapter" in err, "--prompt --adapter: the adapter is loaded", err[:200])
    ct.check(tokens_run(tool, fmb, st["prompt_ids"], len(gen), adapter) == gen,
             "--prompt --adapter generates what --tokens --adapter does (%d ids)" % len(gen))
    ct.check(gen != base["generated_ids"], "the adapter changes the generation",
             "%s == %s" % (gen, base["generated_ids"]))

    turns = os.path.join(args.work, "turns.txt")
    open(turns, "w").write("Hello! Who are you?\n---\nAnd then?\n")
    out, err = ct.run([tool("fm-run"), fmb, "--chat", "--chat-file", turns, "--adapter", adapter,
                       "--max-new-tokens", "8", "--stats"])
    stats = [s for s in ct.stats_lines(err) if "turn" in s]
    ct.check(len(stats) == 2, "--chat --adapter: two turns")
    for s in stats:
        ids = tokens_run(tool, fmb, s["context_ids"], len(s["generated_ids"]), adapter)
        ct.check(ids == s["generated_ids"], "chat turn %d with the adapter: the reply is --tokens "
                 "--adapter's from its context" % s["turn"], "%s != %s" % (ids, s["generated_ids"]))
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
