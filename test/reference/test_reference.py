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


# One command-line run of gen_checkpoint.py / fm_reference.py on a small model: seconds.
# Past the limit it is killed and that test FAILs naming it (the other tests still run).
CLI_LIMIT = 300


def cli(cmd, **kw):
    """subprocess.run(cmd, **kw), killed after CLI_LIMIT seconds (the test then fails)."""
    try:
        return subprocess.run(cmd, timeout=CLI_LIMIT, **kw)
    except subprocess.TimeoutExpired:
        raise AssertionError("TIMEOUT: killed after %d s (its limit; a hang?): %s"
                             % (CLI_LIMIT, " ".join(cmd))) from None


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
    r = cli([py, GEN, "--family", "afm7", "--preset", "small", "--out", d,
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
    r = cli([py, REF, d, "--tokens", toks, "--out", out],
            capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    L = np.load(out)
    c2, W2 = ref.load_checkpoint(d)
    assert np.array_equal(L, ref.logits(c2, W2, [1, 2, 3, 400, 508, 7, 9]))
    r = cli([py, REF, d, "--tokens", toks, "--compare", out],
            capture_output=True, text=True)
    assert r.returncode == 0 and "max_abs_diff=0 " in r.stdout and \
        "argmax_agree=7/7" in r.stdout, r.stdout + r.stderr
    # small noise: fails at rtol 1e-3, passes at rtol 0.02 with agreement 0.5
    rng = np.random.default_rng(0)
    noisy = L + rng.normal(0, 0.01 * np.abs(L).max(), L.shape).astype(np.float32)
    got = os.path.join(_TMP, "got.npy")
    np.save(got, noisy)
    r = cli([py, REF, d, "--tokens", toks, "--compare", got],
            capture_output=True, text=True)
    assert r.returncode == 1 and r.stdout.startswith("FAIL"), r.stdout
    r = cli([py, REF, d, "--tokens", toks, "--compare", got, "--rtol",
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
    r = cli([py, REF, d, "--tokens", "1,2,509"], capture_output=True, text=True)
    assert r.returncode == 2  # token out of range


# ----------------------------------------------------------------------------
# Vision (fm_vit, fm_vlm): a naive per-token implementation of docs/vit.md


VIT = [("fm_vit", "rw-vitdet-tiny"), ("fm_vit", "vit-tiny")]


def vit_image(cfg, seed=0):
    S = cfg["image_size"]
    return np.random.default_rng(seed).normal(size=(3, S, S)).astype(np.float32)


def n_ln(v, w, b, eps):
    mu = float(np.sum(v)) / v.size
    var = float(np.sum((v - mu) ** 2)) / v.size
    return (v - mu) / math.sqrt(var + eps) * w + b


def n_act(v, kind):
    out = np.empty_like(v)
    for i, x in enumerate(v):
        if kind == "gelu":
            out[i] = 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))
        elif kind == "gelu_tanh":
            out[i] = 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
        else:
            out[i] = x / (1.0 + math.exp(-1.702 * x))
    return out


def n_attend_one(q, keys, nh, rel, S):
    """q = (vector, (y, x) or None); keys = [(k, v, (y, x) or None)]."""
    qv, qpos = q
    C = qv.size
    hd = C // nh
    out = np.zeros(C)
    for h in range(nh):
        sl = slice(h * hd, (h + 1) * hd)
        sc = []
        for kv, _, kpos in keys:
            s = float(np.dot(qv[sl], kv[sl])) / math.sqrt(hd)
            if rel is not None and qpos is not None and kpos is not None:
                s += float(np.dot(qv[sl], rel[0][qpos[0] - kpos[0] + S - 1]))
                s += float(np.dot(qv[sl], rel[1][qpos[1] - kpos[1] + S - 1]))
            sc.append(s)
        m = max(sc)
        e = [math.exp(s - m) for s in sc]
        z = sum(e)
        for ej, (_, vv, _) in zip(e, keys):
            out[sl] += ej / z * vv[sl]
    return out


def naive_vit_block(xs, W, P, c, R, kind, rel):
    """xs: list of token vectors [registers..., patches row-major]."""
    C, g, nh = c["hidden_size"], c["g"], c["num_heads"]
    eps = c["layer_norm_eps"]
    Wqkv = W[P + "attn.qkv.weight"]
    bqkv = W[P + "attn.qkv.bias"] if c["qkv_bias"] else np.zeros(3 * C)
    ns = [n_ln(x, W[P + "norm1.weight"], W[P + "norm1.bias"], eps) for x in xs]
    qkv = [Wqkv @ n + bqkv for n in ns]
    split = [(t[:C], t[C:2 * C], t[2 * C:]) for t in qkv]
    att = [None] * len(xs)
    if kind == "global":
        pos = [None] * R + [(t // g, t % g) for t in range(len(xs) - R)]
        keys = [(split[i][1], split[i][2], pos[i]) for i in range(len(xs))]
        for i in range(len(xs)):
            att[i] = n_attend_one((split[i][0], pos[i]), keys, nh, rel, g)
    else:
        w = c["window_size"]
        nw = (g + w - 1) // w
        reg_sum = [np.zeros(C) for _ in range(R)]
        # A padded token is 0 after LN1: its q, k and v are the qkv bias.
        pad = (bqkv[:C], bqkv[C:2 * C], bqkv[2 * C:])
        for by in range(nw):
            for bx in range(nw):
                keys = [(split[r][1], split[r][2], None) for r in range(R)]
                queries = [(r, None) for r in range(R)]
                for ly in range(w):
                    for lx in range(w):
                        y, x = by * w + ly, bx * w + lx
                        if y < g and x < g:
                            t = R + y * g + x
                            keys.append((split[t][1], split[t][2], (ly, lx)))
                            queries.append((t, (ly, lx)))
                        else:
                            keys.append((pad[1], pad[2], (ly, lx)))
                for t, lpos in queries:
                    o = n_attend_one((split[t][0], lpos), keys, nh, rel, w)
                    if t < R:
                        reg_sum[t] += o
                    else:
                        att[t] = o
        for r in range(R):
            att[r] = reg_sum[r] / (nw * nw)
    out = []
    for x, a in zip(xs, att):
        h = x + W[P + "attn.proj.weight"] @ a + W[P + "attn.proj.bias"]
        n = n_ln(h, W[P + "norm2.weight"], W[P + "norm2.bias"], eps)
        f = n_act(W[P + "mlp.fc1.weight"] @ n + W[P + "mlp.fc1.bias"], c["hidden_act"])
        out.append(h + W[P + "mlp.fc2.weight"] @ f + W[P + "mlp.fc2.bias"])
    return out


def naive_vit(cfg, W, image):
    W = {k: np.asarray(v, np.float64) for k, v in W.items()}
    c = ref.vit_config(cfg)
    g, p, C, R = c["g"], c["patch_size"], c["hidden_size"], c["num_registers"]
    img = np.asarray(image, np.float64)
    Wpe, bpe = W["vision.patch_embed.weight"], W["vision.patch_embed.bias"]
    xs = [W["vision.registers"][r].copy() for r in range(R)]
    for py in range(g):
        for px in range(g):
            patch = img[:, py * p:(py + 1) * p, px * p:(px + 1) * p]
            v = np.array([float(np.sum(Wpe[o] * patch)) for o in range(C)]) + bpe
            xs.append(v + W["vision.pos_embed"][0, py, px])
    for i in range(c["num_layers"]):
        P = "vision.blocks.%d." % i
        glob = c["window_size"] == 0 or i in c["global_layers"]
        rel = (W[P + "attn.rel_pos_h"], W[P + "attn.rel_pos_w"]) if c["rel_pos"] else None
        xs = naive_vit_block(xs, W, P, c, R, "global" if glob else "window", rel)
    eps = c["layer_norm_eps"]
    xs = [n_ln(x, W["vision.norm.weight"], W["vision.norm.bias"], eps) for x in xs[R:]]
    a = c["adapter"]
    for j in range(a["num_layers"]):
        xs = naive_vit_block(xs, W, "adapter.blocks.%d." % j, c, 0, "global", None)
    ys = [W["adapter.linear.weight"] @ x + W["adapter.linear.bias"] for x in xs]
    D = a["lm_hidden_size"]
    Wc, bc = W["adapter.conv.weight"], W["adapter.conv.bias"]
    conv = np.zeros((g, g, D))
    for y in range(g):
        for x in range(g):
            acc = bc.copy()
            for dy in range(3):
                for dx in range(3):
                    yy, xx = y + dy - 1, x + dx - 1
                    if 0 <= yy < g and 0 <= xx < g:
                        acc += Wc[:, :, dy, dx] @ ys[yy * g + xx]
            conv[y, x] = acc
    go = a["grid"]
    s = g // go
    k = g - (go - 1) * s
    out = []
    for oy in range(go):
        for ox in range(go):
            acc = np.zeros(D)
            for y in range(oy * s, oy * s + k):
                for x in range(ox * s, ox * s + k):
                    acc += conv[y, x]
            out.append(acc / (k * k))
    return np.stack(out)


@test
def vit_presets_sane():
    """fm_vit / fm_vlm presets: tensors as specified, the grids the tests
    rely on (a window that does not divide the grid, registers), finite
    image tokens of O(1)."""
    for fam, pre in VIT + [("fm_vlm", "afm7-rw-tiny")]:
        cfg, W = ref.load_checkpoint(ckpt(fam, pre))
        specs = gen.tensor_specs(fam, cfg)
        assert sorted(W) == sorted(s[0] for s in specs), (fam, pre)
        for name, shape, _ in specs:
            assert list(W[name].shape) == shape, (name, W[name].shape, shape)
        vc = cfg["vision_config"] if fam == "fm_vlm" else cfg
        c = ref.vit_config(vc)
        T = ref.vit(vc, W, vit_image(vc))
        assert T.shape == (c["adapter"]["grid"] ** 2, c["adapter"]["lm_hidden_size"])
        assert np.all(np.isfinite(T)) and 0.1 < float(T.std()) < 10.0, (pre, float(T.std()))
    c = ref.vit_config(gen.make_config("fm_vit", "rw-vitdet-tiny"))
    assert c["g"] % c["window_size"] and c["num_registers"] > 0 and c["rel_pos"]
    assert 0 < len(c["global_layers"]) < c["num_layers"] and c["adapter"]["num_layers"] == 0
    _, W = ref.load_checkpoint(ckpt("fm_vit", "rw-vitdet-tiny"))
    assert W["vision.blocks.0.attn.rel_pos_h"].shape == (7, 16)    # window 4
    assert W["vision.blocks.1.attn.rel_pos_h"].shape == (19, 16)   # global: g 10
    c = ref.vit_config(gen.make_config("fm_vit", "vit-tiny"))
    assert (c["num_registers"], c["rel_pos"], c["qkv_bias"], c["window_size"],
            c["hidden_act"], c["adapter"]["num_layers"]) == (0, False, False, 0, "quick_gelu", 1)
    _, W = ref.load_checkpoint(ckpt("fm_vit", "vit-tiny"))
    assert "vision.blocks.0.attn.qkv.bias" not in W and "vision.registers" not in W


@test
def vit_vs_naive():
    """The vectorized reference against the per-token loop, both presets,
    and a gelu_tanh variant with registers but no relative positions."""
    cases = [("rw-vitdet-tiny", None), ("vit-tiny", None),
             ("rw-vitdet-tiny", {"hidden_act": "gelu_tanh", "rel_pos": False,
                                 "window_size": 3, "global_layers": [2],
                                 "adapter.num_layers": 1, "adapter.grid": 4})]
    for pre, sets in cases:
        cfg, W = ref.load_checkpoint(ckpt("fm_vit", pre, seed=3, sets=sets))
        img = vit_image(cfg, 1)
        a = ref.vit(cfg, W, img)
        b = naive_vit(cfg, W, img)
        assert rel_diff(b, a) < 1e-6, (pre, sets, rel_diff(b, a))


@test
def vit_window_equals_global_with_one_window():
    """w = g: one window, no padding, the register mean over one window is
    its output: window layers equal global ones (registers or not).  w > g:
    the padded tokens take part, so they do not."""
    for R in (2, 0):
        base = {"num_registers": R, "global_layers": []}
        cfg, W = ref.load_checkpoint(ckpt("fm_vit", "rw-vitdet-tiny", seed=5,
                                          sets=dict(base, window_size=10)))
        img = vit_image(cfg, 2)
        a = ref.vit(cfg, W, img)
        g = ref.vit(dict(cfg, window_size=0), W, img)
        assert rel_diff(g, a) < 1e-12, (R, rel_diff(g, a))
        cfg12, W12 = ref.load_checkpoint(ckpt("fm_vit", "rw-vitdet-tiny", seed=5,
                                              sets=dict(base, window_size=12)))
        W12 = dict(W12)
        for k in W12:  # same weights, except the larger rel-pos tables
            if k in W and W[k].shape == W12[k].shape:
                W12[k] = W[k]
        assert rel_diff(g, ref.vit(cfg12, W12, img)) > 1e-3


@test
def vit_ablations_discriminate():
    """Masking the padded keys, taking the registers from the first window
    only, or computing the rel-pos bias from the scaled q each change the
    image tokens far beyond the end-to-end tolerance (1e-5 of max)."""
    cfg, W = ref.load_checkpoint(ckpt("fm_vit", "rw-vitdet-tiny", seed=6))
    img = vit_image(cfg, 3)
    base = ref.vit(cfg, W, img)
    for abl in ({"pad": "mask"}, {"register_mean": "first"}):
        assert rel_diff(base, ref.vit(cfg, W, img, **abl)) > 1e-3, abl
    hd = cfg["hidden_size"] // cfg["num_heads"]
    Ws = {k: (v * hd ** -0.5 if "rel_pos" in k else v) for k, v in W.items()}
    assert rel_diff(base, ref.vit(cfg, Ws, img)) > 1e-3
    Wz = {k: (np.zeros_like(v) if "rel_pos" in k else v) for k, v in W.items()}
    assert rel_diff(base, ref.vit(cfg, Wz, img)) > 1e-3


@test
def vit_conv_and_patch_embed_loops():
    """conv3x3 (zero padding 1, weight [out, in, 3, 3]) and the patch
    embedding (Conv2d stride p, (channel, row, col) flattening) against
    explicit loops, on non-square inputs."""
    rng = np.random.default_rng(4)
    y = rng.normal(size=(5, 7, 3))
    Wc = rng.normal(size=(4, 3, 3, 3))
    b = rng.normal(size=4)
    got = ref.conv3x3(y, Wc, b)
    for oy in range(5):
        for ox in range(7):
            for o in range(4):
                acc = b[o]
                for i in range(3):
                    for dy in range(3):
                        for dx in range(3):
                            yy, xx = oy + dy - 1, ox + dx - 1
                            if 0 <= yy < 5 and 0 <= xx < 7:
                                acc += Wc[o, i, dy, dx] * y[yy, xx, i]
                assert abs(got[oy, ox, o] - acc) < 1e-12
    img = rng.normal(size=(3, 6, 9))
    Wp = rng.normal(size=(5, 3, 3, 3))
    bp = rng.normal(size=5)
    got = ref.patch_embed(img, Wp, bp, 3)
    assert got.shape == (6, 5)
    for py in range(2):
        for px in range(3):
            for o in range(5):
                acc = bp[o]
                for ch in range(3):
                    for r in range(3):
                        for cc in range(3):
                            acc += Wp[o, ch, r, cc] * img[ch, py * 3 + r, px * 3 + cc]
                assert abs(got[py * 3 + px, o] - acc) < 1e-12


@test
def vit_avg_pool_formula():
    """stride g // g_out, kernel g - (g_out - 1) * stride: the last window
    ends at the edge; g_out = 1 is the mean, g_out = g the identity."""
    cases = {(48, 12): (4, 4), (10, 3): (3, 4), (7, 2): (3, 4), (5, 1): (5, 5),
             (6, 6): (1, 1), (32, 8): (4, 4), (10, 4): (2, 4)}
    for (g, go), (s, k) in cases.items():
        c = ref.vit_config({"image_size": g * 2, "patch_size": 2, "hidden_size": 8,
                            "num_layers": 0, "num_heads": 2, "intermediate_size": 8,
                            "adapter": {"lm_hidden_size": 4, "grid": go}})
        assert (c["adapter"]["stride"], c["adapter"]["kernel"]) == (s, k), (g, go)
        assert (go - 1) * s + k == g
        y = np.random.default_rng(g).normal(size=(g, g, 3))
        got = ref.avg_pool(y, go)
        for oy in range(go):
            for ox in range(go):
                want = y[oy * s:oy * s + k, ox * s:ox * s + k].reshape(-1, 3).mean(0)
                assert np.allclose(got[oy * go + ox], want, rtol=0, atol=1e-12)
    y = np.random.default_rng(0).normal(size=(5, 5, 2))
    assert np.allclose(ref.avg_pool(y, 1)[0], y.reshape(-1, 2).mean(0))
    assert np.array_equal(ref.avg_pool(y, 5), y.reshape(25, 2))
    for bad in (0, 11):
        try:
            ref.vit_config({"image_size": 20, "patch_size": 2, "hidden_size": 8,
                            "num_layers": 0, "num_heads": 2, "intermediate_size": 8,
                            "adapter": {"lm_hidden_size": 4, "grid": bad}})
        except ValueError as e:
            assert "adapter grid" in str(e)
        else:
            raise AssertionError("grid %d accepted" % bad)


@test
def vit_activations_and_layernorm():
    x = np.linspace(-6, 6, 97)
    for kind in ("gelu", "gelu_tanh", "quick_gelu"):
        assert np.allclose(ref.vit_act(x, kind), n_act(x, kind), rtol=0, atol=1e-14), kind
    assert abs(ref.vit_act(np.array([1.0]), "gelu")[0] - 0.8413447460685429) < 1e-15
    assert abs(ref.vit_act(np.array([1.0]), "quick_gelu")[0] - 1 / (1 + math.exp(-1.702))) < 1e-15
    rng = np.random.default_rng(1)
    v, w, b = rng.normal(size=(3, 20))
    assert np.allclose(ref.layernorm(v[None], w, b, 1e-6)[0], n_ln(v, w, b, 1e-6), atol=1e-13)


def vlm_prompt(n, images=1, pre=(1, 2, 3), mid=(9, 10), post=(5, 6, 7), idx=508):
    toks = list(pre)
    for i in range(images):
        if i:
            toks += list(mid)
        toks += [idx] * n
    return toks + list(post)


@test
def vlm_placeholders_take_adapter_tokens():
    """fm_vlm logits equal the afm7 logits of a vocabulary extended with one
    embedding row per image token, the placeholders replaced by those rows'
    ids (the tied LM head's extra columns dropped); positions before the
    first placeholder do not see the image; image order matters."""
    cfg, W = ref.load_checkpoint(ckpt("fm_vlm", "afm7-rw-tiny", seed=8))
    tc, vc = cfg["text_config"], cfg["vision_config"]
    n = vc["adapter"]["grid"] ** 2
    V = tc["vocab_size"]
    imgs = [vit_image(vc, 10), vit_image(vc, 11)]
    toks = vlm_prompt(n, 2)
    got = ref.logits(cfg, W, toks, images=imgs)
    rows = np.concatenate([ref.vit(vc, W, im) for im in imgs]).astype(np.float64)
    We = dict(W)
    We["model.embedding.weight"] = np.concatenate([W["model.embedding.weight"], rows])
    ext = [t for t in toks]
    k = 0
    for i, t in enumerate(ext):
        if t == cfg["image_token_index"]:
            ext[i] = V + k
            k += 1
    want = ref.logits(dict(tc, vocab_size=V + 2 * n), We, ext)[:, :V]
    assert rel_diff(want, got) < 1e-6, rel_diff(want, got)
    plain = ref.logits(tc, W, toks[:3])
    assert np.allclose(got[:3], plain, rtol=0, atol=1e-5)
    swapped = ref.logits(cfg, W, toks, images=imgs[::-1])
    assert np.allclose(swapped[:3], got[:3], atol=1e-5)
    assert rel_diff(got[3:], swapped[3:]) > 1e-3


@test
def vlm_placeholder_errors():
    cfg, W = ref.load_checkpoint(ckpt("fm_vlm", "afm7-rw-tiny"))
    vc = cfg["vision_config"]
    n = vc["adapter"]["grid"] ** 2
    img = vit_image(vc)
    bad = [
        (vlm_prompt(n - 1), [img], "image placeholders"),
        (vlm_prompt(n), [img, img], "image placeholders"),
        (vlm_prompt(n)[:5] + [7] + vlm_prompt(n)[5:], [img], "not a multiple"),
        (vlm_prompt(n), [img[:, :-1]], "expected [3, 80, 80]"),
    ]
    for toks, ims, msg in bad:
        try:
            ref.logits(cfg, W, toks, images=ims)
        except ValueError as e:
            assert msg in str(e), (msg, str(e))
        else:
            raise AssertionError("accepted: %s" % msg)
    c2 = json.loads(json.dumps(cfg))
    c2["vision_config"]["adapter"]["lm_hidden_size"] = 64
    try:
        ref.logits(c2, W, vlm_prompt(n), images=[img])
    except ValueError as e:
        assert "lm_hidden_size" in str(e)
    else:
        raise AssertionError("adapter width mismatch accepted")
    try:
        ref.logits(cfg["text_config"], W, [1, 2], images=[img])
    except ValueError as e:
        assert "only fm_vlm" in str(e)
    else:
        raise AssertionError("images accepted by a text model")


@test
def vit_half_precision_and_determinism():
    """f16 vision weights stay close; the same seed writes the same bytes,
    another seed other tokens; fm_vlm's decoder tensors are the decoder
    preset's own (same seed)."""
    cfg, W = ref.load_checkpoint(ckpt("fm_vit", "rw-vitdet-tiny"))
    _, W16 = ref.load_checkpoint(ckpt("fm_vit", "rw-vitdet-tiny", dtype="f16"))
    img = vit_image(cfg)
    a, b = ref.vit(cfg, W, img), ref.vit(cfg, W16, img)
    assert 0 < rel_diff(a, b) < 5e-3, rel_diff(a, b)
    d2 = os.path.join(_TMP, "vit_again")
    gen.generate("fm_vit", "rw-vitdet-tiny", d2)
    with open(os.path.join(ckpt("fm_vit", "rw-vitdet-tiny"), "model.safetensors"), "rb") as f1, \
            open(os.path.join(d2, "model.safetensors"), "rb") as f2:
        assert f1.read() == f2.read()
    _, W1 = ref.load_checkpoint(ckpt("fm_vit", "rw-vitdet-tiny", seed=1))
    assert rel_diff(a, ref.vit(cfg, W1, img)) > 1e-2
    _, Wv = ref.load_checkpoint(ckpt("fm_vlm", "afm7-rw-tiny"))
    _, Wt = ref.load_checkpoint(ckpt("afm7", "small"))
    for k, v in Wt.items():
        assert np.array_equal(Wv[k], v), k


@test
def vit_preprocess_png():
    """preprocess_image: an image_size^2 RGB PNG needs no resize, so the
    tensor is (pixels / 255 - mean) / std exactly; gray is replicated; a
    resized image keeps its mean roughly."""
    from PIL import Image
    cfg = gen.make_config("fm_vit", "rw-vitdet-tiny")
    S = cfg["image_size"]
    rng = np.random.default_rng(7)
    px = rng.integers(0, 256, size=(S, S, 3), dtype=np.uint8)
    path = os.path.join(_TMP, "rgb.png")
    Image.fromarray(px).save(path)
    got = ref.preprocess_image(cfg, path)
    mean, std = np.array(cfg["image_mean"]), np.array(cfg["image_std"])
    want = ((px / 255.0 - mean) / std).transpose(2, 0, 1)
    assert got.shape == (3, S, S) and np.allclose(got, want, rtol=0, atol=1e-6)
    gray = rng.integers(0, 256, size=(S, S), dtype=np.uint8)
    Image.fromarray(gray).save(path)
    got = ref.preprocess_image(cfg, path)
    for ch in range(3):
        assert np.allclose(got[ch], (gray / 255.0 - mean[ch]) / std[ch], atol=1e-6)
    Image.fromarray(px).resize((2 * S + 3, S - 7)).save(path)
    got = ref.preprocess_image(cfg, path)
    assert got.shape == (3, S, S)
    assert abs(float(got.mean()) - float(want.mean())) < 0.05


@test
def vit_cli():
    """fm_vit: --image x.npy --out writes the image tokens, --compare checks
    max|diff| only; fm_vlm takes --tokens and --image (a PNG file)."""
    from PIL import Image
    py = sys.executable
    d = ckpt("fm_vit", "vit-tiny")
    cfg, W = ref.load_checkpoint(d)
    img = vit_image(cfg, 5)
    x = os.path.join(_TMP, "img.npy")
    np.save(x, img)
    out = os.path.join(_TMP, "vit_tokens.npy")
    r = cli([py, REF, d, "--image", x, "--out", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    T = np.load(out)
    assert np.array_equal(T, ref.vit(cfg, W, img))
    r = cli([py, REF, d, "--image", x, "--compare", out], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("PASS max_abs_diff=0 ") and \
        "argmax" not in r.stdout, r.stdout + r.stderr
    np.save(out, T * (1 + 1e-4))
    r = cli([py, REF, d, "--image", x, "--compare", out, "--rtol", "1e-5"],
            capture_output=True, text=True)
    assert r.returncode == 1 and r.stdout.startswith("FAIL"), r.stdout
    r = cli([py, REF, d, "--tokens", "1,2"], capture_output=True, text=True)
    assert r.returncode == 2 and "exactly one --image" in r.stderr
    dv = ckpt("fm_vlm", "afm7-rw-tiny")
    cv, Wv = ref.load_checkpoint(dv)
    S = cv["vision_config"]["image_size"]
    png = os.path.join(_TMP, "cli.png")
    Image.fromarray(np.random.default_rng(1).integers(0, 256, (S + 5, S - 3, 3),
                                                      dtype=np.uint8)).save(png)
    toks = vlm_prompt(9)
    out = os.path.join(_TMP, "vlm.npy")
    r = cli([py, REF, dv, "--tokens", ",".join(map(str, toks)), "--image", png,
             "--out", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    want = ref.logits(cv, Wv, toks, images=[ref.preprocess_image(cv["vision_config"], png)])
    assert np.array_equal(np.load(out), want)
    r = cli([py, REF, dv, "--tokens", ",".join(map(str, toks))],
            capture_output=True, text=True)
    assert r.returncode == 2 and "image placeholders" in r.stderr, r.stderr


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
