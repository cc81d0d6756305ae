#!/usr/bin/python3
"""fm_vit / fm_vlm checkpoints with one bad config field each (for vision.test):
make_bad_vision.py OUT_DIR writes OUT_DIR/<case>/ (config.json + safetensors)."""
import copy
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "examples"))
import gen_checkpoint  # noqa: E402

out = sys.argv[1]
good = os.path.join(out, "good")
gen_checkpoint.generate("fm_vit", "rw-vitdet-tiny", good)
vlm = os.path.join(out, "vlm")
gen_checkpoint.generate("fm_vlm", "afm7-rw-tiny", vlm)
with open(os.path.join(good, "config.json")) as f:
    base = json.load(f)
with open(os.path.join(vlm, "config.json")) as f:
    vbase = json.load(f)


def case(name, edit, src=good, cfg=base):
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    c = copy.deepcopy(cfg)
    edit(c)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f)


case("patch", lambda c: c.update(patch_size=7))
case("heads", lambda c: c.update(num_heads=5))
case("act", lambda c: c.update(hidden_act="relu"))
case("global", lambda c: c.update(global_layers=[1, 4]))
case("std", lambda c: c.update(image_std=[0.5, 0.0, 0.5]))
case("mean", lambda c: c.update(image_mean=[0.5, 0.5]))
case("resample", lambda c: c.update(resample="lanczos"))
case("pool", lambda c: c["adapter"].update(grid=11))
case("big_window", lambda c: c.update(window_size=11))
case("no_adapter", lambda c: c.pop("adapter"))
case("rel_pos_off", lambda c: c.update(rel_pos=False))
case("window", lambda c: c.update(window_size=5))
case("vlm_token", lambda c: c.update(image_token_index=100000), vlm, vbase)
case("vlm_width", lambda c: c["vision_config"]["adapter"].update(lm_hidden_size=64), vlm, vbase)
case("vlm_text", lambda c: c["text_config"].update(model_type="fm_vit"), vlm, vbase)
