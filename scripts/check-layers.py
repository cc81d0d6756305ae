#!/usr/bin/python3
"""Checks that every #include runs down the layers, never up.

fmc's code is layered (docs/architecture.md): the runtime (base < kernels <
hal < core) at the bottom, plain C++ without MLIR; then the compiler's
dialects, the weights I/O, the importer, the passes, the target interface,
each target, the list of built-in targets and the artifact writer; the
tools on top. Each layer is one library that links only the layers below
it (CMakeLists.txt, cmake/FmLayers.cmake). This script reads every C++
source under the layers' folders, resolves each quoted #include to the
layer that owns it, and fails, naming the file, the line and the two
layers, when a file includes a header of a layer that is not below its own.
The runtime must not include MLIR or LLVM at all, and the tools may use only
the runtime's public headers (fm/...), not its internals.

  check-layers.py [--root DIR]   exits 0 when every include runs down
"""
import argparse
import os
import re
import sys

# Layer -> the layers it may include directly (the rest follows: a layer may
# include everything below the layers it names).
DEPS = {
    "runtime-base": [],
    "runtime-schema": [],
    "runtime-kernels": ["runtime-base"],
    "runtime-hal": ["runtime-kernels", "runtime-schema"],
    "runtime-core": ["runtime-hal"],
    "dialects": [],
    "weights": [],
    "import": ["dialects", "weights"],
    "passes": ["dialects"],
    "target": ["dialects"],
    "target-cpu": ["target"],
    "builtin-targets": ["target-cpu"],
    "artifact": ["target", "weights", "runtime-schema", "runtime-kernels"],
    "tools": ["import", "passes", "builtin-targets", "artifact"],
}
RUNTIME = {l for l in DEPS if l.startswith("runtime-")}

# Which layer a source file belongs to: the longest matching path prefix.
# Folders not listed (test/, bench/, docs/) are not checked.
PATHS = [
    ("runtime/base/", "runtime-base"),
    ("runtime/kernels/", "runtime-kernels"),
    ("runtime/hal/", "runtime-hal"),
    ("runtime/src/", "runtime-core"),
    ("runtime/include/fm/", None),  # by header name, see NAMES
    ("runtime/", "runtime-core"),   # runtime/<new folder>: a core library
    ("dialects/", "dialects"),
    ("import/weights/", "weights"),
    ("import/", "import"),
    ("passes/", "passes"),
    ("targets/Target.", "target"),
    ("targets/cpu/", "target-cpu"),
    ("targets/BuiltinTargets.", "builtin-targets"),
    ("targets/artifact/", "artifact"),
    ("targets/", "target-cpu"),     # targets/<another target>: a target
    ("tools/", "tools"),
    ("examples/app/", "tools"),
]

# Which layer a quoted include name belongs to (the include roots: the
# source tree for the compiler, runtime/ and runtime/include for the
# runtime, runtime/src inside it).
NAMES = [
    ("fm/fmb_generated.h", "runtime-schema"),
    ("fm/fmb_header_generated.h", "runtime-schema"),
    ("fm/format.h", "runtime-base"),
    ("fm/minisign.h", "runtime-base"),
    ("fm/artifact_signature.h", "runtime-base"),
    ("fm/npy.h", "runtime-base"),
    ("fm/status.h", "runtime-base"),
    ("fm/communicator.h", "runtime-base"),
    ("fm/device_info.h", "runtime-base"),
    ("fm/sampler.h", "runtime-kernels"),
    ("fm/", "runtime-core"),
    ("base/", "runtime-base"),
    ("kernels/", "runtime-kernels"),
    ("hal/", "runtime-hal"),
    ("src/", "runtime-core"),
    ("commands/", "runtime-core"),
] + [(p, l) for p, l in PATHS if l and not p.startswith("runtime/")]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
EXTERNAL_COMPILER = ("mlir/", "llvm/", "llvm-c/")


def closure():
    below = {}
    def visit(layer):
        if layer not in below:
            below[layer] = set()
            for d in DEPS[layer]:
                below[layer] |= {d} | visit(d)
        return below[layer]
    for layer in DEPS:
        visit(layer)
    return below


def match(table, key):
    best = None
    for prefix, layer in table:
        if key.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, layer)
    return best


def layer_of_file(rel):
    m = match(PATHS, rel)
    if not m:
        return None
    if m[1] is None:  # a public runtime header: by its include name
        return match(NAMES, "fm/" + rel[len("runtime/include/fm/"):])[1]
    return m[1]


def layer_of_include(root, rel_file, name):
    """The layer of `#include "name"` in `rel_file`, or None (not ours)."""
    here = os.path.dirname(rel_file)
    local = os.path.normpath(os.path.join(here, name))
    if os.path.isfile(os.path.join(root, local)) and not name.startswith(".."):
        # A header beside the file (or below it): the same folder's layer.
        if "/" not in name:
            return layer_of_file(local)
    m = match(NAMES, name)
    return m[1] if m else None


def check(root):
    below = closure()
    problems = []
    files = 0
    for top in ("runtime", "dialects", "import", "passes", "targets", "tools",
                "examples/app"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for f in sorted(filenames):
                if not f.endswith((".h", ".cpp", ".cc", ".inc")) or f.endswith("_test.cpp"):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                mine = layer_of_file(rel)
                if mine is None:
                    continue
                files += 1
                with open(path, encoding="utf-8", errors="replace") as src:
                    for lineno, line in enumerate(src, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        name = m.group(2)
                        if mine in RUNTIME and name.startswith(EXTERNAL_COMPILER):
                            problems.append("%s:%d: the runtime (%s) includes %s: the "
                                            "runtime has no MLIR or LLVM inside"
                                            % (rel, lineno, mine, name))
                            continue
                        if m.group(1) == "<":
                            continue
                        theirs = layer_of_include(root, rel, name)
                        if theirs is None or theirs == mine:
                            continue
                        if mine == "tools" and theirs in RUNTIME:
                            if name.startswith("fm/"):
                                continue  # the runtime's public API
                            problems.append("%s:%d: %s includes the runtime's internal "
                                            "header %s (%s): tools use the public "
                                            "headers fm/..." % (rel, lineno, mine, name,
                                                                theirs))
                            continue
                        if theirs not in below[mine]:
                            problems.append("%s:%d: %s includes %s of layer %s, which is "
                                            "not below it (%s may include: %s)"
                                            % (rel, lineno, mine, name, theirs, mine,
                                               ", ".join(sorted(below[mine])) or "nothing"))
    return files, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    args = ap.parse_args()
    files, problems = check(args.root)
    for p in problems:
        print(p)
    if problems:
        print("check-layers: %d include(s) run up the layers (in %d files)"
              % (len(problems), files))
        return 1
    print("check-layers: %d files, every include runs down the layers" % files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
