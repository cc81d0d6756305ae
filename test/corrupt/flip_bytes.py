#!/usr/bin/python3
"""One changed byte anywhere in a real artifact: a clean error or a clean run.

Compiles a small llama checkpoint (fmc compile --quant w4, signed), then
changes one byte (XOR with a random non-zero value) at OFFSETS offsets
spread over the whole file, and:

  1. runs `fm-run` on each copy (the program digest checked, as always):
     every run must exit 0 or exit 1 with an "fm-run: error:" line, never
     die of a signal or hang. A change before the data section (the
     FlatBuffer, the commands, the executable, the padding) must be an
     error: the program digest or the framing before it catches it; a change
     in the data section (the weights) must run.
  2. runs `fm-run --trusted-key` on each copy: the same, and a change after
     the data section (the signature trailer) must be an error too.
  3. runs `fm_flip_check` (the loader with the program digest skipped, as
     the fuzzers run it; it dlopens an executable the ELF check accepts,
     never calling it) on the same offsets and on every byte of the
     executable's image, each in its own process: no crash.

Prints a summary per pass; exits 1 on any violation. Usage:
  flip_bytes.py --bin BUILD/bin --work DIR [--fmc FMC] [--offsets 500] [--seed 1]
                [--run-every 1] [--image-stride 1]
--run-every K runs fm-run (1 and 2) on every K-th offset only, and
--image-stride S gives fm_flip_check every S-th byte of the executable: the
sanitizer run (scripts/check-sanitize.sh) uses them to spend its
time where ASan sees most, the loader without the digest (an ASan fm-run
takes about 100 ms, fm_flip_check about 6 ms an offset); corrupt.flips, in
the plain build, runs the whole set.
"""
import argparse
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# Time limits (generous: they catch hangs, and the sanitizer run is 5-10x slower). A
# command past its limit is killed and the test fails naming it. fm-run on one changed
# copy has its own limit below (a hang there is a violation, counted, not the end).
LIMIT = 300           # gen_checkpoint.py, fmc keygen / compile / inspect of a small llama
FM_RUN_LIMIT = 60     # one fm-run of 2 tokens on a changed copy
FLIP_CHECK_BASE = 120  # fm_flip_check: its start, plus per offset (about 6 ms under ASan)
FLIP_CHECK_PER_OFFSET = 0.05


def timed_out(cmd, limit):
    shown = " ".join(cmd[:8]) + (" ... (%d arguments)" % len(cmd) if len(cmd) > 8 else "")
    sys.exit("flip_bytes.py: TIMEOUT: killed after %d s (its limit; a hang?): %s" % (limit, shown))


def run(cmd, **kw):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           errors="replace", timeout=LIMIT, **kw)
    except subprocess.TimeoutExpired:
        timed_out(cmd, LIMIT)
    if p.returncode != 0:
        sys.exit("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout,
                                                   p.stderr))
    return p.stdout


