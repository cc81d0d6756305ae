#!/usr/bin/python3
"""The models trained here (examples/models/, recipe in examples/train/)
through fmc, checked against torch's own evaluation and the numpy reference.

  check_trained.py --work DIR [--bin DIR] [--models DIR]

What is checked, and against what:
  - the corpus' test split rebuilt from python3.11-doc (examples/train/
    corpus.py --check) matches the committed document lists and sha256;
  - every model directory is a complete Hugging Face directory under 25 MB
    whose training.json names its role, its tokenizer by sha256 (the file
    beside it) and says it learned: test cross-entropy <= 0.7 x the test
    tokens' unigram entropy (torch's numbers, committed by the recipe);
  - fm-tokenize's ids of the test split hash to the recipe's
    test_tokens_sha256: fmc scores the token ids torch scored;
  - fm-run --perplexity (windows of the recipe's eval ctx, its first
    eval_chunks windows) of every float model compiled at f32 with
    --activations f32 is torch's perplexity of the same windows within 0.1%;
  - the QAT checkpoint compiled as training.json's qat.fmc says (w2 g64,
    4-bit embedding, int8 KV): fmc's quantizer reports relative RMS error 0
    (the stored weights are on the grid), its --activations f32 logits are
    the numpy reference's (test/reference/fm_reference.py, float64) logits
    of the stored weights within 1e-4 of max |logit|, and its perplexity
    with the default activations is torch's fake-quantized perplexity
    within 0.5% (with --activations f32 within 0.1%).
Prints one line per check and `N passed, N failed` at the end.
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "examples", "models")
CORPUS = os.path.join(ROOT, "examples", "train", "corpus.py")
REF = os.path.join(ROOT, "test", "reference", "fm_reference.py")
sys.path.insert(0, HERE)
import timelimits  # noqa: E402

passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    passed += bool(ok)
    failed += not ok
    print("%s %s%s" % ("PASS" if ok else "FAIL", what, "" if ok or not detail else ": " + detail),
          flush=True)
    return ok


def run(cmd, **kw):
    p = timelimits.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    if p.returncode != 0:
        raise SystemExit("command failed (%d): %s\n%s" % (p.returncode, " ".join(cmd),
                                                          p.stderr.decode(errors="replace")))
    return p


def stats_line(stdout):
    for line in reversed(stdout.decode().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise SystemExit("no --stats JSON line in fm-run's output")


def close(got, want, rel):
    return abs(got - want) <= rel * abs(want)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", default=os.environ.get("FM_BIN", ""))
    ap.add_argument("--models", default=MODELS)
    a = ap.parse_args()
    tool = lambda n: os.path.join(a.bin, n) if a.bin else n  # noqa: E731
    os.makedirs(a.work, exist_ok=True)
    py = sys.executable

    p = timelimits.run([py, CORPUS, "--out", os.path.join(a.work, "corpus"), "--check"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not check(p.returncode == 0, "corpus test split rebuilt = committed lists and sha256",
                 p.stderr.decode(errors="replace").strip()):
        return
    test_txt = os.path.join(a.work, "corpus", "test.txt")

    names = sorted(d for d in os.listdir(a.models)
                   if os.path.isfile(os.path.join(a.models, d, "training.json")))
    roles = {}
    for name in names:
        d = os.path.join(a.models, name)
        with open(os.path.join(d, "training.json")) as f:
            meta = json.load(f)
        roles.setdefault(meta["role"], []).append(name)
        files = ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        check(all(os.path.isfile(os.path.join(d, f)) for f in files) and size <= 25e6,
              "%s: a Hugging Face directory of %.1f MB (<= 25)" % (name, size / 1e6))
        with open(os.path.join(d, "tokenizer.json"), "rb") as f:
            check(hashlib.sha256(f.read()).hexdigest() == meta["tokenizer_sha256"],
                  "%s: tokenizer.json is the one it was trained with" % name)
        ce, h = meta["eval"]["cross_entropy"], meta["unigram_entropy"]
        check(ce <= 0.7 * h, "%s: learned: test cross-entropy %.3f <= 0.7 x unigram entropy %.3f"
              % (name, ce, h))

        ids = run([tool("fm-tokenize"), d], stdin=open(test_txt, "rb")).stdout.split()
        raw = b"".join(int(i).to_bytes(4, "little") for i in ids)
        check(hashlib.sha256(raw).hexdigest() == meta["test_tokens_sha256"],
              "%s: fm-tokenize's %d test ids are the ones torch scored" % (name, len(ids)))

        ev = meta["eval"]
        ctx, chunks = ev["ctx"], int(next(k for k in ev if k.startswith("first_"))[6:])
        want = ev["first_%d" % chunks]
        qat = meta.get("qat")
        fmb = os.path.join(a.work, name + ".fmb")
        if qat:
            cmd = [tool("fmc"), "compile", d, "-o", fmb, "--quant", "w%d" % qat["bits"],
                   "--group", str(qat["group"]), "--grid", qat["grid"],
                   "--embed-bits", str(qat["embed_bits"]), "--kv-bits", str(qat["kv_bits"])]
        else:
            cmd = [tool("fmc"), "compile", d, "-o", fmb]
        out = run(cmd).stdout.decode()
        if qat:
            errs = re.findall(r"relative RMS error ([0-9.]+)", out)
            check(len(errs) == 2 and all(float(e) == 0 for e in errs),
                  "%s: fmc's quantizer recovers the grid exactly (relative RMS errors %s)"
                  % (name, ", ".join(errs)))
            # Logits of the stored weights: numpy float64 vs fmc at w2.
            first = [i.decode() for i in ids[:96]]
            npy = os.path.join(a.work, name + ".logits.npy")
            run([tool("fm-run"), fmb, "--tokens", ",".join(first), "--score",
                 "--logits-out", npy, "--activations", "f32"])
            p = timelimits.run([py, REF, d, "--tokens", ",".join(first), "--compare", npy,
                                "--rtol", "1e-4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            check(p.returncode == 0, "%s: fmc w2 --activations f32 logits = numpy's of the stored "
                  "weights within 1e-4 of max|logit|" % name,
                  (p.stdout + p.stderr).decode(errors="replace").strip())
        runs = [("f32", 0.001)] + ([("default", 0.005)] if qat else [])
        for acts, tol in runs:
            cmd = [tool("fm-run"), fmb, "--perplexity", test_txt, "--ctx", str(ctx),
                   "--chunks", str(chunks), "--threads", "2", "--stats"]
            if acts != "default":
                cmd += ["--activations", acts]
            s = stats_line(run(cmd).stdout)
            check(s["tokens_scored"] == want["tokens_scored"] and close(s["ppl"], want["ppl"], tol),
                  "%s (%s, activations %s): fmc ppl %.4f over %d tokens vs torch %.4f over %d "
                  "(within %.1f%%)" % (name, "w%d QAT" % qat["bits"] if qat else "f32", acts,
                                       s["ppl"], s["tokens_scored"], want["ppl"],
                                       want["tokens_scored"], tol * 100))
    check(sorted(roles) == ["draft", "target", "twin"],
          "the roles target, twin and draft are all there (%s)" % json.dumps(roles))
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
