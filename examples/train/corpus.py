#!/usr/bin/env python3
"""The training corpus: English prose from a Debian package, split by document.

Source: python3.11-doc's reStructuredText sources
(/usr/share/doc/python3.11/html/_sources/**/*.rst.txt, 497 documents, ~12 MB:
the Python 3.11 tutorial, library reference, HOWTOs and FAQs).  Documents
are sorted by path, shuffled with random.Random(SEED), and split 90/5/5 into
train / valid / test by document (never inside one), so that the test split
is text the models never saw.  Each split is the documents' texts joined by
the end-of-text separator "\\n\\n" (the tokenizer's <|endoftext|> is put
between documents only in training batches, not in these files).

  corpus.py --out DIR [--lists examples/train/corpus]

writes DIR/{train,valid,test}.txt and, with --lists, the document lists
and a SHA256SUMS of the three files, which are committed: a rebuilt corpus
must reproduce them (corpus.py --check verifies that).
"""

import argparse
import hashlib
import os
import random
import sys

SOURCE = "/usr/share/doc/python3.11/html/_sources"
PACKAGE = "python3.11-doc"
SEED = 20261207
SPLITS = (("train", 0.90), ("valid", 0.05), ("test", 0.05))
HERE = os.path.dirname(os.path.abspath(__file__))
LISTS = os.path.join(HERE, "corpus")


def documents(source=SOURCE):
    if not os.path.isdir(source):
        sys.exit("corpus.py: %s does not exist: install the Debian package %s "
                 "(scripts/install-deps.sh --train does)" % (source, PACKAGE))
    docs = []
    for root, _, files in os.walk(source):
        for f in files:
            if f.endswith(".rst.txt"):
                docs.append(os.path.relpath(os.path.join(root, f), source))
    return sorted(docs)


def split(docs, seed=SEED):
    order = list(docs)
    random.Random(seed).shuffle(order)
    n = len(order)
    n_valid = round(n * SPLITS[1][1])
    n_test = round(n * SPLITS[2][1])
    return {"test": sorted(order[:n_test]),
            "valid": sorted(order[n_test:n_test + n_valid]),
            "train": sorted(order[n_test + n_valid:])}


def read_doc(rel, source=SOURCE):
    with open(os.path.join(source, rel), encoding="utf-8") as f:
        text = f.read()
    # Normalise line ends and trailing blanks; the text is otherwise as shipped.
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip() + "\n"


def split_texts(parts, source=SOURCE):
    return {name: [read_doc(d, source) for d in parts[name]] for name, _ in SPLITS}


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def build(out, source=SOURCE):
    parts = split(documents(source))
    texts = split_texts(parts, source)
    os.makedirs(out, exist_ok=True)
    sums = {}
    for name, _ in SPLITS:
        data = "\n\n".join(texts[name]).encode("utf-8")
        with open(os.path.join(out, name + ".txt"), "wb") as f:
            f.write(data)
        sums[name] = sha256(data)
        print("corpus: %-5s %4d documents, %9d bytes, sha256 %s"
              % (name, len(parts[name]), len(data), sums[name][:16]), file=sys.stderr)
    return parts, sums


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for the split texts")
    ap.add_argument("--lists", help="write the document lists and SHA256SUMS here")
    ap.add_argument("--check", action="store_true",
                    help="fail unless the splits match the committed lists and sums")
    a = ap.parse_args(argv)
    parts, sums = build(a.out)
    if a.lists:
        os.makedirs(a.lists, exist_ok=True)
        for name, _ in SPLITS:
            with open(os.path.join(a.lists, name + ".list"), "w") as f:
                f.write("".join(d + "\n" for d in parts[name]))
        with open(os.path.join(a.lists, "SHA256SUMS"), "w") as f:
            for name, _ in SPLITS:
                f.write("%s  %s.txt\n" % (sums[name], name))
    if a.check:
        bad = []
        for name, _ in SPLITS:
            with open(os.path.join(LISTS, name + ".list")) as f:
                if f.read().split() != parts[name]:
                    bad.append(name + ".list")
        with open(os.path.join(LISTS, "SHA256SUMS")) as f:
            want = dict(reversed(line.split()) for line in f if line.strip())
        for name, _ in SPLITS:
            if want.get(name + ".txt") != sums[name]:
                bad.append(name + ".txt sha256")
        if bad:
            sys.exit("corpus.py: the rebuilt corpus differs from %s: %s (another %s "
                     "version?)" % (LISTS, ", ".join(bad), PACKAGE))
        print("corpus: matches %s" % LISTS, file=sys.stderr)


if __name__ == "__main__":
    main()
