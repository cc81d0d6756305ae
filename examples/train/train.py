#!/usr/bin/env python3
"""Trains one of the small models of examples/models/ on the corpus, on the CPU.

  train.py --preset afm7-target --steps N --out DIR [--qat-steps M --qat-out DIR2]
  train.py --preset llama-twin --steps N --out DIR
  train.py --preset llama-draft --steps N --out DIR

Every run is one uninterrupted process: it builds the corpus (corpus.py),
tokenizes it with the committed tokenizer (examples/train/tokenizer, trained
by bpe.py), trains with AdamW on random windows of the training split, and
writes a Hugging Face directory that fmc compiles as it is: config.json,
model.safetensors (f16), the tokenizer files, and training.json (the exact
command, seed, corpus sha256, steps, time, the test split's unigram entropy
and torch's own evaluation of the stored weights on the test split:
cross-entropy over full windows, and llama-perplexity's method -- windows of
--eval-ctx tokens, the second half of each scored -- over every window and
over the first --eval-chunks, which make check compares fmc's numbers with).

With --qat-steps the same run continues from the float model's stored (f16)
weights with quantization-aware training (model.py: every decoder
projection on the 2-bit balanced grid, the tied embedding on the 4-bit
grid, groups of --qat-group, learnable scales, straight-through estimator;
the int8 KV scales stay as calibrated) and writes the QAT checkpoint, whose
quantized tensors hold their grid values exactly, to --qat-out.
"""

import argparse
import hashlib
import json
import math
import os
import shutil
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bpe  # noqa: E402
import corpus  # noqa: E402
from model import Model, QEmbedding, QLinear, KVFakeQuant, RMSNorm, rename  # noqa: E402

TOKENIZER = os.path.join(HERE, "tokenizer")
VOCAB = 4096

