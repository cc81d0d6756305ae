#!/usr/bin/python3
"""Image-encoder weight formats: fmc compile --quant / --vision-quant, checked
in the artifact (fmc inspect --json) and end to end against the numpy
reference (test/reference/fm_reference.py).

The linear weights of the encoder and adapter (attn.qkv, attn.proj, mlp.fc1,
mlp.fc2, adapter.linear) are what --vision-quant converts; the patch
embedding, the 3x3 convolution, LayerNorms, biases, positions, registers and
rel-pos tables stay f32 whatever the flags. --quant is the language model's
and leaves the encoder f32.

Cases (one fm_vit checkpoint, --case picks):
  lm-quant      --quant w4: every vision weight f32, tokens vs the f32
                reference at 1e-5 (exactly as without the flag).
  f16           --vision-quant f16: the linear weights f16. The reference
                with those weights rounded to f16 (numpy) matches at 1e-5; the
                unrounded one is rejected at 1e-5 (the weights really are f16).
  w8, w4        --vision-quant wN on a checkpoint whose linear weights lie on
                a 2-bit grid (--qat-grid: {+-0.5, +-1.5} x s per group, s with
                at most 6 significant bits), which the 4- and 8-bit balanced
                grids ((q - c) x s') hold: with exact activations
                (--activations f32) what is left is at most the f16 rounding
                of each group's scale s' (relative <= 2^-11 per weight; none
                when the chosen s' is s itself), so the reference must match
                at --rtol-exact; with int8x2 activations (two int8 digits,
                ~2^-15 relative per input) at --rtol; with the default ones
                (int11) at --rtol-default.
  w8-random     --vision-quant w8 on ordinary normal weights: the weights'
                rounding error is the bound (--rtol).
Prints one line per check and `N passed, N failed` at the end.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_vision as cv  # noqa: E402
from check_vision import ref, gen_checkpoint, run  # noqa: E402

LINEAR = (".attn.qkv.weight", ".attn.proj.weight", ".mlp.fc1.weight", ".mlp.fc2.weight")


def is_linear(name):
    """The encoder/adapter weights --vision-quant converts."""
    return (name.startswith(("vision.", "adapter.")) and name.endswith(LINEAR)) \
        or name == "adapter.linear.weight"


def is_vision(name):
    return name.startswith(("vision.", "adapter."))


def artifact_dtypes(tool, fmb):
    _, out, _ = run([tool("fmc"), "inspect", fmb, "--json"])
    return {w["name"]: w["dtype"] for w in json.loads(out)["weights"]}


def check_formats(checks, dtypes, want_linear, what, lm=None):
    """Every vision linear weight in `want_linear`, every other vision weight
    f32; with `lm`, the decoder's projections in that format."""
    vision = {k: v for k, v in dtypes.items() if is_vision(k)}
    linear = {k: v for k, v in vision.items() if is_linear(k)}
    rest = {k: v for k, v in vision.items() if not is_linear(k)}
    bad = sorted("%s=%s" % kv for kv in linear.items() if kv[1] != want_linear)
    bad += sorted("%s=%s" % kv for kv in rest.items() if kv[1] != "f32")
    ok = bool(linear) and bool(rest) and not bad
    checks.report(ok, "%s: %d linear vision weights %s, %d other vision weights f32 %s"
                  % (what, len(linear), want_linear, len(rest), bad[:3]))
    if lm:
        proj = {k: v for k, v in dtypes.items()
                if not is_vision(k) and k.endswith("_proj.weight")}
        badlm = sorted("%s=%s" % kv for kv in proj.items() if kv[1] != lm)
        checks.report(bool(proj) and not badlm, "%s: %d decoder projections %s %s"
                      % (what, len(proj), lm, badlm[:3]))


