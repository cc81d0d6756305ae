#!/usr/bin/env python3
"""Independent numpy reference forward pass for the fmc model families.

Families: llama, afm7, pt_moe, mixtral, qwen2_moe (config.json `model_type`);
fm_vit image encoders with their vision-language adapter and fm_vlm (a decoder
whose image placeholders take the adapter's tokens), as docs/vit.md states.
Written from the model semantics (see /work/shared/design/MODEL-FACTS.md and
the HF/MLX definitions), not from compiler code.  Computes in float64 and
returns float32 logits for every position (causal, teacher-forced).

Module API:
  load_checkpoint(dir) -> (config dict, {name: float32 ndarray})
  logits(config, weights, tokens[, images=[...]]) -> float32 [len(tokens), vocab]
  vit(config, weights, image) -> float32 [g_out^2, D]   (fm_vit; image [3, S, S])
  preprocess_image(vit_config, path) -> float32 [3, S, S]  (PIL, as the runtime)

CLI:
  fm_reference.py MODEL_DIR --tokens 1,2,3 [--image F ...] [--out ref.npy]
                  [--compare got.npy [--rtol 1e-3] [--min-argmax-agree F]]
  fm_reference.py FM_VIT_DIR --image photo.png|x.npy [--out tokens.npy] [--compare ..]
  (fm_vit compares image tokens by max|ref-got| alone, no argmax.)
  --compare passes when max|ref-got| <= rtol * max|ref| and the argmax agrees
  at every position (or at a fraction >= F of positions with
  --min-argmax-agree).  Prints one summary line; exit 0 pass, 1 fail, 2 error.
  For MoE models the line ends with min_route_gap=G: the smallest margin
  between the k-th and (k+1)-th routing probability at these tokens (near 0:
  an expert choice can flip on rounding noise; pick other tokens).

Semantics notes:
  * RMSNorm(x) = x / sqrt(mean(x^2) + eps) * w.
  * RoPE at absolute position p, inv_freq_i = theta^(-2i/hd), i < hd/2.
    "half" rotates (i, i + hd/2) (HF rotate_half); "interleaved" rotates
    (2i, 2i+1).  llama/mixtral/qwen2_moe: half.  pt_moe: config rope_style
    (default half).  afm7: interleaved (MLX `traditional=True`, as upstream
    mlx-lm afm7.py), overridable by a `rope_style` config field.
  * afm7 q_norm / k_norm use eps 1e-5 (upstream RMSNorm default), K/V are
    fake-quantized: clip(round_half_even(x / s), -128, 127) * s.
  * MoE: p = softmax(router x); top-k by probability, ties to the lower
    expert index; renormalized when norm_topk_prob (pt_moe default true,
    qwen2_moe default false, mixtral always).
  * fm_vit window layers materialize the semantics literally: the normed grid
    is zero-padded and projected (padded tokens get qkv = bias), every window
    is run separately, registers are averaged over the windows' outputs.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

# ----------------------------------------------------------------------------
# Loading

_ST_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "BF16": "<u2"}


def _read_safetensors(path):
    with open(path, "rb") as f:
        n = int(np.frombuffer(f.read(8), dtype="<u8")[0])
        header = json.loads(f.read(n).decode("utf-8"))
    base = 8 + n
    out = {}
    size = os.path.getsize(path)
    mm = np.memmap(path, dtype=np.uint8, mode="r") if size > base else None
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = info["dtype"]
        if dt not in _ST_DTYPES:
            raise ValueError("%s: tensor %s has unsupported dtype %s"
                             % (path, name, dt))
        b, e = info["data_offsets"]
        shape = tuple(info["shape"])
        raw = np.asarray(mm[base + b: base + e]) if e > b else np.zeros(0, np.uint8)
        a = np.frombuffer(raw.tobytes(), dtype=_ST_DTYPES[dt])
        if dt == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        a = a.astype(np.float32)
        if a.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError("%s: tensor %s: %d elements for shape %s"
                             % (path, name, a.size, list(shape)))
        out[name] = a.reshape(shape)
    return out


def load_checkpoint(model_dir):
    """-> (config dict, {name: float32 ndarray})."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    index = os.path.join(model_dir, "model.safetensors.index.json")
    single = os.path.join(model_dir, "model.safetensors")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    elif os.path.exists(single):
        files = ["model.safetensors"]
    else:
        files = sorted(fn for fn in os.listdir(model_dir)
                       if fn.endswith(".safetensors"))
        if not files:
            raise FileNotFoundError("no safetensors files in %s" % model_dir)
    weights = {}
    for fn in files:
        for k, v in _read_safetensors(os.path.join(model_dir, fn)).items():
            if k in weights:
                raise ValueError("tensor %s appears twice" % k)
            weights[k] = v
    return cfg, weights


# ----------------------------------------------------------------------------
# Building blocks (float64)


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def silu(x):
    return x / (1.0 + np.exp(-x))


def softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def rope(x, pos, theta, style):
    """x [S, nheads, hd] rotated at positions pos [S]."""
    hd = x.shape[-1]
    half = hd // 2
    inv = float(theta) ** (-(2.0 * np.arange(half)) / hd)
    ang = np.asarray(pos, dtype=np.float64)[:, None] * inv[None, :]
    cos = np.cos(ang)[:, None, :]
    sin = np.sin(ang)[:, None, :]
    if style == "half":
        a, b = x[..., :half], x[..., half:2 * half]
        out = x.copy()
        out[..., :half] = a * cos - b * sin
        out[..., half:2 * half] = b * cos + a * sin
        return out
    if style == "interleaved":
        a, b = x[..., 0:2 * half:2], x[..., 1:2 * half:2]
        out = x.copy()
        out[..., 0:2 * half:2] = a * cos - b * sin
        out[..., 1:2 * half:2] = b * cos + a * sin
        return out
    raise ValueError("unknown rope style %r" % style)


def attention(q, k, v, window=None):
    """q [S, nh, hd], k/v [S, nkv, hd] -> [S, nh*hd]; causal, optional
    sliding window (query i sees keys j with i - window < j <= i)."""
    S, nh, hd = q.shape
    nkv = k.shape[1]
    if nh % nkv:
        raise ValueError("heads %d not a multiple of kv heads %d" % (nh, nkv))
    rep = nh // nkv
    k = np.repeat(k, rep, axis=1)  # head h uses kv head h // rep
    v = np.repeat(v, rep, axis=1)
    s = np.einsum("qhd,khd->hqk", q, k) * (hd ** -0.5)
    i = np.arange(S)[:, None]
    j = np.arange(S)[None, :]
    allowed = j <= i
    if window is not None:
        allowed &= j > i - window
    s = np.where(allowed[None], s, -np.inf)
    p = softmax(s, axis=-1)
    o = np.einsum("hqk,khd->qhd", p, v)
    return o.reshape(S, nh * hd)


def linear(x, W, name, bias=True):
    y = x @ W[name + ".weight"].T
    if bias and (name + ".bias") in W:
        y = y + W[name + ".bias"]
    return y


def swiglu(x, W, p, names=("gate_proj", "up_proj", "down_proj")):
    g, u, d = names
    return linear(silu(linear(x, W, p + g)) * linear(x, W, p + u), W, p + d)


def moe(x, W, router, experts, k, renorm, names=("gate_proj", "up_proj",
                                                  "down_proj")):
    """Top-k softmax routing; experts[e] is the tensor-name prefix."""
    E = len(experts)
    probs = softmax(x @ W[router].T, axis=-1)  # [S, E]
    if probs.shape[1] != E:
        raise ValueError("router %s has %d rows, expected %d"
                         % (router, probs.shape[1], E))
    if not 1 <= k <= E:
        raise ValueError("top-k %d with %d experts" % (k, E))
    comb = np.zeros_like(probs)
    if _STATS is not None and k < E:
        srt = np.sort(probs, axis=-1)
        gap = float(np.min(srt[:, E - k] - srt[:, E - k - 1]))
        _STATS["min_route_gap"] = min(_STATS.get("min_route_gap", 1.0), gap)
    for t in range(x.shape[0]):
        order = np.argsort(-probs[t], kind="stable")[:k]  # ties: lower index
        w = probs[t, order]
        if renorm:
            w = w / np.sum(w)
        comb[t, order] = w
    out = np.zeros_like(x)
    for e in range(E):
        rows = np.nonzero(comb[:, e])[0]
        if rows.size:
            out[rows] += comb[rows, e:e + 1] * swiglu(x[rows], W, experts[e], names)
    return out


_STATS = None  # set by logits(..., stats=dict) while it runs


def _tokens(tokens, vocab):
    t = np.asarray(tokens, dtype=np.int64).reshape(-1)
    if t.size == 0:
        raise ValueError("no tokens")
    if t.min() < 0 or t.max() >= vocab:
        raise ValueError("token id out of range [0, %d)" % vocab)
    return t


def _lm_head(cfg, W, x, embed_name):
    if cfg.get("tie_word_embeddings", False) or "lm_head.weight" not in W:
        if not cfg.get("tie_word_embeddings", False):
            raise KeyError("lm_head.weight missing and tie_word_embeddings false")
        return x @ W[embed_name].T
    return x @ W["lm_head.weight"].T


# ----------------------------------------------------------------------------
# Families


