#!/usr/bin/env python3
"""Generate deterministic random checkpoints in the HuggingFace layout.

A checkpoint is a directory with `config.json` and safetensors weights
(`model.safetensors`, or `model-0000K-of-0000N.safetensors` shards plus
`model.safetensors.index.json`).  Only numpy is needed; the safetensors
format is written by hand.

Usage:
  gen_checkpoint.py --family llama|afm7|pt_moe|mixtral|qwen2_moe|fm_vit|fm_vlm --preset NAME
                    --out DIR [--seed S] [--dtype f32|f16|bf16] [--shards N]
                    [--qat-grid GROUP] [--set key=value ...]
  gen_checkpoint.py --list            # print the presets

`--set key=value` overrides a config field (value parsed as JSON, a plain
string if it is not valid JSON); it is applied before the tensors are shaped.
A dotted key sets a nested field (`--set vision_config.window_size=5`).

fm_vit and fm_vlm follow docs/vit.md: an fm_vlm checkpoint holds its decoder's
tensors under their usual names (drawn as that family's checkpoint with the
same seed) and the encoder's under vision.* / adapter.* (drawn with seed +
1000003).

`--qat-grid G`: every 2-D projection weight (not norms, embeddings, routers,
the shared-expert gate or KV scales) lies exactly on {-1.5,-0.5,0.5,1.5} * s,
one scale s per group of G consecutive inputs of an output row (the last group
of a row is shorter when G does not divide the input size).  Every s has at
most 6 significant bits, so s, 0.5 s and 1.5 s are exact in f16 and bf16 too.

Initialisation (seeded numpy default_rng, fixed draw order):
  projections  normal(0, 1/sqrt(fan_in))
  embedding    normal(0, 3/sqrt(hidden))  (so tied logits have std ~3)
  lm_head      normal(0, 3/sqrt(hidden))
  routers      normal(0, 1.5/sqrt(hidden))
  norms        1 + 0.1 * normal
  biases       0.2 * normal
  afm7 quant_key_scale / quant_value_scale: 0-d, ~0.032 / ~0.035 (about
  max|k| / 100), exact in bf16.
  vision: linear weights as projections (so --qat-grid applies to them),
  conv weights normal(0, 1/sqrt(fan_in)), LayerNorm weights as norms and
  biases as biases, pos_embed normal(0, 0.5), registers normal(0, 1),
  rel-pos tables normal(0, 0.5/sqrt(head_dim)).
"""

import argparse
import copy
import json
import math
import os
import sys

import numpy as np

FAMILIES = ("llama", "afm7", "pt_moe", "mixtral", "qwen2_moe", "fm_vit", "fm_vlm")

