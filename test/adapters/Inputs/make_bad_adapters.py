#!/usr/bin/python3
"""Writes one malformed PEFT adapter directory per error class under OUT,
each a copy of a valid adapter for a llama:tiny (or afm7:small) base with
one thing broken.  Used by test/adapters/errors.test."""
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
import gen_checkpoint as g  # noqa: E402
import fm_reference as ref  # noqa: E402
import numpy as np  # noqa: E402


def write(out_dir, config, tensors):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "adapter_config.json"), "w") as f:
        json.dump(config, f)
    entries = []
    for name, v in tensors.items():
        st, raw = g.encode(v, "f32")
        entries.append((name, st, list(v.shape), raw))
    g.write_safetensors(os.path.join(out_dir, "adapter_model.safetensors"), entries)


def valid(family, preset, out_dir, **kw):
    cfg = g.make_config(family, preset)
    lora = g.make_lora(family, cfg, rank=4, **kw)
    g.write_lora(out_dir, family, cfg, lora, rank=4,
                 targets=kw.get("targets"), regex=kw.get("regex"))
    with open(os.path.join(out_dir, "adapter_config.json")) as f:
        config = json.load(f)
    tensors = ref._read_safetensors(os.path.join(out_dir, "adapter_model.safetensors"))
    return config, tensors


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    config, tensors = valid("llama", "tiny", os.path.join(out, "good"))
    q0 = "base_model.model.model.layers.0.self_attn.q_proj"

    def variant(name, cfg_changes=None, drop=(), add=None, replace=None):
        c = dict(config)
        c.update(cfg_changes or {})
        t = {k: v for k, v in tensors.items() if k not in drop}
        t.update(add or {})
        for k, v in (replace or {}).items():
            t[k] = v
        write(os.path.join(out, name), c, t)

    variant("dora", {"use_dora": True})
    variant("bias", {"bias": "all"})
    variant("modules_to_save", {"modules_to_save": ["lm_head"]})
    variant("ia3", {"peft_type": "IA3"})
    variant("no_r", {"r": None})
    variant("rank0", {"r": 0})
    variant("no_targets", {"target_modules": None})
    variant("bad_regex", {"target_modules": "model\\.layers\\.(q_proj"})
    variant("regex_none", {"target_modules": ".*\\.nothing"})
    variant("unselected", {"target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]})
    variant("no_lora_b", drop=[q0 + ".lora_B.weight"])
    variant("wrong_rank", {"r": 8})
    variant("rank_pattern", {"rank_pattern": {"v_proj": 2}})
    variant("wrong_shape", replace={q0 + ".lora_A.weight": np.zeros((4, 48))})
    variant("not_lora", add={"base_model.model.model.norm.weight": np.zeros((64,))})
    variant("embedding", add={"base_model.model.model.embed_tokens.lora_embedding_A":
                              np.zeros((4, 256))})
    variant("magnitude", add={q0 + ".lora_magnitude_vector": np.zeros((64,))})
    variant("unknown_module",
            add={"base_model.model.model.layers.0.self_attn.qkv_proj.lora_A.weight":
                 np.zeros((4, 64))})
    # No config at all; a pickle instead of safetensors; bad JSON.
    os.makedirs(os.path.join(out, "no_config"), exist_ok=True)
    shutil.copy(os.path.join(out, "good", "adapter_model.safetensors"),
                os.path.join(out, "no_config"))
    os.makedirs(os.path.join(out, "pickle"), exist_ok=True)
    shutil.copy(os.path.join(out, "good", "adapter_config.json"), os.path.join(out, "pickle"))
    open(os.path.join(out, "pickle", "adapter_model.bin"), "wb").write(b"\x80\x02")
    os.makedirs(os.path.join(out, "bad_json"), exist_ok=True)
    open(os.path.join(out, "bad_json", "adapter_config.json"), "w").write("{\"r\": 4,")
    shutil.copy(os.path.join(out, "good", "adapter_model.safetensors"),
                os.path.join(out, "bad_json"))

    # afm7 has fused qkv_proj: an adapter naming k_proj is for another model.
    acfg, atensors = valid("afm7", "small", os.path.join(out, "afm7_good"))
    atensors["base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight"] = np.zeros((4, 128))
    atensors["base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight"] = np.zeros((64, 4))
    acfg["target_modules"] = acfg["target_modules"] + ["k_proj"]
    write(os.path.join(out, "afm7_k_proj"), acfg, atensors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
