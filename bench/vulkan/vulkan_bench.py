#!/usr/bin/python3
"""Vulkan benchmark: one artifact (--target cpu,vulkan) on fm-run --device
vulkan against --device cpu, measured side by side in one run.

Prints prefill and decode tokens/s of both devices and the ratios vulkan/cpu
for a llama and an afm7 model (f32 and w4 weights). On lavapipe (Mesa's CPU
implementation of Vulkan, what these machines have) the ratio only says what
the emulation costs against the native CPU kernels: informative, no target.
On a real GPU compare decode against its memory bandwidth instead. Prints
numbers, asserts nothing.

Usage: bench/vulkan/vulkan_bench.py [--build build] [--work DIR] [--tokens N]
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "examples", "gen_checkpoint.py")

# name, family, preset, fmc compile flags
MODELS = (
    ("llama f32", "llama", "tiny", []),
    ("llama w4", "llama", "tiny", ["--quant", "w4", "--group", "32"]),
    ("afm7 f32", "afm7", "small", []),
    ("afm7 w4 kv8", "afm7", "small", ["--quant", "w4", "--group", "32", "--kv-bits", "8"]),
)


def run(cmd, env=None):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/fm_vulkan_bench")
    ap.add_argument("--tokens", type=int, default=32, help="decode tokens per run")
    ap.add_argument("--repeats", type=int, default=3, help="runs per device (best kept)")
    args = ap.parse_args()
    bin_ = os.path.join(args.build, "bin")
    os.makedirs(args.work, exist_ok=True)
    prompt = ",".join(str(i % 900 + 1) for i in range(32))
    devices = (("vulkan", ["--device", "vulkan"]),
               ("cpu f32", ["--device", "cpu", "--activations", "f32", "--threads", "1"]),
               ("cpu", ["--device", "cpu", "--threads", "1"]))
    vk = ""
    # One thread on both sides: lavapipe (llvmpipe) otherwise runs a
    # dispatch on every core it finds.
    one_thread = dict(os.environ, LP_NUM_THREADS="1")
    print("%-12s %-8s %14s %14s" % ("model", "device", "prefill tok/s", "decode tok/s"))
    for name, family, preset, flags in MODELS:
        ckpt = os.path.join(args.work, family + "_" + preset)
        if not os.path.exists(os.path.join(ckpt, "config.json")):
            run(["/usr/bin/python3", GEN, "--family", family, "--preset", preset, "--out", ckpt])
        fmb = os.path.join(args.work, name.replace(" ", "_") + ".fmb")
        run([os.path.join(bin_, "fmc"), "compile", ckpt, "-o", fmb, "--max-prefill", "32",
             "--target", "cpu,vulkan"] + flags)
        best = {}
        for dev, dev_flags in devices:
            for _ in range(args.repeats):
                out = run([os.path.join(bin_, "fm-run"), fmb, "--tokens", prompt,
                           "--max-new-tokens", str(args.tokens), "--stats"] + dev_flags,
                          env=one_thread)
                st = json.loads(out.strip().splitlines()[-1])
                p, d = best.get(dev, (0.0, 0.0))
                best[dev] = (max(p, st["prefill_tokens_per_s"]), max(d, st["decode_tokens_per_s"]))
            print("%-12s %-8s %14.1f %14.1f" % (name, dev, best[dev][0], best[dev][1]))
        for peer in ("cpu f32", "cpu"):
            print("%-12s ratio vulkan / %s: prefill %.3f, decode %.3f" % (
                name, peer, best["vulkan"][0] / best[peer][0], best["vulkan"][1] / best[peer][1]))
    for line in run([os.path.join(bin_, "fm-run"), "--list-devices"]).splitlines():
        if line.startswith("vulkan"):
            vk = line
    print("vulkan device: %s" % " ".join(vk.split()[1:]))
    print("(one thread on both sides: --threads 1, LP_NUM_THREADS=1; best of %d runs)"
          % args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
