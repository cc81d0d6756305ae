#!/usr/bin/python3
"""End-to-end numerics: checkpoint -> fmc compile -> fm-run --score vs the numpy reference.

For one checkpoint family/preset this generates a deterministic f32
checkpoint, compiles it, and for every (prefill chunk, threads) pair runs
`fm-run --score` and compares the logits of every position with
test/reference/fm_reference.py (max |d| <= rtol * max |logit|, same argmax).
Prints one line per run and `N passed, N failed` at the end.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GEN = os.path.join(ROOT, "examples", "gen_checkpoint.py")
REF = os.path.join(ROOT, "test", "reference", "fm_reference.py")


def run(cmd):
    """The command's stdout (its stderr, progress and notes, is shown on failure)."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd),
                                                          p.stdout, p.stderr))
        sys.exit(1)
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--set", action="append", default=[], help="config override KEY=JSON")
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--tokens", default="1,17,42,5,9,100,3,4,5,6,7,8,9,10,11,2,30")
    ap.add_argument("--chunks", default="1,3,0", help="prefill chunks; 0 = whole prompt")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--max-prefill", default="8")
    ap.add_argument("--rtol", default="1e-3")
    ap.add_argument("--bin", default="", help="directory of fmc and fm-run (default: PATH)")
    ap.add_argument("--ranks", default="1", help="fmc compile --ranks (track partition)")
    ap.add_argument("--compile-args", default="", help="extra fmc compile flags")
    ap.add_argument("--qat-grid", default="", help="gen_checkpoint --qat-grid GROUP")
    ap.add_argument("--run-args", default="", help="extra fm-run flags")
    ap.add_argument("--min-argmax-agree", default="",
                    help="fraction of positions whose argmax must agree (default: all)")
    ap.add_argument("--skip-generate", action="store_true",
                    help="no greedy-generation check (quantized models may pick other tokens)")
    ap.add_argument("--mpi", type=int, default=0,
                    help="run fm-run under mpirun with this many ranks (0: one process)")
    args = ap.parse_args()

    tool = lambda name: os.path.join(args.bin, name) if args.bin else name
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "ckpt")
    gen = ["/usr/bin/python3", GEN, "--family", args.family, "--preset", args.preset,
           "--out", model, "--dtype", args.dtype]
    for s in args.set:
        gen += ["--set", s]
    if args.qat_grid:
        gen += ["--qat-grid", args.qat_grid]
    run(gen)
    fmb = os.path.join(args.work, "model.fmb")
    run([tool("fmc"), "compile", model, "-o", fmb, "--max-prefill", args.max_prefill,
         "--ranks", args.ranks] + args.compile_args.split())
    launch = []
    if args.mpi:
        launch = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(args.mpi)]
    fm_run = lambda *a: launch + [tool("fm-run"), fmb] + list(a) + args.run_args.split()

    passed = failed = 0
    for chunk in args.chunks.split(","):
        for threads in args.threads.split(","):
            out = os.path.join(args.work, "logits_c%s_t%s.npy" % (chunk, threads))
            run(fm_run("--tokens", args.tokens, "--score", "--logits-out", out,
                       "--prefill-chunk", chunk, "--threads", threads))
            cmp = ["/usr/bin/python3", REF, model, "--tokens", args.tokens,
                   "--compare", out, "--rtol", args.rtol]
            if args.min_argmax_agree:
                cmp += ["--min-argmax-agree", args.min_argmax_agree]
            p = subprocess.run(cmp,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            ok = p.returncode == 0
            passed += ok
            failed += not ok
            print("%s:%s chunk=%s threads=%s ranks=%d %s" % (
                args.family, args.preset, chunk, threads, max(args.mpi, 1), p.stdout.strip()))
    # Generation: prefill_last + decode, greedy. Its logits rows (last prompt
    # position, then one per generated token) must match the reference on
    # the extended sequence, and each token must be the reference's argmax.
    import numpy as np
    for threads in ([] if args.skip_generate else args.threads.split(",")):
        out = os.path.join(args.work, "gen_t%s.npy" % threads)
        gen_tokens = run(fm_run("--tokens", args.tokens, "--max-new-tokens", "5",
                                "--threads", threads, "--logits-out", out)).split()
        prompt = [int(t) for t in args.tokens.split(",")]
        seq = prompt + [int(t) for t in gen_tokens]
        ref_out = os.path.join(args.work, "gen_ref.npy")
        run(["/usr/bin/python3", REF, model, "--tokens", ",".join(map(str, seq)), "--out", ref_out])
        ref = np.load(ref_out)[len(prompt) - 1:]
        got = np.load(out)
        rel = float(np.abs(got - ref).max() / np.abs(ref).max()) if got.shape == ref.shape else float("inf")
        ok = (got.shape == ref.shape and rel <= float(args.rtol)
              and list(ref.argmax(-1)[:len(gen_tokens)]) == [int(t) for t in gen_tokens])
        passed += ok
        failed += not ok
        print("%s:%s generate threads=%s %s tokens=%s rel=%.3g" % (
            args.family, args.preset, threads, "PASS" if ok else "FAIL", " ".join(gen_tokens), rel))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
