"""PyTorch definitions of the two families trained here, written to the
semantics fmc imports (test/reference/fm_reference.py states them):

  afm7   fused qkv, RoPE "interleaved" then q/k RMSNorm (eps 1e-5), K and V
         fake-quantized to int8 with a per-layer scale, KV-reuse layers that
         attend to the last regular layer's K/V, SwiGLU, tied embedding.
  llama  HF LlamaForCausalLM: q/k/v/o, RoPE "half", SwiGLU, tied embedding.

Quantization-aware training (QAT) replaces a weight by its fake-quantized
value on fmc's balanced grid, value = (q - (2^b - 1)/2) * s with one scale s
per group of consecutive inputs of an output row (runtime/kernels/qformat.h):
the forward pass uses the grid value, the backward pass the straight-through
estimator (gradients reach both the weight and the learnable scale, as LSQ).
Every scale is rounded (straight-through) to SCALE_BITS significant bits and
kept within f16's normal range, so that s and every level times s are exact
in f16: the stored checkpoint holds the grid values exactly and fmc's
quantizer recovers q and s without error.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SCALE_BITS = 7          # 7.5 * s (the 4-bit grid's largest level) fits f16's 11 bits
SCALE_MIN = 2.0 ** -10  # 0.5 * s stays a normal f16


def ste(x, y):
    """y in the forward pass, x's gradient in the backward pass."""
    return x + (y - x).detach()


def round_significant(s, bits=SCALE_BITS):
    s = s.clamp(min=SCALE_MIN)
    e = torch.floor(torch.log2(s)) - (bits - 1)
    return ste(s, torch.round(s / torch.exp2(e)) * torch.exp2(e))


def grid_quantize(w, scale, bits, group):
    """w [out, in] on the balanced b-bit grid with scale [out, in/group]."""
    s = round_significant(scale).repeat_interleave(group, dim=1)
    v = w / s
    half = 2 ** (bits - 1)
    vq = torch.clamp(torch.floor(v), -half, half - 1) + 0.5
    return s * ste(v, vq)


def init_scale(w, bits, group, steps=40):
    """Per group, the scale minimising the squared error (a clipping search)."""
    out, inp = w.shape
    g = w.detach().reshape(out, inp // group, group)
    top = (2 ** bits - 1) / 2
    amax = g.abs().amax(dim=-1).clamp(min=1e-8)
    best = amax / top
    best_err = torch.full_like(amax, float("inf"))
    half = 2 ** (bits - 1)
    for c in torch.linspace(0.25, 1.0, steps):
        s = (amax * c / top).unsqueeze(-1)
        q = (torch.clamp(torch.floor(g / s), -half, half - 1) + 0.5) * s
        err = ((q - g) ** 2).sum(-1)
        better = err < best_err
        best = torch.where(better, s.squeeze(-1), best)
        best_err = torch.where(better, err, best_err)
    return best


class QLinear(nn.Module):
    """nn.Linear without bias that can fake-quantize its weight (QAT)."""

    def __init__(self, inp, out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out, inp) / math.sqrt(inp))
        self.bits = 0
        self.group = 0
        self.scale = None

    def enable_qat(self, bits, group):
        self.bits, self.group = bits, group
        self.scale = nn.Parameter(init_scale(self.weight, bits, group))

    def effective_weight(self):
        if self.bits:
            return grid_quantize(self.weight, self.scale, self.bits, self.group)
        return self.weight

    def forward(self, x):
        return F.linear(x, self.effective_weight())


class QEmbedding(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab, hidden) * 0.02)
        self.bits = 0
        self.group = 0
        self.scale = None

    enable_qat = QLinear.enable_qat
    effective_weight = QLinear.effective_weight


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return rmsnorm(x, self.weight, self.eps)


_ROPE = {}


def rope_tables(S, hd, theta, dtype):
    key = (S, hd, theta, dtype)
    if key not in _ROPE:
        half = hd // 2
        inv = theta ** (-(2.0 * torch.arange(half, dtype=torch.float64)) / hd)
        ang = torch.arange(S, dtype=torch.float64)[:, None] * inv[None, :]
        _ROPE[key] = (torch.cos(ang).to(dtype)[None, :, None, :],
                      torch.sin(ang).to(dtype)[None, :, None, :])
    return _ROPE[key]


