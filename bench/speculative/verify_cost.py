#!/usr/bin/python3
"""What a verification pass costs: k + 1 rows through the target against 1.

Speculative decoding (fm/speculative.h) replaces k + 1 one-row decode steps
by one (k + 1)-row pass (the prefill program, every row's logits) whenever
the draft is right. This times both on issue #16's 2.9B llama shape
(bench/models/llama29b.py: hidden 3072, 24/8 heads of 128, FFN 8192,
vocabulary 49152, untied head; an f16 checkpoint written into --work once
and reused), compiled at each --quant: `fm-run --score` over the same
--context ids with --prefill-chunk r runs context / r passes of r rows each
(r = 1: the decode program, as generation runs it), and the time per pass is
r / its prefill tok/s (the one-time GEMM repack taken out). Rounds alternate
the row counts; medians. From the ratio it prints the decode speedup that
an acceptance rate a would give with a free draft: each pass takes
(1 - a^(k+1)) / (1 - a) tokens (every position accepted with probability a,
independently) for cost(k + 1) / cost(1) of a decode step.

Prints numbers, asserts none. Each fmc and fm-run holds the machine lock
(/tmp/fmc-machine.lock) while it runs.

Usage: verify_cost.py [--build BUILD] [--work DIR] [--layers 26]
                      [--quant "w2 --group 64 --embed-bits 8" --quant f16]
                      [--rows 1,2,3,5,9] [--context 90] [--rounds 3]
                      [--threads 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "models"))
from llama29b import VOCAB, checkpoint  # noqa: E402

LOCK = "/tmp/fmc-machine.lock"


def run(cmd):
    p = subprocess.run(["flock", LOCK, "nice", "-n", "10"] + [str(c) for c in cmd],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("%s failed (%d):\n%s" % (" ".join(map(str, cmd)), p.returncode,
                                          (p.stdout + p.stderr)[-4000:]))
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/fm_verify_cost")
    ap.add_argument("--layers", type=int, default=26)
    ap.add_argument("--quant", action="append", default=[])
    ap.add_argument("--rows", default="1,2,3,5,9")
    ap.add_argument("--context", type=int, default=90)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    quants = args.quant or ["w2 --group 64 --embed-bits 8", "f16"]
    rows = [int(r) for r in args.rows.split(",")]
    fmc = os.path.join(args.build, "bin", "fmc")
    fm_run = os.path.join(args.build, "bin", "fm-run")
    os.makedirs(args.work, exist_ok=True)
    ckpt = checkpoint(args.work, args.layers)
    ids = ",".join(str(1 + (i * 7919) % (VOCAB - 1)) for i in range(args.context))
    print("2.9B llama shape, %d layers, %d-token context, %d threads, %d rounds (medians)" % (
        args.layers, args.context, args.threads, args.rounds))
    for quant in quants:
        fmb = os.path.join(args.work, "l%d_%s.fmb" % (args.layers, quant.split()[0]))
        if not os.path.exists(fmb):
            run([fmc, "compile", ckpt, "-o", fmb, "--quant"] + quant.split() +
                ["--context", args.context + 16, "--max-prefill", max(rows)])
        ms = {r: [] for r in rows}
        for _ in range(args.rounds):
            for r in rows:
                out = run([fm_run, fmb, "--tokens", ids, "--score", "--logits-out",
                           os.path.join(args.work, "scores.npy"), "--prefill-chunk", r,
                           "--threads", args.threads, "--stats"])
                st = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
                ms[r].append(1000.0 * r / st["prefill_tokens_per_s"])
        one = statistics.median(ms[1])
        print("\n--quant %s\n" % quant)
        print("| rows (k + 1) | ms per pass | x 1-row pass | speedup at a = 0.6 / 0.7 / 0.8 "
              "(free draft) |")
        print("| --- | --- | --- | --- |")
        for r in rows:
            cost = statistics.median(ms[r]) / one
            gains = []
            for a in (0.6, 0.7, 0.8):
                gains.append("%.2f" % ((1 - a ** r) / (1 - a) / cost))
            print("| %d | %.1f | %.2f | %s |" % (r, statistics.median(ms[r]), cost,
                                                " / ".join(gains)))
        os.remove(os.path.join(args.work, "scores.npy"))


if __name__ == "__main__":
    main()
