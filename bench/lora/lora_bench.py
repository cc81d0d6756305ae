#!/usr/bin/python3
"""LoRA side-path cost: decode and prefill tokens/s with and without adapters.

The full afm7 shape (56 layers, 21 of them KV-reuse, hidden 2048, 16/2 heads,
FFN 6656, vocab 153600, QAT-grid weights; bench/roofline/make_afm7_qat.py)
compiled --quant w2 --group 32 --embed-bits 4 --kv-bits 8, and one PEFT
adapter of rank 32 (alpha 16) on every projection (qkv_proj, out_proj, the
KV-reuse layers' q_proj, gate/up/down_proj: examples/gen_checkpoint.py
--lora-out), compiled twice by fmc compile-adapter: f16 and --quant w8.
For each thread count (1 and 2) it runs, in every round, the base alone,
the base + the f16 adapter and the base + the w8 adapter, back to back (a
128-token prompt, 32 new tokens, fm-run --stats), so the three see the same
machine minute by minute; the page cache is warmed before each run. It
prints the median tokens/s of each and, as the result, the median over the
rounds of the per-round ratio adapter / base (1.00 = no cost), with the
bytes an adapter adds per decode token against the base's weight bytes.
The issue's goals are <= 15% slower decode with f16, <= 8% with w8.
Prints numbers, asserts none.

With --baseline-build DIR every round also runs DIR's fm-run (an older
build, say) the same way, right after this one's, and prints its rows
beside (labelled "old"): before/after kernels on the same minutes.

Usage: lora_bench.py [--build build] [--work /tmp/fm_lora_bench]
                     [--baseline-build DIR]
                     [--ckpt DIR (an existing make_afm7_qat.py checkpoint)]
                     [--rank 32] [--threads 1,2] [--repeats 3] [--layers 56]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
W2 = ["--quant", "w2", "--group", "32", "--embed-bits", "4", "--kv-bits", "8"]


def run(cmd):
    sys.stderr.write("+ %s\n" % " ".join(cmd))
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout


def warm(path):
    # Weights are used in place from the mmap: a cold file measures the disk.
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--baseline-build", default="",
                    help="also run this build's fm-run in every round")
    ap.add_argument("--work", default="/tmp/fm_lora_bench")
    ap.add_argument("--ckpt", default="", help="reuse this afm7-shaped checkpoint")
    ap.add_argument("--layers", type=int, default=56)
    ap.add_argument("--rank", type=int, default=32)
    ap.add_argument("--alpha", type=float, default=16.0)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--new-tokens", type=int, default=32)
    args = ap.parse_args()
    bin_ = os.path.join(args.build, "bin")
    os.makedirs(args.work, exist_ok=True)

    ckpt = args.ckpt or os.path.join(args.work, "afm7_qat_%d" % args.layers)
    if not os.path.exists(os.path.join(ckpt, "model.safetensors")):
        reuse = max(0, round(args.layers * 21 / 56))
        run(["/usr/bin/python3", os.path.join(ROOT, "bench", "roofline", "make_afm7_qat.py"),
             ckpt, "--layers", str(args.layers), "--reuse", str(reuse)])
    with open(os.path.join(ckpt, "config.json")) as f:
        cfg = json.load(f)

    fmb = os.path.join(args.work, "afm7_w2.fmb")
    if not os.path.exists(fmb):
        run([os.path.join(bin_, "fmc"), "compile", ckpt, "-o", fmb, "--max-prefill", "128",
             "--context", "1024"] + W2)
    base_bytes = json.loads(run([os.path.join(bin_, "fmc"), "inspect", fmb, "--json"]))[
        "weight_bytes"]

    # The adapter: gen_checkpoint's afm7 family with the checkpoint's shape.
    peft = os.path.join(args.work, "lora_r%d" % args.rank)
    if not os.path.exists(os.path.join(peft, "adapter_model.safetensors")):
        sets = []
        for k in ("vocab_size", "hidden_dim", "num_layers", "num_kv_reuse_layers",
                  "num_heads", "num_kv_heads", "hidden_dim_scale_factor"):
            sets += ["--set", "%s=%s" % (k, json.dumps(cfg[k]))]
        run(["/usr/bin/python3", os.path.join(ROOT, "examples", "gen_checkpoint.py"),
             "--family", "afm7", "--preset", "small", "--lora-out", peft, "--lora-rank",
             str(args.rank), "--lora-alpha", str(args.alpha), "--lora-dtype", "f16"] + sets)
    adapters = {}
    for quant in ("f16", "w8"):
        fmba = os.path.join(args.work, "lora_r%d_%s.fmba" % (args.rank, quant))
        if not os.path.exists(fmba):
            run([os.path.join(bin_, "fmc"), "compile-adapter", peft, "--base", fmb, "-o",
                 fmba, "--quant", quant])
        info = json.loads(run([os.path.join(bin_, "fmc"), "inspect", fmba, "--json"]))
        adapters[quant] = (fmba, info)

    prompt = ",".join(str(1 + (i * 7919) % 150000) for i in range(128))
    threads = [int(t) for t in args.threads.split(",")]
    runners = [("", os.path.join(bin_, "fm-run"))]
    if args.baseline_build:
        runners.append(("old ", os.path.join(args.baseline_build, "bin", "fm-run")))
    configs = [l + c for l, _ in runners for c in ("base", "f16", "w8")]
    decode = {(c, t): [] for c in configs for t in threads}
    prefill = {(c, t): [] for c in configs for t in threads}
    for _ in range(args.repeats):
        for t in threads:
            for c in configs:
                label, q = (c[:4], c[4:]) if c.startswith("old ") else ("", c)
                fmrun = dict(runners)[label]
                cmd = [fmrun, fmb, "--tokens", prompt,
                       "--max-new-tokens", str(args.new_tokens), "--threads", str(t), "--stats"]
                warm(fmb)
                if q != "base":
                    warm(adapters[q][0])
                    cmd += ["--adapter", adapters[q][0]]
                st = json.loads(run(cmd).strip().splitlines()[-1])
                decode[(c, t)].append(st["decode_tokens_per_s"])
                prefill[(c, t)].append(st["prefill_tokens_per_s"])

    print("LoRA side path: afm7-shaped, %d layers, hidden %d, vocab %d, base w2 "
          "(%.1f MB of weights per decode token); median of %d rounds"
          % (cfg["num_layers"], cfg["hidden_dim"], cfg["vocab_size"], base_bytes / 1e6,
             args.repeats))
    for q in ("f16", "w8"):
        info = adapters[q][1]
        print("adapter %-3s rank %d on %d projections: %.1fM parameters, %.1f MB of matrices "
              "read per token (%.1f%% of the base's weight bytes)"
              % (q, args.rank, len(info["loras"]), info["parameters"] / 1e6,
                 info["data_bytes"] / 1e6, 100.0 * info["data_bytes"] / base_bytes))
    print("%-7s %-8s %24s %24s %13s %13s"
          % ("threads", "run", "decode tok/s (min-max)", "prefill tok/s (min-max)",
             "decode ratio", "prefill ratio"))
    for t in threads:
        for c in configs:
            d, p = decode[(c, t)], prefill[(c, t)]
            base = c[:4] + "base" if c.startswith("old ") else "base"
            if c == base:
                ratio = "-", "-"
            else:
                rd = [a / b for a, b in zip(d, decode[(base, t)])]
                rp = [a / b for a, b in zip(p, prefill[(base, t)])]
                ratio = "%.3f" % statistics.median(rd), "%.3f" % statistics.median(rp)
            print("%-7d %-8s %8.2f (%5.2f-%5.2f) %10.1f (%5.1f-%5.1f) %13s %13s"
                  % (t, c, statistics.median(d), min(d), max(d), statistics.median(p),
                     min(p), max(p), ratio[0], ratio[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
