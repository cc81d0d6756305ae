#!/usr/bin/python3
"""Decode roofline: fm-run decode speed against this machine's read bandwidth.

Measures the memory read bandwidth (fm-stream-read, a buffer much larger than
the last-level cache) and, in the same run, decode and prefill tokens/s of a
full-size afm7-shaped model (56 layers, hidden 2048, 16/2 heads, FFN 6656,
vocab 153600, QAT-grid weights; bench/roofline/make_afm7_qat.py) compiled as
  w2:  --quant w2 --group 32 --embed-bits 4 --kv-bits 8
  w4:  --quant w4 --group 32 --embed-bits 4 --kv-bits 8
  f16: --quant f16
at 1 and 2 threads. For each it prints the weight bytes read per decode
token (the whole data section: the tied LM head reads the full table), the
tokens/s, the achieved GB/s and the fraction of the measured bandwidth.
Prints numbers, asserts none.

Usage: decode_roofline.py [--build build] [--work /tmp/fm_roofline]
                          [--variants w2,w4,f16] [--layers 56]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

VARIANTS = {
    "w2": ["--quant", "w2", "--group", "32", "--embed-bits", "4", "--kv-bits", "8"],
    "w4": ["--quant", "w4", "--group", "32", "--embed-bits", "4", "--kv-bits", "8"],
    "w8": ["--quant", "w8", "--group", "32", "--embed-bits", "8", "--kv-bits", "8"],
    "f16": ["--quant", "f16"],
}


def run(cmd, **kw):
    sys.stderr.write("+ %s\n" % " ".join(cmd))
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, **kw).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/fm_roofline")
    ap.add_argument("--variants", default="w2,w4,f16")
    ap.add_argument("--layers", type=int, default=56)
    ap.add_argument("--new-tokens", type=int, default=32)
    args = ap.parse_args()
    bin_ = os.path.join(args.build, "bin")
    os.makedirs(args.work, exist_ok=True)

    bw = {}
    for line in run([os.path.join(bin_, "fm-stream-read"), "2048", "2", "7"]).splitlines():
        r = json.loads(line)
        bw[r["threads"]] = r["read_gb_per_s"]

    ckpt = os.path.join(args.work, "afm7_qat_%d" % args.layers)
    if not os.path.exists(os.path.join(ckpt, "model.safetensors")):
        reuse = max(0, round(args.layers * 21 / 56))
        run(["/usr/bin/python3", os.path.join(HERE, "make_afm7_qat.py"), ckpt,
             "--layers", str(args.layers), "--reuse", str(reuse)])

    prompt = ",".join(str(1 + (i * 7919) % 150000) for i in range(128))
    rows = []
    for v in args.variants.split(","):
        fmb = os.path.join(args.work, "afm7_%s.fmb" % v)
        if not os.path.exists(fmb):
            run([os.path.join(bin_, "fmc"), "compile", ckpt, "-o", fmb, "--max-prefill", "128",
                 "--context", "1024"] + VARIANTS[v])
        info = json.loads(run([os.path.join(bin_, "fmc"), "inspect", fmb, "--json"]))
        per_token = info["weight_bytes"]
        # Warm the page cache: weights are used in place from the mmap, and
        # a cold file would measure the disk, not memory.
        with open(fmb, "rb") as f:
            while f.read(1 << 24):
                pass
        for t in (1, 2):
            out = run([os.path.join(bin_, "fm-run"), fmb, "--tokens", prompt, "--max-new-tokens",
                       str(args.new_tokens), "--threads", str(t), "--stats"])
            st = json.loads(out.strip().splitlines()[-1])
            gbs = per_token * st["decode_tokens_per_s"] / 1e9
            rows.append((v, t, info.get("bits_per_weight", 0.0), per_token,
                         st["decode_tokens_per_s"], gbs, gbs / bw[t],
                         st["prefill_tokens_per_s"]))

    print("decode roofline: afm7-shaped, %d layers, hidden 2048, vocab 153600" % args.layers)
    print("measured read bandwidth: %.1f GB/s (1 thread), %.1f GB/s (2 threads)" % (bw[1], bw[2]))
    print("%-5s %7s %10s %14s %12s %12s %9s %16s" % ("quant", "threads", "bits/w", "bytes/token",
                                                      "decode tok/s", "achieved", "of peak",
                                                      "prefill tok/s"))
    for v, t, bpw, b, tps, gbs, frac, pps in rows:
        print("%-5s %7d %10.3f %11.1f MB %12.2f %9.1f GB/s %8.0f%% %16.1f"
              % (v, t, bpw, b / 1e6, tps, gbs, 100 * frac, pps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
