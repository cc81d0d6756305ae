#!/usr/bin/python3
"""PT benchmark: a parallel-track MoE model against its single-track equivalent.

Both models have (about) the same parameter count: the single-track model
has T times the heads, FFN width and expert width of one track. Prints
decode tokens/s at 1 and 2 threads for both, the synchronizations per token
(track-block boundaries L/D for PT, 2L for tensor parallelism), and the
ratio. Prints numbers, asserts nothing.

Usage: bench/pt/pt_bench.py [--build build] [--work DIR] [--tokens N]
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "examples", "gen_checkpoint.py")

T, D, B = 4, 4, 2          # tracks, depth, blocks: 8 layers per track
H, HEADS, KV, HD = 512, 4, 2, 32
FFN, EXPERTS, TOPK, MOE_FFN = 512, 8, 2, 256


def config(tracks, scale):
    return {
        "vocab_size": 4096, "hidden_size": H, "num_tracks": tracks,
        "track_block_depth": D, "num_track_blocks": B,
        "num_attention_heads": HEADS * scale, "num_key_value_heads": KV * scale,
        "head_dim": HD, "intermediate_size": FFN * scale,
        "attention_pattern": ["local", "local", "local", "global"], "sliding_window": 64,
        "global_rope": False, "moe_layer_interval": 2, "num_experts": EXPERTS,
        "num_experts_per_tok": TOPK, "moe_intermediate_size": MOE_FFN * scale,
        "tie_word_embeddings": True,
    }


def run(cmd):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/fm_pt_bench")
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    bin_ = os.path.join(args.build, "bin")
    os.makedirs(args.work, exist_ok=True)
    prompt = ",".join(str(i % 4000 + 1) for i in range(16))
    results = {}
    for name, tracks, scale in (("pt_moe", T, 1), ("single_track", 1, T)):
        ckpt = os.path.join(args.work, name)
        if not os.path.exists(os.path.join(ckpt, "config.json")):
            cmd = ["/usr/bin/python3", GEN, "--family", "pt_moe", "--preset", "tiny", "--out", ckpt]
            for k, v in config(tracks, scale).items():
                cmd += ["--set", "%s=%s" % (k, json.dumps(v))]
            run(cmd)
        fmb = os.path.join(args.work, name + ".fmb")
        run([os.path.join(bin_, "fmc"), "compile", ckpt, "-o", fmb, "--max-prefill", "16"])
        info = json.loads(run([os.path.join(bin_, "fmc"), "inspect", fmb, "--json"]))
        row = {"parameters": info["parameters"], "layers": info["num_layers"]}
        for threads in (1, 2):
            out = run([os.path.join(bin_, "fm-run"), fmb, "--tokens", prompt, "--max-new-tokens",
                       str(args.tokens), "--threads", str(threads), "--stats"])
            stats = json.loads(out.strip().splitlines()[-1])
            row["decode_t%d" % threads] = stats["decode_tokens_per_s"]
        results[name] = row

    L = B * D
    print("PT benchmark: %d tracks x %d blocks x depth %d (L = %d layers per track), "
          "MoE every 2nd layer (%d experts, top-%d)" % (T, B, D, L, EXPERTS, TOPK))
    print("%-14s %12s %14s %14s %22s" % ("model", "parameters", "decode t=1", "decode t=2",
                                         "syncs/token (2 ranks)"))
    for name, row in results.items():
        syncs = "%d (L/D)" % B if name == "pt_moe" else "%d (2L, tensor par.)" % (2 * L)
        print("%-14s %12d %12.1f/s %12.1f/s %22s" % (name, row["parameters"], row["decode_t1"],
                                                     row["decode_t2"], syncs))
    for t in (1, 2):
        r = results["pt_moe"]["decode_t%d" % t] / results["single_track"]["decode_t%d" % t]
        print("ratio pt_moe / single_track decode tokens/s at %d thread(s): %.2f" % (t, r))
    print("synchronizations per token: %d (PT) vs %d (tensor parallelism): %.1f%% fewer"
          % (B, 2 * L, 100.0 * (1 - B / (2.0 * L))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
