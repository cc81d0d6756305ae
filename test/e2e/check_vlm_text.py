#!/usr/bin/python3
"""<image> markers in a VLM's text prompts: fm-run --prompt and --chat-file on
an fm_vlm model (afm7 + rw-vitdet-tiny, random weights) compiled with a
small byte-level tokenizer embedded, checked against plain references.

  check_vlm_text.py --work DIR [--bin DIR]
  check_vlm_text.py --write-tokenizer DIR   (the tokenizer alone, e.g. beside
                                            an fm_vlm checkpoint for a demo)

The tokenizer (written here) has one token per byte (id = the byte), BOS <s>
(256), EOS </s> (257), fillers and the image token <|image_pad|> at the
config's image_token_index (508), so the expected ids of any text are its
bytes with the added tokens split out: no tokenizer implementation is
needed to know them. What is checked:
  - --prompt with one and with two images (--image-tensor): the ids fm-run fed
    (--stats prompt_ids) are BOS, the text's bytes, and 9 placeholders where
    each marker was; the generated ids are the numpy reference's greedy
    argmax with the images in order, and what fm-run --tokens generates from
    those ids (whose logits vlm.test checks against the reference);
  - --image without a marker: the images go first (a note says so);
  - marker/image count mismatches are errors naming both counts (--prompt,
    --chat-file up front, stdin --chat turn by turn and at the end);
  - --chat-file with an image in turn 1 and a text-only turn 2: each turn's
    context is python3-jinja2's rendering with the marker expanded, the
    reused ids the longest common prefix with the KV cache, each reply the
    reference's argmax; the image is encoded once and prefilled once;
  - a template that rewrites the conversation's start every turn: turn 2
    prefills the turn-1 image again from its kept tokens (not re-encoded)
    and the reply is still the reference's.
With --case markers, only <image> outside the user turns: a reply and a
--system text that hold it keep it as text; the image token's text typed by
the user or in --system is refused; U+E000 typed by the user is text.
Prints one line per check and `N passed, N failed` at the end.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples", "train"))
from bpe import bytes_to_unicode  # noqa: E402  (GPT-2's byte map)
import fm_reference as ref  # noqa: E402
import gen_checkpoint  # noqa: E402
import checks  # noqa: E402
from checks import check  # noqa: E402  (the PASS/FAIL lines)
import timelimits  # noqa: E402  (every command's time limit)

BOS, EOS, IMAGE = 256, 257, 508
IMAGE_TEXT = "<|image_pad|>"
ADDED = {"<s>": BOS, "</s>": EOS, IMAGE_TEXT: IMAGE}
TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}\n"
            "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
# Its first line changes every turn: the KV cache keeps only BOS.
COUNTING = "{{ bos_token }}{{ messages|length }} messages\n" + TEMPLATE[len("{{ bos_token }}"):]

def run(cmd, expect_fail=False, stdin=b""):
    p = timelimits.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    if p.returncode != 0 and not expect_fail:
        sys.stderr.write("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), out, err))
        sys.exit(1)
    return p.returncode, out, err


def write_tokenizer(d, template):
    vocab = {ch: b for b, ch in bytes_to_unicode().items()}
    for i in range(EOS + 1, IMAGE):
        vocab["w%d" % i] = i
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for t, i in ADDED.items()]
    for t, i in ADDED.items():
        vocab[t] = i
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [BOS], "tokens": ["<s>"]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "vocab": vocab, "merges": []},
    }
    json.dump(tok, open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8"),
              ensure_ascii=False)
    json.dump({"bos_token": "<s>", "eos_token": "</s>", "chat_template": template},
              open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8"))


def expected_ids(text, per_image):
    """BOS-free ids of `text` after each <image> became the image token's
    text per_image times: added tokens split out, every other byte its id."""
    text = text.replace("<image>", IMAGE_TEXT * per_image)
    ids, i = [], 0
    while i < len(text):
        for t, tid in ADDED.items():
            if text.startswith(t, i):
                ids.append(tid)
                i += len(t)
                break
        else:
            j = i + 1
            ids.extend(text[i:j].encode("utf-8"))
            i = j
    return ids


def stats_lines(err):
    return [json.loads(l) for l in err.splitlines() if l.startswith("{")]


def argmax_after(cfg, W, ids, start, images):
    """The reference's greedy argmax of positions start-1 .. len(ids)-2."""
    lg = ref.logits(cfg, W, ids, {}, images)
    return [int(x) for x in lg.argmax(-1)[start - 1:len(ids) - 1]]


