#!/usr/bin/python3
"""Wall time of `fmc compile` on issue #16's 2.9B llama, binaries side by side.

The model: a random llama of 2.9B parameters (hidden 3072, 26 layers, 24/8
heads of 128, FFN 8192, vocabulary 49152, untied head), normal weights
scaled by 1/sqrt(inputs), written as an f16 Hugging Face checkpoint
(5.8 GB) into --work once and reused. Each round compiles it with every
given fmc binary in turn (interleaved, so machine noise hits all alike) at
--quant w2 --group 64 --embed-bits 8, and prints per binary the median
wall time, its ratio to the first binary, and fmc's own summary lines: the
relative RMS quantization error of each bit width and the time split. Prints numbers, asserts none.

Usage: compile_time.py FMC [FMC...] [--work DIR] [--rounds 1] [--layers 26]
                       [--quant w2] [--group 64] [--keep]
"""
import argparse
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import time

import numpy as np

HIDDEN, FFN, HEADS, KV_HEADS, HEAD_DIM, VOCAB = 3072, 8192, 24, 8, 128, 49152


def specs(layers):
    """[(name, shape, kind)] in checkpoint order."""
    out = [("model.embed_tokens.weight", (VOCAB, HIDDEN), "w")]
    for i in range(layers):
        p = "model.layers.%d." % i
        out += [(p + "input_layernorm.weight", (HIDDEN,), "norm"),
                (p + "self_attn.q_proj.weight", (HEADS * HEAD_DIM, HIDDEN), "w"),
                (p + "self_attn.k_proj.weight", (KV_HEADS * HEAD_DIM, HIDDEN), "w"),
                (p + "self_attn.v_proj.weight", (KV_HEADS * HEAD_DIM, HIDDEN), "w"),
                (p + "self_attn.o_proj.weight", (HIDDEN, HEADS * HEAD_DIM), "w"),
                (p + "post_attention_layernorm.weight", (HIDDEN,), "norm"),
                (p + "mlp.gate_proj.weight", (FFN, HIDDEN), "w"),
                (p + "mlp.up_proj.weight", (FFN, HIDDEN), "w"),
                (p + "mlp.down_proj.weight", (HIDDEN, FFN), "w")]
    return out + [("model.norm.weight", (HIDDEN,), "norm"),
                  ("lm_head.weight", (VOCAB, HIDDEN), "w")]


def write_checkpoint(out, layers):
    os.makedirs(out, exist_ok=True)
    ts = specs(layers)
    header, offset = {}, 0
    for name, shape, _ in ts:
        n = 2 * int(np.prod(shape))
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    path = os.path.join(out, "model.safetensors")
    rng = np.random.default_rng(16)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        for _, shape, kind in ts:
            v = rng.standard_normal(shape, dtype=np.float32)
            v = 1.0 + 0.1 * v if kind == "norm" else v * np.float32(shape[1] ** -0.5)
            f.write(v.astype(np.float16).tobytes())
    os.replace(path + ".tmp", path)
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
              "vocab_size": VOCAB, "hidden_size": HIDDEN, "num_hidden_layers": layers,
              "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
              "head_dim": HEAD_DIM, "intermediate_size": FFN, "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu",
              "max_position_embeddings": 2048}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f)


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
        # fmc's own summary: each bit width's relative RMS error, and its
        # split of the time (import includes quantization).
        summary = [l.strip() for l in reports[fmc].splitlines()
                   if re.match(r"\s+(quantized|time)\s", l)]
        print("%s: median %.1f s (%.2fx the first), %s rounds; report: %s"
              % (fmc, m, m / base, len(walls[fmc]), " | ".join(summary)))


if __name__ == "__main__":
    main()
