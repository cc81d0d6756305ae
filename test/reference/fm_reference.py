#!/usr/bin/env python3
"""Independent numpy reference forward pass for the fmc model families.

Families: llama, afm7, pt_moe, mixtral, qwen2_moe (config.json `model_type`).
Written from the model semantics (see /work/shared/design/MODEL-FACTS.md and
the HF/MLX definitions), not from compiler code.  Computes in float64 and
returns float32 logits for every position (causal, teacher-forced).

Module API:
  load_checkpoint(dir) -> (config dict, {name: float32 ndarray})
  logits(config, weights, tokens) -> float32 ndarray [len(tokens), vocab]

  load_adapter(dir) -> (adapter_config dict, {module: (A, B, s)})
  merge_adapters(weights, [(dir, scale), ...]) -> weights with
      W' = W + scale * s * B @ A for every module an adapter updates

CLI:
  fm_reference.py MODEL_DIR --tokens 1,2,3 [--out ref.npy]
                  [--adapter ADAPTER_DIR[:SCALE] ...]
                  [--compare got.npy [--rtol 1e-3] [--min-argmax-agree F]]
  --compare passes when max|ref-got| <= rtol * max|ref| and the argmax agrees
  at every position (or at a fraction >= F of positions with
  --min-argmax-agree).  Prints one summary line; exit 0 pass, 1 fail, 2 error.
  For MoE models the line ends with min_route_gap=G: the smallest margin
  between the k-th and (k+1)-th routing probability at these tokens (near 0:
  an expert choice can flip on rounding noise; pick other tokens).

LoRA adapters (PEFT): adapter_config.json and adapter_model.safetensors with
base_model.model.<module>.lora_A.weight [r, in] and .lora_B.weight [out, r];
s = lora_alpha / r (lora_alpha / sqrt(r) with use_rslora), r and alpha per
module from rank_pattern / alpha_pattern (the first key k, in file order,
with re.match(r"(.*\.)?(k)$", module)).  --adapter is repeatable: the
updates are summed.

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
"""

import argparse
import json
import os
import re
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


def load_adapter(adapter_dir):
    """-> (config, {module: (A [r, in], B [out, r], s)}) as float64."""
    with open(os.path.join(adapter_dir, "adapter_config.json")) as f:
        cfg = json.load(f, object_pairs_hook=lambda kv: dict(kv))
    tensors = _read_safetensors(os.path.join(adapter_dir,
                                             "adapter_model.safetensors"))
    pre, suf_a, suf_b = "base_model.model.", ".lora_A.weight", ".lora_B.weight"
    modules = {}
    for name, value in tensors.items():
        if not name.startswith(pre) or not (name.endswith(suf_a)
                                            or name.endswith(suf_b)):
            raise ValueError("%s: tensor %s is not a LoRA weight"
                             % (adapter_dir, name))
        module = name[len(pre):-len(suf_a)]
        modules.setdefault(module, {})["A" if name.endswith(suf_a) else "B"] = \
            value.astype(np.float64)

    def pattern(patterns, module, default):
        for key, value in (patterns or {}).items():
            if re.match(r"(.*\.)?(%s)$" % key, module):
                return value
        return default

    out = {}
    for module, m in modules.items():
        if "A" not in m or "B" not in m:
            raise ValueError("%s: module %s lacks lora_A or lora_B"
                             % (adapter_dir, module))
        r = int(pattern(cfg.get("rank_pattern"), module, cfg["r"]))
        alpha = float(pattern(cfg.get("alpha_pattern"), module,
                              cfg["lora_alpha"]))
        if m["A"].shape[0] != r or m["B"].shape[1] != r:
            raise ValueError("%s: module %s has rank %d/%d, config says %d"
                             % (adapter_dir, module, m["A"].shape[0],
                                m["B"].shape[1], r))
        s = alpha / np.sqrt(r) if cfg.get("use_rslora") else alpha / r
        out[module] = (m["A"], m["B"], s)
    return cfg, out


def merge_adapters(weights, adapters):
    """weights with W' = W + scale * s * B @ A for each (dir, scale)."""
    W = dict(weights)
    for adapter_dir, scale in adapters:
        _, lora = load_adapter(adapter_dir)
        for module, (A, B, s) in lora.items():
            key = module + ".weight"
            if key not in W:
                raise KeyError("%s: the model has no weight %s"
                               % (adapter_dir, key))
            W[key] = np.asarray(W[key], dtype=np.float64) + scale * s * (B @ A)
    return W


def parse_adapter_arg(text):
    """"DIR[:SCALE]" -> (dir, scale)."""
    head, sep, tail = text.rpartition(":")
    if sep:
        try:
            return head, float(tail)
        except ValueError:
            pass
    return text, 1.0


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


def _hf_decoder(cfg, W, tokens, family):
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


def _afm7(cfg, W, tokens):
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


def _pt_moe(cfg, W, tokens):
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


def logits(config, weights, tokens, stats=None):
    """Causal teacher-forced logits of every position: float32 [S, vocab].

    If `stats` is a dict it receives "min_route_gap": the smallest gap, over
    all tokens and MoE layers, between the k-th and (k+1)-th routing
    probability.  A gap near 0 means a tiny numerical difference can flip an
    expert choice, so a comparison at that input is not meaningful."""
    global _STATS
    W = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    mt = config.get("model_type")
    _STATS = stats
    try:
        if mt in ("llama", "mixtral", "qwen2_moe"):
            out = _hf_decoder(config, W, tokens, mt)
        elif mt == "afm7":
            out = _afm7(config, W, tokens)
        elif mt == "pt_moe":
            out = _pt_moe(config, W, tokens)
        else:
            raise ValueError("unsupported model_type %r" % mt)
    finally:
        _STATS = None
    return out.astype(np.float32)


# ----------------------------------------------------------------------------
# Comparison / CLI


def compare(ref, got, rtol=1e-3, min_argmax_agree=None, stats=None):
    """-> (ok, summary line).  `stats` from logits() adds min_route_gap."""
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
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--out", help="write the [tokens, vocab] float32 logits (.npy)")
    ap.add_argument("--compare", metavar="GOT_NPY",
                    help="compare against another [tokens, vocab] array")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--min-argmax-agree", type=float, default=None)
    ap.add_argument("--adapter", action="append", default=[],
                    metavar="DIR[:SCALE]",
                    help="merge a PEFT LoRA adapter (repeatable, summed)")
    a = ap.parse_args(argv)
    try:
        toks = [int(s) for s in a.tokens.replace(" ", "").split(",") if s != ""]
        cfg, W = load_checkpoint(a.model_dir)
        if a.adapter:
            W = merge_adapters(W, [parse_adapter_arg(x) for x in a.adapter])
        stats = {}
        ref = logits(cfg, W, toks, stats)
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
        ok, line = compare(ref, got, a.rtol, a.min_argmax_agree, stats)
        print(line)
        return 0 if ok else 1
    if not a.out:
        print("logits shape=%s argmax=%s" % (list(ref.shape),
                                            ",".join(str(int(i)) for i in np.argmax(ref, -1))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
