#!/usr/bin/python3
"""llama.cpp's side of the quality table: its formats on one llama model.

The model (a Hugging Face llama directory: f16 safetensors, a byte-level
BPE tokenizer.json) is written as an F16 GGUF (llama_gguf.py, with the
gguf-py of the llama.cpp release bench/llamacpp pins) and quantized from it
by that release's own llama_model_quantize (llama_yardstick quantize, no
importance matrix, llama.cpp's per-tensor choices: a tied embedding takes
the output's type, Q6_K beside Q4_0 and Q2_K) to Q8_0, Q4_0, Q2_K and the
first IQ2 type (IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M) it quantizes without an
importance matrix, if any. Every GGUF is scored through libllama
(llama_yardstick score) with llama-perplexity's method on the same ids and
windows as fmc's --perplexity: non-overlapping windows of --ctx ids, the
second half of each scored; the quantized ones against the F16 model's
logits as llama-perplexity --kl-divergence does (Δppl, mean KL(F16 || Q),
top-1 agreement).

The ids are fmc's (fm-tokenize --add-special, as fm-run --perplexity
tokenizes a text) or given with --ids; with a text, llama.cpp tokenizes it
too and the run says whether both agree (the scores use fmc's ids either
way).

Bits per weight: of the GGUF's whole tensor data (bits / parameters), and
of the decoder projections only (blk.*.attn_{q,k,v,output},
blk.*.ffn_{gate,up,down}: the matrices fmc's --quant applies to).

Prints a markdown table (and writes it as JSON with --json); asserts
nothing. Progress on stderr.

  llamacpp_quality.py MODEL_DIR TEXT [--ids FILE] [--ctx 256] [--chunks K]
                      [--threads 2] [--json FILE] [--work DIR]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "llamacpp"))
import llamacpp  # noqa: E402
from llama_gguf import write_f16_gguf  # noqa: E402

TYPES = ("q8_0", "q4_0", "q2_k")
IQ2 = ("iq2_xxs", "iq2_xs", "iq2_s", "iq2_m")
PROJECTIONS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


def log(msg):
    print("llamacpp_quality: " + msg, file=sys.stderr, flush=True)


def tensor_bits(gguf, path):
    """Bits per weight of the whole file's tensors and of the decoder
    projections, and the projections' and the embedding's types."""
    r = gguf.GGUFReader(path)
    total = [0, 0]
    proj = [0, 0]
    proj_types = {}
    embd = None
    for t in r.tensors:
        n, b = int(t.n_elements), int(t.n_bytes) * 8
        total[0] += n
        total[1] += b
        parts = t.name.split(".")
        if parts[0] == "blk" and parts[2] in PROJECTIONS:
            proj[0] += n
            proj[1] += b
            proj_types[t.tensor_type.name] = proj_types.get(t.tensor_type.name, 0) + n
        elif t.name == "token_embd.weight":
            embd = t.tensor_type.name
    return {"bytes": total[1] // 8, "params": total[0], "bpw": total[1] / total[0],
            "bpw_projections": proj[1] / proj[0],
            "projection_types": sorted(proj_types, key=lambda k: -proj_types[k]),
            "embedding_type": embd}


def score(yardstick, gguf_path, ids, args, logits_flag, logits):
    p = subprocess.run([yardstick, "score", gguf_path, "--ids", ids, "--ctx", str(args.ctx),
                        "--chunks", str(args.chunks), logits_flag, logits,
                        "--threads", str(args.threads)], stdout=subprocess.PIPE, text=True)
    if p.returncode:
        sys.exit("llamacpp_quality: scoring %s failed (llama_yardstick's message above)"
                 % gguf_path)
    return json.loads(p.stdout.strip().splitlines()[-1])


def quantize(yardstick, f16, out, qtype, threads):
    """-> None when quantized, else llama.cpp's reason (its ERROR lines)."""
    p = subprocess.run([yardstick, "quantize", f16, out + ".part", qtype,
                        "--threads", str(threads)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode == 0:
        os.replace(out + ".part", out)
        return None
    why = [line.strip() for line in p.stderr.splitlines()
           if line.strip() and not line.startswith("=")]
    return " / ".join(why[:3]) or "exit %d" % p.returncode


def fmc_ids(args, work, yardstick, f16):
    """fmc's ids of the text (and whether llama.cpp's agree), or --ids."""
    if args.ids:
        return args.ids, {"source": args.ids, "llama_cpp_tokenizer": "not checked (--ids)"}
    tok = os.path.join(args.build, "bin", "fm-tokenize")
    if not os.path.exists(tok):
        sys.exit("llamacpp_quality: %s is missing: build fmc, or give --ids" % tok)
    with open(args.text, "rb") as f:
        text = f.read()
    mine = subprocess.run([tok, "--add-special", args.model], input=text, check=True,
                          stdout=subprocess.PIPE).stdout.split()
    theirs = subprocess.run([yardstick, "tokenize", f16], input=text, check=True,
                            stdout=subprocess.PIPE).stdout.split()
    path = os.path.join(work, "ids.txt")
    with open(path, "wb") as f:
        f.write(b" ".join(mine) + b"\n")
    if mine == theirs:
        agree = "same %d ids as fmc" % len(mine)
    else:
        at = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b),
                  min(len(mine), len(theirs)))
        agree = ("differs from fmc (%d ids against fmc's %d; first difference at id %d); "
                 "fmc's ids are scored" % (len(theirs), len(mine), at))
    log("tokenization: llama.cpp's tokenizer: " + agree)
    return path, {"source": "fm-tokenize --add-special %s < %s" % (args.model, args.text),
                  "count": len(mine), "llama_cpp_tokenizer": agree}


