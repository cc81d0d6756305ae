#!/usr/bin/python3
"""fmc against llama.cpp on one model, one machine, one run.

The model is issue #16's: a random llama of 2.9B parameters (hidden 3072,
26 layers, 24/8 heads of 128, FFN 8192, vocabulary 49152, untied head),
drawn tensor by tensor from a seeded generator. fmc compiles its
Hugging Face checkpoint (f16 safetensors); llama.cpp gets the same values
as a GGUF (q/k rows permuted to llama.cpp's rope layout, as its
convert_hf_to_gguf.py does, so both compute the same function), written
as Q8_0 and then quantized by llama.cpp's own llama_model_quantize to
Q4_0 and Q2_K (from Q8_0, not f16: it halves the disk the run needs; the
speed of a format does not depend on its values).

llama.cpp is the release node-llama-cpp 3.22.1 pins, from its npm packages
(bench/llamacpp/fetch-llamacpp.sh): the prebuilt CPU libraries, with ggml
choosing its backend for this CPU (AMX where there is AMX), driven by
bench/llamacpp/llama_yardstick.cpp through libllama's C API, as llama-bench
does: one llama_decode of the whole prompt (prefill), then tokens one at a
time (decode), after a warm-up.

fmc's artifacts run with the default activations (int11: int8x2, ~16-bit,
except for the prefill GEMMs that AMX takes in one tile per 32-input
block, w2 g32/g64 and w4 g32, at 13/12 bits), and the w4 artifact again with --activations int8x2
(~16-bit everywhere) and with
--activations int8, one int8 digit per input and a scale per 32 inputs,
the scheme of the Q8_0 activations llama.cpp's Q4_0 meets. Each fmc row
names the activations fm-run reports.

Every round runs every configuration once, interleaved, with the read
bandwidth probed (fm-stream-read) before each run at its thread count;
medians over the rounds are printed, with each tool's decode GB/s (weight
bytes x tokens/s) as a fraction of its own probe, and fmc against
llama.cpp's Q4_0 (the issue's yardstick). Prints numbers, asserts none.

Disk: the f16 checkpoint (5.8 GB) is deleted once fmc has compiled it, the
Q8_0 GGUF (3.1 GB) once it is quantized; the artifacts (about 5 GB) stay in
--work for reruns unless --clean.

Usage: side_by_side.py [--build build] [--work /tmp/fm_llamacpp]
                       [--threads 2] [--prompt 64] [--gen 32] [--rounds 3]
                       [--layers 26] [--clean]
"""
import argparse
import json
import os
import shutil
import statistics
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def cpu_model():
    name, isa = "unknown", ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name" and name == "unknown":
                name = value.strip()
            elif key.strip() == "flags":
                have = value.split()
                isa = " ".join(x for x in ("avx2", "avx512f", "avx512_vnni", "amx_int8")
                               if x in have)
                break
    return "%s (%s)" % (name, isa)


sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
from llama29b import HEAD_DIM, HEADS, HIDDEN, FFN, KV_HEADS, VOCAB, tensors, values, write_checkpoint  # noqa: E402
import llamacpp  # noqa: E402  (beside this file)
from llamacpp import run, to_rope_pairs  # noqa: E402


def q8_0(w):
    """GGML's Q8_0 blocks (an f16 scale, then 32 int8) of an f32 matrix."""
    blocks = w.reshape(-1, 32)
    amax = np.abs(blocks).max(axis=1, keepdims=True)
    d = amax / 127.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    q = np.rint(blocks * inv).astype(np.int8)
    out = np.empty((blocks.shape[0], 34), dtype=np.uint8)
    out[:, :2] = d.astype(np.float16).view(np.uint8)
    out[:, 2:] = q.view(np.uint8)
    return out.reshape(w.shape[0], -1)