def rope(x, theta, style):
    """x [B, S, heads, hd] at positions 0..S-1 (angles in float64)."""
    S, hd = x.shape[1], x.shape[-1]
    half = hd // 2
    cos, sin = rope_tables(S, hd, theta, x.dtype)
    if style == "half":
        a, b = x[..., :half], x[..., half:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).flatten(-2)


def attention(q, k, v):
    """q [B, S, nh, hd], k/v [B, S, nkv, hd] -> [B, S, nh*hd], causal."""
    B, S, nh, hd = q.shape
    rep = nh // k.shape[2]
    k = k.repeat_interleave(rep, dim=2)
    v = v.repeat_interleave(rep, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) * hd ** -0.5
    mask = torch.ones(S, S, dtype=torch.bool).triu(1)
    p = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
    return torch.einsum("bhqk,bkhd->bqhd", p, v).reshape(B, S, nh * hd)


class SwiGLU(nn.Module):
    def __init__(self, H, I):
        super().__init__()
        self.gate_proj = QLinear(H, I)
        self.up_proj = QLinear(H, I)
        self.down_proj = QLinear(I, H)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class KVFakeQuant(nn.Module):
    """int8 fake quantization with a per-layer scale, calibrated while
    `calibrating` (a running max of |x| / 127, f16-exact), then frozen."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor(0.0))
        self.calibrating = True

    def forward(self, x):
        if self.calibrating and self.training:
            m = x.detach().abs().max() / 127.0
            new = m if self.scale.item() == 0 else 0.9 * self.scale + 0.1 * m
            self.scale.copy_(new.half().float())
        s = self.scale
        return ste(x, torch.clamp(torch.round(x / s), -128, 127) * s)


class Afm7Layer(nn.Module):
    def __init__(self, c, reuse):
        super().__init__()
        H, nh, nkv = c["hidden_dim"], c["num_heads"], c["num_kv_heads"]
        self.hd = H // nh
        self.nh, self.nkv, self.reuse = nh, nkv, reuse
        self.theta, self.eps = c["rope_theta"], c["rms_norm_eps"]
        self.input_layernorm = RMSNorm(H, self.eps)
        self.post_attention_layernorm = RMSNorm(H, self.eps)
        if reuse:
            self.q_proj = QLinear(H, nh * self.hd)
        else:
            self.qkv_proj = QLinear(H, (nh + 2 * nkv) * self.hd)
            self.k_norm = RMSNorm(self.hd, 1e-5)
            self.k_quant = KVFakeQuant()
            self.v_quant = KVFakeQuant()
        self.q_norm = RMSNorm(self.hd, 1e-5)
        self.out_proj = QLinear(nh * self.hd, H)
        self.mlp = SwiGLU(H, int(H * c["hidden_dim_scale_factor"]))

    def forward(self, x, kv):
        B, S, _ = x.shape
        n = self.input_layernorm(x)
        hd = self.hd
        if self.reuse:
            q = self.q_proj(n).reshape(B, S, self.nh, hd)
            k, v = kv
        else:
            qkv = self.qkv_proj(n)
            q = qkv[..., :self.nh * hd].reshape(B, S, self.nh, hd)
            k = qkv[..., self.nh * hd:(self.nh + self.nkv) * hd].reshape(B, S, self.nkv, hd)
            v = qkv[..., (self.nh + self.nkv) * hd:].reshape(B, S, self.nkv, hd)
            k = self.k_quant(self.k_norm(rope(k, self.theta, "interleaved")))
            v = self.v_quant(v)
            kv = (k, v)
        q = self.q_norm(rope(q, self.theta, "interleaved"))
        x = x + self.out_proj(attention(q, k, v))
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x, kv


class LlamaLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, nh = c["hidden_size"], c["num_attention_heads"]
        nkv = c["num_key_value_heads"]
        self.hd = H // nh
        self.nh, self.nkv = nh, nkv
        self.theta, self.eps = c["rope_theta"], c["rms_norm_eps"]
        self.input_layernorm = RMSNorm(H, self.eps)
        self.post_attention_layernorm = RMSNorm(H, self.eps)
        self.q_proj = QLinear(H, nh * self.hd)
        self.k_proj = QLinear(H, nkv * self.hd)
        self.v_proj = QLinear(H, nkv * self.hd)
        self.o_proj = QLinear(nh * self.hd, H)
        self.mlp = SwiGLU(H, c["intermediate_size"])

    def forward(self, x, kv=None):
        B, S, _ = x.shape
        n = self.input_layernorm(x)
        q = rope(self.q_proj(n).reshape(B, S, self.nh, self.hd), self.theta, "half")
        k = rope(self.k_proj(n).reshape(B, S, self.nkv, self.hd), self.theta, "half")
        v = self.v_proj(n).reshape(B, S, self.nkv, self.hd)
        x = x + self.o_proj(attention(q, k, v))
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x, None


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = c = config
        self.family = c["model_type"]
        if self.family == "afm7":
            H, R = c["hidden_dim"], c["num_kv_reuse_layers"]
            self.embedding = QEmbedding(c["vocab_size"], H)
            self.layers = nn.ModuleList(Afm7Layer(c, False) for _ in range(c["num_layers"] - R))
            self.kv_reuse_layers = nn.ModuleList(Afm7Layer(c, True) for _ in range(R))
            self.output_norm = RMSNorm(H, c["rms_norm_eps"])
        elif self.family == "llama":
            H = c["hidden_size"]
            self.embed_tokens = QEmbedding(c["vocab_size"], H)
            self.layers = nn.ModuleList(LlamaLayer(c) for _ in range(c["num_hidden_layers"]))
            self.kv_reuse_layers = nn.ModuleList()
            self.norm = RMSNorm(H, c["rms_norm_eps"])
        else:
            raise ValueError("unknown family %r" % self.family)

    def embed(self):
        return self.embedding if self.family == "afm7" else self.embed_tokens

    def forward(self, ids):
        table = self.embed().effective_weight()
        x = F.embedding(ids, table)
        kv = None
        for layer in list(self.layers) + list(self.kv_reuse_layers):
            x, kv = layer(x, kv)
        x = self.output_norm(x) if self.family == "afm7" else self.norm(x)
        return F.linear(x, table)  # tied head

    def projections(self):
        return [m for m in self.modules() if isinstance(m, QLinear)]

    def enable_qat(self, bits, group, embed_bits):
        for m in self.projections():
            m.enable_qat(bits, group)
        self.embed().enable_qat(embed_bits, group)
        for m in self.modules():
            if isinstance(m, KVFakeQuant):
                m.calibrating = False

    def freeze_kv_scales(self):
        for m in self.modules():
            if isinstance(m, KVFakeQuant):
                m.calibrating = False

    def checkpoint_tensors(self):
        """{HF name: f32 tensor} as fmc imports it (grid values under QAT)."""
        out = {}
        prefix = "model."
        with torch.no_grad():
            for name, mod in self.named_modules():
                if isinstance(mod, (QLinear, QEmbedding)):
                    out[prefix + name + ".weight"] = mod.effective_weight().detach().clone()
                elif isinstance(mod, RMSNorm):
                    out[prefix + name + ".weight"] = mod.weight.detach().clone()
                elif isinstance(mod, KVFakeQuant):
                    layer, which = name.rsplit(".", 1)
                    kind = "quant_key_scale" if which == "k_quant" else "quant_value_scale"
                    out[prefix + layer + "." + kind] = mod.scale.detach().clone()
        return rename(self.family, out)


def rename(family, t):
    """Module paths -> the checkpoint names of docs/ and gen_checkpoint.py."""
    out = {}
    for k, v in t.items():
        n = k
        if family == "afm7":
            for sub in ("qkv_proj", "out_proj", "q_proj", "q_norm", "k_norm",
                        "quant_key_scale", "quant_value_scale"):
                n = n.replace("." + sub, ".self_attn." + sub)
        else:
            for sub in ("q_proj", "k_proj", "v_proj", "o_proj"):
                n = n.replace("." + sub, ".self_attn." + sub)
        out[n] = v
    return out