def fmt(v, spec):
    return "—" if v is None else spec % v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="Hugging Face llama directory")
    ap.add_argument("text", nargs="?", help="text file (tokenized by fmc's fm-tokenize)")
    ap.add_argument("--ids", help="token ids instead of a text (spaces, commas or newlines)")
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--chunks", type=int, default=0, help="windows to score (0: all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", help="also write the table here as JSON")
    ap.add_argument("--work", default="/tmp/fm_quality_llamacpp")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--cache", default=llamacpp.DEFAULT_CACHE)
    args = ap.parse_args()
    if bool(args.text) == bool(args.ids):
        ap.error("give a text file or --ids, one of them")

    release = llamacpp.fetch(args.cache)
    gguf = llamacpp.gguf(release.src)
    os.makedirs(args.work, exist_ok=True)
    f16 = os.path.join(args.work, "f16.gguf")
    log("writing %s from %s" % (f16, args.model))
    write_f16_gguf(args.model, f16, release.src)
    ids, ids_info = fmc_ids(args, args.work, release.yardstick, f16)

    base_logits = os.path.join(args.work, "f16.logits")
    log("scoring F16")
    rows = [dict(type="F16", **tensor_bits(gguf, f16),
                 **score(release.yardstick, f16, ids, args, "--save-logits", base_logits))]

    iq2 = {"tried": [], "quantized": None}
    candidates = list(TYPES) + [None]  # None: the first IQ2 type llama.cpp quantizes
    for qtype in candidates:
        for t in ([qtype] if qtype else IQ2):
            path = os.path.join(args.work, t + ".gguf")
            log("quantizing to %s" % t.upper())
            why = quantize(release.yardstick, f16, path, t, args.threads)
            if qtype is None:
                iq2["tried"].append({"type": t.upper(), "refused": why})
            if why:
                log("llama.cpp does not quantize to %s: %s" % (t.upper(), why))
                continue
            if qtype is None:
                iq2["quantized"] = t.upper()
            log("scoring %s" % t.upper())
            rows.append(dict(type=t.upper(), **tensor_bits(gguf, path),
                             **score(release.yardstick, path, ids, args, "--base-logits",
                                     base_logits)))
            break
    if os.path.exists(base_logits):
        os.remove(base_logits)  # chunks x ctx/2 x vocab floats

    first = rows[0]
    report = {"llama_cpp": "%s (node-llama-cpp 3.22.1's prebuilt CPU libraries)" % release.release,
              "model": os.path.abspath(args.model), "ctx": first["ctx"],
              "chunks": first["chunks"], "tokens_scored": first["tokens_scored"],
              "ids": ids_info, "iq2": iq2, "rows": rows}

    print("llama.cpp %s on %s: ctx %d, %d windows, %d tokens scored; KL and top-1 against "
          "its F16" % (report["llama_cpp"], args.model, report["ctx"], report["chunks"],
                       report["tokens_scored"]))
    print("ids: %s; llama.cpp's tokenizer: %s\n" % (ids_info["source"],
                                                   ids_info["llama_cpp_tokenizer"]))
    print("| type | tensors | bpw (GGUF) | bpw (projections) | ppl | Δppl | mean KL | KL p99 |"
          " top-1 agreement |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        kinds = "/".join(r["projection_types"]) + ", embedding " + r["embedding_type"]
        base = r is first
        print("| %s | %s | %.3f | %.3f | %.4f ± %.4f | %s | %s | %s | %s |"
              % (r["type"], kinds, r["bpw"], r["bpw_projections"], r["ppl"], r["ppl_err"],
                 "—" if base else "%+.4f ± %.4f" % (r["delta_ppl"], r["delta_ppl_err"]),
                 fmt(r.get("kl_mean"), "%.6f"), fmt(r.get("kl_p99"), "%.6f"),
                 "—" if base else "%.2f%% ± %.2f%%" % (100 * r["top1_agree"],
                                                      100 * r["top1_agree_err"])))
    if iq2["quantized"] is None:
        print("\nIQ2: llama.cpp %s quantizes none of %s without an importance matrix "
              "(the first refusal: %s)" % (release.release, ", ".join(t["type"] for t in iq2["tried"]),
                                           iq2["tried"][0]["refused"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
