#!/usr/bin/python3
"""The same checkpoint gives the same artifact, byte for byte.

For a checkpoint in safetensors shards (examples/gen_checkpoint.py --shards),
compiles it with one fmc command line:
  - twice in a row,
  - under `taskset` on one core and on two cores (where there are two),
  - from a copy whose index lists the tensors in another order, with the
    shard files under each other's names,
  - from a copy without the index (the shards found by name), renamed so
    that name order is the reverse of the original shard order,
and checks that every artifact equals the first one (cmp). Prints one line
per comparison, then `N identical, N different`.

Usage: check_reproducible.py --bin BUILD/bin --work DIR --family F --preset P
       [--compile-args "..."] [--shards N]
"""
import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# gen_checkpoint.py, or one fmc compile of a tiny model (under taskset on one core too):
# seconds. A command past it is killed and the test fails naming it (a hang, not slowness:
# generous for the sanitizer builds).
LIMIT = 300


def run(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=LIMIT)
    except subprocess.TimeoutExpired:
        sys.exit("check_reproducible.py: TIMEOUT: killed after %d s (its limit; a hang?): %s"
                 % (LIMIT, " ".join(cmd)))
    if p.returncode != 0:
        sys.exit("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout,
                                                   p.stderr))
    return p.stdout


def reorder(src, dst, drop_index):
    """A copy of checkpoint `src` whose shards trade names (and whose index,
    unless dropped, lists the tensors in reverse order)."""
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    index = json.load(open(os.path.join(src, "model.safetensors.index.json")))
    shards = sorted(set(index["weight_map"].values()))
    # Shard k gets the name of shard n-1-k: name order reverses file order.
    rename = {s: "shard-%s.safetensors" % chr(ord("z") - i) for i, s in enumerate(shards)} \
        if drop_index else dict(zip(shards, reversed(shards)))
    for s in shards:
        shutil.copy(os.path.join(src, s), os.path.join(dst, rename[s]))
    shutil.copy(os.path.join(src, "config.json"), os.path.join(dst, "config.json"))
    if not drop_index:
        items = list(index["weight_map"].items())[::-1]
        index["weight_map"] = {k: rename[v] for k, v in items}
        with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--family", required=True)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--compile-args", default="")
    args = ap.parse_args()
    fmc = os.path.join(args.bin, "fmc")
    os.makedirs(args.work, exist_ok=True)
    ckpt = os.path.join(args.work, "ckpt")
    run(["/usr/bin/python3", os.path.join(ROOT, "examples", "gen_checkpoint.py"), "--family",
         args.family, "--preset", args.preset, "--out", ckpt, "--shards", str(args.shards)])

    def compile(name, src=ckpt, prefix=()):
        out = os.path.join(args.work, name + ".fmb")
        run(list(prefix) + [fmc, "compile", src, "-o", out] + args.compile_args.split())
        return out

    first = compile("first")
    cpus = sorted(os.sched_getaffinity(0))
    cases = [("again", compile("again"))]
    cases.append(("taskset 1 core", compile("one_core", prefix=["taskset", "-c", str(cpus[0])])))
    if len(cpus) >= 2:
        cases.append(("taskset 2 cores", compile(
            "two_cores", prefix=["taskset", "-c", "%d,%d" % (cpus[0], cpus[1])])))
    reorder(ckpt, os.path.join(args.work, "reordered"), drop_index=False)
    cases.append(("index in another order, shards renamed",
                  compile("reordered", os.path.join(args.work, "reordered"))))
    reorder(ckpt, os.path.join(args.work, "no_index"), drop_index=True)
    cases.append(("no index, shards in reverse name order",
                  compile("no_index", os.path.join(args.work, "no_index"))))
    same = diff = 0
    for what, path in cases:
        if filecmp.cmp(first, path, shallow=False):
            same += 1
            print("IDENTICAL %s (%d bytes)" % (what, os.path.getsize(path)))
        else:
            diff += 1
            print("DIFFERENT %s: %s and %s" % (what, first, path))
    print("%d identical, %d different" % (same, diff))
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
