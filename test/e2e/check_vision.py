#!/usr/bin/python3
"""End-to-end image encoders: checkpoint -> fmc compile -> fm-run vs the numpy reference.

fm_vit: one [3, S, S] image tensor (--image-tensor) at 1 and 2 threads, and a
PNG and a JPEG file (--image, preprocessed by the runtime as the config says;
the reference preprocesses with PIL), each compared with
test/reference/fm_reference.py: max |d| <= rtol * max |value|. Then the
ablations: the reference with the padded tokens masked out, with the
registers' window mean replaced by window 0, or without the relative-position
bias must FAIL the same tolerance (so the tolerance discriminates the
semantics fmc implements). Then bad inputs, each a clear error.

fm_vlm: a prompt with g_out^2 image placeholders and one image; fm-run
--score logits of every position vs the reference, prefill chunks 1 and
whole, 1 and 2 threads; then a prompt with two placeholder runs and two
images (in order; the swapped order must fail).

Prints one line per check and `N passed, N failed` at the end.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, HERE)
import fm_reference as ref  # noqa: E402
import gen_checkpoint  # noqa: E402
import timelimits  # noqa: E402  (every command's time limit)


def run(cmd, expect_fail=False):
    """(returncode, stdout, stderr); exits on an unexpected failure (or a time-out)."""
    p = timelimits.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0 and not expect_fail:
        sys.stderr.write("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd),
                                                          p.stdout, p.stderr))
        sys.exit(1)
    return p.returncode, p.stdout, p.stderr


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def report(self, ok, line):
        print(("PASS " if ok else "FAIL ") + line)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def write_images(work, seed):
    """A PNG (RGBA, odd size) and a JPEG (RGB) with smooth content and noise."""
    from PIL import Image
    rng = np.random.default_rng(seed)
    paths = []
    for name, (h, w), mode in (("photo.png", (61, 97), "RGBA"), ("photo.jpg", (90, 70), "RGB")):
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([127 + 100 * np.sin(x / 7.0 + c) * np.cos(y / 5.0 - c)
                         for c in range(4 if mode == "RGBA" else 3)], -1)
        px = np.clip(base + rng.normal(0, 20, base.shape), 0, 255).astype(np.uint8)
        path = os.path.join(work, name)
        Image.fromarray(px, mode).save(path)
        paths.append(path)
    return paths


def check_vit(args, checks, model, fmb, cfg, W, tool):
    c = ref.vit_config(cfg)
    S = c["image_size"]
    rng = np.random.default_rng(args.seed)
    image = rng.standard_normal((3, S, S)).astype(np.float32)
    tensor = os.path.join(args.work, "image.npy")
    np.save(tensor, image)
    want = ref.vit(cfg, W, image)
    got = None
    for threads in args.threads.split(","):
        out = os.path.join(args.work, "tokens_t%s.npy" % threads)
        run([tool("fm-run"), fmb, "--image-tensor", tensor, "--image-tokens-out", out,
             "--threads", threads])
        got = np.load(out)
        ok, line = ref.compare(want, got, args.rtol, argmax=False)
        checks.report(ok, "image-tensor threads=%s: %s" % (threads, line))

    for path in write_images(args.work, args.seed):
        out = path + ".tokens.npy"
        run([tool("fm-run"), fmb, "--image", path, "--image-tokens-out", out])
        ok, line = ref.compare(ref.vit(cfg, W, ref.preprocess_image(cfg, path)),
                               np.load(out), args.rtol, argmax=False)
        checks.report(ok, "image %s (%s): %s" % (os.path.basename(path), c["resample"], line))

    # Ablations: each differently-defined reference must be rejected.
    ablations = []
    if c["window_size"] and len(c["global_layers"]) < c["num_layers"]:
        ablations.append(("padded tokens masked", dict(pad="mask")))
        if c["num_registers"]:
            ablations.append(("registers from window 0", dict(register_mean="first")))
    for name, kw in ablations:
        ok, line = ref.compare(ref.vit(cfg, W, image, **kw), got, args.rtol, argmax=False)
        checks.report(not ok, "ablation %s rejected: %s" % (name, line))
    if c["rel_pos"]:
        flat = {k: (np.zeros_like(v) if ".rel_pos_" in k else v) for k, v in W.items()}
        ok, line = ref.compare(ref.vit(cfg, flat, image), got, args.rtol, argmax=False)
        checks.report(not ok, "ablation no rel-pos bias rejected: %s" % line)

    # Bad inputs: each a clear error naming what is wrong.
    wrong = os.path.join(args.work, "wrong.npy")
    np.save(wrong, np.zeros((3, S, S + 1), np.float32))
    corrupt = os.path.join(args.work, "corrupt.png")
    with open(write_images(args.work, args.seed)[0], "rb") as f:
        data = f.read()
    with open(corrupt, "wb") as f:
        f.write(data[:len(data) // 2])
    f64 = os.path.join(args.work, "f64.npy")
    np.save(f64, np.zeros((3, S, S)))
    tokens_out = os.path.join(args.work, "bad.npy")
    for what, flags, needle in (
            ("wrong tensor shape", ["--image-tensor", wrong, "--image-tokens-out", tokens_out],
             "shape [3, %d, %d], the image encoder takes [3, %d, %d] float32" % (S, S + 1, S, S)),
            ("float64 tensor", ["--image-tensor", f64, "--image-tokens-out", tokens_out],
             "is not float32"),
            ("corrupt PNG", ["--image", corrupt, "--image-tokens-out", tokens_out], "corrupt.png"),
            ("tokens on an encoder alone", ["--tokens", "1,2,3"],
             "is an image encoder alone (no decoder)"),
            ("image without an output", ["--image-tensor", tensor],
             "--image-tokens-out FILE.npy")):
        rc, out, err = run([tool("fm-run"), fmb] + flags, expect_fail=True)
        ok = rc != 0 and needle in err
        checks.report(ok, "bad input %s: rc=%d %s" % (what, rc, err.strip().splitlines()[-1:]))


def check_vlm(args, checks, model, fmb, cfg, W, tool):
    vc = ref.vit_config(cfg["vision_config"])
    S = vc["image_size"]
    n = vc["adapter"]["grid"] ** 2
    idx = cfg["image_token_index"]
    image = np.random.default_rng(args.seed).standard_normal((3, S, S)).astype(np.float32)
    tensor = os.path.join(args.work, "image.npy")
    np.save(tensor, image)
    tokens = [1, 17, 42] + [idx] * n + [5, 9, 100, 3]
    text = ",".join(map(str, tokens))
    stats = {}
    want = ref.logits(cfg, W, tokens, stats, [image])
    for chunk in args.chunks.split(","):
        for threads in args.threads.split(","):
            out = os.path.join(args.work, "logits_c%s_t%s.npy" % (chunk, threads))
            run([tool("fm-run"), fmb, "--tokens", text, "--image-tensor", tensor, "--score",
                 "--logits-out", out, "--prefill-chunk", chunk, "--threads", threads])
            ok, line = ref.compare(want, np.load(out), args.rtol, stats=stats)
            checks.report(ok, "vlm chunk=%s threads=%s: %s" % (chunk, threads, line))
    # The image matters: the logits of the prompt with token 0 where the
    # image goes differ.
    ok, line = ref.compare(ref.logits(cfg, W, [t if t != idx else 0 for t in tokens], {}, []),
                           np.load(out), args.rtol)
    checks.report(not ok, "vlm logits without the image rejected: %s" % line)

    # Two images in one prompt: two placeholder runs, filled in order.
    image2 = np.random.default_rng(args.seed + 1).standard_normal((3, S, S)).astype(np.float32)
    tensor2 = os.path.join(args.work, "image2.npy")
    np.save(tensor2, image2)
    two = [1, 17] + [idx] * n + [42, 5] + [idx] * n + [9, 100, 3]
    stats2 = {}
    want2 = ref.logits(cfg, W, two, stats2, [image, image2])
    for chunk in args.chunks.split(","):
        out2 = os.path.join(args.work, "logits2_c%s.npy" % chunk)
        run([tool("fm-run"), fmb, "--tokens", ",".join(map(str, two)), "--image-tensor", tensor,
             "--image-tensor", tensor2, "--score", "--logits-out", out2,
             "--prefill-chunk", chunk])
        ok, line = ref.compare(want2, np.load(out2), args.rtol, stats=stats2)
        checks.report(ok, "vlm two images chunk=%s: %s" % (chunk, line))
    # The order matters: the reference with the images swapped differs.
    ok, line = ref.compare(ref.logits(cfg, W, two, {}, [image2, image]), np.load(out2),
                           args.rtol)
    checks.report(not ok, "vlm two images swapped rejected: %s" % line)
    for what, flags, needle in (
            ("placeholders without an image", ["--tokens", text],
             "image placeholders (token %d) for 0 --image" % idx),
            ("two images, one run", ["--tokens", text, "--image-tensor", tensor,
                                     "--image-tensor", tensor],
             "each image takes %d consecutive placeholders" % n)):
        rc, out, err = run([tool("fm-run"), fmb] + flags, expect_fail=True)
        ok = rc != 0 and needle in err
        checks.report(ok, "bad input %s: rc=%d %s" % (what, rc, err.strip().splitlines()[-1:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True, choices=("fm_vit", "fm_vlm"))
    ap.add_argument("--preset", required=True)
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--chunks", default="1,0", help="fm_vlm prefill chunks; 0 = whole prompt")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bin", default="", help="directory of fmc and fm-run (default: PATH)")
    args = ap.parse_args()

    tool = lambda name: os.path.join(args.bin, name) if args.bin else name
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "ckpt")
    gen_checkpoint.generate(args.family, args.preset, model)
    fmb = os.path.join(args.work, "model.fmb")
    run([tool("fmc"), "compile", model, "-o", fmb])
    cfg, W = ref.load_checkpoint(model)
    checks = Checks()
    (check_vit if args.family == "fm_vit" else check_vlm)(args, checks, model, fmb, cfg, W, tool)
    print("%d passed, %d failed" % (checks.passed, checks.failed))
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
