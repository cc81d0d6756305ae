#!/usr/bin/python3
"""Prefill and time to first token of compiled afm7 artifacts, this build against a baseline.

For each artifact (by default the full afm7 shape at w2, w4 and f16, as
decode_roofline.py compiles them: --max-prefill 128 --context 1024) and each
prompt length, fm-run prefills the prompt and samples one token (no decode
step): the prefill time is the time to first token after load. Each run is
made with the default KV-reuse prefill pruning (the "prefill_last" program:
logits of the last row only) and, for the longest prompt, without it
(--score: the "prefill" program, logits of every row). Every configuration
runs on this build and on --baseline, interleaved, --repeats times; medians
are quoted with the ratio this / baseline. The load time and the peak RSS of
each run are quoted too (the CPU device's Panel16 copies are made at load).
Prints numbers, asserts none.

Usage: prefill_bench.py --fmb w2=/path/afm7_w2.fmb,w4=...,f16=...
                        [--build build] [--baseline BUILD] [--prompts 64,512]
                        [--threads 2] [--repeats 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run(cmd):
    sys.stderr.write("+ %s\n" % " ".join(cmd[:2] + ["..."] + cmd[-6:]))
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout


def cpu_model():
    name, flags = "unknown", []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and name == "unknown":
                    name = value.strip()
                elif key in ("cpu family", "model") and key not in dict(flags):
                    flags.append((key, value.strip()))
                elif key == "flags":
                    have = value.split()
                    flags.append(("isa", " ".join(
                        f for f in ("avx2", "avx512f", "avx512_vnni", "amx_int8") if f in have)))
                    break
    except OSError:
        pass
    return name + " (" + ", ".join("%s %s" % kv for kv in flags) + ")"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fmb", required=True, help="LABEL=PATH,... compiled artifacts")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--baseline", default="", help="another build directory, interleaved")
    ap.add_argument("--prompts", default="64,512")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=150000, help="prompt ids stay below this")
    args = ap.parse_args()

    builds = [("this", os.path.join(args.build, "bin"))]
    if args.baseline:
        builds.append(("baseline", os.path.join(args.baseline, "bin")))
    fmbs = [tuple(kv.split("=", 1)) for kv in args.fmb.split(",")]
    prompts = [int(n) for n in args.prompts.split(",")]
    longest = max(prompts)
    scratch = tempfile.mkdtemp(prefix="fm_prefill_")

    # (label, prompt, threads, pruned): pruned False only for the longest.
    configs = []
    for label, _ in fmbs:
        for n in prompts:
            for t in [int(x) for x in args.threads.split(",")]:
                configs.append((label, n, t, True))
                if n == longest:
                    configs.append((label, n, t, False))
    paths = dict(fmbs)
    results = {(c, b): [] for c in configs for b, _ in builds}

    def warm(path):
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass

    for _ in range(args.repeats):
        for c in configs:
            label, n, t, pruned = c
            prompt = ",".join(str(1 + (i * 7919) % args.vocab) for i in range(n))
            warm(paths[label])
            for b, bindir in builds:
                cmd = [os.path.join(bindir, "fm-run"), paths[label], "--threads", str(t),
                       "--stats", "--tokens", prompt]
                if pruned:
                    cmd += ["--max-new-tokens", "1"]
                else:
                    cmd += ["--score", "--logits-out", os.path.join(scratch, "logits.npy")]
                st = json.loads(run(cmd).strip().splitlines()[-1])
                results[(c, b)].append(st)

    print("prefill: %s; median of %d runs, this build and the baseline interleaved"
          % (cpu_model(), args.repeats))
    print("%-6s %6s %7s %-12s %-8s %12s %10s %10s %10s"
          % ("model", "prompt", "threads", "logits", "build", "prefill t/s", "TTFT ms",
             "load ms", "RSS MB"))
    med = {}
    for c in configs:
        label, n, t, pruned = c
        for b, _ in builds:
            rs = results[(c, b)]
            tps = statistics.median(r["prefill_tokens_per_s"] for r in rs)
            load = statistics.median(r["load_ms"] for r in rs)
            rss = statistics.median(r["peak_rss_mb"] for r in rs)
            med[(c, b)] = (tps, load, rss)
            print("%-6s %6d %7d %-12s %-8s %12.1f %10.0f %10.0f %10.0f"
                  % (label, n, t, "last row" if pruned else "every row", b, tps,
                     1000.0 * n / tps if tps else 0.0, load, rss))
    if args.baseline:
        print("\nthis build / baseline, ratio of the medians:")
        print("%-6s %6s %7s %-12s %12s %10s %10s"
              % ("model", "prompt", "threads", "logits", "prefill", "load", "RSS"))
        for c in configs:
            a, z = med[(c, "this")], med[(c, "baseline")]
            print("%-6s %6d %7d %-12s %12.3f %10.3f %10.3f"
                  % (c[0], c[1], c[2], "last row" if c[3] else "every row",
                     a[0] / z[0], a[1] / z[1], a[2] / z[2]))
    print("\nTTFT with pruning / without (this build), %d tokens:" % longest)
    for label, _ in fmbs:
        for t in [int(x) for x in args.threads.split(",")]:
            a = med[((label, longest, t, True), "this")][0]
            z = med[((label, longest, t, False), "this")][0]
            print("%-6s %7d threads %6.3f" % (label, t, z / a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
