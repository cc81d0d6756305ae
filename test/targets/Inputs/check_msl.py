#!/usr/bin/python3
"""Syntax check of MSL files (an artifact's executable from fmc inspect
--extract-executable --target metal holds one translation unit per kernel,
each ending with a NUL; fm-msl writes one per file): each unit through
clang -x clcpp -fsyntax-only with msl_stub/ (see its metal_stdlib for what
is and is not checked). Prints one line per unit and the count; exits 1 on
the first unit clang rejects.

Usage: check_msl.py CLANG WORKDIR FILE...
"""
import os
import re
import subprocess
import sys

# One clang -fsyntax-only of one kernel's unit: well under a second. A hang fails the
# test, naming the unit.
LIMIT = 120


def main():
    clang, work, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    stub = os.path.join(os.path.dirname(os.path.abspath(__file__)), "msl_stub")
    units = [u for path in sorted(paths) for u in open(path, "rb").read().split(b"\0")
             if u.strip()]
    os.makedirs(work, exist_ok=True)
    for i, unit in enumerate(units):
        m = re.search(rb"kernel void (\w+)\(", unit)
        name = m.group(1).decode() if m else "?"
        src = os.path.join(work, "unit%d.metal" % i)
        with open(src, "wb") as f:
            f.write(unit)
        # MSL has no double: its unsuffixed floating constants are float, as
        # with -cl-single-precision-constant.
        cmd = [clang, "-x", "clcpp", "-cl-std=clc++2021", "-cl-single-precision-constant",
               "-fsyntax-only", "-Wno-unknown-attributes", "-I", stub, src]
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=LIMIT)
        except subprocess.TimeoutExpired:
            sys.stdout.write("unit %d (%s): TIMEOUT: killed after %d s (its limit; a hang?): "
                             "%s\n" % (i, name, LIMIT, " ".join(cmd)))
            return 1
        if p.returncode != 0:
            sys.stdout.write("unit %d (%s): rejected\n%s" % (i, name, p.stdout))
            return 1
        print("unit %d (%s): ok" % (i, name))
    print("%d units ok" % len(units))
    return 0


if __name__ == "__main__":
    sys.exit(main())
