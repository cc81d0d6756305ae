#!/usr/bin/python3
"""Peak memory of `fmc compile` against the checkpoint it reads (issue #18).

Runs the given fmc compile command and samples /proc/PID/status every 20 ms:
RssAnon (the compiler's own memory: what the bound is about), RssFile (the
mapped checkpoint and output, which the kernel can drop at will) and VmHWM
(the peak resident set /usr/bin/time -v reports). Prints them beside the
checkpoint's size and its largest tensor (as stored, and as f32: the working
set of one tensor being converted or quantized), and the issue's bound:
peak RssAnon <= 1 GiB + the largest tensor's f32 working set.

  compile_rss.py CHECKPOINT_DIR -- FMC compile CHECKPOINT_DIR -o OUT.fmb [flags]
"""
import glob
import json
import os
import struct
import subprocess
import sys
import time

GIB = 1 << 30
SIZES = {"F64": 8, "F32": 4, "BF16": 2, "F16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
         "U8": 1, "BOOL": 1}


def tensors(ckpt):
    """(total file bytes, [(name, dtype, elements, bytes)]) of every shard."""
    total, out = 0, []
    for path in sorted(glob.glob(os.path.join(ckpt, "*.safetensors"))):
        total += os.path.getsize(path)
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
        for name, t in header.items():
            if name == "__metadata__":
                continue
            elems = 1
            for d in t["shape"]:
                elems *= d
            out.append((name, t["dtype"], elems, t["data_offsets"][1] - t["data_offsets"][0]))
    return total, out


def status(pid):
    kb = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("RssAnon", "RssFile", "RssShmem", "VmHWM", "VmRSS"):
                    kb[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return kb


def main():
    if "--" not in sys.argv or sys.argv.index("--") != 2:
        sys.exit(__doc__)
    ckpt, cmd = sys.argv[1], sys.argv[3:]
    total, ts = tensors(ckpt)
    big = max(ts, key=lambda t: t[3])
    peak = {"RssAnon": 0, "RssFile": 0, "VmHWM": 0}
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    while p.poll() is None:
        s = status(p.pid)
        for k in peak:
            peak[k] = max(peak[k], s.get(k, 0))
        time.sleep(0.02)
    wall = time.monotonic() - start
    if p.returncode != 0:
        sys.exit("compile_rss: the command failed (%d)" % p.returncode)
    working = big[2] * 4
    bound = GIB + working
    mib = lambda b: "%.1f MiB" % (b / (1 << 20))
    print("checkpoint: %d tensors, %s on disk; largest %s (%s, %s stored, %s as f32)" %
          (len(ts), mib(total), big[0], big[1], mib(big[3]), mib(working)))
    print("fmc compile: %.1f s; peak RssAnon %s (%.3f of the checkpoint), peak RssFile %s, "
          "VmHWM %s" % (wall, mib(peak["RssAnon"]), peak["RssAnon"] / total,
                        mib(peak["RssFile"]), mib(peak["VmHWM"])))
    print("bound 1 GiB + largest tensor as f32 = %s: %s" %
          (mib(bound), "within" if peak["RssAnon"] <= bound else "EXCEEDED"))
    return 0 if peak["RssAnon"] <= bound else 1


if __name__ == "__main__":
    sys.exit(main())