PRESETS = {
    "llama": {
        "tiny": {
            "model_type": "llama",
            "architectures": ["LlamaForCausalLM"],
            "vocab_size": 256,
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "intermediate_size": 128,
            "rms_norm_eps": 1e-5,
            "rope_theta": 10000.0,
            "tie_word_embeddings": False,
            "hidden_act": "silu",
            "max_position_embeddings": 2048,
        },
        "odd": {
            "model_type": "llama",
            "architectures": ["LlamaForCausalLM"],
            "vocab_size": 997,
            "hidden_size": 96,
            "num_hidden_layers": 3,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "head_dim": 48,
            "intermediate_size": 160,
            "rms_norm_eps": 1e-6,
            "rope_theta": 10000.0,
            "tie_word_embeddings": True,
            "hidden_act": "silu",
            "max_position_embeddings": 2048,
        },
    },
    "afm7": {
        "tiny": {
            "model_type": "afm7",
            "vocab_size": 1000,
            "hidden_dim": 256,
            "num_layers": 16,
            "num_kv_reuse_layers": 8,
            "num_heads": 8,
            "num_kv_heads": 4,
            "hidden_dim_scale_factor": 3.25,
            "rope_theta": 50000.0,
            "rms_norm_eps": 1e-5,
        },
        "small": {
            "model_type": "afm7",
            "vocab_size": 509,
            "hidden_dim": 128,
            "num_layers": 4,
            "num_kv_reuse_layers": 2,
            "num_heads": 4,
            "num_kv_heads": 2,
            "hidden_dim_scale_factor": 3.25,
            "rope_theta": 50000.0,
            "rms_norm_eps": 1e-5,
        },
    },
    "pt_moe": {
        "tiny": {
            "model_type": "pt_moe",
            "vocab_size": 256,
            "hidden_size": 64,
            "num_tracks": 2,
            "track_block_depth": 2,
            "num_track_blocks": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "intermediate_size": 96,
            "attention_pattern": ["local", "local", "local", "global"],
            "sliding_window": 4,
            "global_rope": False,
            "rope_theta": 10000.0,
            "rope_style": "half",
            "rms_norm_eps": 1e-5,
            "moe_layer_interval": 2,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 64,
            "norm_topk_prob": True,
            "track_combine": "mean",
            "tie_word_embeddings": False,
        },
    },
    "mixtral": {
        "tiny": {
            "model_type": "mixtral",
            "architectures": ["MixtralForCausalLM"],
            "vocab_size": 256,
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "intermediate_size": 96,
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
            "rms_norm_eps": 1e-5,
            "rope_theta": 1000000.0,
            "sliding_window": None,
            "tie_word_embeddings": False,
            "hidden_act": "silu",
            "max_position_embeddings": 2048,
        },
    },
    "qwen2_moe": {
        "tiny": {
            "model_type": "qwen2_moe",
            "architectures": ["Qwen2MoeForCausalLM"],
            "vocab_size": 256,
            "hidden_size": 64,
            "num_hidden_layers": 3,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 128,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 64,
            "norm_topk_prob": False,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [1],
            "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0,
            "use_sliding_window": False,
            "sliding_window": None,
            "tie_word_embeddings": False,
            "hidden_act": "silu",
            "max_position_embeddings": 2048,
        },
    },
    # docs/vit.md.  rw-vitdet-tiny: the on-device encoder's features on a
    # 10 x 10 grid that window 4 does not divide (3 x 3 windows, the last row
    # and column of windows half padding), 2 registers, relative positions,
    # 2 of 4 layers global, an adapter without transformer layers.
    "fm_vit": {
        "rw-vitdet-tiny": {
            "model_type": "fm_vit",
            "image_size": 80,
            "patch_size": 8,
            "hidden_size": 64,
            "num_layers": 4,
            "num_heads": 4,
            "intermediate_size": 160,
            "hidden_act": "gelu",
            "layer_norm_eps": 1e-6,
            "qkv_bias": True,
            "window_size": 4,
            "global_layers": [1, 3],
            "rel_pos": True,
            "num_registers": 2,
            "adapter": {"lm_hidden_size": 48, "grid": 3, "num_layers": 0},
            "image_mean": [0.48145466, 0.4578275, 0.40821073],
            "image_std": [0.26862954, 0.26130258, 0.27577711],
            "resample": "bicubic",
        },
        # A plain ViT: global layers only, no registers, no relative
        # positions, quick_gelu, no qkv bias; odd head width 12, an adapter
        # with one transformer layer.
        "vit-tiny": {
            "model_type": "fm_vit",
            "image_size": 56,
            "patch_size": 8,
            "hidden_size": 48,
            "num_layers": 2,
            "num_heads": 4,
            "intermediate_size": 128,
            "hidden_act": "quick_gelu",
            "layer_norm_eps": 1e-5,
            "qkv_bias": False,
            "window_size": 0,
            "global_layers": [],
            "rel_pos": False,
            "num_registers": 0,
            "adapter": {"lm_hidden_size": 32, "grid": 2, "num_layers": 1},
            "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5],
            "resample": "bilinear",
        },
    },
}

# fm_vlm presets: a decoder preset and an fm_vit preset, the adapter's width
# set to the decoder's hidden size (filled in below).
PRESETS["fm_vlm"] = {
    "afm7-rw-tiny": {
        "model_type": "fm_vlm",
        "text_config": copy.deepcopy(PRESETS["afm7"]["small"]),
        "vision_config": copy.deepcopy(PRESETS["fm_vit"]["rw-vitdet-tiny"]),
        "image_token_index": 508,
    },
}
PRESETS["fm_vlm"]["afm7-rw-tiny"]["vision_config"]["adapter"]["lm_hidden_size"] = 128

