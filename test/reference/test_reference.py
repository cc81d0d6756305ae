#!/usr/bin/env python3
"""Tests for examples/gen_checkpoint.py and test/reference/fm_reference.py.

Run: /usr/bin/python3 test/reference/test_reference.py   (numpy only)
Prints one line per test and "N passed, M failed"; exits 1 on any failure.

The naive_* functions below are a second, deliberately different
implementation (per position / per head Python loops, explicit pair
rotations, per-token routing) used to hand-check the vectorized reference.
"""

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GEN = os.path.join(ROOT, "examples", "gen_checkpoint.py")
REF = os.path.join(HERE, "fm_reference.py")
sys.path[:0] = [HERE, os.path.join(ROOT, "examples")]

import fm_reference as ref  # noqa: E402
import gen_checkpoint as gen  # noqa: E402

TINY = [("llama", "tiny"), ("llama", "odd"), ("afm7", "tiny"), ("afm7", "small"),
        ("pt_moe", "tiny"), ("mixtral", "tiny"), ("qwen2_moe", "tiny")]
TOKENS = [3, 17, 5, 99, 42, 7, 0, 200, 13, 1]

_TMP = tempfile.mkdtemp(prefix="fm_ref_test_")
_CACHE = {}


def ckpt(family, preset, seed=0, dtype="f32", shards=1, qat=None, sets=None):
    """Generate (once) and return the checkpoint directory."""
    key = (family, preset, seed, dtype, shards, qat,
           json.dumps(sets or {}, sort_keys=True))
    if key not in _CACHE:
        d = os.path.join(_TMP, "ck%d" % len(_CACHE))
        gen.generate(family, preset, d, seed, dtype, shards, qat, sets)
        _CACHE[key] = d
    return _CACHE[key]


def run_ref(d, tokens=TOKENS):
    cfg, W = ref.load_checkpoint(d)
    return ref.logits(cfg, W, tokens)


def rel_diff(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(a)))


# ----------------------------------------------------------------------------
# Naive second implementation


def n_rms(v, w, eps):
    return v / math.sqrt(float(np.dot(v, v)) / v.size + eps) * w