def prompt_checks(fm_run, cfg, W, n, images, tensors):
    cases = [("one image", "Describe <image> briefly.", [0]),
             ("two images", "Compare <image> with <image>, please.", [0, 1])]
    for what, prompt, which in cases:
        flags = sum((["--image-tensor", tensors[k]] for k in which), [])
        _, out, err = fm_run("--prompt", prompt, "--max-new-tokens", "6", "--stats", *flags)
        st = stats_lines(err)[-1]
        want = [BOS] + expected_ids(prompt, n)
        check(st["prompt_ids"] == want, "prompt %s: the ids hold %d placeholders per marker" % (
            what, n), "%s != %s" % (st["prompt_ids"], want))
        gen = st["generated_ids"]
        imgs = [images[k] for k in which]
        check(IMAGE not in gen and gen == argmax_after(cfg, W, want + gen, len(want), imgs),
              "prompt %s: the generated ids %s are the reference's argmax" % (what, gen))
        _, tok_out, _ = fm_run("--tokens", ",".join(map(str, want)), "--max-new-tokens",
                               str(len(gen)), *flags)
        check([int(t) for t in tok_out.split()] == gen,
              "prompt %s: fm-run --tokens generates the same ids" % what)

    # No marker: the image goes first, with a note.
    _, _, err = fm_run("--prompt", "No marker here.", "--max-new-tokens", "1", "--stats",
                       "--image-tensor", tensors[0])
    want = [BOS] + [IMAGE] * n + expected_ids("No marker here.", n)
    check(stats_lines(err)[-1]["prompt_ids"] == want and "holds no <image> marker" in err,
          "prompt without a marker: the image goes before the text, with a note")

    for what, prompt, flags, needle in (
            ("two markers, one image", "<image> and <image>", ["--image-tensor", tensors[0]],
             "the prompt holds 2 <image> markers but 1 --image/--image-tensor was given"),
            ("a marker, no image", "look: <image>", [],
             "the prompt holds 1 <image> marker but 0 --image/--image-tensor were given")):
        rc, _, err = fm_run("--prompt", prompt, *flags, expect_fail=True)
        check(rc != 0 and needle in err, "bad input %s: %s" % (what, err.strip()[-160:]))


def render(template, messages):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(messages=messages, add_generation_prompt=True,
                                            bos_token="<s>", eos_token="</s>")


def chat_checks(tool, fmb, cfg, W, n, image, tensor, work, template, label):
    turns = ["What is in <image>?", "And in two words?"]
    cf = os.path.join(work, "chat_%s.txt" % label)
    open(cf, "w", encoding="utf-8").write("\n---\n".join(turns) + "\n")
    _, out, err = run([tool("fm-run"), fmb, "--activations", "f32", "--chat", "--chat-file", cf, "--max-new-tokens", "5",
                       "--stats", "--image-tensor", tensor])
    lines = [l for l in stats_lines(err) if "turn" in l]
    check(len(lines) == 2, "chat %s: two turns" % label, err[-300:])
    if len(lines) != 2:
        return
    messages, cache = [], []
    for i, (user, st) in enumerate(zip(turns, lines)):
        messages.append({"role": "user", "content": user})
        want = expected_ids(render(template, messages), n)
        check(st["context_ids"] == want, "chat %s turn %d: the context is jinja2's rendering "
              "with the marker expanded (%d ids)" % (label, i + 1, len(want)),
              "%s != %s" % (st["context_ids"], want))
        common = 0
        while common < min(len(cache), len(want)) and cache[common] == want[common]:
            common += 1
        keep = common - 1 if common == len(want) else common
        while keep > 0 and want[keep] == IMAGE and want[keep - 1] == IMAGE:
            keep -= 1  # an image is prefilled whole
        check(st["reused_tokens"] == keep, "chat %s turn %d: %d ids reused from the KV cache" % (
            label, i + 1, keep), "got %d" % st["reused_tokens"])
        gen = st["generated_ids"]
        check(IMAGE not in gen and gen == argmax_after(cfg, W, want + gen, len(want), [image]),
              "chat %s turn %d: the reply %s is the reference's argmax" % (label, i + 1, gen))
        # The reply's text joins the conversation: its bytes, a filler's
        # text, invalid UTF-8 as U+FFFD (the stop id gives no text).
        reply = gen[:-1] if st["stop"] == "stop-id" else gen
        names = {v: k for k, v in ADDED.items()}
        text = b"".join(bytes([t]) if t < 256 else names.get(t, "w%d" % t).encode()
                        for t in reply)
        messages.append({"role": "assistant", "content": text.decode("utf-8", "replace")})
        cache = want + gen[:-1]
    return lines