# Tensor kinds decide the initialisation (and whether --qat-grid applies).
PROJ, EMBED, LM_HEAD, NORM, ROUTER, GATE1, BIAS, KSCALE, VSCALE = (
    "proj", "embed", "lm_head", "norm", "router", "shared_gate", "bias",
    "kscale", "vscale")
# Vision kinds: convolution weights, position table, registers, relative
# position tables.
CONV, POS, REG, RELPOS = "conv", "pos", "registers", "rel_pos"

DTYPES = {"f32": ("F32", "float32"), "f16": ("F16", "float16"),
          "bf16": ("BF16", "bfloat16")}


# ----------------------------------------------------------------------------
# Tensor layout per family


def _llama_attn(specs, p, cfg, bias=False):
    H = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads") or nh
    hd = cfg.get("head_dim") or H // nh
    specs.append((p + "self_attn.q_proj.weight", [nh * hd, H], PROJ))
    specs.append((p + "self_attn.k_proj.weight", [nkv * hd, H], PROJ))
    specs.append((p + "self_attn.v_proj.weight", [nkv * hd, H], PROJ))
    if bias:
        specs.append((p + "self_attn.q_proj.bias", [nh * hd], BIAS))
        specs.append((p + "self_attn.k_proj.bias", [nkv * hd], BIAS))
        specs.append((p + "self_attn.v_proj.bias", [nkv * hd], BIAS))
    specs.append((p + "self_attn.o_proj.weight", [H, nh * hd], PROJ))


def _swiglu(specs, p, H, I, names=("gate_proj", "up_proj", "down_proj")):
    g, u, d = names
    specs.append((p + g + ".weight", [I, H], PROJ))
    specs.append((p + u + ".weight", [I, H], PROJ))
    specs.append((p + d + ".weight", [H, I], PROJ))


def _norms(specs, p, H):
    specs.append((p + "input_layernorm.weight", [H], NORM))
    specs.append((p + "post_attention_layernorm.weight", [H], NORM))


def _head(specs, cfg, H, norm_name="model.norm.weight"):
    specs.append((norm_name, [H], NORM))
    if not cfg.get("tie_word_embeddings", False):
        specs.append(("lm_head.weight", [cfg["vocab_size"], H], LM_HEAD))


def qwen2_layer_is_sparse(cfg, i):
    step = cfg.get("decoder_sparse_step", 1) or 0
    return (cfg.get("num_experts", 0) > 0 and step > 0 and (i + 1) % step == 0
            and i not in (cfg.get("mlp_only_layers") or []))


def pt_moe_layer_is_moe(cfg, i):
    iv = cfg.get("moe_layer_interval", 0) or 0
    return iv > 0 and i % iv == iv - 1


def vit_dims(cfg):
    """(g, hd, registers, qkv_bias, rel_pos, window, global layers) of an
    fm_vit config, with the schema's defaults (docs/vit.md)."""
    g = cfg["image_size"] // cfg["patch_size"]
    hd = cfg["hidden_size"] // cfg["num_heads"]
    return (g, hd, cfg.get("num_registers", 0), cfg.get("qkv_bias", True),
            cfg.get("rel_pos", False), cfg.get("window_size", 0),
            set(cfg.get("global_layers", [])))


def _vit_block(specs, p, cfg, rel_side):
    """One encoder/adapter block; rel_side = S of its rel-pos tables, or 0."""
    C = cfg["hidden_size"]
    I = cfg["intermediate_size"]
    _, hd, _, qkv_bias, _, _, _ = vit_dims(cfg)
    specs.append((p + "norm1.weight", [C], NORM))
    specs.append((p + "norm1.bias", [C], BIAS))
    specs.append((p + "attn.qkv.weight", [3 * C, C], PROJ))
    if qkv_bias:
        specs.append((p + "attn.qkv.bias", [3 * C], BIAS))
    specs.append((p + "attn.proj.weight", [C, C], PROJ))
    specs.append((p + "attn.proj.bias", [C], BIAS))
    if rel_side:
        specs.append((p + "attn.rel_pos_h", [2 * rel_side - 1, hd], RELPOS))
        specs.append((p + "attn.rel_pos_w", [2 * rel_side - 1, hd], RELPOS))
    specs.append((p + "norm2.weight", [C], NORM))
    specs.append((p + "norm2.bias", [C], BIAS))
    specs.append((p + "mlp.fc1.weight", [I, C], PROJ))
    specs.append((p + "mlp.fc1.bias", [I], BIAS))
    specs.append((p + "mlp.fc2.weight", [C, I], PROJ))
    specs.append((p + "mlp.fc2.bias", [C], BIAS))


