#!/usr/bin/python3
"""A Hugging Face llama checkpoint as an F16 GGUF that llama.cpp runs.

Written with the gguf-py of the llama.cpp release bench/llamacpp pins, as
its convert_hf_to_gguf.py would write it: arch "llama", tensor names from
that release's own map (gguf.TensorNameMap), matrices in F16, norms in F32,
q/k rows permuted to llama.cpp's rope layout (adjacent pairs); a tied
embedding gets no output.weight (llama.cpp then reads token_embd). The
tokenizer must be a byte-level BPE (tokenizer.json with a BPE model and a
ByteLevel pre-tokenizer, GPT-2's scheme): it goes in as tokenizer.ggml.model
"gpt2" with pre-tokenizer "gpt-2" (GPT-2's regex), the tokens by id, their
types (added special tokens CONTROL), the merges, the bos/eos ids and
add_bos/add_eos from tokenizer_config.json.

  llama_gguf.py MODEL_DIR OUT.gguf [--cache DIR]
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "llamacpp"))
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
import llamacpp  # noqa: E402
from fm_reference import load_checkpoint  # noqa: E402


def _tokenizer(model_dir, cfg):
    """-> (tokens by id, types, merges "a b", bos, eos, add_bos, add_eos)."""
    path = os.path.join(model_dir, "tokenizer.json")
    with open(path) as f:
        tj = json.load(f)
    model, pre = tj.get("model", {}), tj.get("pre_tokenizer") or {}
    pres = pre.get("pretokenizers", [pre])
    if model.get("type") != "BPE" or not any(p.get("type") == "ByteLevel" for p in pres):
        raise SystemExit("%s: not a byte-level BPE (model %r, pre-tokenizer %r); llama.cpp's "
                         "\"gpt2\" vocabulary needs one" % (path, model.get("type"), pre.get("type")))
    ids = dict(model["vocab"])
    special = set()
    for t in tj.get("added_tokens", []):
        ids[t["content"]] = t["id"]
        if t.get("special"):
            special.add(t["id"])
    size = cfg["vocab_size"]
    if sorted(ids.values()) != list(range(len(ids))) or len(ids) > size:
        raise SystemExit("%s: its %d token ids are not 0..%d within the model's vocabulary of %d"
                         % (path, len(ids), len(ids) - 1, size))
    tokens = [None] * size
    for text, i in ids.items():
        tokens[i] = text
    types = [3 if i in special else 1 for i in range(size)]  # CONTROL, NORMAL
    for i in range(len(ids), size):  # rows the tokenizer never produces
        tokens[i], types[i] = "[PAD%d]" % i, 5  # UNUSED
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]

    tc = {}
    if os.path.exists(os.path.join(model_dir, "tokenizer_config.json")):
        with open(os.path.join(model_dir, "tokenizer_config.json")) as f:
            tc = json.load(f)

    def special_id(key):
        if cfg.get(key + "_id") is not None:
            return cfg[key + "_id"]
        v = tc.get(key)
        v = v.get("content") if isinstance(v, dict) else v
        return ids.get(v) if v is not None else None

    return (tokens, types, merges, special_id("bos_token"), special_id("eos_token"),
            bool(tc.get("add_bos_token", False)), bool(tc.get("add_eos_token", False)))


def write_f16_gguf(model_dir, out, src):
    """Writes MODEL_DIR's llama checkpoint to `out` as an F16 GGUF with the
    gguf-py in `src` (the pinned llama.cpp tree)."""
    gguf = llamacpp.gguf(src)
    cfg, weights = load_checkpoint(model_dir)
    if cfg.get("model_type") != "llama":
        raise SystemExit("%s: model_type %r, not llama" % (model_dir, cfg.get("model_type")))
    if cfg.get("rope_scaling"):
        raise SystemExit("%s: rope_scaling is not written" % model_dir)
    hidden, layers = cfg["hidden_size"], cfg["num_hidden_layers"]
    heads = cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads") or heads
    head_dim = cfg.get("head_dim") or hidden // heads
    tied = "lm_head.weight" not in weights
    if tied and not cfg.get("tie_word_embeddings", False):
        raise SystemExit("%s: no lm_head.weight and tie_word_embeddings is not true" % model_dir)

    w = gguf.GGUFWriter(out, "llama")
    w.add_name(os.path.basename(os.path.normpath(model_dir)))
    w.add_context_length(cfg.get("max_position_embeddings", 2048))
    w.add_embedding_length(hidden)
    w.add_block_count(layers)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(float(cfg.get("rope_theta", 10000.0)))
    w.add_layer_norm_rms_eps(float(cfg.get("rms_norm_eps", 1e-6)))
    w.add_vocab_size(cfg["vocab_size"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    tokens, types, merges, bos, eos, add_bos, add_eos = _tokenizer(model_dir, cfg)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    if bos is not None:
        w.add_bos_token_id(bos)
    if eos is not None:
        w.add_eos_token_id(eos)
    w.add_add_bos_token(add_bos)
    w.add_add_eos_token(add_eos)

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, layers)
    for name, v in weights.items():
        gname = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if gname is None:
            raise SystemExit("%s: tensor %s has no name in llama.cpp's llama map" % (model_dir, name))
        if name.endswith("self_attn.q_proj.weight"):
            v = llamacpp.to_rope_pairs(v, heads)
        elif name.endswith("self_attn.k_proj.weight"):
            v = llamacpp.to_rope_pairs(v, kv_heads)
        # 1-D tensors (norms) stay F32, as llama.cpp's converter keeps them.
        w.add_tensor(gname, np.ascontiguousarray(v, dtype=np.float32 if v.ndim == 1 else np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return {"tied": tied, "tensors": len(weights)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--cache", default=llamacpp.DEFAULT_CACHE)
    args = ap.parse_args()
    write_f16_gguf(args.model_dir, args.out, llamacpp.fetch(args.cache).src)
    return 0


if __name__ == "__main__":
    sys.exit(main())
