#!/usr/bin/python3
"""Speculative decoding end to end (fm-run --draft / --lookup, fm/speculative.h)
against plain greedy decoding through fm-run.

  check_speculative.py --family F [--preset P] [--set KEY=JSON ...] --work DIR
                       [--compile-args "--quant w4 --group 32"] [--run-args ARGS]
                       [--chunks 0,1,3] [--draft-max 1,3,8] [--ranks N --mpi N]
                       [--rtol R] [--exact] [--context N] [--bin DIR]

The target is gen_checkpoint.py's checkpoint of the family (seed 0), compiled
with --compile-args (and --ranks N: partitioned, run under mpirun -np N). The
drafters:
  near    the same checkpoint compiled at another precision (w2 g32; w4 g32
          when the target is w2): it agrees with the target at most
          positions, not all;
  far     another checkpoint (seed 1): it rarely agrees, so nearly every
          round rolls back (in afm7 the rejected rows are in the caches that
          the KV-reuse layers after the sharing boundary read; in pt_moe in
          every track's cache, with a local window shorter than a round);
  self    the target artifact itself: every draft is taken and the target's
          bonus token ends every round;
  lookup  prompt lookup (--lookup 3).
For every prompt, --prefill-chunk and --draft-max, greedy fm-run with the
drafter against plain greedy fm-run (the decode program token by token, no
draft, no rollback), both with --logits-out:
  - the same ids. Where they differ, the first difference must be a near tie
    that rounding decides: each path's token is the argmax of its own row
    there, and the two rows agree within rtol (the k + 1-row pass and the
    1-row pass round differently); the rest is not compared;
  - every logits row a token was taken from, computed by a verification pass
    after the rollbacks before it, is plain's row at that position within
    rtol * max|logit| (a stale KV row shows here: keeping one rejected row
    gives differences of the order of max|logit|);
  - --stats: every token after the first came from a target pass or an
    accepted draft (generated = 1 + target_passes + accepted), the self draft
    is (nearly) always accepted;
and with --max-new-tokens 0 --logits-out the row after the prompt, plain's.
With --exact (for passes of at most 8 rows, --draft-max 7 at most: the
matvec's rows, kMatvecMaxRows in runtime/kernels/isa.h, each bit for bit the
decode step's) the ids must be plain's with no near tie, and every row
plain's bit for bit.
With --context N the target is compiled with that context, shorter than the
prompt plus the tokens asked for: both paths stop where it is full.
Prints one line per check and `N passed, N failed` at the end.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GEN = os.path.join(ROOT, "examples", "gen_checkpoint.py")
sys.path.insert(0, HERE)
import checks  # noqa: E402
from checks import check  # noqa: E402
import timelimits  # noqa: E402

PROMPTS = {
    "plain": "1,17,42,5,9,100,3,4",
    "repeats": "1,5,6,7,8,5,6,7,8,5,6",  # n-grams for prompt lookup
}
MAX_NEW = 40


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--work", required=True)
    ap.add_argument("--compile-args", default="")
    ap.add_argument("--run-args", default="")
    ap.add_argument("--chunks", default="0,1,3")
    ap.add_argument("--draft-max", default="1,3,8")
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--mpi", type=int, default=0)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--context", type=int, default=0)
    ap.add_argument("--bin", default="")
    args = ap.parse_args()
    tool = lambda name: os.path.join(args.bin, name) if args.bin else name
    os.makedirs(args.work, exist_ok=True)
    w = lambda name: os.path.join(args.work, name)

    def checkpoint(name, seed):
        cmd = ["/usr/bin/python3", GEN, "--family", args.family, "--preset", args.preset,
               "--out", w(name), "--seed", str(seed)]
        for s in args.set:
            cmd += ["--set", s]
        checks.run(cmd)

    def compile_(ckpt, fmb, extra):
        checks.run([tool("fmc"), "compile", w(ckpt), "-o", w(fmb), "--max-prefill", "16"] +
                   extra)

    checkpoint("ckpt", 0)
    checkpoint("far_ckpt", 1)
    target_args = args.compile_args.split()
    if args.ranks > 1:
        target_args += ["--ranks", str(args.ranks)]
    if args.context:
        target_args += ["--context", str(args.context)]
    compile_("ckpt", "target.fmb", target_args)
    # The drafts keep the target's other flags (its KV format).
    flags = args.compile_args.split()
    kept = [a for i, a in enumerate(flags) if a not in ("--quant", "--group") and
            (i == 0 or flags[i - 1] not in ("--quant", "--group"))]
    near_quant = ["--quant", "w4" if "w2" in flags else "w2", "--group", "32"]
    compile_("ckpt", "near.fmb", kept + near_quant)
    compile_("far_ckpt", "far.fmb", kept)
    drafters = {
        "near": ["--draft", w("near.fmb")],
        "far": ["--draft", w("far.fmb")],
        "self": ["--draft", w("target.fmb")] if args.ranks == 1 else None,
        "lookup": ["--lookup", "3"],
    }
    if args.ranks > 1:
        # A partitioned artifact cannot draft (it runs on rank 0 alone): the
        # target's unpartitioned twin can.
        compile_("ckpt", "twin.fmb", args.compile_args.split())
        drafters["self"] = ["--draft", w("twin.fmb")]

    def fm_run(extra, out_npy):
        cmd = ([tool("fm-run"), w("target.fmb"), "--max-new-tokens", str(MAX_NEW),
                "--logits-out", out_npy, "--stats"] + args.run_args.split() + extra)
        if args.mpi:
            cmd = timelimits.mpirun(args.mpi) + cmd + ["--threads", "1"]
        out, _ = checks.run(cmd)
        lines = out.decode().strip().splitlines()
        ids = [int(t) for t in lines[0].split()]
        return ids, json.loads(lines[1]), np.load(out_npy)

    runs = near_ties = 0
    for pname, prompt in PROMPTS.items():
        for chunk in args.chunks.split(","):
            base = ["--tokens", prompt, "--prefill-chunk", chunk]
            plain, _, plain_rows = fm_run(base, w("plain.npy"))
            scale = float(np.abs(plain_rows).max())
            for dname, dargs in drafters.items():
                for k in args.draft_max.split(","):
                    what = "%s chunk %s %s --draft-max %s" % (pname, chunk, dname, k)
                    ids, st, rows = fm_run(base + dargs + ["--draft-max", k], w("spec.npy"))
                    runs += 1
                    # Up to the first difference (a near tie), the same ids
                    # and the same rows.
                    n = next((i for i, (a, b) in enumerate(zip(ids, plain)) if a != b),
                             min(len(ids), len(plain)))
                    same = ids == plain
                    d = np.abs(rows[:n + 1] - plain_rows[:n + 1]).max(axis=1)
                    rows_ok = bool((d <= args.rtol * scale).all())
                    if args.exact:
                        check(same and bool((d == 0).all()),
                              "%s: ids and logits rows plain's bit for bit "
                              "(max |d| %.2g)" % (what, d.max()),
                              "spec %s\nplain %s" % (ids, plain))
                    if not same and n < min(len(ids), len(plain)):
                        tie = (int(rows[n].argmax()) == ids[n] and
                               int(plain_rows[n].argmax()) == plain[n] and rows_ok)
                        top = np.sort(plain_rows[n])[-2:]
                        near_ties += tie
                        check(tie, "%s: the ids differ from plain's at token %d of %d, a near "
                              "tie (top-2 gap %.2g, rows within %.2g)" % (
                                  what, n, len(plain), top[1] - top[0], d.max()),
                              "spec %s, plain %s" % (ids[n:n + 4], plain[n:n + 4]))
                    else:
                        check(same, "%s: %d ids, plain's" % (what, len(ids)),
                              "spec %s\nplain %s" % (ids, plain))
                    check(rows_ok, "%s: the logits every token was taken from are plain's "
                          "(max |d| %.2g <= %.0e * %.1f)" % (what, d.max(), args.rtol, scale),
                          "first bad row %d" % int(np.argmax(d > args.rtol * scale)))
                    taken = 1 + st["target_passes"] + st["accepted"]
                    check(taken == len(ids), "%s: %d target passes + %d accepted drafts + 1 = "
                          "%d tokens" % (what, st["target_passes"], st["accepted"], len(ids)))
                    if dname == "self":
                        check(st["acceptance_rate"] >= 0.9,
                              "%s: the target as its own draft: %.2f of the drafts taken" % (
                                  what, st["acceptance_rate"]))
    # No token asked for: the prompt's last row, as plain decoding keeps it.
    cmd = [tool("fm-run"), w("target.fmb"), "--tokens", PROMPTS["plain"],
           "--max-new-tokens", "0"] + args.run_args.split()
    if args.mpi:
        cmd = timelimits.mpirun(args.mpi) + cmd + ["--threads", "1"]
    checks.run(cmd + ["--logits-out", w("plain0.npy")])
    checks.run(cmd + drafters["far"] + ["--logits-out", w("spec0.npy")])
    a, b = np.load(w("plain0.npy")), np.load(w("spec0.npy"))
    check(a.shape == b.shape == (1, a.shape[1]) and np.array_equal(a, b),
          "--max-new-tokens 0 --logits-out with a draft: plain's row after the prompt")
    print("note: %d of %d runs differ from plain at a near tie" % (near_ties, runs))
    if args.context:
        check(len(plain) < MAX_NEW, "--context %d: the context filled before %d tokens "
              "(%d generated)" % (args.context, MAX_NEW, len(plain)))
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