def tensor_specs(family, cfg):
    """[(name, shape, kind)] in generation order."""
    s = []
    if family == "fm_vlm":
        tc = cfg["text_config"]
        return tensor_specs(tc["model_type"], tc) + tensor_specs("fm_vit", cfg["vision_config"])
    if family in ("llama", "mixtral", "qwen2_moe"):
        H = cfg["hidden_size"]
        s.append(("model.embed_tokens.weight", [cfg["vocab_size"], H], EMBED))
        for i in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % i
            _norms(s, p, H)
            _llama_attn(s, p, cfg, bias=(family == "qwen2_moe"))
            if family == "llama":
                _swiglu(s, p + "mlp.", H, cfg["intermediate_size"])
            elif family == "mixtral":
                E = cfg["num_local_experts"]
                s.append((p + "block_sparse_moe.gate.weight", [E, H], ROUTER))
                for e in range(E):
                    _swiglu(s, p + "block_sparse_moe.experts.%d." % e, H,
                            cfg["intermediate_size"], ("w1", "w3", "w2"))
            else:
                if qwen2_layer_is_sparse(cfg, i):
                    E = cfg["num_experts"]
                    s.append((p + "mlp.gate.weight", [E, H], ROUTER))
                    for e in range(E):
                        _swiglu(s, p + "mlp.experts.%d." % e, H,
                                cfg["moe_intermediate_size"])
                    _swiglu(s, p + "mlp.shared_expert.", H,
                            cfg["shared_expert_intermediate_size"])
                    s.append((p + "mlp.shared_expert_gate.weight", [1, H],
                              GATE1))
                else:
                    _swiglu(s, p + "mlp.", H, cfg["intermediate_size"])
        _head(s, cfg, H)
    elif family == "afm7":
        H = cfg["hidden_dim"]
        nh = cfg["num_heads"]
        nkv = cfg["num_kv_heads"]
        hd = H // nh
        F = int(H * cfg.get("hidden_dim_scale_factor", 3.25))
        R = cfg["num_kv_reuse_layers"]
        s.append(("model.embedding.weight", [cfg["vocab_size"], H], EMBED))
        for i in range(cfg["num_layers"] - R):
            p = "model.layers.%d." % i
            _norms(s, p, H)
            s.append((p + "self_attn.qkv_proj.weight", [(nh + 2 * nkv) * hd, H],
                      PROJ))
            s.append((p + "self_attn.out_proj.weight", [H, nh * hd], PROJ))
            s.append((p + "self_attn.q_norm.weight", [hd], NORM))
            s.append((p + "self_attn.k_norm.weight", [hd], NORM))
            s.append((p + "self_attn.quant_key_scale", [], KSCALE))
            s.append((p + "self_attn.quant_value_scale", [], VSCALE))
            _swiglu(s, p + "mlp.", H, F)
        for m in range(R):
            p = "model.kv_reuse_layers.%d." % m
            _norms(s, p, H)
            s.append((p + "self_attn.q_proj.weight", [nh * hd, H], PROJ))
            s.append((p + "self_attn.q_norm.weight", [hd], NORM))
            s.append((p + "self_attn.out_proj.weight", [H, nh * hd], PROJ))
            _swiglu(s, p + "mlp.", H, F)
        s.append(("model.output_norm.weight", [H], NORM))
    elif family == "pt_moe":
        H = cfg["hidden_size"]
        nh = cfg["num_attention_heads"]
        nkv = cfg.get("num_key_value_heads") or nh
        hd = cfg.get("head_dim") or H // nh
        D = cfg["track_block_depth"]
        s.append(("model.embed_tokens.weight", [cfg["vocab_size"], H], EMBED))
        for b in range(cfg["num_track_blocks"]):
            for t in range(cfg["num_tracks"]):
                for l in range(D):
                    i = b * D + l
                    p = "model.blocks.%d.tracks.%d.layers.%d." % (b, t, l)
                    _norms(s, p, H)
                    s.append((p + "self_attn.q_proj.weight", [nh * hd, H], PROJ))
                    s.append((p + "self_attn.k_proj.weight", [nkv * hd, H], PROJ))
                    s.append((p + "self_attn.v_proj.weight", [nkv * hd, H], PROJ))
                    s.append((p + "self_attn.o_proj.weight", [H, nh * hd], PROJ))
                    if pt_moe_layer_is_moe(cfg, i):
                        E = cfg["num_experts"]
                        s.append((p + "mlp.router.weight", [E, H], ROUTER))
                        for e in range(E):
                            _swiglu(s, p + "mlp.experts.%d." % e, H,
                                    cfg["moe_intermediate_size"])
                    else:
                        _swiglu(s, p + "mlp.", H, cfg["intermediate_size"])
        _head(s, cfg, H)
    elif family == "fm_vit":
        C = cfg["hidden_size"]
        p = cfg["patch_size"]
        g, hd, R, _, rel, window, glob = vit_dims(cfg)
        a = cfg["adapter"]
        D = a["lm_hidden_size"]
        s.append(("vision.patch_embed.weight", [C, 3, p, p], CONV))
        s.append(("vision.patch_embed.bias", [C], BIAS))
        s.append(("vision.pos_embed", [1, g, g, C], POS))
        if R:
            s.append(("vision.registers", [R, C], REG))
        for i in range(cfg["num_layers"]):
            is_global = window == 0 or i in glob
            _vit_block(s, "vision.blocks.%d." % i, cfg,
                       (g if is_global else window) if rel else 0)
        s.append(("vision.norm.weight", [C], NORM))
        s.append(("vision.norm.bias", [C], BIAS))
        for j in range(a.get("num_layers", 0)):
            _vit_block(s, "adapter.blocks.%d." % j, cfg, 0)
        s.append(("adapter.linear.weight", [D, C], PROJ))
        s.append(("adapter.linear.bias", [D], BIAS))
        s.append(("adapter.conv.weight", [D, D, 3, 3], CONV))
        s.append(("adapter.conv.bias", [D], BIAS))
    else:
        raise ValueError("unknown family %r" % family)
    return s


