#!/usr/bin/python3
"""Writes a full-size afm7-shaped checkpoint with QAT-grid weights, streaming.

56 layers (the last 21 reuse the KV cache of layer 34), hidden 2048, 16/2
heads, FFN 6656, vocab 153600: ~3.1B parameters, stored f16 (~6.2 GB). Every
projection weight lies on the balanced 2-bit grid {-1.5,-0.5,0.5,1.5} x s
with one f16-exact scale per group of 32 inputs (what quantization-aware
training produces); norms ~1, the embedding is normal. Deterministic (seed).
Tensors are generated and written one at a time, so memory stays ~1.5 GB.

Usage: make_afm7_qat.py OUT_DIR [--layers 56] [--reuse 21] [--seed 0]
"""
import argparse
import json
import os
import struct
import sys

import numpy as np


def tensors(layers, reuse, hidden, heads, kv, ffn, vocab):
    hd = hidden // heads
    out = [("model.embedding.weight", (vocab, hidden), "embed")]
    regular = layers - reuse
    for i in range(layers):
        if i < regular:
            p = "model.layers.%d" % i
            out += [(p + ".self_attn.qkv_proj.weight", ((heads + 2 * kv) * hd, hidden), "qat"),
                    (p + ".self_attn.out_proj.weight", (hidden, heads * hd), "qat"),
                    (p + ".self_attn.q_norm.weight", (hd,), "norm"),
                    (p + ".self_attn.k_norm.weight", (hd,), "norm"),
                    (p + ".self_attn.quant_key_scale", (), "kvscale"),
                    (p + ".self_attn.quant_value_scale", (), "kvscale")]
        else:
            p = "model.kv_reuse_layers.%d" % (i - regular)
            out += [(p + ".self_attn.q_proj.weight", (heads * hd, hidden), "qat"),
                    (p + ".self_attn.q_norm.weight", (hd,), "norm"),
                    (p + ".self_attn.out_proj.weight", (hidden, heads * hd), "qat")]
        out += [(p + ".mlp.gate_proj.weight", (ffn, hidden), "qat"),
                (p + ".mlp.up_proj.weight", (ffn, hidden), "qat"),
                (p + ".mlp.down_proj.weight", (hidden, ffn), "qat"),
                (p + ".input_layernorm.weight", (hidden,), "norm"),
                (p + ".post_attention_layernorm.weight", (hidden,), "norm")]
    out.append(("model.output_norm.weight", (hidden,), "norm"))
    return out


def make(kind, shape, rng, group=32):
    if kind == "qat":
        n, k = shape
        q = rng.integers(0, 4, size=shape, dtype=np.int8).astype(np.float32) - 1.5
        # f16-exact scales k/4096, k in 1..31: |w| up to ~0.011.
        s = rng.integers(1, 32, size=(n, k // group)).astype(np.float32) / 4096.0
        return (q * np.repeat(s, group, axis=1)).astype(np.float16)
    if kind == "embed":
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)
    if kind == "norm":
        return (1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float16)
    return np.array(0.02, dtype=np.float16)  # kv scale


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=56)
    ap.add_argument("--reuse", type=int, default=21)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cfg = {"model_type": "afm7", "vocab_size": 153600, "hidden_dim": 2048,
           "num_layers": args.layers, "num_kv_reuse_layers": args.reuse, "num_heads": 16,
           "num_kv_heads": 2, "hidden_dim_scale_factor": 3.25, "rope_theta": 500000,
           "rms_norm_eps": 1e-5}
    ts = tensors(args.layers, args.reuse, 2048, 16, 2, 6656, 153600)
    header, off = {}, 0
    for name, shape, _ in ts:
        nbytes = 2 * int(np.prod(shape, dtype=np.int64))
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [off, off + nbytes]}
        off += nbytes
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    rng = np.random.default_rng(args.seed)
    path = os.path.join(args.out, "model.safetensors")
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for i, (name, shape, kind) in enumerate(ts):
            f.write(make(kind, shape, rng).tobytes())
            if i % 50 == 0:
                sys.stderr.write("make_afm7_qat: %d/%d tensors\n" % (i, len(ts)))
    os.replace(path + ".tmp", path)
    print("wrote %s: %.2fB parameters, %.1f GB" % (args.out, off / 2 / 1e9, off / 1e9))


if __name__ == "__main__":
    main()
