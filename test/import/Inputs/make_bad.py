#!/usr/bin/python3
"""Makes one malformed checkpoint directory per input class (fmc import tests).

Usage: make_bad.py OUT_DIR. Each subdirectory starts from a valid llama:tiny
checkpoint (made with examples/gen_checkpoint.py) and breaks one thing.
"""
import json
import os
import shutil
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GEN = os.path.join(ROOT, "examples", "gen_checkpoint.py")
# gen_checkpoint.py of llama:tiny: a second or two. Past it the test fails naming it.
LIMIT = 300


def gen(out, *extra):
    cmd = ["/usr/bin/python3", GEN, "--family", "llama", "--preset", "tiny", "--out", out]
    cmd += list(extra)
    try:
        subprocess.check_call(cmd, stdout=subprocess.DEVNULL, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        sys.exit("make_bad.py: TIMEOUT: killed after %d s (its limit; a hang?): %s"
                 % (LIMIT, " ".join(cmd)))


def header(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def write(path, hdr, body, pad=True):
    text = json.dumps(hdr).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


def main():
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    good = os.path.join(out, "good")
    gen(good)

    def variant(name):
        d = os.path.join(out, name)
        shutil.copytree(good, d)
        return d, os.path.join(d, "model.safetensors"), os.path.join(d, "config.json")

    d, st, cfg = variant("truncated")
    with open(st, "rb") as f:
        data = f.read()
    with open(st, "wb") as f:
        f.write(data[: len(data) // 2])

    d, st, cfg = variant("header_past_end")
    with open(st, "rb") as f:
        data = f.read()
    with open(st, "wb") as f:
        f.write(struct.pack("<Q", 10 ** 9) + data[8:])

    d, st, cfg = variant("bad_json")
    with open(cfg, "w") as f:
        f.write('{"model_type": "llama", "hidden_size": 64,')

    d, st, cfg = variant("missing_field")
    c = json.load(open(cfg))
    del c["intermediate_size"]
    json.dump(c, open(cfg, "w"))

    d, st, cfg = variant("wrong_shape")
    c = json.load(open(cfg))
    c["num_key_value_heads"] = 4
    json.dump(c, open(cfg, "w"))

    d, st, cfg = variant("unknown_dtype")
    h, body = header(st)
    h["model.norm.weight"]["dtype"] = "Q7"
    write(st, h, body)

    d, st, cfg = variant("overlap")
    h, body = header(st)
    h["model.norm.weight"]["data_offsets"] = list(h["model.embed_tokens.weight"]["data_offsets"][:1]) + \
        [h["model.embed_tokens.weight"]["data_offsets"][0] + 256]
    write(st, h, body)

    d, st, cfg = variant("out_of_range")
    h, body = header(st)
    end = max(v["data_offsets"][1] for k, v in h.items() if k != "__metadata__")
    h["model.norm.weight"]["data_offsets"] = [end, end + 256]
    write(st, h, body)

    d, st, cfg = variant("missing_tensor")
    h, body = header(st)
    del h["model.layers.1.mlp.up_proj.weight"]
    write(st, h, body)

    d, st, cfg = variant("unused_tensor")
    h, body = header(st)
    h["extra.bias"] = dict(h["model.norm.weight"])
    h["extra.bias"]["data_offsets"] = list(h["model.norm.weight"]["data_offsets"])
    # (shares bytes with model.norm.weight: also an overlap) -> use a fresh range
    end = len(body)
    h["extra.bias"]["data_offsets"] = [end, end + 256]
    write(st, h, body + b"\0" * 256)

    d, st, cfg = variant("unknown_family")
    c = json.load(open(cfg))
    c["model_type"] = "gpt2"
    json.dump(c, open(cfg, "w"))

    # o_proj transposed where num_attention_heads * head_dim (128) is not
    # hidden_size (64): only the importer's own check names the config keys.
    wide = os.path.join(out, "wrong_o_proj")
    gen(wide, "--set", "head_dim=32")
    st = os.path.join(wide, "model.safetensors")
    h, body = header(st)
    o = h["model.layers.0.self_attn.o_proj.weight"]
    o["shape"] = o["shape"][::-1]
    write(st, h, body)


if __name__ == "__main__":
    main()