def user_expanded(messages, n):
    """The messages with only the user turns' <image> markers as n image
    tokens: what the rendering must hold (the rule of fm/image_prompt.h)."""
    return [dict(m, content=m["content"].replace("<image>", IMAGE_TEXT * n))
            if m["role"] == "user" else m for m in messages]


def _plain_ids(text):
    ids, i = [], 0
    while i < len(text):
        for t, tid in ADDED.items():
            if text.startswith(t, i):
                ids.append(tid)
                i += len(t)
                break
        else:
            ids.extend(text[i].encode("utf-8"))
            i += 1
    return ids


def marker_checks(tool, fmb, cfg, W, n, image, tensor, work):
    """<image> outside the user turns is text: a reply that holds it (forced
    by --regex), a --system text that holds it; the user typing the image
    token's text or the sentinel code point."""
    fm_chat = lambda cf, *a, expect_fail=False: run(
        [tool("fm-run"), fmb, "--activations", "f32", "--chat", "--chat-file", cf,
         "--stats"] + list(a), expect_fail)

    def turns_file(name, turns):
        cf = os.path.join(work, name)
        open(cf, "w", encoding="utf-8").write("\n---\n".join(turns) + "\n")
        return cf

    # (a) Turn 1's reply is "<image>" (the regex forces it); turn 2's one
    # marker takes the one image.
    turns = ["Say the marker.", "What is in <image>?"]
    _, _, err = fm_chat(turns_file("reply_marker.txt", turns), "--regex", "<image>",
                        "--max-new-tokens", "10", "--image-tensor", tensor)
    lines = [l for l in stats_lines(err) if "turn" in l]
    check(len(lines) == 2, "marker in a reply: two turns", err[-300:])
    if len(lines) == 2:
        messages = []
        for i, (user, st) in enumerate(zip(turns, lines)):
            messages.append({"role": "user", "content": user})
            want = _plain_ids(render(TEMPLATE, user_expanded(messages, n)))
            check(st["context_ids"] == want, "marker in a reply, turn %d: the context is "
                  "jinja2's rendering with only the user's marker expanded (%d ids, %d "
                  "placeholders)" % (i + 1, len(want), want.count(IMAGE)),
                  "%s != %s" % (st["context_ids"], want))
            reply = bytes(t for t in st["generated_ids"] if t < 256).decode()
            check(reply == "<image>", "marker in a reply, turn %d: the reply is %r" % (
                i + 1, reply))
            messages.append({"role": "assistant", "content": reply})
        check([l["prefilled_images"] for l in lines] == [0, 1],
              "marker in a reply: the image is prefilled in turn 2 only")

    # (d) A reply that spells the image token's text from plain tokens (the
    # regex forces its bytes; the placeholder id itself is never sampled):
    # the history holds the reply without it, so turn 2's one marker still
    # takes the one image.
    turns = ["Spell the pad.", "What is in <image>?"]
    _, _, err = fm_chat(turns_file("reply_pad.txt", turns), "--regex", r"<\|image_pad\|>",
                        "--max-new-tokens", "20", "--image-tensor", tensor)
    lines = [l for l in stats_lines(err) if "turn" in l]
    check(len(lines) == 2, "the pad spelled in a reply: two turns", err[-300:])
    if len(lines) == 2:
        reply = bytes(t for t in lines[0]["generated_ids"] if t < 256).decode()
        check(reply == IMAGE_TEXT and IMAGE not in lines[0]["generated_ids"],
              "the pad spelled in a reply: turn 1's reply is %r in bytes" % reply)
        messages = [{"role": "user", "content": turns[0]},
                    {"role": "assistant", "content": ""},
                    {"role": "user", "content": turns[1]}]
        want = _plain_ids(render(TEMPLATE, user_expanded(messages, n)))
        check(lines[1]["context_ids"] == want and want.count(IMAGE) == n,
              "the pad spelled in a reply: turn 2's context holds the reply without "
              "it and the one image", "%s != %s" % (lines[1]["context_ids"], want))

    # (b) A --system text that holds <image>: plain text; the reply is the
    # reference's argmax with the one image.
    system = "Answer about <image> markers."
    user = "Look: <image>"
    _, _, err = fm_chat(turns_file("system_marker.txt", [user]), "--system", system,
                        "--max-new-tokens", "4", "--image-tensor", tensor)
    st = [l for l in stats_lines(err) if "turn" in l][-1]
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    want = _plain_ids(render(TEMPLATE, user_expanded(messages, n)))
    check(st["context_ids"] == want and want.count(IMAGE) == n,
          "marker in --system: the context is jinja2's rendering with only the user's "
          "marker expanded", "%s != %s" % (st["context_ids"], want))
    gen = st["generated_ids"]
    check(gen == argmax_after(cfg, W, want + gen, len(want), [image]),
          "marker in --system: the reply %s is the reference's argmax" % gen)

    # (c) The image token's text is that token (as HF's tokenizer splits it
    # out), never a marker: refused in a user turn and in --system.
    rc, _, err = fm_chat(turns_file("typed_pad.txt", ["hi", "a " + IMAGE_TEXT + " b"]),
                         "--max-new-tokens", "2", expect_fail=True)
    check(rc != 0 and "user turn 2 holds the image token's text '<|image_pad|>' itself" in err,
          "the image token's text in a user turn is refused naming the turn: %s" %
          err.strip()[-160:])
    rc, _, err = fm_chat(turns_file("plain.txt", ["hi"]), "--system", "x" + IMAGE_TEXT,
                         "--max-new-tokens", "2", expect_fail=True)
    check(rc != 0 and "the system text holds the image token's text" in err,
          "the image token's text in --system is refused: %s" % err.strip()[-160:])
    # The sentinel's code point typed by the user is text: another is taken.
    user = "\ue000 then <image> \ue001"
    _, _, err = fm_chat(turns_file("sentinel.txt", [user]), "--max-new-tokens", "1",
                        "--image-tensor", tensor)
    st = [l for l in stats_lines(err) if "turn" in l][-1]
    want = _plain_ids(render(TEMPLATE, user_expanded([{"role": "user", "content": user}], n)))
    check(st["context_ids"] == want and want.count(IMAGE) == n,
          "U+E000 typed by the user is text, its marker still takes the image",
          "%s != %s" % (st["context_ids"], want))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work")
    ap.add_argument("--case", choices=["all", "markers"], default="all",
                    help="markers: only the checks of <image> outside user turns")
    ap.add_argument("--bin", default="")
    ap.add_argument("--write-tokenizer", metavar="DIR",
                    help="only write the tokenizer (and its chat template) into DIR")
    args = ap.parse_args()
    if args.write_tokenizer:
        write_tokenizer(args.write_tokenizer, TEMPLATE)
        return 0
    if not args.work:
        ap.error("--work is required")
    tool = lambda name: os.path.join(args.bin, name) if args.bin else name
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "ckpt")
    gen_checkpoint.generate("fm_vlm", "afm7-rw-tiny", model)
    cfg, W = ref.load_checkpoint(model)
    assert cfg["image_token_index"] == IMAGE and cfg["text_config"]["vocab_size"] == IMAGE + 1
    n = cfg["vision_config"]["adapter"]["grid"] ** 2
    S = cfg["vision_config"]["image_size"]
    images, tensors = [], []
    for k in range(2):
        im = np.random.default_rng(7 + k).standard_normal((3, S, S)).astype(np.float32)
        images.append(im)
        tensors.append(os.path.join(args.work, "image%d.npy" % k))
        np.save(tensors[-1], im)

    write_tokenizer(model, TEMPLATE)
    fmb = os.path.join(args.work, "model.fmb")
    run([tool("fmc"), "compile", model, "-o", fmb])
    fm_run = lambda *a, expect_fail=False: run(
        [tool("fm-run"), fmb, "--activations", "f32"] + list(a), expect_fail)
    if args.case == "markers":
        marker_checks(tool, fmb, cfg, W, n, images[0], tensors[0], args.work)
        return checks.summary()
    prompt_checks(fm_run, cfg, W, n, images, tensors)

    lines = chat_checks(tool, fmb, cfg, W, n, images[0], tensors[0], args.work, TEMPLATE,
                        "kept")
    if lines:
        check([l["prefilled_images"] for l in lines] == [1, 0] and
              [l["images_encoded"] for l in lines] == [1, 1],
              "chat kept: the image is encoded once and prefilled once",
              json.dumps([(l["prefilled_images"], l["images_encoded"]) for l in lines]))
    for what, turns, flags, needle in (
            ("one marker, two images", "a <image>\n---\nb\n",
             ["--image-tensor", tensors[0], "--image-tensor", tensors[1]],
             "its turns hold 1 <image> marker but 2 --image/--image-tensor were given"),
            ("no marker, one image", "a\n---\nb\n", ["--image-tensor", tensors[0]],
             "its turns hold 0 <image> markers but 1 --image/--image-tensor was given")):
        cf = os.path.join(args.work, "bad_chat.txt")
        open(cf, "w").write(turns)
        rc, _, err = fm_run("--chat", "--chat-file", cf, *flags, expect_fail=True)
        check(rc != 0 and needle in err, "bad input chat %s: %s" % (what, err.strip()[-160:]))

    # Interactive --chat (stdin): counted turn by turn.
    for what, stdin, needle in (
            ("a turn with more markers than images left", b"hi\na <image> b <image>\n",
             "the turn holds 2 <image> markers but 1 of the 1 images added are left for it"),
            ("an image no turn took", b"hi\nthere\n",
             "the chat's turns held 0 <image> markers but 1 --image/--image-tensor was given")):
        rc, _, err = run([tool("fm-run"), fmb, "--activations", "f32", "--chat",
                          "--max-new-tokens", "2", "--image-tensor", tensors[0]],
                         expect_fail=True, stdin=stdin)
        check(rc != 0 and needle in err, "bad input stdin chat, %s: %s" % (
            what, err.strip()[-160:]))

    # A template that rewrites the conversation's first line every turn.
    model2 = os.path.join(args.work, "ckpt_counting")
    gen_checkpoint.generate("fm_vlm", "afm7-rw-tiny", model2)
    write_tokenizer(model2, COUNTING)
    fmb2 = os.path.join(args.work, "counting.fmb")
    run([tool("fmc"), "compile", model2, "-o", fmb2])
    cfg2, W2 = ref.load_checkpoint(model2)
    lines = chat_checks(tool, fmb2, cfg2, W2, n, images[0], tensors[0], args.work, COUNTING,
                        "rewritten")
    if lines:
        check([l["prefilled_images"] for l in lines] == [1, 1] and
              [l["images_encoded"] for l in lines] == [1, 1],
              "chat rewritten: turn 2 prefills the image again from its kept tokens, "
              "encoded once", json.dumps([(l["prefilled_images"], l["images_encoded"])
                                           for l in lines]))
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
