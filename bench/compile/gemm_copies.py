#!/usr/bin/python3
"""The CPU's GEMM copies in the artifact against the runtime's repack, side by side.

`fmc compile` for the CPU stores a Panel16 copy of every packed weight that
prefill multiplies as a GEMM (WeightVariant "cpu" / "panel16"); with
--no-cpu-gemm-copies it does not, and fm-run repacks those weights the
first time a prefill runs. This compiles issue #16's 2.9B llama
(bench/models/llama29b.py, an f16 checkpoint written into --work once and
reused) both ways at --quant w4 --group 32 --embed-bits 8, then runs fm-run
on each artifact in turn for --rounds rounds (a warm page cache for both:
each file is read through first), and prints per artifact the medians of:

  - compile wall time and file size;
  - fm-run's load_ms, gemm_repack_ms, the prompt's prefill tok/s, and the
    whole process's wall time (load, repack, prefill and 1 decoded token:
    the time to first token from a cold process);
  - the anonymous and peak resident memory (the copies are mapped from the
    file, the repack allocates them).

The artifact without copies is the baseline, measured in the same run.
Prints numbers, asserts none.

Usage: gemm_copies.py [--build BUILD] [--work DIR] [--rounds 3] [--layers 26]
                      [--threads 2] [--prompt 64] [--keep]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "models"))
from llama29b import VOCAB, checkpoint  # noqa: E402


def run(cmd):
    t0 = time.monotonic()
    p = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("%s failed (%d):\n%s" % (" ".join(map(str, cmd)), p.returncode,
                                          (p.stdout + p.stderr)[-4000:]))
    return wall, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/fm_gemm_copies")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--layers", type=int, default=26)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--keep", action="store_true", help="keep the checkpoint and artifacts")
    args = ap.parse_args()
    fmc = os.path.join(args.build, "bin", "fmc")
    fm_run = os.path.join(args.build, "bin", "fm-run")
    os.makedirs(args.work, exist_ok=True)
    ckpt = checkpoint(args.work, args.layers)

    kinds = {"no copies (repack at run time)": ["--no-cpu-gemm-copies"],
             "copies in the artifact": []}
    paths, compiled = {}, {}
    for k, extra in kinds.items():
        paths[k] = os.path.join(args.work, "w4_%s.fmb" % ("copies" if not extra else "plain"))
        wall, out = run([fmc, "compile", ckpt, "--quant", "w4", "--group", 32, "--embed-bits", 8,
                         "--context", args.prompt + 16, "-o", paths[k]] + extra)
        lines = [l.strip() for l in out.splitlines() if l.strip().startswith(("cpu gemm", "artifact"))]
        compiled[k] = (wall, os.path.getsize(paths[k]), lines)

    prompt = ",".join(str(1 + (i * 7919) % (VOCAB - 1)) for i in range(args.prompt))
    res = {k: [] for k in kinds}
    for _ in range(args.rounds):
        for k in kinds:
            with open(paths[k], "rb") as f:  # a warm page cache for both
                while f.read(1 << 24):
                    pass
            wall, out = run([fm_run, paths[k], "--threads", args.threads, "--stats",
                             "--tokens", prompt, "--max-new-tokens", 1])
            s = json.loads(out.strip().splitlines()[-1])
            res[k].append((s["load_ms"], s["gemm_repack_ms"], s["prefill_tokens_per_s"],
                           1e3 * wall, s["anon_rss_mb"], s["peak_rss_mb"]))

    base = list(kinds)[0]
    med = {k: [statistics.median(r[i] for r in res[k]) for i in range(6)] for k in kinds}
    print("issue #16's llama, %d layers, w4 g32, %d threads, %d-token prompt, %d rounds "
          "(medians; ratio: to '%s' in this run)" % (args.layers, args.threads, args.prompt,
                                                     args.rounds, base))
    cols = ["compile s", "file GB", "load ms", "repack ms", "prefill tok/s",
            "process ms", "anon MB", "peak MB"]
    print("| | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for k in kinds:
        vals = [compiled[k][0], compiled[k][1] / 1e9] + med[k]
        bvals = [compiled[base][0], compiled[base][1] / 1e9] + med[base]
        cells = []
        for v, b in zip(vals, bvals):
            cell = "%.1f" % v if v >= 10 else "%.2f" % v
            if k != base and b > 0:
                cell += " (%.2fx)" % (v / b)
            cells.append(cell)
        print("| %s | %s |" % (k, " | ".join(cells)))
    for k in kinds:
        print("%s: %s" % (k, "; ".join(compiled[k][2])))
        print("  rounds: " + ", ".join("load %.0f repack %.0f prefill %.1f process %.0f" % r[:4]
                                       for r in res[k]))
    if not args.keep:
        shutil.rmtree(args.work)


if __name__ == "__main__":
    main()