def hidden_of(family, cfg):
    return cfg["hidden_dim"] if family == "afm7" else cfg["hidden_size"]


# The vision tensors of an fm_vlm checkpoint are drawn from their own
# generator, seeded seed + this, after the decoder's.
VLM_VISION_SEED_OFFSET = 1000003


# ----------------------------------------------------------------------------
# Values


def _few_bits(x, bits=5):
    """Round positive x to m * 2^e with m an integer of at most `bits` bits.

    With bits=5, x, x/2 and 1.5 x all have <= 7 significant bits: exact in
    bf16 (8) and f16 (11) as long as the exponent is in range."""
    x = np.asarray(x, dtype=np.float64)
    e = np.floor(np.log2(x)) - (bits - 1)
    m = np.round(x / np.exp2(e))
    return m * np.exp2(e)


def qat_grid_weight(rng, shape, std, group):
    out_dim, in_dim = shape
    ng = (in_dim + group - 1) // group
    # Uniform over {+-0.5, +-1.5}: std = 1.118 s.
    s = std / math.sqrt(1.25) * rng.uniform(0.6, 1.4, size=(out_dim, ng))
    s = _few_bits(s)
    levels = np.array([-1.5, -0.5, 0.5, 1.5])
    q = levels[rng.integers(0, 4, size=(out_dim, in_dim))]
    s_full = np.repeat(s, group, axis=1)[:, :in_dim]
    return q * s_full