def regions(fmc, fmb):
    """(data start, data end, executable image start, image end) of the file."""
    info = json.loads(run([fmc, "inspect", fmb, "--json"]))
    data = open(fmb, "rb").read()
    n = int.from_bytes(data[:4], "little")
    start = (4 + n + 63) // 64 * 64
    end = start + info["weight_bytes"]
    so = os.path.join(os.path.dirname(fmb), "image.so")
    run([fmc, "inspect", fmb, "--extract-executable", so])
    image = open(so, "rb").read()
    at = data.find(image)
    assert at > 0 and at + len(image) <= start, "the image is not in the FlatBuffer"
    return start, end, at, at + len(image)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fmc", help="the compiler (default: BIN/fmc; a runtime-only "
                    "sanitizer build has none)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--offsets", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--run-every", type=int, default=1)
    ap.add_argument("--image-stride", type=int, default=1)
    args = ap.parse_args()
    tool = lambda name: args.fmc if name == "fmc" and args.fmc else os.path.join(args.bin, name)
    os.makedirs(args.work, exist_ok=True)
    ckpt = os.path.join(args.work, "ckpt")
    run(["/usr/bin/python3", os.path.join(ROOT, "examples", "gen_checkpoint.py"), "--family",
         "llama", "--preset", "tiny", "--out", ckpt])
    key = os.path.join(args.work, "key")
    run([tool("fmc"), "keygen", "-o", key, "--force"])
    fmb = os.path.join(args.work, "model.fmb")
    run([tool("fmc"), "compile", ckpt, "-o", fmb, "--quant", "w4", "--max-prefill", "8",
         "--context", "32", "--sign", key + ".key"])
    original = open(fmb, "rb").read()
    size = len(original)
    data_start, data_end, image_start, image_end = regions(tool("fmc"), fmb)

    # The signature file's untrusted comment line (its newline included).
    at = original.find(b"untrusted comment:", data_end)
    unsigned = range(at, original.index(b"\n", at) + 1) if at >= 0 else range(0)

    rng = random.Random(args.seed)
    # Evenly spread, each jittered inside its stride, over the whole file.
    stride = size / args.offsets
    offsets = sorted({min(size - 1, int(i * stride + rng.random() * stride))
                      for i in range(args.offsets)})
    xors = {o: rng.randrange(1, 256) for o in offsets}
    flipped = os.path.join(args.work, "flipped.fmb")
    failures = []

    def fm_run(extra):
        counts = {"error": 0, "run": 0}
        for o in offsets[::args.run_every]:
            data = bytearray(original)
            data[o] ^= xors[o]
            with open(flipped, "wb") as f:
                f.write(data)
            try:
                p = subprocess.run([tool("fm-run"), flipped, "--tokens", "1,17,42",
                                    "--max-new-tokens", "2", "--threads", "1"] + extra,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   errors="replace", timeout=FM_RUN_LIMIT)
            except subprocess.TimeoutExpired:
                failures.append("%s offset %d: hangs" % (extra, o))
                continue
            where = ("head" if o < data_start else "data" if o < data_end else "trailer")
            if p.returncode == 0:
                counts["run"] += 1
                # minisign leaves its first line, the untrusted comment,
                # unsigned by design: a change there may run.
                must_fail = where == "head" or (where == "trailer" and extra and
                                                o not in unsigned)
                if must_fail:
                    failures.append("%s offset %d (%s): ran, but the change must be "
                                    "refused" % (extra, o, where))
            elif p.returncode == 1 and "fm-run: error: " in p.stderr:
                counts["error"] += 1
                if where == "data" or (where == "trailer" and not extra):
                    failures.append("%s offset %d (%s): refused: %s" %
                                    (extra, o, where, p.stderr.strip()))
            else:
                failures.append("%s offset %d (%s): exit %d: %s" %
                                (extra, o, where, p.returncode, p.stderr.strip()[-300:]))
        return counts

    plain = fm_run([])
    print("fm-run: %d offsets over %d bytes (head %d, data %d, trailer %d): %d clean "
          "errors, %d clean runs" %
          (len(offsets[::args.run_every]), size, data_start, data_end - data_start, size - data_end,
           plain["error"], plain["run"]))
    trusted = fm_run(["--trusted-key", key + ".pub"])
    print("fm-run --trusted-key: %d clean errors, %d clean runs" %
          (trusted["error"], trusted["run"]))

    # The loader without the digest: the same offsets, and every byte (or
    # every --image-stride-th) of the executable's image (the ELF check's
    # whole input).
    inside = list(range(image_start, image_end, args.image_stride))
    for o in inside:
        xors.setdefault(o, rng.randrange(1, 256))
    every = sorted(set(offsets) | set(inside))
    cmd = [tool("fm_flip_check"), fmb] + ["%d:%d" % (o, xors[o]) for o in every]
    limit = FLIP_CHECK_BASE + FLIP_CHECK_PER_OFFSET * len(every)
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             errors="replace", timeout=limit)
    except subprocess.TimeoutExpired:
        timed_out(cmd, limit)
    for line in out.stdout.splitlines():
        if " CRASH " in line:
            failures.append("fm_flip_check offset " + line)
    summary = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr
    print("%s (%d offsets, %d inside the %d-byte executable)" %
          (summary, len(every), len(inside), image_end - image_start))
    if out.returncode not in (0, 1):
        failures.append("fm_flip_check failed: " + out.stderr)

    for f in failures[:20]:
        print("FAIL " + f)
    print("%d violations" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
