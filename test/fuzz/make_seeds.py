#!/usr/bin/python3
"""Writes the committed seed corpora and dictionaries of the fuzz targets
that are made from the repository's own inputs (test/fuzz/CMakeLists.txt):

  corpus/fm_dialect/        one file per `// -----` case of test/dialect/*.mlir
  corpus/model_config/      config.json of every gen_checkpoint.py preset
  corpus/safetensors_index/ index files naming the fuzzer's two shards
  fm_dialect.dict, model_config.dict, json.dict

With --build BUILD (a build with fmc), also the seeds that need it:

  corpus/elf_image/         the runtime tests' stand-in kernels and fmc's
                            generated code for a tiny llama
  corpus/signature/         a signature trailer, keys and a signature
  corpus/fmb/real_*.fmb     small artifacts compiled by fmc

Usage: make_seeds.py [--build BUILD]   (from anywhere; writes next to itself)
"""
import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")
sys.path.insert(0, os.path.join(ROOT, "examples"))


def fresh(name):
    d = os.path.join(CORPUS, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def dialect_seeds():
    out = fresh("fm_dialect")
    n = 0
    for path in sorted(glob.glob(os.path.join(ROOT, "test", "dialect", "*.mlir"))):
        base = os.path.splitext(os.path.basename(path))[0]
        text = open(path).read()
        for i, case in enumerate(re.split(r"^// -----\s*$", text, flags=re.M)):
            # Without RUN/CHECK lines and expected-error comments: the IR.
            lines = [l for l in case.splitlines()
                     if not re.match(r"\s*//\s*(RUN|CHECK|expected-)", l)]
            body = "\n".join(lines).strip() + "\n"
            if len(body) > 1:
                write(os.path.join(out, "%s_%02d.mlir" % (base, i)), body)
                n += 1
    words = set()
    for td in glob.glob(os.path.join(ROOT, "dialects", "*", "IR", "*.td")):
        dialect = "fmk" if "fmk" in td else "fm"
        for m in re.finditer(r'_Op<"([a-z_]+)"', open(td).read()):
            words.add("%s.%s" % (dialect, m.group(1)))
        for m in re.finditer(r'I32EnumAttrCase<"\w+",\s*\d+,\s*"([a-z_0-9]+)"', open(td).read()):
            words.add(m.group(1))
    words |= {"#fm.quant<", "#fm.param<", "tensor<", "f32", "f16", "bf16", "i32",
              "index", "func.func", "return", "->", "attributes", "{", "}", "<", ">",
              "x", ":", "=", "%", "@", "dense<", "!fm.", "-1", "0x7fffffff"}
    write(os.path.join(HERE, "fm_dialect.dict"),
          "# fm and fmk op names and keywords (make_seeds.py)\n" +
          "".join('"%s"\n' % w.replace("\\", "\\\\").replace('"', '\\"')
                  for w in sorted(words)))
    return n


def config_seeds():
    import gen_checkpoint as g
    out = fresh("model_config")
    n = 0
    keys = set()
    for family in g.FAMILIES:
        for preset in sorted(g.PRESETS[family]):
            cfg = g.make_config(family, preset)
            keys |= set(cfg)
            write(os.path.join(out, "%s_%s.json" % (family, preset)),
                  json.dumps(cfg, indent=1, sort_keys=True))
            n += 1
    for path in glob.glob(os.path.join(ROOT, "import", "**", "*.cpp"), recursive=True):
        for m in re.finditer(r'"([a-z][a-z0-9_]+)"', open(path).read()):
            keys.add(m.group(1))
    write(os.path.join(HERE, "model_config.dict"),
          "# config.json keys and values the readers know (make_seeds.py)\n" +
          "".join('"\\"%s\\""\n' % k for k in sorted(keys)) +
          '"true"\n"false"\n"null"\n"0"\n"-1"\n"1e308"\n"0.5"\n"[]"\n"{}"\n')
    return n


def index_seeds():
    out = fresh("safetensors_index")
    seeds = {
        "two_shards.json": {"metadata": {"total_size": 34},
                            "weight_map": {"x": "a.safetensors", "y": "a.safetensors",
                                           "z": "b.safetensors", "w": "b.safetensors"}},
        "one_shard.json": {"weight_map": {"x": "a.safetensors"}},
        "missing_shard.json": {"weight_map": {"x": "c.safetensors"}},
        "wrong_shard.json": {"weight_map": {"x": "b.safetensors"}},
        # Regression: a shard outside the checkpoint directory.
        "outside.json": {"weight_map": {"x": "../a.safetensors"}},
        "not_a_name.json": {"weight_map": {"x": 7}},
        "empty_map.json": {"weight_map": {}},
    }
    for name, obj in seeds.items():
        write(os.path.join(out, name), json.dumps(obj))
    write(os.path.join(HERE, "json.dict"),
          "# JSON and safetensors index tokens (make_seeds.py)\n" +
          "".join('"%s"\n' % t for t in [
              "{", "}", "[", "]", ":", ",", "\\\"weight_map\\\"", "\\\"metadata\\\"",
              "\\\"a.safetensors\\\"", "\\\"b.safetensors\\\"", "\\\"x\\\"", "\\\"y\\\"",
              "\\\"z\\\"", "\\\"w\\\"", "null", "true", "false", "\\\"..\\\"", "\\\"/\\\"",
              "\\\\u0000"]))
    return len(seeds)


# gen_checkpoint.py, or one fmc command on a tiny model: seconds. A command past it is
# killed and the script stops, naming it.
LIMIT = 300


def run(cmd, **kw):
    try:
        return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, timeout=LIMIT, **kw).stdout
    except subprocess.TimeoutExpired:
        sys.exit("make_seeds.py: TIMEOUT: killed after %d s (its limit; a hang?): %s"
                 % (LIMIT, " ".join(cmd)))


