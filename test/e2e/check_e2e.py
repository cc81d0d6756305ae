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
sys.path.insert(0, HERE)
import timelimits  # noqa: E402  (every command's time limit)


def run(cmd):
    """The command's stdout (its stderr, progress and notes, is shown on failure); a
    command past its time limit (timelimits.py) fails the test too."""
    p = timelimits.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd),
                                                          p.stdout, p.stderr))
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
    ap.add_argument("--device", default="", help="fm-run --device for the runs checked")
    ap.add_argument("--peer-args", default="",
                    help="also run the same artifact with these fm-run flags (e.g. "
                         "'--device cpu --activations f32') and compare the logits")
    ap.add_argument("--peer-rtol", default="1e-4",
                    help="max |logits - peer logits| <= peer-rtol * max |peer logits|")
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
        launch = timelimits.mpirun(args.mpi)
    device = ["--device", args.device] if args.device else []
    fm_run = lambda *a: launch + [tool("fm-run"), fmb] + list(a) + device + args.run_args.split()
    peer_run = lambda *a: launch + [tool("fm-run"), fmb] + list(a) + args.peer_args.split()

    import numpy as np

    def peer_check(got_path, *run_args):
        """The same run with --peer-args: (ok, text)."""
        if not args.peer_args:
            return True, ""
        peer_path = got_path[:-4] + "_peer.npy"
        run(peer_run(*run_args, "--logits-out", peer_path))
        got, want = np.load(got_path), np.load(peer_path)
        if got.shape != want.shape:
            return False, " peer FAIL (shape %s vs %s)" % (got.shape, want.shape)
        rel = float(np.abs(got - want).max() / np.abs(want).max())
        ok = bool(np.isfinite(got).all()) and rel <= float(args.peer_rtol)
        return ok, " peer %s rel=%.3g" % ("PASS" if ok else "FAIL", rel)

    passed = failed = 0
    for chunk in args.chunks.split(","):
        for threads in args.threads.split(","):
            out = os.path.join(args.work, "logits_c%s_t%s.npy" % (chunk, threads))
            score = ["--tokens", args.tokens, "--score", "--prefill-chunk", chunk,
                     "--threads", threads]
            run(fm_run(*score, "--logits-out", out))
            cmp = ["/usr/bin/python3", REF, model, "--tokens", args.tokens,
                   "--compare", out, "--rtol", args.rtol]
            if args.min_argmax_agree:
                cmp += ["--min-argmax-agree", args.min_argmax_agree]
            p = timelimits.run(cmp,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            peer_ok, peer_text = peer_check(out, *score)
            ok = p.returncode == 0 and peer_ok
            passed += ok
            failed += not ok
            print("%s:%s chunk=%s threads=%s ranks=%d %s%s" % (
                args.family, args.preset, chunk, threads, max(args.mpi, 1), p.stdout.strip(),
                peer_text))
    # Generation: prefill_last + decode, greedy. Its logits rows (last prompt
    # position, then one per generated token) must match the reference on
    # the extended sequence, and each token must be the reference's argmax.
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
