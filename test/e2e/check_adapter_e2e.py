#!/usr/bin/python3
"""End-to-end numerics of LoRA adapters against the numpy reference.

Generates a deterministic checkpoint and PEFT adapters (examples/
gen_checkpoint.py --lora-out), compiles the base (`fmc compile`) and each
adapter (`fmc compile-adapter --base`), and for every (prefill chunk,
threads) pair runs `fm-run --score --adapter a.fmba:scale ...` and compares
the logits of every position with test/reference/fm_reference.py
--adapter DIR:scale (merged weights W' = W + scale * s * B @ A):
max |d| <= rtol * max |logit|, same argmax.  With --merge it also compiles
the base with `--merge-adapter DIR:scale ...`, checks that model against the
reference, and checks the runtime-adapter logits against the merged model's.
A run of the same .fmb without --adapter must give the base's reference
logits. Prints one line per comparison and `N passed, N failed` at the end.
"""
import argparse
import os
import shlex
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GEN = os.path.join(ROOT, "examples", "gen_checkpoint.py")
REF = os.path.join(ROOT, "test", "reference", "fm_reference.py")
sys.path.insert(0, os.path.dirname(REF))
sys.path.insert(0, HERE)
import fm_reference  # noqa: E402
import timelimits  # noqa: E402  (every command's time limit)


