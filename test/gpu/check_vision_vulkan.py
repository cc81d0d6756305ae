#!/usr/bin/python3
"""Image encoders and a VLM compiled --target cpu,vulkan, run on --device vulkan.

fm_vit: one [3, S, S] image tensor on --device vulkan against the numpy
reference (test/reference/fm_reference.py: max |d| <= rtol * max |value|) and
against the same artifact on --device cpu (peer, --peer-rtol); the ablated
references (padded tokens masked, registers from window 0, no rel-pos bias)
must fail the tolerance, so it tells the semantics apart on the GPU too. With
--vision-quant (f16/w8/w4 encoder weights) the numpy reference does not apply
(it has the f32 weights): the CPU device of the same artifact is the bound.

fm_vlm: a prompt with g_out^2 image placeholders, --score logits of every
position on --device vulkan vs the reference and vs --device cpu
--activations f32, prefill chunk 1 and whole.

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
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import fm_reference as ref  # noqa: E402
import gen_checkpoint  # noqa: E402
import timelimits  # noqa: E402  (every command's time limit: test/e2e/timelimits.py)


def run(cmd):
    p = timelimits.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd),
                                                          p.stdout, p.stderr))
        sys.exit(1)
    # With FM_VULKAN_VALIDATION=1 every validation-layer message is a failure.
    if "fm: vulkan validation:" in p.stderr:
        sys.stderr.write("validation messages from: %s\n%s" % (" ".join(cmd), p.stderr))
        sys.exit(1)
    return p.stdout + p.stderr


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def report(self, ok, line):
        print(("PASS " if ok else "FAIL ") + line)
        self.passed += ok
        self.failed += not ok


def check_vit(args, checks, fmb, cfg, W):
    c = ref.vit_config(cfg)
    S = c["image_size"]
    image = np.random.default_rng(args.seed).standard_normal((3, S, S)).astype(np.float32)
    tensor = os.path.join(args.work, "image.npy")
    np.save(tensor, image)
    outs = {}
    for device in (args.device, "cpu"):
        outs[device] = os.path.join(args.work, "tokens_%s.npy" % device)
        # The GPU kernels dequantize packed weights and multiply f32
        # activations: so does the CPU peer.
        run(["fm-run", fmb, "--image-tensor", tensor, "--image-tokens-out", outs[device],
             "--device", device] + (["--activations", "f32"] if device == "cpu" else []))
    got, cpu = np.load(outs[args.device]), np.load(outs["cpu"])
    ok, line = ref.compare(cpu, got, args.peer_rtol, argmax=False)
    checks.report(ok, "image %s vs cpu: %s" % (args.device, line))
    if args.vision_quant:
        return
    ok, line = ref.compare(ref.vit(cfg, W, image), got, args.rtol, argmax=False)
    checks.report(ok, "image %s vs reference: %s" % (args.device, line))
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


def check_vlm(args, checks, fmb, cfg, W):
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
    base = ["fm-run", fmb, "--tokens", text, "--image-tensor", tensor, "--score"]
    peer = os.path.join(args.work, "logits_cpu.npy")
    run(base + ["--logits-out", peer, "--device", "cpu", "--activations", "f32"])
    for chunk in args.chunks.split(","):
        out = os.path.join(args.work, "logits_c%s.npy" % chunk)
        run(base + ["--logits-out", out, "--prefill-chunk", chunk, "--device", args.device])
        ok, line = ref.compare(want, np.load(out), args.rtol, stats=stats)
        ok2, line2 = ref.compare(np.load(peer), np.load(out), args.peer_rtol)
        checks.report(ok and ok2, "vlm %s chunk=%s: %s; vs cpu %s" % (args.device, chunk, line, line2))
    ok, line = ref.compare(ref.logits(cfg, W, [t if t != idx else 0 for t in tokens], {}, []),
                           np.load(out), args.rtol)
    checks.report(not ok, "vlm logits without the image rejected: %s" % line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True, choices=("fm_vit", "fm_vlm"))
    ap.add_argument("--preset", required=True)
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--vision-quant", default="", help="f16, w8 or w4 encoder weights")
    ap.add_argument("--chunks", default="1,0", help="fm_vlm prefill chunks; 0 = whole prompt")
    ap.add_argument("--rtol", type=float, default=1e-5, help="against the numpy reference")
    ap.add_argument("--peer-rtol", type=float, default=1e-5, help="against --device cpu")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="vulkan", choices=("vulkan", "metal"),
                    help="the GPU device (metal: scripts/check-metal.sh --mac, on a Mac)")
    args = ap.parse_args()

    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "ckpt")
    gen_checkpoint.generate(args.family, args.preset, model)
    fmb = os.path.join(args.work, "model.fmb")
    compile_cmd = ["fmc", "compile", model, "-o", fmb, "--target", "cpu," + args.device]
    if args.vision_quant:
        compile_cmd += ["--vision-quant", args.vision_quant]
    run(compile_cmd)
    cfg, W = ref.load_checkpoint(model)
    checks = Checks()
    (check_vit if args.family == "fm_vit" else check_vlm)(args, checks, fmb, cfg, W)
    print("%d passed, %d failed" % (checks.passed, checks.failed))
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