def make_values(family, cfg, seed, qat_grid=None):
    """{name: float64 ndarray} (values later cast to the storage dtype)."""
    if family == "fm_vlm":
        tc = cfg["text_config"]
        out = make_values(tc["model_type"], tc, seed, qat_grid)
        out.update(make_values("fm_vit", cfg["vision_config"],
                               seed + VLM_VISION_SEED_OFFSET, qat_grid))
        return out
    rng = np.random.default_rng(seed)
    H = hidden_of(family, cfg)
    out = {}
    for name, shape, kind in tensor_specs(family, cfg):
        if kind == PROJ:
            std = 1.0 / math.sqrt(shape[1])
            if qat_grid:
                v = qat_grid_weight(rng, shape, std, qat_grid)
            else:
                v = rng.normal(0.0, std, size=shape)
        elif kind in (EMBED, LM_HEAD):
            v = rng.normal(0.0, 3.0 / math.sqrt(H), size=shape)
        elif kind == ROUTER:
            v = rng.normal(0.0, 1.5 / math.sqrt(H), size=shape)
        elif kind == GATE1:
            v = rng.normal(0.0, 1.0 / math.sqrt(H), size=shape)
        elif kind == NORM:
            v = 1.0 + 0.1 * rng.normal(size=shape)
        elif kind == BIAS:
            v = 0.2 * rng.normal(size=shape)
        elif kind == KSCALE:
            v = _few_bits(np.array(0.032 * rng.uniform(0.9, 1.1)))
        elif kind == VSCALE:
            v = _few_bits(np.array(0.035 * rng.uniform(0.9, 1.1)))
        elif kind == CONV:
            v = rng.normal(0.0, 1.0 / math.sqrt(int(np.prod(shape[1:]))), size=shape)
        elif kind == POS:
            v = rng.normal(0.0, 0.5, size=shape)
        elif kind == REG:
            v = rng.normal(0.0, 1.0, size=shape)
        elif kind == RELPOS:
            # q . table ~ N(0, 0.25) per table: a bias of the scores' order.
            v = rng.normal(0.0, 0.5 / math.sqrt(shape[1]), size=shape)
        else:
            raise AssertionError(kind)
        out[name] = np.asarray(v, dtype=np.float64).reshape(shape)
    return out


# ----------------------------------------------------------------------------
# safetensors


def f32_to_bf16_bits(a):
    """float32 array -> uint16 bf16 bit patterns, round to nearest even."""
    b = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    r = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    r = np.where(nan, (b >> 16) | 0x40, r)  # keep NaNs NaN (quiet)
    return r.astype(np.uint16)


def encode(arr, dtype):
    """-> (safetensors dtype string, raw little-endian bytes)."""
    st, _ = DTYPES[dtype]
    a32 = np.asarray(arr, dtype=np.float32)
    if dtype == "f32":
        raw = a32.astype("<f4").tobytes()
    elif dtype == "f16":
        raw = a32.astype("<f2").tobytes()
    else:
        raw = f32_to_bf16_bits(a32).astype("<u2").tobytes()
    return st, raw