def _hf_decoder(cfg, W, tokens, family, inject=None):
    """llama, mixtral, qwen2_moe."""
    if cfg.get("rope_scaling"):
        raise NotImplementedError("rope_scaling is not supported")
    H = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads") or nh
    hd = cfg.get("head_dim") or H // nh
    eps = cfg.get("rms_norm_eps", 1e-6)
    theta = cfg.get("rope_theta", 1000000.0 if family != "llama" else 10000.0)
    window = None
    if family == "mixtral" and cfg.get("sliding_window"):
        window = int(cfg["sliding_window"])
    t = _tokens(tokens, cfg["vocab_size"])
    S = t.size
    pos = np.arange(S)
    x = W["model.embed_tokens.weight"][t].astype(np.float64)
    if inject is not None:
        x = inject(t, x)
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        n = rmsnorm(x, W[p + "input_layernorm.weight"], eps)
        q = linear(n, W, p + "self_attn.q_proj").reshape(S, nh, hd)
        k = linear(n, W, p + "self_attn.k_proj").reshape(S, nkv, hd)
        v = linear(n, W, p + "self_attn.v_proj").reshape(S, nkv, hd)
        q = rope(q, pos, theta, "half")
        k = rope(k, pos, theta, "half")
        x = x + linear(attention(q, k, v, window), W, p + "self_attn.o_proj")
        n = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        if family == "llama":
            f = swiglu(n, W, p + "mlp.")
        elif family == "mixtral":
            E = cfg["num_local_experts"]
            f = moe(n, W, p + "block_sparse_moe.gate.weight",
                    [p + "block_sparse_moe.experts.%d." % e for e in range(E)],
                    cfg["num_experts_per_tok"], True, ("w1", "w3", "w2"))
        else:
            step = cfg.get("decoder_sparse_step", 1) or 0
            sparse = (cfg.get("num_experts", 0) > 0 and step > 0
                      and (i + 1) % step == 0
                      and i not in (cfg.get("mlp_only_layers") or []))
            if sparse:
                E = cfg["num_experts"]
                f = moe(n, W, p + "mlp.gate.weight",
                        [p + "mlp.experts.%d." % e for e in range(E)],
                        cfg["num_experts_per_tok"],
                        cfg.get("norm_topk_prob", False))
                g = 1.0 / (1.0 + np.exp(-(n @ W[p + "mlp.shared_expert_gate.weight"].T)))
                f = f + g * swiglu(n, W, p + "mlp.shared_expert.")
            else:
                f = swiglu(n, W, p + "mlp.")
        x = x + f
    x = rmsnorm(x, W["model.norm.weight"], eps)
    return _lm_head(cfg, W, x, "model.embed_tokens.weight")


def _fake_quant(x, s):
    s = float(s)
    if not s > 0:
        raise ValueError("non-positive KV quantization scale %r" % s)
    return np.clip(np.round(x / s), -128, 127) * s


def _afm7(cfg, W, tokens, inject=None):
    H = cfg["hidden_dim"]
    nh = cfg["num_heads"]
    nkv = cfg["num_kv_heads"]
    hd = H // nh
    eps = cfg.get("rms_norm_eps", 1e-5)
    theta = cfg.get("rope_theta", 50000.0)
    style = cfg.get("rope_style", "interleaved")
    R = cfg["num_kv_reuse_layers"]
    nreg = cfg["num_layers"] - R
    if nreg < 1 and R > 0:
        raise ValueError("kv reuse layers need at least one regular layer")
    t = _tokens(tokens, cfg["vocab_size"])
    S = t.size
    pos = np.arange(S)
    x = W["model.embedding.weight"][t].astype(np.float64)
    if inject is not None:
        x = inject(t, x)
    k = v = None
    for i in range(nreg):
        p = "model.layers.%d." % i
        n = rmsnorm(x, W[p + "input_layernorm.weight"], eps)
        qkv = linear(n, W, p + "self_attn.qkv_proj")
        q = qkv[:, :nh * hd].reshape(S, nh, hd)
        k = qkv[:, nh * hd:(nh + nkv) * hd].reshape(S, nkv, hd)
        v = qkv[:, (nh + nkv) * hd:(nh + 2 * nkv) * hd].reshape(S, nkv, hd)
        q = rmsnorm(rope(q, pos, theta, style), W[p + "self_attn.q_norm.weight"], 1e-5)
        k = rmsnorm(rope(k, pos, theta, style), W[p + "self_attn.k_norm.weight"], 1e-5)
        k = _fake_quant(k, W[p + "self_attn.quant_key_scale"])
        v = _fake_quant(v, W[p + "self_attn.quant_value_scale"])
        x = x + linear(attention(q, k, v), W, p + "self_attn.out_proj")
        n = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        x = x + swiglu(n, W, p + "mlp.")
    for m in range(R):
        p = "model.kv_reuse_layers.%d." % m
        n = rmsnorm(x, W[p + "input_layernorm.weight"], eps)
        q = linear(n, W, p + "self_attn.q_proj").reshape(S, nh, hd)
        q = rmsnorm(rope(q, pos, theta, style), W[p + "self_attn.q_norm.weight"], 1e-5)
        x = x + linear(attention(q, k, v), W, p + "self_attn.out_proj")
        n = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        x = x + swiglu(n, W, p + "mlp.")
    x = rmsnorm(x, W["model.output_norm.weight"], eps)
    return x @ W["model.embedding.weight"].T