PRESETS = {
    # The device model's shape in small: KV sharing over the last 3/8 of the
    # layers, qk-norm, int8 KV, tied embedding.
    "afm7-target": {"role": "target", "config": {
        "model_type": "afm7", "vocab_size": VOCAB, "hidden_dim": 192,
        "num_layers": 8, "num_kv_reuse_layers": 3, "num_heads": 3,
        "num_kv_heads": 1, "hidden_dim_scale_factor": 3.0,
        "rope_theta": 50000.0, "rms_norm_eps": 1e-5,
        "max_position_embeddings": 1024}},
    # About the same size (4.2M parameters), a family llama.cpp runs; every
    # row length a multiple of 256, as llama.cpp's k-quants (Q2_K) need.
    "llama-twin": {"role": "twin", "config": {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"],
        "vocab_size": VOCAB, "hidden_size": 256, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 768, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "tie_word_embeddings": True, "hidden_act": "silu",
        "max_position_embeddings": 1024, "bos_token_id": VOCAB - 1,
        "eos_token_id": VOCAB - 1, "torch_dtype": "float16"}},
    # The draft for speculative decoding: 2 layers, same tokenizer.
    "llama-draft": {"role": "draft", "config": {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"],
        "vocab_size": VOCAB, "hidden_size": 192, "num_hidden_layers": 2,
        "num_attention_heads": 3, "num_key_value_heads": 1,
        "intermediate_size": 576, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "tie_word_embeddings": True, "hidden_act": "silu",
        "max_position_embeddings": 1024, "bos_token_id": VOCAB - 1,
        "eos_token_id": VOCAB - 1, "torch_dtype": "float16"}},
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------
# Data


def document_stream(split_dir, name, parts, enc):
    """Training stream: each document's ids, then <|endoftext|>."""
    ids = []
    for rel in parts[name]:
        ids.extend(enc.encode(corpus.read_doc(rel)))
        ids.append(enc.eot)
    return np.asarray(ids, dtype=np.int32)


def unigram_entropy(ids):
    _, counts = np.unique(ids, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


# ----------------------------------------------------------------------------
# Checkpoints


def checkpoint_refs(model):
    """[(checkpoint name, module, kind)]: every stored tensor of the model."""
    refs = []
    for name, mod in model.named_modules():
        if isinstance(mod, (QLinear, QEmbedding, RMSNorm)):
            refs.append(("model." + name + ".weight", mod, "weight"))
        elif isinstance(mod, KVFakeQuant):
            layer, which = name.rsplit(".", 1)
            kind = "quant_key_scale" if which == "k_quant" else "quant_value_scale"
            refs.append(("model." + layer + "." + kind, mod, "scale"))
    names = rename(model.family, {r[0]: None for r in refs})
    return [(n, m, k) for n, (_, m, k) in zip(names, refs)]


def stored_values(model):
    out = {}
    with torch.no_grad():
        for name, mod, kind in checkpoint_refs(model):
            if kind == "weight" and isinstance(mod, (QLinear, QEmbedding)):
                v = mod.effective_weight()
            else:
                v = getattr(mod, kind)
            out[name] = v.detach().float().clone()
    return out


def load_values(model, values):
    with torch.no_grad():
        for name, mod, kind in checkpoint_refs(model):
            getattr(mod, kind).copy_(values[name])


def write_safetensors(path, values):
    header, blobs, off = {}, [], 0
    for name in sorted(values):
        a = values[name].numpy().astype("<f2")
        b = a.tobytes()
        header[name] = {"dtype": "F16", "shape": list(a.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt", "written_by": "examples/train/train.py"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def f16(values):
    return {k: v.half().float() for k, v in values.items()}


# ----------------------------------------------------------------------------
# Evaluation (torch's own, on the stored f16 values)


@torch.no_grad()
def evaluate(model, ids, ctx, chunks):
    """llama-perplexity's windows: non-overlapping, ctx tokens, the second
    half scored; plus the cross-entropy of every position of the windows."""
    model.eval()
    n = len(ids) // ctx
    nll_half, nll_all, firsts = [], [], {}
    windows = torch.from_numpy(ids[:n * ctx].astype(np.int64)).reshape(n, ctx)
    for b in range(0, n, 16):
        t = windows[b:b + 16]
        lp = torch.log_softmax(model(t).double(), dim=-1)
        nll = -lp[:, :-1].gather(2, t[:, 1:, None])[..., 0]
        for w in range(t.shape[0]):
            nll_all.append(nll[w])
            nll_half.append(nll[w, ctx // 2:])
            if len(nll_half) == chunks:
                firsts = summary(torch.cat(nll_half))
    out = {"ctx": ctx, "windows": n, "test_tokens": int(len(ids)),
           "cross_entropy": float(torch.cat(nll_all).mean()),
           "all": summary(torch.cat(nll_half))}
    out["first_%d" % chunks] = firsts
    return out


def summary(nll):
    m = float(nll.mean())
    return {"tokens_scored": int(nll.numel()), "nll": m, "ppl": math.exp(m)}


# ----------------------------------------------------------------------------
# Training


def train(model, stream, steps, batch, seq, lr, seed, label, qat=False,
          calibrate_until=None):
    g = torch.Generator().manual_seed(seed)
    scales = [p for n, p in model.named_parameters() if n.endswith(".scale")]
    matrices = [p for n, p in model.named_parameters()
                if p.dim() == 2 and not n.endswith(".scale")]
    others = [p for n, p in model.named_parameters()
              if p.dim() < 2 and not n.endswith(".scale")]
    groups = [{"params": matrices, "weight_decay": 0.1, "lr": lr},
              {"params": others, "weight_decay": 0.0, "lr": lr}]
    if scales:
        groups.append({"params": scales, "weight_decay": 0.0, "lr": lr * 0.05})
    opt = torch.optim.AdamW(groups, betas=(0.9, 0.95))
    base = [grp["lr"] for grp in opt.param_groups]
    warm = max(1, steps // 20)
    data = torch.from_numpy(stream.astype(np.int64))
    t0 = time.time()
    model.train()
    avg = None
    for step in range(steps):
        if calibrate_until is not None and step == calibrate_until:
            model.freeze_kv_scales()
        f = (step + 1) / warm if step < warm else \
            0.1 + 0.45 * (1 + math.cos(math.pi * (step - warm) / max(1, steps - warm)))
        for grp, b in zip(opt.param_groups, base):
            grp["lr"] = b * f
        off = torch.randint(0, len(data) - seq - 1, (batch,), generator=g)
        x = torch.stack([data[o:o + seq + 1] for o in off.tolist()])
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        avg = loss.item() if avg is None else 0.95 * avg + 0.05 * loss.item()
        if (step + 1) % 25 == 0 or step + 1 == steps:
            el = time.time() - t0
            log("%s step %d/%d loss %.3f  %.0f tok/s  %.0f s, eta %.0f s"
                % (label, step + 1, steps, avg, (step + 1) * batch * seq / el, el,
                   el / (step + 1) * (steps - step - 1)))
    return time.time() - t0, avg


def write_model(out, config, values, meta):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(out, "model.safetensors"), values)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER, name), os.path.join(out, name))
    with open(os.path.join(out, "training.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    log("wrote %s (%.1f MB)" % (out, os.path.getsize(os.path.join(out, "model.safetensors")) / 1e6))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", required=True, choices=sorted(PRESETS))
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--lr", type=float, default=6e-3)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default="/tmp/fmc-train", help="corpus and token cache")
    ap.add_argument("--eval-ctx", type=int, default=128)
    ap.add_argument("--eval-chunks", type=int, default=128)
    ap.add_argument("--qat-steps", type=int, default=0)
    ap.add_argument("--qat-out")
    ap.add_argument("--qat-lr", type=float, default=1e-3)
    ap.add_argument("--qat-bits", type=int, default=2)
    ap.add_argument("--qat-group", type=int, default=64)
    ap.add_argument("--qat-embed-bits", type=int, default=4)
    a = ap.parse_args(argv)
    if a.qat_steps and not a.qat_out:
        ap.error("--qat-steps needs --qat-out")
    command = "examples/train/train.py " + " ".join(sys.argv[1:] if argv is None else argv)
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    t_start = time.time()

    split_dir = os.path.join(a.work, "corpus")
    parts, sums = corpus.build(split_dir)
    enc = bpe.Encoder(TOKENIZER)
    stream = document_stream(split_dir, "train", parts, enc)
    with open(os.path.join(split_dir, "test.txt"), encoding="utf-8") as f:
        test = np.asarray(enc.encode(f.read()), dtype=np.int32)
    log("tokens: train %d, test %d" % (len(stream), len(test)))
    preset = PRESETS[a.preset]
    config = dict(preset["config"])
    model = Model(config)
    n_params = sum(p.numel() for p in model.parameters())
    log("%s: %.2fM parameters" % (a.preset, n_params / 1e6))

    common = {
        "command": command, "seed": a.seed, "preset": a.preset, "role": preset["role"],
        "parameters": n_params, "corpus": {
            "package": corpus.PACKAGE, "source": corpus.SOURCE, "split_seed": corpus.SEED,
            "sha256": sums, "lists": "examples/train/corpus/{train,valid,test}.list"},
        "tokenizer_sha256": hashlib.sha256(
            open(os.path.join(TOKENIZER, "tokenizer.json"), "rb").read()).hexdigest(),
        "test_tokens_sha256": hashlib.sha256(test.astype("<u4").tobytes()).hexdigest(),
        "batch": a.batch, "seq": a.seq, "torch": torch.__version__, "threads": a.threads,
        "unigram_entropy": unigram_entropy(test),
    }
    secs, loss = train(model, stream, a.steps, a.batch, a.seq, a.lr, a.seed, a.preset,
                       calibrate_until=int(a.steps * 0.6))
    values = f16(stored_values(model))
    evalm = Model(config)
    load_values(evalm, values)
    ev = evaluate(evalm, test, a.eval_ctx, a.eval_chunks)
    meta = dict(common, steps=a.steps, lr=a.lr, train_seconds=round(secs, 1),
                train_loss=loss, qat=None, eval=ev)
    meta["learned"] = ev["cross_entropy"] <= 0.7 * common["unigram_entropy"]
    log("%s: test cross-entropy %.4f (unigram entropy %.4f, ratio %.3f), ppl %.3f"
        % (a.preset, ev["cross_entropy"], common["unigram_entropy"],
           ev["cross_entropy"] / common["unigram_entropy"], ev["all"]["ppl"]))
    write_model(a.out, config, values, meta)

    if a.qat_steps:
        qmodel = Model(config)
        load_values(qmodel, values)  # from the stored float weights
        qmodel.enable_qat(a.qat_bits, a.qat_group, a.qat_embed_bits)
        secs_q, loss_q = train(qmodel, stream, a.qat_steps, a.batch, a.seq, a.qat_lr,
                               a.seed + 1, a.preset + " qat")
        qvalues = stored_values(qmodel)
        for name, mod, _ in checkpoint_refs(qmodel):  # grid values survive f16
            v = qvalues[name]
            if isinstance(mod, (QLinear, QEmbedding)) and not torch.equal(v.half().float(), v):
                raise SystemExit("train.py: %s is not exact in f16" % name)
        qvalues = f16(qvalues)
        evalq = Model(config)
        load_values(evalq, qvalues)
        evq = evaluate(evalq, test, a.eval_ctx, a.eval_chunks)
        qmeta = dict(common, steps=a.steps + a.qat_steps, float_steps=a.steps,
                     qat_steps=a.qat_steps, lr=a.lr, qat_lr=a.qat_lr,
                     train_seconds=round(secs + secs_q, 1), train_loss=loss_q,
                     qat={"bits": a.qat_bits, "group": a.qat_group, "grid": "balanced",
                          "embed_bits": a.qat_embed_bits, "kv_bits": 8,
                          "fmc": "fmc compile DIR --quant w%d --group %d --grid balanced "
                                 "--embed-bits %d --kv-bits 8"
                                 % (a.qat_bits, a.qat_group, a.qat_embed_bits)},
                     float_checkpoint=os.path.basename(os.path.normpath(a.out)), eval=evq)
        qmeta["learned"] = evq["cross_entropy"] <= 0.7 * common["unigram_entropy"]
        log("%s qat: test cross-entropy %.4f, ppl %.3f (float %.3f)"
            % (a.preset, evq["cross_entropy"], evq["all"]["ppl"], ev["all"]["ppl"]))
        write_model(a.qat_out, config, qvalues, qmeta)
    log("done in %.0f s" % (time.time() - t_start))


if __name__ == "__main__":
    main()
