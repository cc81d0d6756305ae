#!/usr/bin/python3
"""The C API (fm/fm.h) against fm-run: the same artifact, the same options,
the same ids.

  check_capi.py --bin DIR --capi-test EXE --library libfmrt.so --work DIR

Makes a tiny random llama whose vocabulary (4096 ids) is the byte-level BPE
trained in examples/train/tokenizer, with a chat template added to its
tokenizer_config.json, compiles it (fmc compile, the tokenizer embedded) and
a LoRA adapter for it (fmc compile-adapter), then checks what the C program
(capi_test.c run) and the Python program (capi_ctypes.py, ctypes only) print
against what fm-run, fm-tokenize and fmc print for the same inputs:
generation from ids (greedy, sampled, by hand, after keep_prefix, from a
buffer, with an adapter), text generation and its stop string, a chat of two
turns, the chat template, the tokenizer, guided generation (JSON Schema,
regex, GBNF, tools), perplexity with a KL base, images from a file and a
tensor into a tiny VLM (fm_vlm); and that the misuse cases
(capi_test.c misuse) all pass. Prints one line per check and
`N passed, N failed` at the end; exits 1 on a failure.
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import checks  # noqa: E402
from checks import check, run  # noqa: E402  (PASS/FAIL lines, time-limited commands)

PROMPT_IDS = [1, 17, 42, 5, 9, 100, 3, 250]
PROMPT = "The quick brown fox jumps over the lazy dog."
TEXT = ("Python is a programming language that lets you work quickly and integrate "
        "systems more effectively. The standard library is large, and the language "
        "reference describes the syntax and the core semantics of the language. "
        "Modules, classes and exceptions are explained in the tutorial.")
SYSTEM = "You are terse."
TURNS = ["Hello! Who are you?", "And then?"]
TEMPLATE = ("{% for m in messages %}<|endoftext|>{{ m['role'] }}\n{{ m['content'] }}\n"
            "{% endfor %}{% if add_generation_prompt %}<|endoftext|>assistant\n{% endif %}")
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0,
                                                                   "maximum": 99}},
          "required": ["name", "age"]}
GBNF = 'root ::= "x" [a-z]{2,6} ("." | "!")\n'
REGEX = "[a-z]{3,8} (yes|no)"
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string",
                                                              "maxLength": 10}},
                   "required": ["city"]}}}]

def ids(text):
    return [int(t) for t in text.split()]


def stats(stderr):
    return [json.loads(l) for l in stderr.splitlines() if l.startswith("{")]


def make_inputs(tool, work):
    """The model, the adapter and the files capi_test.c reads."""
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    ck, lora = os.path.join(work, "checkpoint"), os.path.join(work, "lora")
    run(["/usr/bin/python3", os.path.join(ROOT, "examples", "gen_checkpoint.py"),
         "--family", "llama", "--preset", "tiny", "--set", "vocab_size=4096",
         "--seed", "5", "--out", ck, "--lora-out", lora])
    tokdir = os.path.join(work, "tokenizer")
    os.makedirs(tokdir)
    src = os.path.join(ROOT, "examples", "train", "tokenizer")
    config = json.load(open(os.path.join(src, "tokenizer_config.json")))
    config["chat_template"] = TEMPLATE
    for d in (ck, tokdir):
        shutil.copy(os.path.join(src, "tokenizer.json"), d)
        json.dump(config, open(os.path.join(d, "tokenizer_config.json"), "w"))
    fmb = os.path.join(work, "model.fmb")
    run([tool("fmc"), "compile", ck, "-o", fmb, "--max-prefill", "8"])
    # A draft model of another seed: without the tokenizer first (refused as
    # a draft), then with it.
    draft = os.path.join(work, "draft")
    run(["/usr/bin/python3", os.path.join(ROOT, "examples", "gen_checkpoint.py"),
         "--family", "llama", "--preset", "tiny", "--set", "vocab_size=4096",
         "--seed", "6", "--out", draft])
    run([tool("fmc"), "compile", draft, "-o", os.path.join(work, "notok.fmb")])
    shutil.copy(os.path.join(src, "tokenizer.json"), draft)
    json.dump(config, open(os.path.join(draft, "tokenizer_config.json"), "w"))
    run([tool("fmc"), "compile", draft, "-o", os.path.join(work, "draft.fmb")])
    run([tool("fmc"), "compile-adapter", lora, "--base", fmb, "-o",
         os.path.join(work, "adapter.fmba")])
    data = open(fmb, "rb").read()
    open(os.path.join(work, "truncated.fmb"), "wb").write(data[:len(data) // 2])
    files = {
        "prompt_ids.txt": " ".join(map(str, PROMPT_IDS)),
        "prompt.txt": PROMPT,
        "text.txt": TEXT,
        "messages.json": json.dumps([{"role": "system", "content": SYSTEM},
                                     {"role": "user", "content": TURNS[0]}]),
        "chat.txt": "\n---\n".join(TURNS) + "\n",
        "schema.json": json.dumps(SCHEMA),
        "grammar.gbnf": GBNF,
        "tools.json": json.dumps(TOOLS),
    }
    for name, text in files.items():
        open(os.path.join(work, name), "w", encoding="utf-8").write(text)
    return fmb


def make_vlm(tool, work):
    """A tiny VLM (fm_vlm afm7-rw-tiny) and its images: a PNG and a random
    preprocessed tensor, as .npy for fm-run and raw float32 for capi_test.c."""
    import numpy as np
    ck = os.path.join(work, "vlm")
    run(["/usr/bin/python3", os.path.join(ROOT, "examples", "gen_checkpoint.py"),
         "--family", "fm_vlm", "--preset", "afm7-rw-tiny", "--out", ck])
    # A byte-level tokenizer whose added token <|image_pad|> is the image
    # placeholder, and a chat template: text and chats with <image> markers.
    run(["/usr/bin/python3", os.path.join(ROOT, "test", "e2e", "check_vlm_text.py"),
         "--write-tokenizer", ck])
    fmb = os.path.join(work, "vlm.fmb")
    run([tool("fmc"), "compile", ck, "-o", fmb])
    shutil.copy(os.path.join(ROOT, "examples", "images", "landscape.png"),
                os.path.join(work, "image.png"))
    size = json.load(open(os.path.join(ck, "config.json")))["vision_config"]["image_size"]
    x = np.random.default_rng(3).standard_normal((3, size, size)).astype(np.float32)
    np.save(os.path.join(work, "image.npy"), x)
    x.tofile(os.path.join(work, "image.f32"))
    return fmb


def expected(tool, fmb, work):
    """What fm-run, fm-tokenize and fmc say for each case."""
    w = lambda name: os.path.join(work, name)  # noqa: E731
    fm_run = lambda *a: run([tool("fm-run"), fmb, "--threads", "1"] + list(a))  # noqa: E731
    tokens = ",".join(map(str, PROMPT_IDS))
    e = {}
    e["tokens"] = ids(fm_run("--tokens", tokens, "--max-new-tokens", "12")[0].decode())
    e["sampled"] = ids(fm_run("--tokens", tokens, "--max-new-tokens", "12", "--temperature",
                              "0.8", "--top-k", "40", "--top-p", "0.9", "--seed", "7")[0]
                       .decode())
    e["speculative sampled"] = ids(fm_run(
        "--tokens", tokens, "--max-new-tokens", "12", "--temperature", "0.8", "--top-k", "40",
        "--top-p", "0.9", "--seed", "7", "--draft", w("draft.fmb"), "--draft-max", "3")[0]
        .decode())
    e["adapter"] = ids(fm_run("--tokens", tokens, "--max-new-tokens", "12", "--adapter",
                              w("adapter.fmba") + ":0.5")[0].decode())
    out, err = fm_run("--prompt", PROMPT, "--max-new-tokens", "12", "--stats")
    st = stats(err)[-1]
    e["text ids"], e["text prompt"], e["text"] = st["generated_ids"], st["prompt_ids"], out
    out, err = fm_run("--chat", "--chat-file", w("chat.txt"), "--system", SYSTEM,
                      "--max-new-tokens", "8", "--stats")
    turns = [s for s in stats(err) if "turn" in s]
    for k, s in enumerate(turns, 1):
        e["chat %d ids" % k], e["chat %d context" % k] = s["generated_ids"], s["context_ids"]
        e["chat %d reused" % k] = s["reused_tokens"]
    e["template"] = turns[0]["context_ids"]
    out, err = fm_run("--prompt", PROMPT, "--json-schema", w("schema.json"),
                      "--max-new-tokens", "60", "--stats")
    e["schema ids"], e["schema"] = stats(err)[-1]["generated_ids"], out
    out, err = fm_run("--prompt", PROMPT, "--regex", REGEX, "--max-new-tokens", "60",
                      "--stats")
    e["regex ids"], e["regex"] = stats(err)[-1]["generated_ids"], out
    out, _ = fm_run("--tokens", tokens, "--tokenizer", w("tokenizer"), "--grammar",
                    w("grammar.gbnf"), "--max-new-tokens", "60")
    e["gbnf tokens"] = out.rstrip(b"\n")
    out, _ = fm_run("--prompt", PROMPT, "--tools", w("tools.json"), "--tool-choice",
                    "required", "--max-new-tokens", "60")
    e["tools"] = out.rstrip(b"\n")
    out, _ = fm_run("--perplexity", w("text.txt"), "--ctx", "16", "--kl-base", fmb,
                    "--stats")
    e["ppl"] = json.loads(out.decode().splitlines()[-1])
    e["encode"] = ids(run([tool("fm-tokenize"), fmb], stdin=TEXT.encode())[0].decode())
    e["opened"] = ids(run([tool("fm-tokenize"), w("tokenizer"), "--add-special"],
                          stdin=b"Hello world")[0].decode())
    info = json.loads(run([tool("fmc"), "inspect", fmb, "--json"])[0])
    e["vocab"] = info.get("vocab_size", info.get("model", {}).get("vocab_size"))
    return e


def parse(out):
    lines = {}
    for line in out.decode().splitlines():
        name, _, value = line.partition(": ")
        lines[name] = value
    return lines


def hexed(b):
    return b.hex()


def compare_run(got, e, who):
    """The lines of a program (capi_test.c run, or capi_ctypes.py) against fm-run's."""
    same = lambda name, want: check(  # noqa: E731
        got.get(name) is not None and got[name] == want,
        "%s %s: fm-run's" % (who, name), "%r != %r" % (got.get(name), want))
    for name in ("tokens", "sampled", "text ids", "text prompt", "schema ids", "regex ids"):
        if name in got:
            same(name, " ".join(map(str, e[name])))
    for name in ("text", "schema", "regex", "gbnf tokens", "tools"):
        if name in got:
            same(name, hexed(e[name]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the build's bin directory (fmc, fm-run)")
    ap.add_argument("--capi-test", required=True, help="capi_test.c's program")
    ap.add_argument("--library", required=True, help="libfmrt.so")
    ap.add_argument("--work", required=True)
    ap.add_argument("--preload", default="",
                    help="a sanitizer runtime python must load first (ASan builds: "
                         "an instrumented libfmrt.so in an uninstrumented python)")
    args = ap.parse_args()
    tool = lambda name: os.path.join(args.bin, name)  # noqa: E731
    fmb = make_inputs(tool, args.work)
    e = expected(tool, fmb, args.work)
    check(len(e["tokens"]) == 12 and len(e["chat 2 ids"]) > 0, "fm-run generated the cases")

    out, _ = run([args.capi_test, "run", fmb, args.work])
    got = parse(out)
    compare_run(got, e, "C")
    join = lambda name: " ".join(map(str, e[name]))  # noqa: E731
    for name in ("loop", "kept", "buffer", "detached", "after model free"):
        check(got.get(name) == join("tokens"), "C %s: fm-run --tokens' ids" % name,
              "%r != %r" % (got.get(name), join("tokens")))
    for name in ("adapter", "adapter buffer"):
        check(got.get(name) == join("adapter"), "C %s: fm-run --adapter FILE:0.5" % name,
              "%r != %r" % (got.get(name), join("adapter")))
    check(got.get("adapter") != join("tokens"), "the adapter changes the ids")
    for k in (1, 2):
        for part in ("ids", "context"):
            name = "chat %d %s" % (k, part)
            check(got.get(name) == join(name), "C %s: fm-run --chat's" % name,
                  "%r != %r" % (got.get(name), join(name)))
        check(got.get("chat %d reused" % k) == str(e["chat %d reused" % k]),
              "C chat %d reused tokens: fm-run --chat's" % k)
    check(got.get("template") == join("template"),
          "C chat template, encoded: fm-run --chat's first context")
    check(got.get("encode") == join("encode"), "C encode: fm-tokenize's ids")
    check(got.get("opened") == join("opened"), "C fm_tokenizer_open + BOS: fm-tokenize "
          "--add-special's ids")
    check(got.get("decode round trip") == "1", "C decode(encode(text)) is the text")
    p = got.get("ppl", "").split()
    want = e["ppl"]
    check(len(p) == 8 and float(p[0]) == want["ppl"] and float(p[1]) == want["ppl_err"]
          and int(p[2]) == want["tokens_scored"] and int(p[3]) == want["chunks"]
          and float(p[5]) == want["kl_mean"] and float(p[7]) == want["top1_agree"],
          "C perplexity and KL: fm-run --perplexity --kl-base's", "%s vs %s" % (p, want))
    check(got.get("ppl ids") and float(got["ppl ids"]) == want["ppl"],
          "C perplexity of ids: fm-run --perplexity's")
    check(got.get("info", "").startswith("vocab %s " % e["vocab"]) and
          "tokenizer 1 chat 1 decoder 1 image 0 family llama device cpu stop 4095"
          in got.get("info", ""), "C model info: fmc inspect's vocabulary, the tokenizer's EOS",
          got.get("info"))
    check(got.get("device cpu") == "1 1", "C devices: the CPU is built in and present")
    check(got.get("tokens streamed") == "12 stop max-new-tokens", "C on_token saw every id")
    check(got.get("stopped") == "3 callback", "C a callback's 0 stops after its token")
    check(got.get("position") == str(len(PROMPT_IDS) + 11), "C position: prompt + fed ids")
    check(got.get("context") == "1", "C fm_session_tokens is the context")
    check(got.get("all logits") == "1", "C prefill with all logits")
    for name, want, what in (
            ("speculative self", e["tokens"], "plain greedy decoding's ids"),
            ("speculative draft", e["tokens"], "plain greedy decoding's ids"),
            ("speculative lookup", e["tokens"], "plain greedy decoding's ids"),
            ("speculative off", e["tokens"], "plain greedy decoding's ids"),
            ("speculative text", e["text ids"], "fm-run --prompt's ids"),
            ("speculative sampled", e["speculative sampled"],
             "fm-run --draft --temperature 0.8 --seed 7's ids")):
        check(got.get(name) == " ".join(map(str, want)),
              "C %s: %s" % (name, what), "%r != %r" % (got.get(name), want))
    spec = json.loads(got.get("speculative stats", "{}"))
    check(spec.get("drafted", 0) > 0 and spec.get("accepted", 0) > spec["drafted"] // 2
          and spec.get("accepted", 0) <= spec["drafted"] and spec.get("target_passes", 0) > 0,
          "C speculative counts in the stats JSON (a draft of the target's own model: most "
          "drafted tokens accepted)", got.get("speculative stats"))
    check(got.get("speculative off stats") == "1", "C plain again: no speculative counts")
    check(got.get("prefill cancelled", "").startswith("FM_STATUS_CANCELLED 1 1 [") and
          "prefill interrupted after" in got.get("prefill cancelled", ""),
          "C cancel from another thread stops a prefill between chunks; the rest then "
          "gives the uninterrupted logits", got.get("prefill cancelled"))
    check(got.get("cancelled", "").startswith("FM_STATUS_CANCELLED 3 FM_STATUS_OK [") and
          "cancelled by fm_session_cancel" in got.get("cancelled", ""),
          "C cancel from another thread stops before the next id", got.get("cancelled"))
    check(got.get("text streamed") == "1 stop max-new-tokens",
          "C on_text's pieces are the text")
    check(got.get("stop string", "1 1").endswith(" 1") and
          got.get("stop string", "stop-string").startswith("stop-string"),
          "C a stop string ends the text before it", got.get("stop string"))
    check(got.get("schema complete") == "1 stop-id", "C the JSON is complete",
          got.get("schema complete"))
    check(got.get("tools call") == "1 complete 1", "C the tool call is complete")
    check(got.get("tokenizer") == "vocab 4096 bos 4095 eos 4095 chat 1", "C tokenizer info",
          got.get("tokenizer"))
    st = json.loads(got.get("stats", "{}"))
    check(st.get("device") == "cpu" and st.get("threads") == 1 and st.get("adapters") == 0
          and st.get("position", 0) > 0, "C stats JSON", got.get("stats"))
    check(got.get("errors") == "[] [] [] [] []", "C no handle has an error")

    vlm = make_vlm(tool, args.work)
    out, _ = run([args.capi_test, "vlm", vlm, args.work])
    got = parse(out)
    prompt = got.get("vlm prompt", "").replace(" ", ",")
    for name, flag, image in (("file", "--image", "image.png"),
                              ("tensor", "--image-tensor", "image.npy")):
        want = run([tool("fm-run"), vlm, "--threads", "1", "--tokens", prompt,
                    "--max-new-tokens", "8", flag, os.path.join(args.work, image)])[0]
        check(got.get("vlm " + name) == " ".join(want.decode().split()),
              "C VLM, an image from a %s: fm-run %s's ids" % (name, flag),
              "%r != %r" % (got.get("vlm " + name), want))
    check(got.get("vlm image tokens", "").endswith(" 1"), "C the image's tokens handed out")
    fm_run = lambda *a: run([tool("fm-run"), vlm, "--threads", "1", "--max-new-tokens", "8",
                             "--image", os.path.join(args.work, "image.png"), "--stats"]
                            + list(a))  # noqa: E731
    st = stats(fm_run("--prompt", "Look: <image> then")[1])[-1]
    for key, name in (("generated_ids", "vlm text"), ("prompt_ids", "vlm text prompt")):
        check(got.get(name) == " ".join(map(str, st[key])),
              "C VLM text with an <image> marker: fm-run --prompt --image's %s" % key,
              "%r != %r" % (got.get(name), st[key]))
    chat_file = os.path.join(args.work, "vlm_chat.txt")
    with open(chat_file, "w") as f:
        f.write("What is in <image>?\n---\nAnd then?\n")
    turns = [s for s in stats(fm_run("--chat", "--chat-file", chat_file)[1]) if "turn" in s]
    check(len(turns) == 2, "fm-run --chat with an image: two turns")
    for k, s in enumerate(turns, 1):
        for key, name in (("generated_ids", "vlm chat %d" % k),
                          ("context_ids", "vlm chat %d context" % k)):
            check(got.get(name) == " ".join(map(str, s[key])),
                  "C VLM chat turn %d: fm-run --chat --image's %s" % (k, key),
                  "%r != %r" % (got.get(name), s[key]))
    check(got.get("vlm chat image tokens", "").endswith(" 1"),
          "C a chat's image tokens handed out")
    check(got.get("vlm misuse", "").endswith(", 0 failed"), "C VLM misuse")

    out, _ = run([args.capi_test, "misuse", fmb, args.work], ok=(0, 1))
    check(out.decode().strip().endswith(", 0 failed"), "C misuse: " + out.decode().strip())

    env = None
    if args.preload:  # python's own allocations are not ours to leak-check
        env = dict(os.environ, LD_PRELOAD=args.preload,
                   ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    out, _ = run(["/usr/bin/python3", os.path.join(HERE, "capi_ctypes.py"), args.library,
                  fmb, args.work], env=env)
    got = parse(out)
    compare_run(got, e, "Python ctypes")
    check(all(k in got for k in ("tokens", "sampled", "text", "schema")),
          "Python ctypes printed every case")
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
