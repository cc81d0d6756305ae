#!/usr/bin/env python3
"""A byte-level BPE tokenizer trained on the corpus, written as Hugging Face's
tokenizer.json (GPT-2's scheme: the GPT-2 pre-tokenizer regex, bytes mapped to
printable characters, merges learned by pair frequency).

  bpe.py train TRAIN.txt --vocab 4096 --out DIR    writes DIR/tokenizer.json,
                                                  DIR/tokenizer_config.json
  bpe.py encode DIR FILE                          prints the ids, one line

Ids: 0..255 the bytes (in GPT-2's byte-to-character order), then one id per
merge in the order learned, then <|endoftext|> (the last id): the document
separator, bos and eos.  Training counts each distinct pre-token once with
its frequency and updates pair counts incrementally; ties between pairs of
equal count go to the lexicographically smallest pair, so the result is
deterministic.  The encoder here is only the recipe's (it tokenizes the
training text); fmc's tokenizer and @lenml/tokenizers read the file itself,
and make check compares their ids on the test split.
"""

import argparse
import collections
import heapq
import json
import os
import sys

# GPT-2's pre-tokenizer (Hugging Face ByteLevel with use_regex=true).
PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = "<|endoftext|>"


def bytes_to_unicode():
    """GPT-2's byte -> printable character map (the ByteLevel alphabet)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_CHARS = bytes_to_unicode()


def pretokens(text):
    import regex  # python3-regex (install-deps.sh --train): \p{L} in PATTERN
    pat = regex.compile(PATTERN)
    for m in pat.finditer(text):
        yield "".join(BYTE_CHARS[b] for b in m.group().encode("utf-8"))


def train(text, vocab_size, progress=True):
    words = collections.Counter(pretokens(text))
    seqs = [list(w) for w in words]
    freqs = list(words.values())
    pairs = collections.Counter()
    where = collections.defaultdict(set)
    for i, (s, f) in enumerate(zip(seqs, freqs)):
        for a, b in zip(s, s[1:]):
            pairs[a, b] += f
            where[a, b].add(i)
    # Max-heap on (count, then smallest pair): entries go stale and are checked.
    heap = [(-c, p) for p, c in pairs.items()]
    heapq.heapify(heap)
    merges = []
    n_merges = vocab_size - 256 - 1
    while len(merges) < n_merges and heap:
        c, p = heapq.heappop(heap)
        if pairs.get(p, 0) != -c or c == 0:
            continue
        merges.append(p)
        a, b = p
        ab = a + b
        touched = set()
        for i in list(where[p]):
            s = seqs[i]
            f = freqs[i]
            j = 0
            out = []
            # Remove the old pairs of this word, merge, add the new ones.
            for x, y in zip(s, s[1:]):
                pairs[x, y] -= f
                touched.add((x, y))
            while j < len(s):
                if j + 1 < len(s) and s[j] == a and s[j + 1] == b:
                    out.append(ab)
                    j += 2
                else:
                    out.append(s[j])
                    j += 1
            seqs[i] = out
            for x, y in zip(out, out[1:]):
                pairs[x, y] += f
                where[x, y].add(i)
                touched.add((x, y))
        del pairs[p]
        where.pop(p, None)
        for q in touched:
            if q != p and pairs.get(q, 0) > 0:
                heapq.heappush(heap, (-pairs[q], q))
        if progress and len(merges) % 500 == 0:
            print("bpe: %d / %d merges" % (len(merges), n_merges), file=sys.stderr)
    return merges


def tokenizer_json(merges):
    vocab = {}
    for b in range(256):
        vocab[BYTE_CHARS[b]] = b
    for a, b in merges:
        if a + b in vocab:  # two merges making one string: ids would shift
            raise ValueError("bpe: merge %r %r makes an existing token" % (a, b))
        vocab[a + b] = len(vocab)
    eot = len(vocab)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": eot, "content": EOT, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                          "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                           "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                    "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }


def tokenizer_config():
    return {"add_bos_token": False, "add_eos_token": False, "bos_token": EOT,
            "eos_token": EOT, "unk_token": EOT, "model_max_length": 1024,
            "clean_up_tokenization_spaces": False, "tokenizer_class": "GPT2Tokenizer"}


class Encoder:
    def __init__(self, directory):
        with open(os.path.join(directory, "tokenizer.json"), encoding="utf-8") as f:
            tj = json.load(f)
        self.vocab = tj["model"]["vocab"]
        self.ranks = {tuple(m.split(" ")): i for i, m in enumerate(tj["model"]["merges"])}
        self.eot = tj["added_tokens"][0]["id"]
        self.cache = {}

    def word(self, w):
        ids = self.cache.get(w)
        if ids is not None:
            return ids
        s = list(w)
        while len(s) > 1:
            best = min(range(len(s) - 1),
                       key=lambda j: self.ranks.get((s[j], s[j + 1]), 1 << 30))
            if (s[best], s[best + 1]) not in self.ranks:
                break
            s[best:best + 2] = [s[best] + s[best + 1]]
        ids = [self.vocab[x] for x in s]
        self.cache[w] = ids
        return ids

    def encode(self, text):
        out = []
        for w in pretokens(text):
            out.extend(self.word(w))
        return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("text")
    t.add_argument("--vocab", type=int, default=4096)
    t.add_argument("--out", required=True)
    e = sub.add_parser("encode")
    e.add_argument("dir")
    e.add_argument("file")
    a = ap.parse_args(argv)
    if a.cmd == "train":
        with open(a.text, encoding="utf-8") as f:
            merges = train(f.read(), a.vocab)
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer_json(merges), f, ensure_ascii=False, indent=None)
        with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
            json.dump(tokenizer_config(), f, indent=2)
            f.write("\n")
        print("bpe: %d merges, vocabulary %d -> %s" % (len(merges), a.vocab, a.out),
              file=sys.stderr)
    else:
        with open(a.file, encoding="utf-8") as f:
            print(" ".join(map(str, Encoder(a.dir).encode(f.read()))))


if __name__ == "__main__":
    main()
