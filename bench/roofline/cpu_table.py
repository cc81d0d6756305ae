#!/usr/bin/python3
"""The CPU table of docs/benchmarks.md: decode and prefill of issue #16's 2.9B llama at
f16/w8/w4/w2 x 1/2 threads, beside this machine's read bandwidth and
oneDNN's s8s8s32 GEMM peak, all measured in one run.

The model is bench/models/llama29b.py's random llama (hidden 3072, 26
layers, vocab 49152, untied head), compiled from its f16 checkpoint as
  w2:  --quant w2 --group 64 --embed-bits 8
  w4:  --quant w4 --group 32 --embed-bits 8
  w8:  --quant w8 --group 32 --embed-bits 8
  f16: --quant f16
(the checkpoint, 5.8 GB, is deleted once compiled; the artifacts, 11.7 GB,
stay in --work for reruns unless --clean). Every round runs, interleaved:
for each thread count and artifact, the read bandwidth probe
(fm-stream-read, 1 GiB) then fm-run (--prompt tokens of prefill, --gen
tokens of decode); and once per round fm-gemm-yardstick on the llama's
projection shapes at M = --prompt (oneDNN against fmc's prefill GEMM, the
layer stack's GEMMs summed). Medians over the rounds are printed as a
markdown table. Decode's fraction is the weight bytes a decode step reads
(all but the embedding table: one row of it is gathered) times tokens/s,
over the run's own probe. Prints numbers, asserts none.

Usage: cpu_table.py [--build build] [--fmc FMC] [--work /tmp/fm_cputable]
                    [--prompt 64] [--gen 32] [--rounds 3] [--clean]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
sys.path.insert(0, HERE)
from llama29b import VOCAB, write_checkpoint  # noqa: E402
from prefill_bench import cpu_model  # noqa: E402

LAYERS = 26
VARIANTS = [  # (label, fmc compile flags, yardstick variant of its prefill GEMM)
    ("f16", ["--quant", "f16"], None),
    ("w8", ["--quant", "w8", "--group", "32", "--embed-bits", "8"], None),
    # fm-run's default activations: int11 (12-bit x in w4 g32's AMX GEMM,
    # 13-bit in w2 g64's), int8x2 wherever AMX does not take a 32-input
    # block's two digits in one tile.
    ("w4", ["--quant", "w4", "--group", "32", "--embed-bits", "8"], "w4 best int11"),
    ("w2", ["--quant", "w2", "--group", "64", "--embed-bits", "8"], "w2 best int11"),
]


def run(cmd):
    sys.stderr.write("+ %s\n" % " ".join(str(c) for c in cmd[:6]))
    return subprocess.run([str(c) for c in cmd], check=True, stdout=subprocess.PIPE,
                          text=True).stdout


def yardstick(bin_, prompt):
    """{(threads, variant): layer-stack tokens/s} from one fm-gemm-yardstick run."""
    out = run([os.path.join(bin_, "fm-gemm-yardstick"), "--model=llama", "--rounds=1",
               "--rows=%d" % prompt])
    res = {}
    for line in out.splitlines():
        m = re.match(r"\s*llama\s+\d+ layers, (\d) threads?, M\s+\d+:(.*)", line)
        if m:
            for name, tps in re.findall(r"\s\s(\S.*?) (\d+(?:\.\d+)?)(?=\s\s|$)", m.group(2)):
                res[(int(m.group(1)), name)] = float(tps)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--fmc", default="", help="the fmc to compile with (default: the build's)")
    ap.add_argument("--work", default="/tmp/fm_cputable")
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clean", action="store_true", help="delete the artifacts afterwards")
    args = ap.parse_args()

    bin_ = os.path.join(args.build, "bin")
    fmc = args.fmc or os.path.join(bin_, "fmc")
    os.makedirs(args.work, exist_ok=True)
    paths = {v: os.path.join(args.work, "llama%d_%s.fmb" % (LAYERS, v)) for v, _, _ in VARIANTS}
    context = args.prompt + args.gen + 16
    if not all(os.path.exists(p) for p in paths.values()):
        ckpt = os.path.join(args.work, "llama%d_hf" % LAYERS)
        write_checkpoint(ckpt, LAYERS)
        for v, flags, _ in VARIANTS:
            if not os.path.exists(paths[v]):
                run([fmc, "compile", ckpt, "--context", context] + flags +
                    ["-o", paths[v] + ".part"])
                os.replace(paths[v] + ".part", paths[v])  # a rerun trusts whole files only
        shutil.rmtree(ckpt)

    read = {}
    for v, _, _ in VARIANTS:
        info = json.loads(run([fmc, "inspect", "--json", paths[v]]))
        read[v] = sum(w["bytes"] for w in info["weights"]
                      if w["name"] != "model.embed_tokens.weight")

    def warm(path):
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass

    prompt = ",".join(str(1 + (i * 7919) % (VOCAB - 1)) for i in range(args.prompt))
    threads = (1, 2)
    res = {(v, t): [] for v, _, _ in VARIANTS for t in threads}
    gemm = []
    for _ in range(args.rounds):
        gemm.append(yardstick(bin_, args.prompt))
        for t in threads:
            for v, _, _ in VARIANTS:
                warm(paths[v])
                bw = json.loads(run([os.path.join(bin_, "fm-stream-read"), 1024, t, 5])
                                .strip().splitlines()[-1])["read_gb_per_s"]
                st = json.loads(run([os.path.join(bin_, "fm-run"), paths[v], "--threads", t,
                                     "--stats", "--tokens", prompt, "--max-new-tokens",
                                     args.gen + 1]).strip().splitlines()[-1])
                res[(v, t)].append((st["decode_tokens_per_s"], st["prefill_tokens_per_s"], bw))

    def med(xs):
        return statistics.median(xs) if xs else float("nan")

    print("CPU: %s; random llama 2.9B (%d layers, hidden 3072, vocab 49152); prompt %d, "
          "decode %d tokens; medians of %d interleaved rounds\n"
          % (cpu_model(), LAYERS, args.prompt, args.gen, args.rounds))
    print("| weights | threads | GB read / token | decode tok/s | read GB/s | decode / read "
          "| prefill tok/s | GEMM-only prefill tok/s: fmc / oneDNN s8s8s32 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for t in threads:
        dnn = med([g[(t, "oneDNN")] for g in gemm if (t, "oneDNN") in g])
        for v, _, ys in VARIANTS:
            rows = res[(v, t)]
            tg = med([r[0] for r in rows])
            pp = med([r[1] for r in rows])
            bw = med([r[2] for r in rows])
            frac = med([r[0] * read[v] / 1e9 / r[2] for r in rows])
            if ys:
                ours = med([g[(t, ys)] for g in gemm if (t, ys) in g])
                g = "%.0f / %.0f = %.2f" % (ours, dnn, ours / dnn)
            else:
                g = "- / %.0f" % dnn
            print("| %s | %d | %.2f | %.1f | %.1f | %.2f | %.1f | %s |"
                  % (v, t, read[v] / 1e9, tg, bw, frac, pp, g))
    if args.clean:
        for p in paths.values():
            os.remove(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