def n_rot(vec, p, theta, style):
    hd = vec.size
    out = vec.copy()
    for i in range(hd // 2):
        a, b = (i, i + hd // 2) if style == "half" else (2 * i, 2 * i + 1)
        ang = p * theta ** (-2.0 * i / hd)
        c, s = math.cos(ang), math.sin(ang)
        out[a] = vec[a] * c - vec[b] * s
        out[b] = vec[b] * c + vec[a] * s
    return out


def n_attend(q, k, v, window=None):
    """q: list over positions of [nh, hd]; k, v: lists of [nkv, hd]."""
    S = len(q)
    nh, hd = q[0].shape
    nkv = k[0].shape[0]
    out = []
    for i in range(S):
        heads = []
        for h in range(nh):
            g = h * nkv // nh
            js = [j for j in range(i + 1) if window is None or j > i - window]
            sc = [float(np.dot(q[i][h], k[j][g])) / math.sqrt(hd) for j in js]
            m = max(sc)
            e = [math.exp(s - m) for s in sc]
            z = sum(e)
            acc = np.zeros(hd)
            for ej, j in zip(e, js):
                acc += ej / z * v[j][g]
            heads.append(acc)
        out.append(np.concatenate(heads))
    return out


def n_ffn(x, Wg, Wu, Wd):
    g = Wg @ x
    return Wd @ (g / (1.0 + np.exp(-g)) * (Wu @ x))


def n_moe(x, Wr, experts, k, renorm):
    lg = Wr @ x
    p = np.exp(lg - lg.max())
    p = p / p.sum()
    chosen = sorted(range(len(experts)), key=lambda e: (-p[e], e))[:k]
    ws = [p[e] for e in chosen]
    if renorm:
        z = sum(ws)
        ws = [w / z for w in ws]
    return sum(w * n_ffn(x, *experts[e]) for w, e in zip(ws, chosen))


def naive_hf(cfg, W, toks, family, layer_opts=None, return_stream=False):
    """llama / mixtral / qwen2_moe, per token.  layer_opts[i] = (window,
    use_rope) lets the same loop check pt_moe-style local/NoPE layers."""
    W = {k: np.asarray(v, np.float64) for k, v in W.items()}
    H = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or H // nh
    eps = cfg["rms_norm_eps"]
    th = cfg["rope_theta"]
    xs = [W["model.embed_tokens.weight"][t].copy() for t in toks]
    for i in range(cfg["num_hidden_layers"]):
        P = "model.layers.%d." % i
        window, use_rope = (layer_opts[i] if layer_opts else (None, True))
        qs, ks, vs = [], [], []
        for p, x in enumerate(xs):
            n = n_rms(x, W[P + "input_layernorm.weight"], eps)
            proj = {}
            for nm in "qkv":
                y = W[P + "self_attn.%s_proj.weight" % nm] @ n
                if P + "self_attn.%s_proj.bias" % nm in W:
                    y = y + W[P + "self_attn.%s_proj.bias" % nm]
                proj[nm] = y
            q = proj["q"].reshape(nh, hd)
            kk = proj["k"].reshape(nkv, hd)
            if use_rope:
                q = np.stack([n_rot(q[h], p, th, "half") for h in range(nh)])
                kk = np.stack([n_rot(kk[h], p, th, "half") for h in range(nkv)])
            qs.append(q)
            ks.append(kk)
            vs.append(proj["v"].reshape(nkv, hd))
        att = n_attend(qs, ks, vs, window)
        new = []
        for p, x in enumerate(xs):
            h = x + W[P + "self_attn.o_proj.weight"] @ att[p]
            n = n_rms(h, W[P + "post_attention_layernorm.weight"], eps)
            if family == "mixtral":
                E = cfg["num_local_experts"]
                ex = [tuple(W[P + "block_sparse_moe.experts.%d.%s.weight" % (e, w)]
                            for w in ("w1", "w3", "w2")) for e in range(E)]
                f = n_moe(n, W[P + "block_sparse_moe.gate.weight"], ex,
                          cfg["num_experts_per_tok"], True)
            elif P + "mlp.gate.weight" in W:  # qwen2_moe sparse layer
                E = cfg["num_experts"]
                ex = [tuple(W[P + "mlp.experts.%d.%s_proj.weight" % (e, w)]
                            for w in ("gate", "up", "down")) for e in range(E)]
                f = n_moe(n, W[P + "mlp.gate.weight"], ex,
                          cfg["num_experts_per_tok"], cfg["norm_topk_prob"])
                gate = float(W[P + "mlp.shared_expert_gate.weight"][0] @ n)
                f = f + 1.0 / (1.0 + math.exp(-gate)) * n_ffn(
                    n, *(W[P + "mlp.shared_expert.%s_proj.weight" % w]
                         for w in ("gate", "up", "down")))
            else:
                f = n_ffn(n, *(W[P + "mlp.%s_proj.weight" % w]
                               for w in ("gate", "up", "down")))
            new.append(h + f)
        xs = new
    if return_stream:
        return np.stack(xs)
    head = (W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"]
            else W["lm_head.weight"])
    return np.stack([head @ n_rms(x, W["model.norm.weight"], eps) for x in xs])


def naive_afm7(cfg, W, toks):
    W = {k: np.asarray(v, np.float64) for k, v in W.items()}
    H = cfg["hidden_dim"]
    nh, nkv = cfg["num_heads"], cfg["num_kv_heads"]
    hd = H // nh
    eps = cfg["rms_norm_eps"]
    th = cfg["rope_theta"]
    R = cfg["num_kv_reuse_layers"]
    xs = [W["model.embedding.weight"][t].copy() for t in toks]

    def fq(a, s):
        return np.array([min(127.0, max(-128.0, float(np.round(e / s)))) * s
                         for e in a])

    ks = vs = None
    layers = [("model.layers.%d." % i, False) for i in range(cfg["num_layers"] - R)]
    layers += [("model.kv_reuse_layers.%d." % m, True) for m in range(R)]
    for P, reuse in layers:
        qs, nks, nvs = [], [], []
        for p, x in enumerate(xs):
            n = n_rms(x, W[P + "input_layernorm.weight"], eps)
            if reuse:
                qf = W[P + "self_attn.q_proj.weight"] @ n
            else:
                qkv = W[P + "self_attn.qkv_proj.weight"] @ n
                qf = qkv[:nh * hd]
                kf = qkv[nh * hd:(nh + nkv) * hd]
                vf = qkv[(nh + nkv) * hd:]
                sk = float(W[P + "self_attn.quant_key_scale"])
                sv = float(W[P + "self_attn.quant_value_scale"])
                nks.append(np.stack([
                    fq(n_rms(n_rot(kf[g * hd:(g + 1) * hd], p, th, "interleaved"),
                             W[P + "self_attn.k_norm.weight"], 1e-5), sk)
                    for g in range(nkv)]))
                nvs.append(np.stack([fq(vf[g * hd:(g + 1) * hd], sv)
                                     for g in range(nkv)]))
            qs.append(np.stack([
                n_rms(n_rot(qf[h * hd:(h + 1) * hd], p, th, "interleaved"),
                      W[P + "self_attn.q_norm.weight"], 1e-5) for h in range(nh)]))
        if not reuse:
            ks, vs = nks, nvs
        att = n_attend(qs, ks, vs)
        new = []
        for p, x in enumerate(xs):
            h = x + W[P + "self_attn.out_proj.weight"] @ att[p]
            n = n_rms(h, W[P + "post_attention_layernorm.weight"], eps)
            new.append(h + n_ffn(n, *(W[P + "mlp.%s_proj.weight" % w]
                                      for w in ("gate", "up", "down"))))
        xs = new
    E = W["model.embedding.weight"]
    return np.stack([E @ n_rms(x, W["model.output_norm.weight"], eps) for x in xs])


# ----------------------------------------------------------------------------
# Renaming helpers


def llama_to_pt_moe(cfg, W, depth, combine="mean", pattern=("global",),
                    window=None, global_rope=True):
    L = cfg["num_hidden_layers"]
    assert L % depth == 0
    pc = {
        "model_type": "pt_moe", "vocab_size": cfg["vocab_size"],
        "hidden_size": cfg["hidden_size"], "num_tracks": 1,
        "track_block_depth": depth, "num_track_blocks": L // depth,
        "num_attention_heads": cfg["num_attention_heads"],
        "num_key_value_heads": cfg["num_key_value_heads"],
        "head_dim": cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"],
        "intermediate_size": cfg["intermediate_size"],
        "attention_pattern": list(pattern), "sliding_window": window,
        "global_rope": global_rope, "rope_theta": cfg["rope_theta"],
        "rope_style": "half", "rms_norm_eps": cfg["rms_norm_eps"],
        "moe_layer_interval": 0, "track_combine": combine,
        "tie_word_embeddings": cfg["tie_word_embeddings"],
    }
    pw = {}
    for name, v in W.items():
        if name.startswith("model.layers."):
            parts = name.split(".")
            n = int(parts[2])
            name = "model.blocks.%d.tracks.0.layers.%d.%s" % (
                n // depth, n % depth, ".".join(parts[3:]))
        pw[name] = v
    return pc, pw


def interleave_perm(hd):
    """Row order that turns a half-style head into an interleaved one."""
    perm = np.empty(hd, dtype=np.int64)
    perm[0::2] = np.arange(hd // 2)
    perm[1::2] = np.arange(hd // 2) + hd // 2
    return perm


def is_projection(name, shape):
    if len(shape) != 2:
        return False
    if name in ("model.embed_tokens.weight", "model.embedding.weight",
                "lm_head.weight"):
        return False
    leaf = name.split(".")[-2]
    return leaf.endswith("_proj") or leaf in ("w1", "w2", "w3")


# ----------------------------------------------------------------------------
# Tests

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


@test
def presets_sane():
    """Every preset: finite logits of O(1..10), not all ties, varied argmax."""
    for fam, pre in TINY:
        cfg, W = ref.load_checkpoint(ckpt(fam, pre))
        L = ref.logits(cfg, W, TOKENS)
        assert L.shape == (len(TOKENS), cfg["vocab_size"]) and L.dtype == np.float32
        assert np.all(np.isfinite(L)), (fam, pre)
        assert 1.0 < float(L.std()) < 10.0, (fam, pre, float(L.std()))
        top2 = np.sort(L, -1)[:, -2:]
        assert np.all(top2[:, 1] - top2[:, 0] > 1e-4), (fam, pre, "near tie")
        assert len(set(np.argmax(L, -1).tolist())) >= 3, (fam, pre)
        specs = gen.tensor_specs(fam, cfg)
        assert sorted(W) == sorted(s[0] for s in specs), (fam, pre)
        for name, shape, _ in specs:
            assert list(W[name].shape) == shape, (name, W[name].shape, shape)


@test
def preset_shapes():
    c = gen.make_config("afm7", "tiny")
    assert (c["vocab_size"], c["hidden_dim"], c["num_layers"], c["num_kv_reuse_layers"],
            c["num_heads"], c["num_kv_heads"]) == (1000, 256, 16, 8, 8, 4)
    c = gen.make_config("llama", "odd")
    assert (c["vocab_size"], c["hidden_size"], c["head_dim"],
            c["num_attention_heads"], c["num_key_value_heads"]) == (997, 96, 48, 2, 2)
    _, W = ref.load_checkpoint(ckpt("afm7", "tiny"))
    assert W["model.layers.0.self_attn.qkv_proj.weight"].shape == (512, 256)
    assert W["model.layers.0.mlp.gate_proj.weight"].shape == (832, 256)
    assert W["model.layers.7.self_attn.quant_key_scale"].shape == ()
    assert W["model.kv_reuse_layers.7.self_attn.q_proj.weight"].shape == (256, 256)
    assert "model.layers.8.self_attn.qkv_proj.weight" not in W
    assert "lm_head.weight" not in W
    _, W = ref.load_checkpoint(ckpt("pt_moe", "tiny"))
    P = "model.blocks.1.tracks.1.layers."
    assert W[P + "0.mlp.gate_proj.weight"].shape == (96, 64)  # i = 2: dense
    assert W[P + "1.mlp.router.weight"].shape == (4, 64)       # i = 3: MoE
    assert W[P + "1.mlp.experts.3.down_proj.weight"].shape == (64, 64)
    _, W = ref.load_checkpoint(ckpt("qwen2_moe", "tiny"))
    assert "model.layers.1.mlp.gate_proj.weight" in W           # mlp_only_layers
    assert W["model.layers.2.mlp.shared_expert_gate.weight"].shape == (1, 64)
    assert W["model.layers.0.self_attn.k_proj.bias"].shape == (32,)


@test
def causality():
    """(a) logits at position i ignore tokens after i."""
    for fam, pre in TINY:
        cfg, W = ref.load_checkpoint(ckpt(fam, pre))
        base = ref.logits(cfg, W, TOKENS)
        for i in (0, 3, 6):
            other = TOKENS[:i + 1] + [(t * 7 + 11) % cfg["vocab_size"]
                                      for t in TOKENS[i + 1:]]
            got = ref.logits(cfg, W, other)
            assert np.allclose(got[:i + 1], base[:i + 1], rtol=0, atol=1e-5), (fam, pre, i)
            assert not np.allclose(got[i + 1:], base[i + 1:], atol=1e-3), (fam, pre, i)


@test
def sharded_equals_single():
    """(b) --shards 3 gives identical logits; index file is consistent."""
    for fam, pre in TINY:
        d1 = ckpt(fam, pre)
        d3 = ckpt(fam, pre, shards=3)
        files = sorted(f for f in os.listdir(d3) if f.endswith(".safetensors"))
        assert files == ["model-%05d-of-00003.safetensors" % k for k in (1, 2, 3)], files
        with open(os.path.join(d3, "model.safetensors.index.json")) as f:
            idx = json.load(f)
        assert set(idx["weight_map"].values()) == set(files)
        assert idx["metadata"]["total_size"] == sum(
            os.path.getsize(os.path.join(d3, f)) - 8 - _header_len(os.path.join(d3, f))
            for f in files)
        assert np.array_equal(run_ref(d1), run_ref(d3)), (fam, pre)


def _header_len(path):
    with open(path, "rb") as f:
        return int(np.frombuffer(f.read(8), "<u8")[0])


@test
def safetensors_layout():
    """Header length multiple of 8, JSON padded with spaces, contiguous
    offsets covering the data section, __metadata__ format pt."""
    for d in (ckpt("afm7", "small"), ckpt("llama", "tiny", dtype="bf16"),
              ckpt("pt_moe", "tiny", shards=3)):
        for fn in sorted(os.listdir(d)):
            if not fn.endswith(".safetensors"):
                continue
            path = os.path.join(d, fn)
            with open(path, "rb") as f:
                data = f.read()
            n = int(np.frombuffer(data[:8], "<u8")[0])
            assert n % 8 == 0
            text = data[8:8 + n].decode("utf-8")
            assert text.rstrip(" ") == text.strip() and text.lstrip().startswith("{")
            hdr = json.loads(text)
            assert hdr.pop("__metadata__") == {"format": "pt"}
            spans = sorted(v["data_offsets"] for v in hdr.values())
            assert spans[0][0] == 0
            for (a, b), (c, _) in zip(spans, spans[1:]):
                assert b == c
            assert spans[-1][1] == len(data) - 8 - n
            for v in hdr.values():
                el = {"F32": 4, "F16": 2, "BF16": 2}[v["dtype"]]
                assert v["data_offsets"][1] - v["data_offsets"][0] == \
                    el * int(np.prod(v["shape"], dtype=np.int64))
    with open(os.path.join(ckpt("llama", "tiny", dtype="bf16"), "config.json")) as f:
        assert json.load(f)["torch_dtype"] == "bfloat16"


def robust_tokens(cfg, W, min_gap=2e-3):
    """A deterministic token sequence whose MoE routing has a margin (so
    rounding noise cannot flip an expert choice)."""
    rng = np.random.default_rng(123)
    for attempt in range(50):
        toks = TOKENS if attempt == 0 else \
            rng.integers(0, cfg["vocab_size"], len(TOKENS)).tolist()
        st = {}
        ref.logits(cfg, W, toks, st)
        if st.get("min_route_gap", 1.0) >= min_gap:
            return toks
    raise AssertionError("no token sequence with routing margin")


@test
def half_precision_close():
    """(c) f16 (and bf16) checkpoints give logits close to f32 ones.  afm7 is
    looser: K/V int8 fake quantization turns weight rounding into level flips."""
    for fam, pre in TINY:
        cfg, W = ref.load_checkpoint(ckpt(fam, pre))
        toks = robust_tokens(cfg, W)
        a = ref.logits(cfg, W, toks)
        b = run_ref(ckpt(fam, pre, dtype="f16"), toks)
        c = run_ref(ckpt(fam, pre, dtype="bf16"), toks)
        assert not np.array_equal(a, b)
        tol16, tolb = (3e-2, 8e-2) if fam == "afm7" else (5e-3, 3e-2)
        assert rel_diff(a, b) < tol16, (fam, pre, rel_diff(a, b))
        assert rel_diff(a, c) < tolb, (fam, pre, rel_diff(a, c))
        assert np.mean(np.argmax(a, -1) == np.argmax(b, -1)) >= 0.8, (fam, pre)
    # KV scales (0-d) are exact in every storage dtype
    Ws = [ref.load_checkpoint(ckpt("afm7", "small", dtype=dt))[1]
          for dt in ("f32", "f16", "bf16")]
    for name in Ws[0]:
        if name.endswith("_scale"):
            assert Ws[0][name].shape == () and float(Ws[0][name]) > 0
            assert float(Ws[0][name]) == float(Ws[1][name]) == float(Ws[2][name])
    # the routing-margin statistic is reported and catches the near tie
    cfg, W = ref.load_checkpoint(ckpt("mixtral", "tiny"))
    st = {}
    ref.logits(cfg, W, TOKENS, st)
    assert 0 < st["min_route_gap"] < 1e-3, st


@test
def bf16_round_to_nearest_even():
    x = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20,
                  -(1 + 3 * 2 ** -8), 3.0e38, 0.0, -0.0], np.float32)
    got = gen.f32_to_bf16_bits(x).tolist()
    assert got == [0x3F80, 0x3F80, 0x3F82, 0x3F81, 0xBF82, 0x7F62, 0, 0x8000], \
        [hex(g) for g in got]
    _, W16 = ref.load_checkpoint(ckpt("llama", "tiny", dtype="bf16"))
    _, W32 = ref.load_checkpoint(ckpt("llama", "tiny"))
    name = "model.layers.0.mlp.up_proj.weight"
    bits = W32[name].view(np.uint32).astype(np.uint64)
    rne = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    assert np.array_equal(W16[name].view(np.uint32), rne.astype(np.uint32))


@test
def naive_llama_one_layer():
    """(d) 1-layer llama (and llama:odd, tied, hd 48) against the per-head loop."""
    for pre, sets in (("tiny", {"num_hidden_layers": 1}), ("odd", None)):
        cfg, W = ref.load_checkpoint(ckpt("llama", pre, seed=3, sets=sets))
        a = ref.logits(cfg, W, TOKENS)
        b = naive_hf(cfg, W, TOKENS, "llama")
        assert rel_diff(b, a) < 1e-6, (pre, rel_diff(b, a))


@test
def afm7_vs_naive():
    """(d) afm7 with and without KV-reuse layers against the naive loop."""
    for pre, sets in (("small", {"num_kv_reuse_layers": 0}), ("small", None),
                      ("tiny", None)):
        d = ckpt("afm7", pre, seed=5, sets=sets)
        cfg, W = ref.load_checkpoint(d)
        if sets:
            assert not any(k.startswith("model.kv_reuse_layers") for k in W)
            assert cfg["num_kv_reuse_layers"] == 0
        toks = TOKENS[:6] if pre == "tiny" else TOKENS
        a = ref.logits(cfg, W, toks)
        b = naive_afm7(cfg, W, toks)
        assert rel_diff(b, a) < 1e-6, (pre, sets, rel_diff(b, a))
    # The KV fake quantization matters: a huge key scale changes the output.
    cfg, W = ref.load_checkpoint(ckpt("afm7", "small", seed=5))
    W2 = dict(W)
    W2["model.layers.1.self_attn.quant_key_scale"] = np.array(0.5, np.float32)
    assert rel_diff(ref.logits(cfg, W, TOKENS), ref.logits(cfg, W2, TOKENS)) > 1e-3


@test
def naive_moe_families():
    """mixtral and qwen2_moe (biases, shared expert, dense layer) vs naive."""
    for fam in ("mixtral", "qwen2_moe"):
        cfg, W = ref.load_checkpoint(ckpt(fam, "tiny", seed=7))
        a = ref.logits(cfg, W, TOKENS)
        b = naive_hf(cfg, W, TOKENS, fam)
        assert rel_diff(b, a) < 1e-6, (fam, rel_diff(b, a))
    cfg, W = ref.load_checkpoint(ckpt("qwen2_moe", "tiny", seed=7,
                                      sets={"norm_topk_prob": True}))
    b = naive_hf(cfg, W, TOKENS, "qwen2_moe")
    assert rel_diff(b, ref.logits(cfg, W, TOKENS)) < 1e-6


@test
def moe_ties_lower_index():
    """Exact routing ties pick the lower expert index; renormalization."""
    rng = np.random.default_rng(0)
    H, E, I = 8, 4, 6
    W = {"r": np.zeros((E, H))}
    for e in range(E):
        for nm, shp in (("gate_proj", (I, H)), ("up_proj", (I, H)),
                        ("down_proj", (H, I))):
            W["e%d.%s.weight" % (e, nm)] = rng.normal(size=shp)
    x = rng.normal(size=(3, H))
    ex = ["e%d." % e for e in range(E)]
    # all four probabilities equal: top-2 must be experts 0 and 1
    got = ref.moe(x, W, "r", ex, 2, False)
    want = 0.25 * (ref.swiglu(x, W, "e0.") + ref.swiglu(x, W, "e1."))
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    got = ref.moe(x, W, "r", ex, 2, True)
    assert np.allclose(got, 2 * want, rtol=1e-12, atol=1e-12)
    # experts 1 and 3 tie for the top: k=1 picks 1
    W["r"] = np.zeros((E, H))
    W["r"][1, 0] = W["r"][3, 0] = 1.0
    x = np.abs(x)
    got = ref.moe(x, W, "r", ex, 1, True)
    assert np.allclose(got, ref.swiglu(x, W, "e1."), rtol=1e-12, atol=1e-12)


@test
def moe_degenerate_equals_llama():
    """mixtral with 1 expert / top-1 and qwen2_moe with only dense layers and
    zero biases equal llama on the same (renamed) weights."""
    cfg, W = ref.load_checkpoint(ckpt("llama", "tiny", seed=9))
    base = ref.logits(cfg, W, TOKENS)
    mc = dict(cfg, model_type="mixtral", num_local_experts=1, num_experts_per_tok=1)
    mw = {}
    for k, v in W.items():
        for old, new in (("mlp.gate_proj", "block_sparse_moe.experts.0.w1"),
                         ("mlp.up_proj", "block_sparse_moe.experts.0.w3"),
                         ("mlp.down_proj", "block_sparse_moe.experts.0.w2")):
            k = k.replace(old, new)
        mw[k] = v
    for i in range(cfg["num_hidden_layers"]):
        mw["model.layers.%d.block_sparse_moe.gate.weight" % i] = np.ones((1, 64), np.float32)
    assert rel_diff(base, ref.logits(mc, mw, TOKENS)) < 1e-9
    qc = dict(cfg, model_type="qwen2_moe", num_experts=4, num_experts_per_tok=2,
              decoder_sparse_step=1, mlp_only_layers=[0, 1])
    qw = dict(W)
    for i in range(cfg["num_hidden_layers"]):
        for nm, rows in (("q", 64), ("k", 32), ("v", 32)):
            qw["model.layers.%d.self_attn.%s_proj.bias" % (i, nm)] = np.zeros(rows, np.float32)
    assert rel_diff(base, ref.logits(qc, qw, TOKENS)) < 1e-9


@test
def pt_moe_degenerate_equals_llama():
    """(e) 1 track, no MoE, all-global layers with RoPE == llama."""
    for pre in ("tiny", "odd"):
        cfg, W = ref.load_checkpoint(ckpt("llama", pre, seed=11))
        base = ref.logits(cfg, W, TOKENS)
        L = cfg["num_hidden_layers"]
        for depth, combine in ((L, "mean"), (1, "sum"), (1, "mean")):
            pc, pw = llama_to_pt_moe(cfg, W, depth, combine)
            assert rel_diff(base, ref.logits(pc, pw, TOKENS)) < 1e-9, (pre, depth, combine)
        # local layers with a window covering the sequence are global layers
        pc, pw = llama_to_pt_moe(cfg, W, L, pattern=("local",), window=len(TOKENS))
        assert rel_diff(base, ref.logits(pc, pw, TOKENS)) < 1e-9, pre
        # a short window or NoPE global layers must change the result
        pc, pw = llama_to_pt_moe(cfg, W, L, pattern=("local",), window=2)
        assert rel_diff(base, ref.logits(pc, pw, TOKENS)) > 1e-3
        pc, pw = llama_to_pt_moe(cfg, W, L, global_rope=False)
        assert rel_diff(base, ref.logits(pc, pw, TOKENS)) > 1e-3


@test
def pt_moe_local_nope_vs_naive():
    """Mixed local(window 3)/global-NoPE single track vs the naive loop."""
    cfg, W = ref.load_checkpoint(ckpt("llama", "tiny", seed=13,
                                      sets={"num_hidden_layers": 4}))
    pattern = ("local", "global", "local", "local")
    pc, pw = llama_to_pt_moe(cfg, W, 2, pattern=pattern, window=3, global_rope=False)
    opts = [(3, True) if k == "local" else (None, False) for k in pattern]
    a = ref.logits(pc, pw, TOKENS)
    b = naive_hf(cfg, W, TOKENS, "llama", layer_opts=opts)
    assert rel_diff(b, a) < 1e-6, rel_diff(b, a)


@test
def pt_moe_two_tracks_by_hand():
    """Track combine: 2 tracks x 1 block == mean / sum of the two tracks'
    residual streams, each run as a naive llama from the same input."""
    cfg, W = ref.load_checkpoint(ckpt("pt_moe", "tiny", seed=15,
                                      sets={"num_track_blocks": 1,
                                            "moe_layer_interval": 0,
                                            "attention_pattern": ["global"],
                                            "global_rope": True}))
    lc = {"model_type": "llama", "vocab_size": cfg["vocab_size"],
          "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96,
          "rms_norm_eps": cfg["rms_norm_eps"], "rope_theta": cfg["rope_theta"],
          "tie_word_embeddings": False}
    streams = []
    for tr in range(2):
        pre = "model.blocks.0.tracks.%d.layers." % tr
        lw = {"model.embed_tokens.weight": W["model.embed_tokens.weight"]}
        for k, v in W.items():
            if k.startswith(pre):
                lw["model.layers." + k[len(pre):]] = v
        streams.append(naive_hf(lc, lw, TOKENS, "llama", return_stream=True))
    assert rel_diff(streams[0], streams[1]) > 1e-2  # tracks really differ
    for combine, div in (("mean", 2.0), ("sum", 1.0)):
        x = (streams[0] + streams[1]) / div
        want = ref.rmsnorm(x, W["model.norm.weight"].astype(np.float64),
                           cfg["rms_norm_eps"]) @ W["lm_head.weight"].astype(np.float64).T
        got = ref.logits(dict(cfg, track_combine=combine), W, TOKENS)
        assert rel_diff(want, got) < 1e-6, (combine, rel_diff(want, got))


@test
def interleaved_rope_equals_permuted_half():
    """pt_moe rope_style interleaved with q/k rows permuted per head equals
    rope_style half on the original weights."""
    cfg, W = ref.load_checkpoint(ckpt("pt_moe", "tiny", seed=17,
                                      sets={"global_rope": True}))
    a = ref.logits(cfg, W, TOKENS)
    hd = cfg["head_dim"]
    perm = interleave_perm(hd)
    W2 = {}
    for k, v in W.items():
        if k.endswith("self_attn.q_proj.weight") or k.endswith("self_attn.k_proj.weight"):
            nh = v.shape[0] // hd
            rows = np.concatenate([h * hd + perm for h in range(nh)])
            v = v[rows]
        W2[k] = v
    c2 = dict(cfg, rope_style="interleaved")
    assert rel_diff(a, ref.logits(c2, W2, TOKENS)) < 1e-9
    assert rel_diff(a, ref.logits(c2, W, TOKENS)) > 1e-3


@test
def qat_grid():
    """(f) --qat-grid 32: projections on s*{+-0.5,+-1.5} per 32-input group,
    s exact in f16; other tensors off-grid; exact in bf16 too."""
    for fam, pre in (("llama", "tiny"), ("llama", "odd"), ("afm7", "small"),
                     ("pt_moe", "tiny"), ("qwen2_moe", "tiny"), ("mixtral", "tiny")):
        G = 32
        cfg, W = ref.load_checkpoint(ckpt(fam, pre, qat=G))
        _, Wb = ref.load_checkpoint(ckpt(fam, pre, qat=G, dtype="bf16"))
        nproj = 0
        for name, w in W.items():
            if not is_projection(name, w.shape):
                if w.ndim == 2 and w.shape[1] >= G:
                    g = np.abs(w[:, :G]).astype(np.float64)
                    assert not np.all(np.isclose(g, g.min(1, keepdims=True)) |
                                      np.isclose(g, 3 * g.min(1, keepdims=True))), name
                continue
            nproj += 1
            assert np.array_equal(w, Wb[name]), (name, "not exact in bf16")
            a = np.abs(w.astype(np.float64))
            for c0 in range(0, w.shape[1], G):
                grp = a[:, c0:c0 + G]
                s2 = grp.min(axis=1, keepdims=True)  # = s/2 (w.p. ~1 - 2^-32)
                assert np.all(s2 > 0), name
                assert np.all((grp == s2) | (grp == 3 * s2)), (name, c0)
                s = (2 * s2).ravel()
                assert np.array_equal(s.astype(np.float16).astype(np.float64), s), name
            if w.shape[1] >= 2 * G:  # one scale per 32, not per 64
                grp = a[:, :2 * G]
                s2 = grp.min(axis=1, keepdims=True)
                assert not np.all((grp == s2) | (grp == 3 * s2)), name
        assert nproj >= 7, (fam, nproj)
    # grid weights still give sane logits
    L = run_ref(ckpt("llama", "tiny", qat=32))
    assert np.all(np.isfinite(L)) and 1.0 < float(L.std()) < 10.0


@test
def determinism_and_seed():
    d1 = ckpt("pt_moe", "tiny", seed=21)
    d2 = os.path.join(_TMP, "again")
    gen.generate("pt_moe", "tiny", d2, seed=21)
    with open(os.path.join(d1, "model.safetensors"), "rb") as f1, \
            open(os.path.join(d2, "model.safetensors"), "rb") as f2:
        assert f1.read() == f2.read()
    assert not np.array_equal(run_ref(d1), run_ref(ckpt("pt_moe", "tiny", seed=22)))


@test
def cli_end_to_end():
    d = os.path.join(_TMP, "cli")
    py = sys.executable
    r = subprocess.run([py, GEN, "--family", "afm7", "--preset", "small", "--out", d,
                        "--seed", "4", "--dtype", "f16", "--shards", "2",
                        "--set", "num_kv_reuse_layers=1", "--set", "rope_theta=20000"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    assert cfg["num_kv_reuse_layers"] == 1 and cfg["rope_theta"] == 20000
    assert cfg["torch_dtype"] == "float16"
    out = os.path.join(_TMP, "ref.npy")
    toks = "1,2,3,400,508,7,9"
    r = subprocess.run([py, REF, d, "--tokens", toks, "--out", out],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    L = np.load(out)
    c2, W2 = ref.load_checkpoint(d)
    assert np.array_equal(L, ref.logits(c2, W2, [1, 2, 3, 400, 508, 7, 9]))
    r = subprocess.run([py, REF, d, "--tokens", toks, "--compare", out],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "max_abs_diff=0 " in r.stdout and \
        "argmax_agree=7/7" in r.stdout, r.stdout + r.stderr
    # small noise: fails at rtol 1e-3, passes at rtol 0.02 with agreement 0.5
    rng = np.random.default_rng(0)
    noisy = L + rng.normal(0, 0.01 * np.abs(L).max(), L.shape).astype(np.float32)
    got = os.path.join(_TMP, "got.npy")
    np.save(got, noisy)
    r = subprocess.run([py, REF, d, "--tokens", toks, "--compare", got],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stdout.startswith("FAIL"), r.stdout
    r = subprocess.run([py, REF, d, "--tokens", toks, "--compare", got, "--rtol",
                        "0.1", "--min-argmax-agree", "0.5"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    # argmax disagreement at one position fails without --min-argmax-agree
    bad = L.copy()
    bad[2, np.argmin(L[2])] = L[2].max() + 1e-3
    np.save(got, bad)
    ok, line = ref.compare(L, bad, rtol=10.0)
    assert not ok and "argmax_agree=6/7" in line, line
    ok, _ = ref.compare(L, bad, rtol=10.0, min_argmax_agree=0.8)
    assert ok
    r = subprocess.run([py, REF, d, "--tokens", "1,2,509"], capture_output=True, text=True)
    assert r.returncode == 2  # token out of range


def main():
    t0 = time.time()
    passed = failed = 0
    try:
        for fn in TESTS:
            t = time.time()
            try:
                fn()
                passed += 1
                print("PASS %-40s %.2fs" % (fn.__name__, time.time() - t))
            except Exception:  # noqa: BLE001
                failed += 1
                print("FAIL %s" % fn.__name__)
                traceback.print_exc()
            sys.stdout.flush()
    finally:
        shutil.rmtree(_TMP, ignore_errors=True)
    print("%d passed, %d failed (%.1fs)" % (passed, failed, time.time() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
