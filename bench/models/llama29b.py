"""Issue #16's model: a random llama of 2.9B parameters (hidden 3072, 26
layers, 24/8 heads of 128, FFN 8192, vocabulary 49152, untied head), written
as an f16 Hugging Face checkpoint (5.8 GB at 26 layers) for the benchmarks
that need it (bench/llamacpp, bench/compile).

Each tensor is drawn from its own seeded stream (numpy's default_rng([16,
index])), so a tool that needs the same values in another format (the GGUF
of bench/llamacpp) draws them again, one tensor at a time, without reading
the checkpoint back: projections normal(0, 1/sqrt(inputs)), the embedding
and head normal(0, 3/sqrt(hidden)), norms 1 + 0.1 normal.
"""
import json
import math
import os
import struct

import numpy as np

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 3072, 24, 8, 128, 8192, 49152
SEED = 16




def tensors(layers):
    """[(hf_name, gguf_name, shape, kind)] in checkpoint order."""
    out = [("model.embed_tokens.weight", "token_embd.weight", (VOCAB, HIDDEN), "embed")]
    for i in range(layers):
        p, g = "model.layers.%d." % i, "blk.%d." % i
        out += [
            (p + "input_layernorm.weight", g + "attn_norm.weight", (HIDDEN,), "norm"),
            (p + "self_attn.q_proj.weight", g + "attn_q.weight", (HEADS * HEAD_DIM, HIDDEN), "q"),
            (p + "self_attn.k_proj.weight", g + "attn_k.weight", (KV_HEADS * HEAD_DIM, HIDDEN), "k"),
            (p + "self_attn.v_proj.weight", g + "attn_v.weight", (KV_HEADS * HEAD_DIM, HIDDEN), "proj"),
            (p + "self_attn.o_proj.weight", g + "attn_output.weight", (HIDDEN, HEADS * HEAD_DIM), "proj"),
            (p + "post_attention_layernorm.weight", g + "ffn_norm.weight", (HIDDEN,), "norm"),
            (p + "mlp.gate_proj.weight", g + "ffn_gate.weight", (FFN, HIDDEN), "proj"),
            (p + "mlp.up_proj.weight", g + "ffn_up.weight", (FFN, HIDDEN), "proj"),
            (p + "mlp.down_proj.weight", g + "ffn_down.weight", (HIDDEN, FFN), "proj"),
        ]
    out += [("model.norm.weight", "output_norm.weight", (HIDDEN,), "norm"),
            ("lm_head.weight", "output.weight", (VOCAB, HIDDEN), "embed")]
    return out


def values(index, shape, kind):
    """The tensor's values as f16 (the checkpoint's dtype)."""
    rng = np.random.default_rng([SEED, index])
    if kind == "norm":
        v = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
    elif kind == "embed":
        v = rng.standard_normal(shape, dtype=np.float32) * np.float32(3.0 / math.sqrt(HIDDEN))
    else:
        v = rng.standard_normal(shape, dtype=np.float32) * np.float32(1.0 / math.sqrt(shape[1]))
    return v.astype(np.float16)


def write_checkpoint(out, layers):
    os.makedirs(out, exist_ok=True)
    specs = tensors(layers)
    header, offset = {}, 0
    for name, _, shape, _ in specs:
        n = 2 * int(np.prod(shape))
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    path = os.path.join(out, "model.safetensors")
    with open(path + ".tmp", "wb") as f:  # a rerun trusts whole files only
        f.write(struct.pack("<Q", len(blob)) + blob)
        for i, (_, _, shape, kind) in enumerate(specs):
            f.write(values(i, shape, kind).tobytes())
    os.replace(path + ".tmp", path)
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
              "vocab_size": VOCAB, "hidden_size": HIDDEN, "num_hidden_layers": layers,
              "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
              "head_dim": HEAD_DIM, "intermediate_size": FFN, "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu",
              "max_position_embeddings": 2048}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f)


def checkpoint(work, layers):
    """WORK/llama<layers>_hf: written on the first call, reused after."""
    path = os.path.join(work, "llama%d_hf" % layers)
    if not os.path.exists(os.path.join(path, "config.json")):
        write_checkpoint(path, layers)
    return path