def write_gguf(path, layers, src):
    gguf = llamacpp.gguf(src)  # llama.cpp's own GGUF writer, from the same release
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(2048)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(layers)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(VOCAB)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_tokenizer_model("none")  # no vocabulary: token ids in, as fm-run --tokens
    specs = tensors(layers)
    for _, gname, shape, kind in specs:
        if kind == "norm":
            w.add_tensor_info(gname, shape, np.dtype(np.float32), 4 * shape[0])
        else:
            byte_shape = (shape[0], shape[1] // 32 * 34)
            w.add_tensor_info(gname, byte_shape, np.dtype(np.uint8),
                              byte_shape[0] * byte_shape[1], gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for i, (_, _, shape, kind) in enumerate(specs):
        v = values(i, shape, kind).astype(np.float32)
        if kind == "q":
            v = to_rope_pairs(v, HEADS)
        elif kind == "k":
            v = to_rope_pairs(v, KV_HEADS)
        w.write_tensor_data(v if kind == "norm" else q8_0(v))
    w.close()


# ----------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/fm_llamacpp")
    ap.add_argument("--cache", default=llamacpp.DEFAULT_CACHE)
    ap.add_argument("--threads", default="2")
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--layers", type=int, default=26)
    ap.add_argument("--clean", action="store_true", help="delete the models afterwards")
    args = ap.parse_args()

    bin_ = os.path.join(args.build, "bin")
    fetched = llamacpp.fetch(args.cache)
    yardstick, release = fetched.yardstick, fetched.release
    os.makedirs(args.work, exist_ok=True)
    tag = "llama%d" % args.layers
    fmc = {"fmc w2 g64": ("w2", 64), "fmc w4 g32": ("w4", 32)}
    # fm-run configurations: (artifact, extra flags). The w4 artifact again
    # with ~16-bit int8x2 activations throughout and with one-digit int8
    # activations, the scheme of the Q8_0 activations llama.cpp's Q4_0 meets
    # (per 32 inputs; fmc's default, int11, takes 12-bit x in w4's GEMMs).
    runs = {k: (k, []) for k in fmc}
    runs["fmc w4 g32 int8x2 x"] = ("fmc w4 g32", ["--activations", "int8x2"])
    runs["fmc w4 g32 int8 x"] = ("fmc w4 g32", ["--activations", "int8"])
    llama = {"llama.cpp Q2_K": "q2_k", "llama.cpp Q4_0": "q4_0"}
    paths = {k: os.path.join(args.work, "%s_%s_g%d.fmb" % (tag, q, g)) for k, (q, g) in fmc.items()}
    paths.update({k: os.path.join(args.work, "%s_%s.gguf" % (tag, t)) for k, t in llama.items()})
    context = args.prompt + args.gen + 16

    if not all(os.path.exists(paths[k]) for k in fmc):
        ckpt = os.path.join(args.work, tag + "_hf")
        write_checkpoint(ckpt, args.layers)
        for k, (q, g) in fmc.items():
            # The head at 8 bits (llama.cpp keeps output.weight at Q6_K).
            run([os.path.join(bin_, "fmc"), "compile", ckpt, "--quant", q, "--group", g,
                 "--embed-bits", 8, "--context", context, "-o", paths[k] + ".part"])
            os.replace(paths[k] + ".part", paths[k])  # a rerun trusts whole files only
        shutil.rmtree(ckpt)
    if not all(os.path.exists(paths[k]) for k in llama):
        q8 = os.path.join(args.work, tag + "_q8_0.gguf")
        write_gguf(q8, args.layers, fetched.src)
        for k, t in llama.items():
            run([yardstick, "quantize", q8, paths[k] + ".part", t, "--threads", 2])
            os.replace(paths[k] + ".part", paths[k])
        os.remove(q8)

    # Weight bytes a decode step reads: all but the embedding table (one
    # row of it is gathered; the head is untied).
    read = {}
    for k in fmc:
        info = json.loads(run([os.path.join(bin_, "fmc"), "inspect", "--json", paths[k]]))
        read[k] = sum(w["bytes"] for w in info["weights"]
                      if w["name"] != "model.embed_tokens.weight")
    for k, (art, _) in runs.items():
        paths[k], read[k] = paths[art], read[art]
    gguf = llamacpp.gguf(fetched.src)
    for k in llama:
        r = gguf.GGUFReader(paths[k])
        read[k] = sum(int(t.n_bytes) for t in r.tensors if t.name != "token_embd.weight")
        del r

    threads = [int(t) for t in args.threads.split(",")]
    prompt = ",".join(str(1 + (i * 7919) % (VOCAB - 1)) for i in range(args.prompt))
    order = list(llama) + list(runs)
    res = {(k, t): [] for k in order for t in threads}

    def warm(path):
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass

    system = ""
    acts = {}  # fm-run's activations (--stats names what auto chose)
    for _ in range(args.rounds):
        for t in threads:
            for k in order:
                warm(paths[k])
                bw = json.loads(run([os.path.join(bin_, "fm-stream-read"), 1024, t, 5])
                                .strip().splitlines()[-1])["read_gb_per_s"]
                if k in llama:
                    r = json.loads(run([yardstick, "bench", paths[k], "--threads", t,
                                        "--prompt", args.prompt, "--gen", args.gen,
                                        "--reps", 1]).strip().splitlines()[-1])
                    system = r["system"]
                    row = (r["prefill_tok_s"], r["decode_tok_s"], read[k], r["load_s"] * 1e3)
                else:
                    r = json.loads(run([os.path.join(bin_, "fm-run"), paths[k], "--threads", t,
                                        "--stats", "--tokens", prompt, "--max-new-tokens",
                                        args.gen + 1] + runs[k][1]).strip().splitlines()[-1])
                    acts[k] = r["activations"]
                    row = (r["prefill_tokens_per_s"], r["decode_tokens_per_s"],
                           read[k], r["load_ms"] + r["gemm_repack_ms"])
                res[(k, t)].append(row + (bw,))

    print("fmc vs llama.cpp %s (node-llama-cpp 3.22.1's prebuilt CPU libraries): %s"
          % (release, cpu_model()))
    print("llama.cpp's backend: %s" % system.strip())
    print("model: random llama, %d layers, hidden %d, FFN %d, vocab %d; prompt %d, "
          "decode %d tokens; medians of %d interleaved rounds"
          % (args.layers, HIDDEN, FFN, VOCAB, args.prompt, args.gen, args.rounds))
    print("load: model load and context/session creation; fmc's includes the one-time "
          "GEMM repack (llama.cpp repacks at load)\n")
    print("GB: weight bytes a decode step reads (all but the embedding table)\n")
    print("| threads | | GB | prefill tok/s | decode tok/s | decode GB/s / read GB/s | load ms |"
          " prefill / Q4_0 | decode / Q4_0 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for t in threads:
        med = {}
        for k in order:
            rows = res[(k, t)]
            pp = statistics.median(r[0] for r in rows)
            tg = statistics.median(r[1] for r in rows)
            frac = statistics.median(r[1] * r[2] / 1e9 / r[4] for r in rows)
            load = statistics.median(r[3] for r in rows)
            med[k] = (pp, tg, rows[0][2] / 1e9, frac, load)
        base = med["llama.cpp Q4_0"]
        for k in order:
            pp, tg, gb, frac, load = med[k]
            name = "%s (%s)" % (k, acts[k]) if k in acts else k
            print("| %d | %s | %.2f | %.1f | %.1f | %.2f | %.0f | %.2f | %.2f |"
                  % (t, name, gb, pp, tg, frac, load, pp / base[0], tg / base[1]))
    print("\nread bandwidth (fm-stream-read, 1 GiB), median of the probes: %s GB/s"
          % ", ".join("%d threads %.1f" % (t, statistics.median(r[4] for k in order
                                                               for r in res[(k, t)]))
                      for t in threads))
    if args.clean:
        for p in set(paths.values()):
            os.remove(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