def _pt_moe(cfg, W, tokens, inject=None):
    H = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads") or nh
    hd = cfg.get("head_dim") or H // nh
    eps = cfg.get("rms_norm_eps", 1e-5)
    theta = cfg.get("rope_theta", 10000.0)
    style = cfg.get("rope_style", "half")
    pattern = cfg.get("attention_pattern") or ["global"]
    window = cfg.get("sliding_window")
    global_rope = bool(cfg.get("global_rope", False))
    interval = cfg.get("moe_layer_interval", 0) or 0
    combine = cfg.get("track_combine", "mean")
    if combine not in ("mean", "sum"):
        raise ValueError("unknown track_combine %r" % combine)
    D = cfg["track_block_depth"]
    T = cfg["num_tracks"]
    t = _tokens(tokens, cfg["vocab_size"])
    S = t.size
    pos = np.arange(S)
    x = W["model.embed_tokens.weight"][t].astype(np.float64)
    if inject is not None:
        x = inject(t, x)
    for b in range(cfg["num_track_blocks"]):
        outs = []
        for tr in range(T):
            y = x
            for l in range(D):
                i = b * D + l
                kind = pattern[i % len(pattern)]
                if kind not in ("local", "global"):
                    raise ValueError("unknown attention kind %r" % kind)
                p = "model.blocks.%d.tracks.%d.layers.%d." % (b, tr, l)
                n = rmsnorm(y, W[p + "input_layernorm.weight"], eps)
                q = linear(n, W, p + "self_attn.q_proj").reshape(S, nh, hd)
                k = linear(n, W, p + "self_attn.k_proj").reshape(S, nkv, hd)
                v = linear(n, W, p + "self_attn.v_proj").reshape(S, nkv, hd)
                if kind == "local" or global_rope:
                    q = rope(q, pos, theta, style)
                    k = rope(k, pos, theta, style)
                if kind == "local":
                    if not window:
                        raise ValueError("local layer without sliding_window")
                    a = attention(q, k, v, int(window))
                else:
                    a = attention(q, k, v)
                y = y + linear(a, W, p + "self_attn.o_proj")
                n = rmsnorm(y, W[p + "post_attention_layernorm.weight"], eps)
                if interval > 0 and i % interval == interval - 1:
                    E = cfg["num_experts"]
                    f = moe(n, W, p + "mlp.router.weight",
                            [p + "mlp.experts.%d." % e for e in range(E)],
                            cfg["num_experts_per_tok"],
                            cfg.get("norm_topk_prob", True))
                else:
                    f = swiglu(n, W, p + "mlp.")
                y = y + f
            outs.append(y)
        x = np.sum(outs, axis=0)
        if combine == "mean":
            x = x / T
    x = rmsnorm(x, W["model.norm.weight"], eps)
    return _lm_head(cfg, W, x, "model.embed_tokens.weight")


# ----------------------------------------------------------------------------
# Vision: fm_vit encoders + adapter, fm_vlm (docs/vit.md)

_VIT_ACTS = ("gelu", "gelu_tanh", "quick_gelu")
_RESAMPLE = ("bicubic", "bilinear")


def layernorm(x, w, b, eps):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


_ERF = np.frompyfunc(math.erf, 1, 1)


def vit_act(x, kind):
    if kind == "gelu":
        return 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0)).astype(np.float64))
    if kind == "gelu_tanh":
        u = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)
        return 0.5 * x * (1.0 + np.tanh(u))
    if kind == "quick_gelu":
        return x / (1.0 + np.exp(-1.702 * x))
    raise ValueError("unknown hidden_act %r (one of %s)" % (kind, ", ".join(_VIT_ACTS)))


def vit_config(cfg):
    """The fm_vit config with its defaults filled in, checked; adds g
    (patch grid side), hd (head width) and the adapter's stride/kernel."""
    c = dict(cfg)
    for f in ("image_size", "patch_size", "hidden_size", "num_layers",
              "num_heads", "intermediate_size", "adapter"):
        if f not in c:
            raise KeyError("fm_vit config: missing field %r" % f)
    c.setdefault("hidden_act", "gelu")
    c.setdefault("layer_norm_eps", 1e-6)
    c.setdefault("qkv_bias", True)
    c.setdefault("window_size", 0)
    c.setdefault("global_layers", [])
    c.setdefault("rel_pos", False)
    c.setdefault("num_registers", 0)
    c.setdefault("image_mean", [0.0, 0.0, 0.0])
    c.setdefault("image_std", [1.0, 1.0, 1.0])
    c.setdefault("resample", "bicubic")
    if c["image_size"] <= 0 or c["patch_size"] <= 0 or c["image_size"] % c["patch_size"]:
        raise ValueError("fm_vit config: image_size %d is not a multiple of patch_size %d"
                         % (c["image_size"], c["patch_size"]))
    if c["hidden_size"] % c["num_heads"]:
        raise ValueError("fm_vit config: hidden_size %d is not a multiple of num_heads %d"
                         % (c["hidden_size"], c["num_heads"]))
    if c["hidden_act"] not in _VIT_ACTS:
        raise ValueError("fm_vit config: unknown hidden_act %r" % c["hidden_act"])
    if c["window_size"] < 0 or c["num_registers"] < 0:
        raise ValueError("fm_vit config: negative window_size or num_registers")
    if c["resample"] not in _RESAMPLE:
        raise ValueError("fm_vit config: unknown resample %r" % c["resample"])
    gl = list(c["global_layers"])
    if len(set(gl)) != len(gl) or any(not 0 <= i < c["num_layers"] for i in gl):
        raise ValueError("fm_vit config: global_layers %s not distinct layer indices < %d"
                         % (gl, c["num_layers"]))
    g = c["image_size"] // c["patch_size"]
    a = dict(c["adapter"])
    for f in ("lm_hidden_size", "grid"):
        if f not in a:
            raise KeyError("fm_vit config: adapter: missing field %r" % f)
    a.setdefault("num_layers", 0)
    if not 1 <= a["grid"] <= g:
        raise ValueError("fm_vit config: adapter grid %d outside [1, %d] (the patch grid)"
                         % (a["grid"], g))
    a["stride"] = g // a["grid"]
    a["kernel"] = g - (a["grid"] - 1) * a["stride"]
    c["adapter"] = a
    c["g"] = g
    c["hd"] = c["hidden_size"] // c["num_heads"]
    return c