def run(cmd):
    p = timelimits.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write("command failed (%d): %s\n%s%s" % (
            p.returncode, " ".join(cmd), p.stdout, p.stderr))
        sys.exit(1)
    # With FM_VULKAN_VALIDATION=1 every validation-layer message is a failure.
    if "fm: vulkan validation:" in p.stderr:
        sys.stderr.write("validation messages from: %s\n%s" % (" ".join(cmd), p.stderr))
        sys.exit(1)
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--work", required=True)
    ap.add_argument("--adapter", action="append", default=[], metavar="SCALE:GENARGS",
                    help="an adapter: its runtime scale, then gen_checkpoint --lora-* "
                         "flags (repeatable: the adapters are stacked)")
    ap.add_argument("--adapter-quant", default="f16", help="fmc compile-adapter --quant")
    ap.add_argument("--tokens", default="1,17,42,5,9,100,3,4,5,6,7,8,9,10,11,2,30")
    ap.add_argument("--chunks", default="1,0")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--max-prefill", default="8")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--min-argmax-agree", type=float, default=None)
    ap.add_argument("--bin", default="")
    ap.add_argument("--compile-args", default="")
    ap.add_argument("--qat-grid", default="")
    ap.add_argument("--run-args", default="")
    ap.add_argument("--merge", action="store_true")
    ap.add_argument("--peer-args", default="",
                    help="also run each adapter run with these fm-run flags instead of "
                         "--run-args (e.g. '--device cpu --activations f32') and compare")
    ap.add_argument("--peer-rtol", type=float, default=1e-4,
                    help="max |logits - peer logits| <= peer-rtol * max |peer logits|")
    args = ap.parse_args()

    tool = lambda name: os.path.join(args.bin, name) if args.bin else name
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "ckpt")
    gen = ["/usr/bin/python3", GEN, "--family", args.family, "--preset", args.preset,
           "--out", model]
    if args.qat_grid:
        gen += ["--qat-grid", args.qat_grid]
    run(gen)
    fmb = os.path.join(args.work, "model.fmb")
    compile_args = shlex.split(args.compile_args)
    run([tool("fmc"), "compile", model, "-o", fmb, "--max-prefill", args.max_prefill]
        + compile_args)

    uses = []  # (adapter dir, .fmba, scale)
    for i, spec in enumerate(args.adapter):
        scale, _, genargs = spec.partition(":")
        d = os.path.join(args.work, "adapter%d" % i)
        run(["/usr/bin/python3", GEN, "--family", args.family, "--preset", args.preset,
             "--lora-out", d] + shlex.split(genargs))
        fmba = os.path.join(args.work, "adapter%d.fmba" % i)
        run([tool("fmc"), "compile-adapter", d, "--base", fmb, "-o", fmba,
             "--quant", args.adapter_quant])
        uses.append((d, fmba, float(scale)))

    toks = [int(t) for t in args.tokens.split(",")]
    cfg, W = fm_reference.load_checkpoint(model)
    ref = fm_reference.logits(
        cfg, fm_reference.merge_adapters(W, [(d, s) for d, _, s in uses]), toks)
    base_ref = fm_reference.logits(cfg, W, toks)
    rel_change = float(np.abs(ref - base_ref).max() / np.abs(base_ref).max())
    print("%s:%s adapters=%d: the adapters change the logits by %.3g of max |logit|"
          % (args.family, args.preset, len(uses), rel_change))

    passed = failed = 0

    def check(label, got, want):
        nonlocal passed, failed
        ok, line = fm_reference.compare(want, got, args.rtol, args.min_argmax_agree)
        passed += ok
        failed += not ok
        print("%s:%s %s %s" % (args.family, args.preset, label, line))

    runtime = {}
    adapter_flags = []
    for _, fmba, s in uses:
        adapter_flags += ["--adapter", "%s:%g" % (fmba, s)]
    for chunk in args.chunks.split(","):
        for threads in args.threads.split(","):
            out = os.path.join(args.work, "logits_c%s_t%s.npy" % (chunk, threads))
            run([tool("fm-run"), fmb, "--tokens", args.tokens, "--score",
                 "--logits-out", out, "--prefill-chunk", chunk, "--threads", threads]
                + adapter_flags + shlex.split(args.run_args))
            runtime[(chunk, threads)] = np.load(out)
            check("adapter chunk=%s threads=%s" % (chunk, threads),
                  runtime[(chunk, threads)], ref)
            if args.peer_args:
                peer = os.path.join(args.work, "peer_c%s_t%s.npy" % (chunk, threads))
                run([tool("fm-run"), fmb, "--tokens", args.tokens, "--score",
                     "--logits-out", peer, "--prefill-chunk", chunk, "--threads", threads]
                    + adapter_flags + shlex.split(args.peer_args))
                want = np.load(peer)
                d = float(np.abs(runtime[(chunk, threads)] - want).max())
                bound = args.peer_rtol * float(np.abs(want).max())
                ok = bool(np.isfinite(runtime[(chunk, threads)]).all()) and d <= bound
                passed += ok
                failed += not ok
                print("%s:%s adapter chunk=%s threads=%s vs peer: %s max|d| %.3g = %.3g of "
                      "max|logit| (bound %g)" % (args.family, args.preset, chunk, threads,
                                                 "peer PASS" if ok else "peer FAIL", d,
                                                 d / max(float(np.abs(want).max()), 1e-30),
                                                 args.peer_rtol))
    if uses:
        # The base alone again: no --adapter, the base's own logits.
        out = os.path.join(args.work, "base.npy")
        run([tool("fm-run"), fmb, "--tokens", args.tokens, "--score", "--logits-out",
             out] + shlex.split(args.run_args))
        check("no adapter (the base)", np.load(out), base_ref)

    if args.merge:
        merged = os.path.join(args.work, "merged.fmb")
        merge_flags = []
        for d, _, s in uses:
            merge_flags += ["--merge-adapter", "%s:%g" % (d, s)]
        run([tool("fmc"), "compile", model, "-o", merged, "--max-prefill",
             args.max_prefill] + compile_args + merge_flags)
        for chunk in args.chunks.split(","):
            out = os.path.join(args.work, "merged_c%s.npy" % chunk)
            run([tool("fm-run"), merged, "--tokens", args.tokens, "--score",
                 "--logits-out", out, "--prefill-chunk", chunk]
                + shlex.split(args.run_args))
            got = np.load(out)
            check("merged chunk=%s vs reference" % chunk, got, ref)
            check("merged chunk=%s vs runtime adapters" % chunk, got,
                  runtime[(chunk, args.threads.split(",")[0])])
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
