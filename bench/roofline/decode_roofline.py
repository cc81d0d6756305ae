#!/usr/bin/python3
"""Decode roofline: fm-run decode speed against this machine's read bandwidth.

Measures the memory read bandwidth (fm-stream-read, a buffer much larger than
the last-level cache) and, in the same run, decode and prefill tokens/s of a
full-size afm7-shaped model (56 layers, hidden 2048, 16/2 heads, FFN 6656,
vocab 153600, QAT-grid weights; bench/roofline/make_afm7_qat.py) compiled as
  w2:  --quant w2 --group 32 --embed-bits 4 --kv-bits 8
  w4:  --quant w4 --group 32 --embed-bits 4 --kv-bits 8
  f16: --quant f16
at 1 and 2 threads, the quantized ones with each activation mode
(fm-run --activations: int8x2, the default, and the one-digit int8
baseline). For each it prints the weight bytes read per decode token (the
whole data section: the tied LM head reads the full table), the tokens/s,
the achieved GB/s and the fraction of the measured bandwidth. Each
configuration runs --repeats times, interleaved with the others, and the
median is quoted (with the min-max range): the machines this runs on are
shared, and their read bandwidth switches between regimes (here ~30 and
~50 GB/s at 2 threads) from one minute to the next. So the bandwidth is
probed (1 GiB) right before every run, at that run's thread count, and the
run's fraction is taken against its own probe; the median fraction is
quoted. Prints numbers, asserts none.

With --baseline OTHER_BUILD every configuration also runs on a second
build (its own artifacts, compiled by its own fmc), interleaved with this
build's run of the same configuration in every round, and the table gains
the ratio of the two medians: a before/after comparison from one session.

Usage: decode_roofline.py [--build build] [--work /tmp/fm_roofline]
                          [--variants w2,w4,f16] [--activations int8x2,int8]
                          [--repeats 3] [--layers 56] [--baseline BUILD]
"""
import argparse
import json
import os
import statistics
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
    ap.add_argument("--activations", default="int8x2,int8",
                    help="fm-run --activations modes for the quantized variants")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--layers", type=int, default=56)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--baseline", default="",
                    help="another build directory to compare with, interleaved")
    args = ap.parse_args()
    builds = [("this", os.path.join(args.build, "bin"))]
    if args.baseline:
        builds.append(("baseline", os.path.join(args.baseline, "bin")))
    bin_ = builds[0][1]
    os.makedirs(args.work, exist_ok=True)

    def probe(threads):
        out = run([os.path.join(bin_, "fm-stream-read"), "1024", str(threads), "5"])
        return json.loads(out.strip().splitlines()[-1])["read_gb_per_s"]

    ckpt = os.path.join(args.work, "afm7_qat_%d" % args.layers)
    if not os.path.exists(os.path.join(ckpt, "model.safetensors")):
        reuse = max(0, round(args.layers * 21 / 56))
        run(["/usr/bin/python3", os.path.join(HERE, "make_afm7_qat.py"), ckpt,
             "--layers", str(args.layers), "--reuse", str(reuse)])

    prompt = ",".join(str(1 + (i * 7919) % 150000) for i in range(128))
    configs = []  # (variant, activations or None, threads, fmb, info, build, bin)
    for v in args.variants.split(","):
        for label, bdir in builds:
            work = args.work if label == "this" else os.path.join(args.work, label)
            os.makedirs(work, exist_ok=True)
            fmb = os.path.join(work, "afm7_%s.fmb" % v)
            if not os.path.exists(fmb):
                run([os.path.join(bdir, "fmc"), "compile", ckpt, "-o", fmb, "--max-prefill",
                     "128", "--context", "1024"] + VARIANTS[v])
            info = json.loads(run([os.path.join(bdir, "fmc"), "inspect", fmb, "--json"]))
            acts = args.activations.split(",") if v != "f16" else [None]
            for a in acts:
                for t in (1, 2):
                    configs.append((v, a, t, fmb, info, label, bdir))

    def warm(fmb):
        # Warm the page cache: weights are used in place from the mmap, and
        # a cold file would measure the disk, not memory.
        with open(fmb, "rb") as f:
            while f.read(1 << 24):
                pass

    decode = {i: [] for i in range(len(configs))}
    prefill = {i: [] for i in range(len(configs))}
    fraction = {i: [] for i in range(len(configs))}
    probes = {1: [], 2: []}
    # Each configuration of one build is followed by the same one of the
    # other build: the two see the same machine, minute by minute.
    order = sorted(range(len(configs)), key=lambda i: configs[i][:3] + (configs[i][5],))
    for _ in range(args.repeats):
        for i in order:
            v, a, t, fmb, info, label, bdir = configs[i]
            warm(fmb)
            bw = probe(t)
            probes[t].append(bw)
            cmd = [os.path.join(bdir, "fm-run"), fmb, "--tokens", prompt, "--max-new-tokens",
                   str(args.new_tokens), "--threads", str(t), "--stats"]
            if a:
                cmd += ["--activations", a]
            st = json.loads(run(cmd).strip().splitlines()[-1])
            decode[i].append(st["decode_tokens_per_s"])
            prefill[i].append(st["prefill_tokens_per_s"])
            fraction[i].append(info["weight_bytes"] * st["decode_tokens_per_s"] / 1e9 / bw)

    rows = []
    for i in order:
        v, a, t, fmb, info, label, bdir = configs[i]
        per_token = info["weight_bytes"]
        tps = statistics.median(decode[i])
        gbs = per_token * tps / 1e9
        rows.append((v, a or "-", t, info.get("bits_per_weight", 0.0), per_token, tps,
                     min(decode[i]), max(decode[i]), gbs, statistics.median(fraction[i]),
                     statistics.median(prefill[i]), label))

    print("decode roofline: afm7-shaped, %d layers, hidden 2048, vocab 153600; "
          "median of %d runs" % (args.layers, args.repeats))
    print("measured read bandwidth before each run: 1 thread %.1f-%.1f GB/s (median %.1f), "
          "2 threads %.1f-%.1f GB/s (median %.1f)"
          % (min(probes[1]), max(probes[1]), statistics.median(probes[1]),
             min(probes[2]), max(probes[2]), statistics.median(probes[2])))
    print("%-8s %-5s %-7s %7s %7s %12s %22s %10s %8s %14s"
          % ("build", "quant", "act", "threads", "bits/w", "bytes/token",
             "decode tok/s (min-max)", "achieved", "of probe", "prefill tok/s"))
    for v, a, t, bpw, b, tps, lo, hi, gbs, frac, pps, label in rows:
        print("%-8s %-5s %-7s %7d %7s %9.1f MB %8.2f (%5.2f-%5.2f) %5.1f GB/s %7.0f%% %14.1f"
              % (label, v, a, t, "%.3f" % bpw if bpw else "-", b / 1e6, tps, lo, hi, gbs,
                 100 * frac, pps))
    if args.baseline:
        print("\nthis build / baseline, ratio of the medians (1.00 = the same speed):")
        print("%-5s %-7s %7s %10s %10s" % ("quant", "act", "threads", "decode", "prefill"))
        by = {(r[0], r[1], r[2], r[11]): r for r in rows}
        for v, a, t, *_rest in rows[::2]:
            this, base = by[(v, a, t, "this")], by[(v, a, t, "baseline")]
            print("%-5s %-7s %7d %10.3f %10.3f" % (v, a, t, this[5] / base[5],
                                                   this[10] / base[10]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