def vit_layer_is_global(c, i):
    return c["window_size"] == 0 or i in c["global_layers"]


def _tensor(W, name, shape=None):
    if name not in W:
        raise KeyError("tensor %s missing" % name)
    a = W[name]
    if shape is not None and list(a.shape) != list(shape):
        raise ValueError("tensor %s has shape %s, expected %s"
                         % (name, list(a.shape), list(shape)))
    return a


def _affine(x, W, name, bias):
    """y = x W^T (+ b); the bias must exist exactly when `bias`."""
    y = x @ _tensor(W, name + ".weight").T
    if bias:
        y = y + _tensor(W, name + ".bias")
    elif name + ".bias" in W:
        raise ValueError("tensor %s.bias present but the config has no bias" % name)
    return y


def patch_embed(image, weight, bias, p):
    """Conv2d(3, C, kernel p, stride p) as unfold + matmul: [3, H, W] ->
    [(H/p)(W/p), C], patches row-major, each flattened (channel, row, col)."""
    ch, H, Wd = image.shape
    gh, gw = H // p, Wd // p
    x = image[:, :gh * p, :gw * p].reshape(ch, gh, p, gw, p)
    cols = x.transpose(1, 3, 0, 2, 4).reshape(gh * gw, ch * p * p)
    return cols @ weight.reshape(weight.shape[0], -1).T + bias


def rel_pos_bias(q, rel_h, rel_w, S):
    """ViTDet's decomposed bias for an S x S patch grid.  q [nh, S*S, hd]
    (unscaled) -> [nh, S*S, S*S]: bias[(qy,qx),(ky,kx)] =
    q.rel_h[qy-ky+S-1] + q.rel_w[qx-kx+S-1]."""
    nh, T, hd = q.shape
    if T != S * S:
        raise ValueError("rel-pos bias over %d patches, expected %d" % (T, S * S))
    for nm, t in (("rel_pos_h", rel_h), ("rel_pos_w", rel_w)):
        if list(t.shape) != [2 * S - 1, hd]:
            raise ValueError("%s has shape %s, expected %s"
                             % (nm, list(t.shape), [2 * S - 1, hd]))
    d = np.arange(S)[:, None] - np.arange(S)[None, :] + S - 1  # [q, k]
    Rh, Rw = rel_h[d], rel_w[d]                                  # [S, S, hd]
    rq = q.reshape(nh, S, S, hd)
    bh = np.einsum("nyxc,ykc->nyxk", rq, Rh)                     # [nh, qy, qx, ky]
    bw = np.einsum("nyxc,xkc->nyxk", rq, Rw)                     # [nh, qy, qx, kx]
    b = bh[:, :, :, :, None] + bw[:, :, :, None, :]
    return b.reshape(nh, S * S, S * S)


def vit_mha(qkv, nh, R, rel=None, S=None):
    """Bidirectional attention over the tokens [R registers ; S*S patches]:
    qkv [T, 3C] with rows [q; k; v] -> [T, C].  rel = (rel_h, rel_w) adds the
    decomposed bias to the patch x patch scores only."""
    T, C3 = qkv.shape
    C = C3 // 3
    hd = C // nh
    q, k, v = (qkv[:, j * C:(j + 1) * C].reshape(T, nh, hd).transpose(1, 0, 2)
               for j in range(3))
    s = q @ k.transpose(0, 2, 1) * hd ** -0.5
    if rel is not None:
        s[:, R:, R:] += rel_pos_bias(q[:, R:], rel[0], rel[1], S)
    o = softmax(s, axis=-1) @ v                                  # [nh, T, hd]
    return o.transpose(1, 0, 2).reshape(T, C)


def _vit_rel(c, W, p, S):
    if not c["rel_pos"]:
        return None
    shape = [2 * S - 1, c["hd"]]
    return (_tensor(W, p + "attn.rel_pos_h", shape), _tensor(W, p + "attn.rel_pos_w", shape))


def vit_global_attention(n, W, p, c, R, rel):
    qkv = _affine(n, W, p + "attn.qkv", c["qkv_bias"])
    return vit_mha(qkv, c["num_heads"], R, rel, c["g"])