def write_safetensors(path, entries):
    """entries: [(name, dtype_str, shape, raw_bytes)]."""
    header = {}
    off = 0
    for name, st, shape, raw in entries:
        header[name] = {"dtype": st, "shape": list(shape),
                        "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((-len(h)) % 8)
    with open(path, "wb") as f:
        f.write(np.uint64(len(h)).astype("<u8").tobytes())
        f.write(h)
        for _, _, _, raw in entries:
            f.write(raw)


def _split_shards(sizes, n):
    """Contiguous, byte-balanced split of len(sizes) tensors into n non-empty
    shards: returns the shard index of each tensor."""
    if n > len(sizes):
        raise ValueError("--shards %d > number of tensors %d" % (n, len(sizes)))
    total = float(sum(sizes)) or 1.0
    idx, cum = [], 0
    for sz in sizes:
        idx.append(min(n - 1, int((cum + sz / 2.0) * n / total)))
        cum += sz
    # Make indices non-decreasing and every shard non-empty.
    for k in range(1, len(idx)):
        idx[k] = max(idx[k], idx[k - 1])
    if len(set(idx)) != n:
        idx = [int(k * n // len(sizes)) for k in range(len(sizes))]
    return idx


def write_checkpoint(out_dir, cfg, values, dtype="f32", shards=1):
    os.makedirs(out_dir, exist_ok=True)
    cfg = dict(cfg)
    cfg["torch_dtype"] = DTYPES[dtype][1]
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    entries = []
    for name, v in values.items():
        st, raw = encode(v, dtype)
        entries.append((name, st, list(v.shape), raw))
    # Remove stale weight files from an earlier run in the same directory.
    for fn in os.listdir(out_dir):
        if fn.endswith(".safetensors") or fn == "model.safetensors.index.json":
            os.remove(os.path.join(out_dir, fn))
    if shards <= 1:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), entries)
        return
    assign = _split_shards([len(e[3]) for e in entries], shards)
    weight_map = {}
    for k in range(shards):
        fn = "model-%05d-of-%05d.safetensors" % (k + 1, shards)
        part = [e for e, a in zip(entries, assign) if a == k]
        write_safetensors(os.path.join(out_dir, fn), part)
        for e in part:
            weight_map[e[0]] = fn
    index = {"metadata": {"total_size": sum(len(e[3]) for e in entries)},
             "weight_map": weight_map}
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")


# ----------------------------------------------------------------------------
# Driver


def parse_set(items):
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError("--set expects key=value, got %r" % item)
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = json.loads(v)
        except ValueError:
            out[k.strip()] = v
    return out


def make_config(family, preset, sets=None):
    if family not in PRESETS:
        raise ValueError("unknown family %r (one of %s)" % (family, ", ".join(FAMILIES)))
    if preset not in PRESETS[family]:
        raise ValueError("unknown preset %r for %s (one of %s)"
                         % (preset, family, ", ".join(PRESETS[family])))
    cfg = copy.deepcopy(PRESETS[family][preset])
    for key, value in (sets or {}).items():
        # "a.b.c" sets a field of a nested object (fm_vlm's vision_config,
        # an fm_vit adapter).
        d, parts = cfg, key.split(".")
        for part in parts[:-1]:
            if not isinstance(d.get(part), dict):
                raise ValueError("--set %s: %r is not an object of the config" % (key, part))
            d = d[part]
        d[parts[-1]] = value
    return cfg


def generate(family, preset, out_dir, seed=0, dtype="f32", shards=1,
             qat_grid=None, sets=None):
    """Write a checkpoint; returns (config, {name: float64 values})."""
    cfg = make_config(family, preset, sets)
    values = make_values(family, cfg, seed, qat_grid)
    write_checkpoint(out_dir, cfg, values, dtype, shards)
    return cfg, values


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", choices=FAMILIES)
    ap.add_argument("--preset")
    ap.add_argument("--out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--qat-grid", type=int, default=None, metavar="GROUP")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON")
    ap.add_argument("--list", action="store_true", help="print the presets")
    a = ap.parse_args(argv)
    if a.list:
        for fam in FAMILIES:
            for name, cfg in PRESETS[fam].items():
                print("%s:%s %s" % (fam, name, json.dumps(cfg)))
        return 0
    if not (a.family and a.preset and a.out):
        ap.error("--family, --preset and --out are required")
    if a.qat_grid is not None and a.qat_grid <= 0:
        ap.error("--qat-grid must be positive")
    if a.shards < 1:
        ap.error("--shards must be >= 1")
    try:
        cfg, values = generate(a.family, a.preset, a.out, a.seed, a.dtype,
                               a.shards, a.qat_grid, parse_set(a.set))
    except (ValueError, KeyError) as e:
        print("gen_checkpoint: error: %s" % e, file=sys.stderr)
        return 2
    n = sum(v.size for v in values.values())
    print("wrote %s (%s:%s, %d tensors, %d parameters, %s, %d shard%s%s)"
          % (a.out, a.family, a.preset, len(values), n, a.dtype, a.shards,
             "" if a.shards == 1 else "s",
             ", qat-grid %d" % a.qat_grid if a.qat_grid else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