def encode(tool, fmb, tensor, out, extra=()):
    run([tool("fm-run"), fmb, "--image-tensor", tensor, "--image-tokens-out", out] + list(extra))
    return np.load(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", default="fm_vit", choices=("fm_vit", "fm_vlm"))
    ap.add_argument("--preset", required=True)
    ap.add_argument("--case", required=True,
                    choices=("lm-quant", "f16", "w8", "w4", "w8-random"))
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--group", type=int, default=32)
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--rtol-exact", type=float, default=1e-5)
    ap.add_argument("--rtol-default", type=float, default=None,
                    help="w8/w4: the default activations' bound (int11: 12/13-bit x in "
                         "the GEMMs AMX takes in one tile per group), --rtol applying "
                         "to --activations int8x2 (default: --rtol for both)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bin", default="", help="directory of fmc and fm-run (default: PATH)")
    args = ap.parse_args()
    tool = lambda name: os.path.join(args.bin, name) if args.bin else name
    os.makedirs(args.work, exist_ok=True)

    qat = args.group if args.case in ("w8", "w4") else None
    model = os.path.join(args.work, "ckpt")
    gen_checkpoint.generate(args.family, args.preset, model, qat_grid=qat)
    cfg, W = ref.load_checkpoint(model)
    fmb = os.path.join(args.work, "model.fmb")
    flags = {"lm-quant": ["--quant", "w4"], "f16": ["--vision-quant", "f16"],
             "w8": ["--vision-quant", "w8"], "w4": ["--vision-quant", "w4"],
             "w8-random": ["--vision-quant", "w8"]}[args.case]
    run([tool("fmc"), "compile", model, "-o", fmb, "--group", str(args.group)] + flags)
    checks = cv.Checks()
    fmt = {"lm-quant": "f32", "f16": "f16", "w8": "q8", "w4": "q4", "w8-random": "q8"}
    check_formats(checks, artifact_dtypes(tool, fmb), fmt[args.case], " ".join(flags),
                  lm="q4" if args.case == "lm-quant" and args.family == "fm_vlm" else None)
    if args.family == "fm_vlm":  # the formats only; the logits are vlm.test's
        print("%d passed, %d failed" % (checks.passed, checks.failed))
        return 0 if checks.failed == 0 else 1

    vc = ref.vit_config(cfg)
    S = vc["image_size"]
    image = np.random.default_rng(args.seed).standard_normal((3, S, S)).astype(np.float32)
    tensor = os.path.join(args.work, "image.npy")
    np.save(tensor, image)
    want = ref.vit(cfg, W, image)
    got = encode(tool, fmb, tensor, os.path.join(args.work, "tokens.npy"))
    if args.case == "lm-quant":
        ok, line = ref.compare(want, got, 1e-5, argmax=False)
        checks.report(ok, "tokens vs the f32 reference: %s" % line)
    elif args.case == "f16":
        rounded = {k: (v.astype(np.float16).astype(np.float32) if is_linear(k) else v)
                   for k, v in W.items()}
        ok, line = ref.compare(ref.vit(cfg, rounded, image), got, 1e-5, argmax=False)
        checks.report(ok, "tokens vs the reference with f16-rounded linear weights: %s" % line)
        ok, line = ref.compare(want, got, 1e-5, argmax=False)
        checks.report(not ok, "the unrounded f32 reference rejected: %s" % line)
    elif args.case in ("w8", "w4"):
        exact = encode(tool, fmb, tensor, os.path.join(args.work, "exact.npy"),
                       ["--activations", "f32"])
        ok, line = ref.compare(want, exact, args.rtol_exact, argmax=False)
        checks.report(ok, "grid weights, f32 activations: %s" % line)
        x2 = encode(tool, fmb, tensor, os.path.join(args.work, "int8x2.npy"),
                    ["--activations", "int8x2"])
        ok, line = ref.compare(want, x2, args.rtol, argmax=False)
        checks.report(ok, "grid weights, int8x2 activations: %s" % line)
        rtol = args.rtol if args.rtol_default is None else args.rtol_default
        ok, line = ref.compare(want, got, rtol, argmax=False)
        checks.report(ok, "grid weights, default activations: %s" % line)
    else:
        ok, line = ref.compare(want, got, args.rtol, argmax=False)
        checks.report(ok, "normal weights, default activations: %s" % line)
        ok, line = ref.compare(want, got, 1e-5, argmax=False)
        checks.report(not ok, "f32 tolerance rejected: %s" % line)
    print("%d passed, %d failed" % (checks.passed, checks.failed))
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