def vit_window_attention(n, W, p, c, R, rel, pad="zeros", register_mean="mean"):
    """ViTDet window attention with Register-Window registers.  n: LN1 output
    [R + g*g, C].  `pad` and `register_mean` select the semantics of
    docs/vit.md ("zeros", "mean"); the other values exist for ablation tests:
    pad="mask" masks padded keys out, register_mean="first" keeps the
    registers' output of window 0 only."""
    g, w, C = c["g"], c["window_size"], c["hidden_size"]
    nw = -(-g // w)
    G = nw * w
    grid = np.zeros((G, G, C))
    grid[:g, :g] = n[R:].reshape(g, g, C)                         # zero padding
    qkv_reg = _affine(n[:R], W, p + "attn.qkv", c["qkv_bias"])
    qkv_grid = _affine(grid.reshape(G * G, C), W, p + "attn.qkv",
                       c["qkv_bias"]).reshape(G, G, 3 * C)
    out = np.zeros((G, G, C))
    regs = []
    nh, hd = c["num_heads"], c["hd"]
    for by in range(nw):
        for bx in range(nw):
            tok = np.concatenate([qkv_reg, qkv_grid[by * w:(by + 1) * w,
                                                    bx * w:(bx + 1) * w].reshape(w * w, 3 * C)])
            if pad == "zeros":
                o = vit_mha(tok, nh, R, rel, w)
            elif pad == "mask":
                ys, xs = np.meshgrid(np.arange(by * w, (by + 1) * w),
                                     np.arange(bx * w, (bx + 1) * w), indexing="ij")
                real = np.concatenate([np.ones(R, bool), ((ys < g) & (xs < g)).ravel()])
                T = tok.shape[0]
                q, k, v = (tok[:, j * C:(j + 1) * C].reshape(T, nh, hd).transpose(1, 0, 2)
                           for j in range(3))
                s = q @ k.transpose(0, 2, 1) * hd ** -0.5
                if rel is not None:
                    s[:, R:, R:] += rel_pos_bias(q[:, R:], rel[0], rel[1], w)
                s = np.where(real[None, None, :], s, -np.inf)
                o = (softmax(s, axis=-1) @ v).transpose(1, 0, 2).reshape(T, C)
            else:
                raise ValueError("unknown pad %r" % pad)
            out[by * w:(by + 1) * w, bx * w:(bx + 1) * w] = o[R:].reshape(w, w, C)
            regs.append(o[:R])
    if register_mean == "mean":
        reg = np.mean(regs, axis=0) if R else np.zeros((0, C))
    elif register_mean == "first":
        reg = regs[0]
    else:
        raise ValueError("unknown register_mean %r" % register_mean)
    return np.concatenate([reg, out[:g, :g].reshape(g * g, C)])


def vit_block(x, W, p, c, R, kind, rel=None, **ablation):
    """One pre-LN block over [R registers ; g*g patches]."""
    C = c["hidden_size"]
    eps = c["layer_norm_eps"]
    n = layernorm(x, _tensor(W, p + "norm1.weight", [C]), _tensor(W, p + "norm1.bias", [C]), eps)
    if kind == "global":
        a = vit_global_attention(n, W, p, c, R, rel)
    else:
        a = vit_window_attention(n, W, p, c, R, rel, **ablation)
    x = x + _affine(a, W, p + "attn.proj", True)
    n = layernorm(x, _tensor(W, p + "norm2.weight", [C]), _tensor(W, p + "norm2.bias", [C]), eps)
    h = vit_act(_affine(n, W, p + "mlp.fc1", True), c["hidden_act"])
    return x + _affine(h, W, p + "mlp.fc2", True)


def conv3x3(y, weight, bias):
    """Conv2d cross-correlation, stride 1, zero padding 1, channels last:
    y [g, g, in] -> [g, g, out]; weight [out, in, 3, 3]."""
    g1, g2, _ = y.shape
    yp = np.pad(y, ((1, 1), (1, 1), (0, 0)))
    out = np.zeros((g1, g2, weight.shape[0])) + bias
    for dy in range(3):
        for dx in range(3):
            out += yp[dy:dy + g1, dx:dx + g2] @ weight[:, :, dy, dx].T
    return out


def avg_pool(y, g_out):
    """Average pooling of y [g, g, D] with stride g // g_out and kernel
    g - (g_out - 1) * stride -> [g_out * g_out, D], row-major."""
    g = y.shape[0]
    s = g // g_out
    k = g - (g_out - 1) * s
    out = np.zeros((g_out, g_out, y.shape[2]))
    for oy in range(g_out):
        for ox in range(g_out):
            out[oy, ox] = np.mean(y[oy * s:oy * s + k, ox * s:ox * s + k], axis=(0, 1))
    return out.reshape(g_out * g_out, -1)


def vit_features(config, W, image, **ablation):
    """Encoder output after vision.norm: [g*g, C] float64 (registers
    dropped).  `ablation` is passed to every window layer."""
    c = vit_config(config)
    g, C, p, R = c["g"], c["hidden_size"], c["patch_size"], c["num_registers"]
    S = c["image_size"]
    image = np.asarray(image, dtype=np.float64)
    if image.shape != (3, S, S):
        raise ValueError("image tensor has shape %s, expected [3, %d, %d]"
                         % (list(image.shape), S, S))
    x = patch_embed(image, _tensor(W, "vision.patch_embed.weight", [C, 3, p, p]),
                    _tensor(W, "vision.patch_embed.bias", [C]), p)
    x = x + _tensor(W, "vision.pos_embed", [1, g, g, C]).reshape(g * g, C)
    if R:
        x = np.concatenate([_tensor(W, "vision.registers", [R, C]), x])
    elif "vision.registers" in W:
        raise ValueError("tensor vision.registers present but num_registers is 0")
    for i in range(c["num_layers"]):
        p_ = "vision.blocks.%d." % i
        if vit_layer_is_global(c, i):
            x = vit_block(x, W, p_, c, R, "global", _vit_rel(c, W, p_, g))
        else:
            x = vit_block(x, W, p_, c, R, "window", _vit_rel(c, W, p_, c["window_size"]),
                          **ablation)
    return layernorm(x[R:], _tensor(W, "vision.norm.weight", [C]),
                     _tensor(W, "vision.norm.bias", [C]), c["layer_norm_eps"])


def vit_adapter(config, W, f):
    """The vision-language adapter: [g*g, C] -> [g_out^2, D] float64."""
    c = vit_config(config)
    a = c["adapter"]
    g, C, D = c["g"], c["hidden_size"], a["lm_hidden_size"]
    y = f
    for j in range(a["num_layers"]):
        y = vit_block(y, W, "adapter.blocks.%d." % j, c, 0, "global")
    y = _affine(y, W, "adapter.linear", True)
    if y.shape[1] != D:
        raise ValueError("adapter.linear gives width %d, expected lm_hidden_size %d"
                         % (y.shape[1], D))
    y = conv3x3(y.reshape(g, g, D), _tensor(W, "adapter.conv.weight", [D, D, 3, 3]),
                _tensor(W, "adapter.conv.bias", [D]))
    return avg_pool(y, a["grid"])


def vit(config, weights, image, **ablation):
    """fm_vit: the adapter's image tokens for one [3, S, S] image tensor:
    float32 [g_out^2, D]."""
    W = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    return vit_adapter(config, W, vit_features(config, W, image, **ablation)).astype(np.float32)


def preprocess_image(config, path):
    """An image file as the runtime preprocesses it (docs/vit.md): PIL
    decode, RGB, resize to image_size^2, /255, normalize -> float32 [3, S, S]."""
    from PIL import Image
    c = vit_config(config)
    S = c["image_size"]
    filt = {"bicubic": Image.BICUBIC, "bilinear": Image.BILINEAR}[c["resample"]]
    with Image.open(path) as im:
        rgb = im.convert("RGB").resize((S, S), filt)
    x = np.asarray(rgb, dtype=np.float64) / 255.0
    x = (x - np.asarray(c["image_mean"], np.float64)) / np.asarray(c["image_std"], np.float64)
    return x.transpose(2, 0, 1).astype(np.float32)


def load_image(config, path):
    """A .npy [3, S, S] tensor as is, any other file through preprocess_image."""
    if path.endswith(".npy"):
        return np.load(path).astype(np.float32)
    return preprocess_image(config, path)


def _decoder_hidden(tc):
    return tc["hidden_dim"] if tc.get("model_type") == "afm7" else tc["hidden_size"]


def _fm_vlm(cfg, W, tokens, images):
    tc, vc = cfg["text_config"], cfg["vision_config"]
    idx = int(cfg["image_token_index"])
    c = vit_config(vc)
    n = c["adapter"]["grid"] ** 2
    if c["adapter"]["lm_hidden_size"] != _decoder_hidden(tc):
        raise ValueError("vision adapter lm_hidden_size %d != decoder hidden size %d"
                         % (c["adapter"]["lm_hidden_size"], _decoder_hidden(tc)))
    t = _tokens(tokens, tc["vocab_size"])
    at = np.nonzero(t == idx)[0]
    if at.size != n * len(images):
        raise ValueError("the prompt has %d image placeholders (token %d), expected "
                         "%d images x %d tokens = %d" % (at.size, idx, len(images), n,
                                                         n * len(images)))
    # Every run of consecutive placeholders holds whole images.
    runs = np.split(at, np.nonzero(np.diff(at) != 1)[0] + 1) if at.size else []
    for r in runs:
        if r.size % n:
            raise ValueError("a run of %d image placeholders at position %d is not a "
                             "multiple of %d tokens per image" % (r.size, int(r[0]), n))
    rows = (np.concatenate([vit_adapter(vc, W, vit_features(vc, W, im)) for im in images])
            if images else np.zeros((0, _decoder_hidden(tc))))

    def inject(_, x):
        x = x.copy()
        x[at] = rows
        return x

    mt = tc.get("model_type")
    if mt in ("llama", "mixtral", "qwen2_moe"):
        return _hf_decoder(tc, W, tokens, mt, inject)
    if mt == "afm7":
        return _afm7(tc, W, tokens, inject)
    if mt == "pt_moe":
        return _pt_moe(tc, W, tokens, inject)
    raise ValueError("fm_vlm: unsupported text_config model_type %r" % mt)


def logits(config, weights, tokens, stats=None, images=None):
    """Causal teacher-forced logits of every position: float32 [S, vocab].

    If `stats` is a dict it receives "min_route_gap": the smallest gap, over
    all tokens and MoE layers, between the k-th and (k+1)-th routing
    probability.  A gap near 0 means a tiny numerical difference can flip an
    expert choice, so a comparison at that input is not meaningful.

    fm_vlm: `images` is the list of [3, S, S] image tensors whose adapter
    tokens replace the prompt's placeholders, in order."""
    global _STATS
    W = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    mt = config.get("model_type")
    if images and mt != "fm_vlm":
        raise ValueError("images given to a %r model (only fm_vlm takes them)" % mt)
    _STATS = stats
    try:
        if mt in ("llama", "mixtral", "qwen2_moe"):
            out = _hf_decoder(config, W, tokens, mt)
        elif mt == "afm7":
            out = _afm7(config, W, tokens)
        elif mt == "pt_moe":
            out = _pt_moe(config, W, tokens)
        elif mt == "fm_vlm":
            out = _fm_vlm(config, W, tokens, list(images or []))
        elif mt == "fm_vit":
            raise ValueError("fm_vit has no logits: use vit() for its image tokens")
        else:
            raise ValueError("unsupported model_type %r" % mt)
    finally:
        _STATS = None
    return out.astype(np.float32)


# ----------------------------------------------------------------------------
# Comparison / CLI


def compare(ref, got, rtol=1e-3, min_argmax_agree=None, stats=None, argmax=True):
    """-> (ok, summary line).  `stats` from logits() adds min_route_gap.
    argmax=False (image tokens, not logits): only max|ref-got| counts."""
    ref = np.asarray(ref, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    while got.ndim > 2 and got.shape[0] == 1:
        got = got[0]
    if got.ndim == 1:
        got = got[None, :]
    if got.shape != ref.shape:
        return False, ("shape_mismatch got=%s ref=%s"
                       % (list(got.shape), list(ref.shape)))
    finite = bool(np.all(np.isfinite(got)))
    diff = float(np.max(np.abs(ref - got))) if finite else float("inf")
    scale = float(np.max(np.abs(ref)))
    rel = diff / scale if scale > 0 else (0.0 if diff == 0 else float("inf"))
    agree = int(np.sum(np.argmax(ref, -1) == np.argmax(got, -1)))
    N = ref.shape[0]
    ok = finite and diff <= rtol * scale
    if not argmax:
        return ok, ("%s max_abs_diff=%.6g max_abs_value=%.6g rel=%.6g (rtol=%g)"
                    % ("PASS" if ok else "FAIL", diff, scale, rel, rtol))
    if min_argmax_agree is None:
        ok = ok and agree == N
    else:
        ok = ok and agree >= min_argmax_agree * N - 1e-9
    line = ("%s max_abs_diff=%.6g max_abs_logit=%.6g rel=%.6g argmax_agree=%d/%d"
            " (rtol=%g%s)" % ("PASS" if ok else "FAIL", diff, scale, rel, agree,
                              N, rtol, "" if min_argmax_agree is None else
                              ", min_argmax_agree=%g" % min_argmax_agree))
    if stats and "min_route_gap" in stats:
        line += " min_route_gap=%.3g" % stats["min_route_gap"]
    return ok, line


def main(argv=None):
    ap = argparse.ArgumentParser(description="numpy reference logits")
    ap.add_argument("model_dir")
    ap.add_argument("--tokens", help="comma-separated token ids (not for fm_vit)")
    ap.add_argument("--image", action="append", default=[], metavar="FILE",
                    help="fm_vit/fm_vlm: a PNG/JPEG file, or a [3,S,S] float32 .npy "
                         "(repeatable, in prompt order)")
    ap.add_argument("--out", help="write the [tokens, vocab] float32 logits (.npy); "
                                  "fm_vit: the [N, D] image tokens")
    ap.add_argument("--compare", metavar="GOT_NPY",
                    help="compare against another [tokens, vocab] array")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--min-argmax-agree", type=float, default=None)
    a = ap.parse_args(argv)
    try:
        cfg, W = load_checkpoint(a.model_dir)
        stats = {}
        mt = cfg.get("model_type")
        vcfg = cfg.get("vision_config") if mt == "fm_vlm" else cfg
        images = [load_image(vcfg, f) for f in a.image]
        if mt == "fm_vit":
            if len(images) != 1 or a.tokens:
                raise ValueError("fm_vit takes exactly one --image and no --tokens")
            ref = vit(cfg, W, images[0])
        else:
            if a.tokens is None:
                raise ValueError("--tokens is required for model_type %r" % mt)
            toks = [int(s) for s in a.tokens.replace(" ", "").split(",") if s != ""]
            ref = logits(cfg, W, toks, stats, images)
    except Exception as e:  # noqa: BLE001 - CLI reports any failure
        print("fm_reference: error: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 2
    if a.out:
        np.save(a.out, ref)
    if a.compare:
        try:
            got = np.load(a.compare)
        except Exception as e:  # noqa: BLE001
            print("fm_reference: error: cannot load %s: %s" % (a.compare, e),
                  file=sys.stderr)
            return 2
        ok, line = compare(ref, got, a.rtol, a.min_argmax_agree, stats,
                           argmax=mt != "fm_vit")
        print(line)
        return 0 if ok else 1
    if not a.out:
        if mt == "fm_vit":
            print("image tokens shape=%s max_abs=%.6g" % (list(ref.shape),
                                                         float(np.max(np.abs(ref)))))
        else:
            print("logits shape=%s argmax=%s" % (list(ref.shape),
                                                ",".join(str(int(i)) for i in np.argmax(ref, -1))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
