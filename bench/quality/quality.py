#!/usr/bin/python3
"""The quality table: how much each weight format loses, on the models
trained here (examples/models/), on the held-out test split.

For the afm7 target: f32, f16, w8, w4 g32 and w2 g64 post-training (all
compiled from the float checkpoint) and w2 g64 QAT (the QAT checkpoint with
its 4-bit embedding and int8 KV cache, compiled as its training.json says).
Each is scored by fm-run --perplexity with llama-perplexity's method (windows
of --ctx tokens, the second half of each scored) against the f32 artifact
(--kl-base): perplexity, Δppl, mean KL divergence and its 99th percentile,
top-1 agreement, and bits per projection weight (scales included, as fmc
compile reports them). For the llama twin, fmc's w4 g32 and w2 g64 beside
llama.cpp's own formats of the same weights (bench/quality/llamacpp_quality.py)
with --llamacpp.

Prints a markdown table per model (and --json FILE); asserts nothing.

  quality.py [--build build] [--work /tmp/fm_quality] [--ctx 128] [--chunks 0]
             [--threads 2] [--llamacpp] [--json FILE]
  quality.py --demo ...   only f32 / w2 post-training / w2 QAT of the afm7
                          target (make demo's three lines)
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "examples", "models")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode:
        sys.exit("quality.py: %s failed:\n%s" % (" ".join(cmd), p.stderr.decode(errors="replace")))
    return p.stdout.decode()


def compile_row(fmc, ckpt, out, flags):
    report = run([fmc, "compile", ckpt, "-o", out] + flags)
    # "quantized  N weights to B bits: X bits/weight ..." -- the projections first.
    bpw = [(float(n) * {"K": 1e3, "M": 1e6, "G": 1e9}.get(u, 1), float(x))
           for n, u, x in re.findall(r"quantized\s+([0-9.]+)([KMG]?) weights to \d+ bits: "
                                     r"([0-9.]+) bits/weight", report)]
    return bpw, os.path.getsize(out)


def score(fm_run, fmb, text, ctx, chunks, threads, base=None):
    cmd = [fm_run, fmb, "--perplexity", text, "--ctx", str(ctx), "--threads", str(threads),
           "--stats"]
    if chunks:
        cmd += ["--chunks", str(chunks)]
    if base:
        cmd += ["--kl-base", base]
    for line in reversed(run(cmd).splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit("quality.py: no --stats line from " + " ".join(cmd))


def fmc_rows(a, model, rows):
    fmc = os.path.join(a.build, "bin", "fmc")
    fm_run = os.path.join(a.build, "bin", "fm-run")
    out = []
    base = None
    for label, ckpt, flags, float_bits in rows:
        fmb = os.path.join(a.work, "%s-%s.fmb" % (model, re.sub(r"[^a-z0-9]+", "_", label)))
        log("quality: %s %s: compiling" % (model, label))
        bpw, size = compile_row(fmc, os.path.join(MODELS, ckpt), fmb, flags)
        log("quality: %s %s: scoring" % (model, label))
        s = score(fm_run, fmb, a.text, a.ctx, a.chunks, a.threads, base)
        if base is None:
            base = fmb
        proj = bpw[0][1] if bpw else float_bits
        out.append({"model": model, "format": label, "checkpoint": ckpt, "flags": flags,
                    "bits_per_weight": proj, "artifact_mb": size / 1e6, **s})
    return out


def table(rows, base_label):
    lines = ["| format | bits/weight | ppl | Δppl | mean KL | KL p99 | top-1 agreement |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "kl_mean" in r:
            d = "%+.3f ± %.3f" % (r["delta_ppl"], r["delta_ppl_err"])
            kl = "%.5f ± %.5f" % (r["kl_mean"], r["kl_mean_err"])
            p99 = "%.4f" % r["kl_p99"]
            top = "%.2f%% ± %.2f" % (100 * r["top1_agree"], 100 * r["top1_agree_err"])
        else:
            d, kl, p99, top = "(base)", "–", "–", "–"
        lines.append("| %s | %.2f | %.3f ± %.3f | %s | %s | %s | %s |"
                     % (r["format"], r["bits_per_weight"], r["ppl"], r["ppl_err"], d, kl, p99, top))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/fm_quality")
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--chunks", type=int, default=0, help="windows (0: every full window)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--llamacpp", action="store_true",
                    help="the llama twin beside llama.cpp's formats as well")
    ap.add_argument("--json")
    ap.add_argument("--only", choices=("afm7", "twin"),
                    help="one model's table (twin: with --llamacpp, llama.cpp's too)")
    ap.add_argument("--demo", action="store_true",
                    help="only f32, w2 post-training and w2 QAT of the afm7 target")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    run([sys.executable, os.path.join(ROOT, "examples", "train", "corpus.py"),
         "--out", os.path.join(a.work, "corpus"), "--check"])
    a.text = os.path.join(a.work, "corpus", "test.txt")
    with open(os.path.join(MODELS, "afm7-qat", "training.json")) as f:
        q = json.load(f)["qat"]
    qat_flags = ["--quant", "w%d" % q["bits"], "--group", str(q["group"]), "--grid", q["grid"],
                 "--embed-bits", str(q["embed_bits"]), "--kv-bits", str(q["kv_bits"])]
    rows = [
        ("f32", "afm7-float", [], 32.0),
        ("f16", "afm7-float", ["--quant", "f16"], 16.0),
        ("w8 g64", "afm7-float", ["--quant", "w8"], 0),
        ("w4 g32", "afm7-float", ["--quant", "w4", "--group", "32"], 0),
        ("w2 g64 post-training", "afm7-float", ["--quant", "w2"], 0),
        ("w2 g64 post-training, 4-bit embedding, int8 KV", "afm7-float", qat_flags, 0),
        ("w2 g64 QAT, 4-bit embedding, int8 KV", "afm7-qat", qat_flags, 0),
    ]
    if a.demo:
        rows = [rows[0], rows[4], rows[6]]
    result = {"ctx": a.ctx, "chunks": a.chunks}
    if a.only != "twin":
        afm7 = result["afm7"] = fmc_rows(a, "afm7", rows)
        print("## afm7 target (%s), ctx %d, %d tokens scored\n" % (
            "examples/models/afm7-float, -qat", a.ctx, afm7[0]["tokens_scored"]))
        print(table(afm7, "f32"), flush=True)
    if a.demo or a.only == "afm7":
        return dump(a, result)
    twin = result["llama_twin"] = fmc_rows(a, "llama-twin", [
        ("fmc f32", "llama-twin", [], 32.0),
        ("fmc f16", "llama-twin", ["--quant", "f16"], 16.0),
        ("fmc w8 g64", "llama-twin", ["--quant", "w8"], 0),
        ("fmc w4 g32", "llama-twin", ["--quant", "w4", "--group", "32"], 0),
        ("fmc w2 g64", "llama-twin", ["--quant", "w2"], 0),
        ("fmc w2 g64 affine", "llama-twin", ["--quant", "w2", "--grid", "affine"], 0),
    ])
    print("\n## llama twin (examples/models/llama-twin), ctx %d, %d tokens scored\n"
          % (a.ctx, twin[0]["tokens_scored"]))
    print(table(twin, "fmc f32"), flush=True)
    if a.llamacpp:
        lj = os.path.join(a.work, "llamacpp.json")
        cmd = [sys.executable, os.path.join(HERE, "llamacpp_quality.py"),
               os.path.join(MODELS, "llama-twin"), a.text, "--ctx", str(a.ctx),
               "--threads", str(a.threads), "--json", lj,
               "--work", os.path.join(a.work, "llamacpp")]
        if a.chunks:
            cmd += ["--chunks", str(a.chunks)]
        print("\n## llama.cpp on the same twin, ids and windows (llamacpp_quality.py)\n")
        print(run(cmd).rstrip())
        with open(lj) as f:
            result["llamacpp"] = json.load(f)
    dump(a, result)


def dump(a, result):
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
