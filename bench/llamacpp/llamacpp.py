"""The pinned llama.cpp release as the benchmarks' Python sees it.

fetch() runs fetch-llamacpp.sh (the release node-llama-cpp 3.22.1 pins:
prebuilt CPU libraries, the source, llama_yardstick built against them)
and says where it all is; gguf() imports that release's own gguf-py;
to_rope_pairs() is the q/k row order llama.cpp's llama GGUFs need.
Used by side_by_side.py (speed) and bench/quality (quality).
"""
import os
import subprocess
import sys
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_CACHE = os.path.expanduser("~/.cache/fmc/bench/llamacpp")


def run(cmd, **kw):
    """Runs cmd (its first words echoed on stderr); its stdout, as text."""
    sys.stderr.write("+ %s\n" % " ".join(str(c) for c in cmd[:6]))
    return subprocess.run([str(c) for c in cmd], check=True, stdout=subprocess.PIPE,
                          text=True, **kw).stdout


def fetch(cache=DEFAULT_CACHE):
    """The fetched release: .dir, .src (the llama.cpp tree), .yardstick
    (bench/llamacpp/llama_yardstick, built), .release (the llama.cpp tag)."""
    path = run([os.path.join(HERE, "fetch-llamacpp.sh"), cache]).strip().splitlines()[-1]
    with open(os.path.join(path, "release")) as f:
        release = f.read().strip()
    return SimpleNamespace(dir=path, src=os.path.join(path, "src"), release=release,
                           yardstick=os.path.join(path, "bin", "llama_yardstick"))


def gguf(src):
    """The release's own gguf-py (its writer and reader), from src/gguf-py."""
    sys.path.insert(0, os.path.join(src, "gguf-py"))
    import gguf as module
    return module


def to_rope_pairs(w, heads):
    """HF's q/k rows (rotate-half) in llama.cpp's order (adjacent pairs),
    as its convert_hf_to_gguf.py permutes them."""
    return (w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))
