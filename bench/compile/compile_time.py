#!/usr/bin/python3
"""Wall time of `fmc compile` on issue #16's 2.9B llama, binaries side by side.

The model: a random llama of 2.9B parameters (hidden 3072, 26 layers, 24/8
heads of 128, FFN 8192, vocabulary 49152, untied head; bench/models/llama29b.py,
which bench/llamacpp draws too), written as an f16 Hugging Face checkpoint
(5.8 GB) into --work once and reused. Each round compiles it with every
given fmc binary in turn (interleaved, so machine noise hits all alike) at
--quant w2 --group 64 --embed-bits 8, and prints per binary the median
wall time, its ratio to the first binary, and fmc's own summary lines: the
relative RMS quantization error of each bit width and the time split. Prints numbers, asserts none.

Usage: compile_time.py FMC [FMC...] [--work DIR] [--rounds 1] [--layers 26]
                       [--quant w2] [--group 64] [--keep]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "models"))
from llama29b import write_checkpoint  # noqa: E402  (issue #16's 2.9B llama)


def compile_once(fmc, ckpt, out, args):
    cmd = [fmc, "compile", ckpt, "--quant", args.quant, "--group", str(args.group),
           "--embed-bits", "8", "--context", "256", "-o", out]
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("%s failed (%d):\n%s" % (" ".join(cmd), p.returncode, p.stdout[-4000:]))
    return wall, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fmc", nargs="+")
    ap.add_argument("--work", default="/tmp/fm_compile_time")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--layers", type=int, default=26)
    ap.add_argument("--quant", default="w2")
    ap.add_argument("--group", type=int, default=64)
    ap.add_argument("--keep", action="store_true", help="keep the artifacts")
    args = ap.parse_args()
    ckpt = os.path.join(args.work, "llama%d_hf" % args.layers)
    if not os.path.exists(os.path.join(ckpt, "config.json")):
        t0 = time.monotonic()
        write_checkpoint(ckpt, args.layers)
        print("wrote %s in %.0f s" % (ckpt, time.monotonic() - t0), flush=True)
    walls = {f: [] for f in args.fmc}
    reports = {}
    for r in range(args.rounds):
        for i, fmc in enumerate(args.fmc):
            out = os.path.join(args.work, "out%d.fmb" % i)
            wall, text = compile_once(fmc, ckpt, out, args)
            walls[fmc].append(wall)
            reports[fmc] = text
            print("round %d %s: %.1f s" % (r, fmc, wall), flush=True)
            if not args.keep:
                os.remove(out)
    base = statistics.median(walls[args.fmc[0]])
    for fmc in args.fmc:
        m = statistics.median(walls[fmc])
        # fmc's own summary: each bit width's relative RMS error, the CPU's
        # GEMM copies (if any) and its split of the time (import includes
        # quantization).
        summary = [l.strip() for l in reports[fmc].splitlines()
                   if re.match(r"\s+(quantized|cpu gemm|time)\s", l)]
        print("%s: median %.1f s (%.2fx the first), %s rounds; report: %s"
              % (fmc, m, m / base, len(walls[fmc]), " | ".join(summary)))


if __name__ == "__main__":
    main()