def build_seeds(build):
    bindir = os.path.join(build, "bin")
    fmc = os.path.join(bindir, "fmc")
    work = tempfile.mkdtemp(prefix="fm-seeds-")
    try:
        ckpt = os.path.join(work, "ckpt")
        # Small (44 KB as w4): libFuzzer mutates inputs up to the largest seed.
        run(["/usr/bin/python3", os.path.join(ROOT, "examples", "gen_checkpoint.py"),
             "--family", "llama", "--preset", "tiny", "--out", ckpt,
             "--set", "vocab_size=32", "--set", "num_hidden_layers=1",
             "--set", "intermediate_size=64"])
        fmb = os.path.join(work, "tiny.fmb")
        run([fmc, "compile", ckpt, "-o", fmb, "--quant", "w4", "--max-prefill", "4",
             "--context", "16"])
        elf = fresh("elf_image")
        run([fmc, "inspect", fmb, "--extract-executable", os.path.join(elf, "llama_tiny.so")])
        kernels = glob.glob(os.path.join(build, "**", "fm_runtime_test_kernels.so"),
                            recursive=True)
        if kernels:
            shutil.copy(kernels[0], os.path.join(elf, "test_kernels.so"))
        # Signed artifact pieces: a trailer record, keys, a signature.
        key = os.path.join(work, "k")
        run([fmc, "keygen", "-o", key])
        signed = os.path.join(work, "signed.fmb")
        run([fmc, "compile", ckpt, "-o", signed, "--quant", "w4", "--max-prefill", "4",
             "--context", "16", "--sign", key + ".key"])
        sig = fresh("signature")
        data = open(signed, "rb").read()
        plain = open(fmb, "rb").read()
        write(os.path.join(sig, "trailer"), b"\x00" + data[len(plain):])
        write(os.path.join(sig, "public_key"), b"\x01" + open(key + ".pub", "rb").read())
        write(os.path.join(sig, "secret_key"), b"\x02" + open(key + ".key", "rb").read())
        run([fmc, "inspect", signed, "--signature-out", os.path.join(work, "s.minisig")])
        write(os.path.join(sig, "signature"), b"\x03" + open(os.path.join(work, "s.minisig"), "rb").read())
        # A real artifact for the loader's fuzzer (small: w4, short context).
        fmbdir = os.path.join(CORPUS, "fmb")
        for old in glob.glob(os.path.join(fmbdir, "real_*.fmb")):
            os.remove(old)
        shutil.copy(fmb, os.path.join(fmbdir, "real_llama_small_w4.fmb"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", help="a build directory with fmc (for the built seeds)")
    args = ap.parse_args()
    print("fm_dialect: %d seeds" % dialect_seeds())
    print("model_config: %d seeds" % config_seeds())
    print("safetensors_index: %d seeds" % index_seeds())
    if args.build:
        build_seeds(os.path.abspath(args.build))
        print("elf_image, signature, fmb/real_*: written from %s" % args.build)


if __name__ == "__main__":
    main()
