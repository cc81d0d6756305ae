#!/usr/bin/env python3
"""Builds the named corpora that the tokenizer oracle test encodes, one file
per corpus in OUTDIR (a record is a little-endian u32 byte length and the
bytes; texts may be invalid UTF-8 on purpose):

  normalization  Debian unicode-data NormalizationTest.txt: each line's five
                 columns joined by spaces
  emoji          unicode-data emoji-test.txt, emoji-sequences.txt and
                 emoji-zwj-sequences.txt: each sequence with its name
  wordbreak      unicode-data auxiliary/WordBreakTest.txt: each test string
  prose          /usr/share/common-licenses: each license text whole
  edge           hand-written cases: whitespace runs, newlines, tabs, emoji
                 ZWJ, CJK, Khmer, digits, contractions, special-token text,
                 invalid UTF-8
  pydoc          the trained models' test split (examples/train/corpus.py:
                 python3.11-doc's reST sources): each document whole

usage: make_corpus.py OUTDIR
"""
import bz2
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "examples", "train"))
import corpus as train_corpus  # noqa: E402

UCD = "/usr/share/unicode"
LICENSES = "/usr/share/common-licenses"


def codepoints(field):
    return "".join(chr(int(h, 16)) for h in field.split())


def normalization():
    out = []
    with bz2.open(f"{UCD}/NormalizationTest.txt.bz2", "rt", encoding="utf-8") as f:
        for line in f:
            line = line.split("#")[0].strip()
            if not line or line.startswith("@"):
                continue
            cols = line.split(";")[:5]
            out.append(" ".join(codepoints(c) for c in cols))
    return out


def emoji():
    out = []
    seen = set()
    for name in ("emoji-test.txt", "emoji-sequences.txt", "emoji-zwj-sequences.txt"):
        for line in open(f"{UCD}/emoji/{name}", encoding="utf-8"):
            if line.startswith("#") or not line.strip():
                continue
            data, _, comment = line.partition("#")
            field = data.split(";")[0].strip()
            if ".." in field:  # a range of single code points
                lo, hi = (int(x, 16) for x in field.split(".."))
                seq = "".join(chr(c) for c in range(lo, hi + 1))
            else:
                seq = codepoints(field)
            label = comment.strip()
            text = f"{seq} {label}"
            if text not in seen:
                seen.add(text)
                out.append(text)
    return out


def wordbreak():
    out = []
    for line in open(f"{UCD}/auxiliary/WordBreakTest.txt", encoding="utf-8"):
        data = line.split("#")[0].strip()
        if not data:
            continue
        hexes = [t for t in data.split() if t not in ("÷", "×")]
        out.append("".join(chr(int(h, 16)) for h in hexes))
    return out


def prose():
    out = []
    for name in sorted(os.listdir(LICENSES)):
        path = os.path.join(LICENSES, name)
        if os.path.isfile(path) and not os.path.islink(path):
            out.append(open(path, "rb").read())
    return out


EDGE = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r", " \n ", "\t \n \t",
    "a b", "a  b", "a   b", "a\tb", "a\t\tb", "a\nb", "a\n\nb", "a \n b", "a  \n\n  b",
    "   leading spaces", "trailing spaces   ", "trailing newline\n", "\nleading newline",
    "line one\nline two\r\nline three\rline four",
    "Hello world", "Hello, world!", "HELLO WORLD", "hello-world_foo.bar",
    "I'm you're he's they'll we've I'd don't can't won't",
    "I'M YOU'RE HE'S THEY'LL WE'VE I'D DON'T", "'s 't 're 've 'm 'll 'd", "'S'T'RE'VE'M'LL'D",
    "rock'n'roll", "''quoted''", "it’s curly", "l'homme d'État",
    "1", "12", "123", "1234", "12345", "123456789012345678901234567890",
    "3.14159", "1,000,000", "2024-01-31", "10:45:07", "v1.2.3", "x=-42", "1e-10",
    "٣٤٥ ۱۲۳ १२३", "①②③ ⅻ ½ ²³", "0x1F 0b1010 0o777",
    "👨‍👩‍👧‍👦", "🏳️‍🌈", "👍🏽", "❤️", "🇫🇷🇩🇪🇯🇵", "a👨‍💻b", "🧑🏾‍🚀 to the moon 🚀🚀🚀",
    "😀😃😄😁😆", "#️⃣ *️⃣ 1️⃣",
    "日本語のテキストです。", "中文测试，你好世界！", "한국어 텍스트입니다", "繁體中文與简体中文",
    "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３", "ｶﾀｶﾅ",
    "សួស្តី​ពិភពលោក", "ភាសាខ្មែរ គឺជាភាសា", "สวัสดีครับ", "ສະບາຍດີ", "မင်္ဂလာပါ",
    "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "வணக்கம்", "Ελληνικά γράμματα",
    "Русский текст", "Ελληνικά", "ქართული", "Հայերեն",
    "naïve café résumé", "e\u0301 A\u030a \u212b \u00c5", "ﬁ ﬂ ﬀ", "Ǆ ǅ ǆ", "ẞ ß",
    "\u00a0", "a\u00a0b", "a\u3000b", "a\u2028b", "a\u2029b", "a\u0085b", "\u0085",
    "a\ufeffb", "\ufeff", "a\u200bb", "a\u200cb\u200dc", "\u000b\u000c", "a\u1680b",
    "a\u2000\u2001\u2002b", "a\u202fb", "a\u205fb",
    # Where JavaScript's \s (which holds U+FEFF, not U+0085) splits GPT-2's
    # regex differently from Rust's (Oniguruma's) \s:
    "a \ufeffb", "a \u0085b", "x \ufeff\ufeff y", "x \u0085\u0085 y",
    "\x00", "a\x00b", "\x01\x02\x03", "\x7f", "\x1b[31mred\x1b[0m",
    " " * 300, "\n" * 100, "\t" * 50, " \n" * 40, "a" * 1000, "ab" * 500,
    "😀" * 50, "=" * 200, "-" * 120 + "\n" + "-" * 120, "." * 64,
    "def f(x):\n    return x ** 2\n", "if (a && b) { c++; }\n\treturn;",
    '{"key": "value", "n": [1, 2, 3]}', "https://example.com/path?q=1&b=2#frag",
    "user@example.org", "C:\\Users\\name\\file.txt", "<html><body>hi</body></html>",
    "Hello世界", "abc日本def", "Tokyo東京Tokyo",
    "<|begin_of_text|>Hello<|eot_id|>", "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|>",
    "text<|endoftext|>more", "<think>\nreasoning\n</think>\n\nanswer", "<tool_call>x</tool_call>",
    "<s>[INST] hi [/INST]</s>", "<s><s></s>", "a<s>b", " <s> ", "<unk>",
    "<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n", "<unused0><unused99>",
    "<|reserved_special_token_5|>", "<|im_start", "<<|eot_id|>>", "<|eot_id|><|eot_id|>",
    "▁hello ▁▁world", "▁", "<0x41>", "[multimodal]", "<mask>",
    b"\xff", b"abc\xffdef", b"\xc3", b"\xc3(", b"\xe2\x82", b"\xe2\x82(", b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xf0\x9f\x98", b"caf\xe9", b"\x80\x80\x80",
    b"ok\xf0\x9f\x98\x80ok\xf0\x9f", b"\xfe\xfe\xff\xff",
]


def pydoc():
    parts = train_corpus.split(train_corpus.documents())
    return [train_corpus.read_doc(d) for d in parts["test"]]


def write(path, texts):
    with open(path, "wb") as f:
        for t in texts:
            b = t if isinstance(t, bytes) else t.encode("utf-8", "surrogatepass")
            f.write(struct.pack("<I", len(b)))
            f.write(b)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    corpora = {
        "normalization": normalization(),
        "emoji": emoji(),
        "wordbreak": wordbreak(),
        "prose": prose(),
        "edge": EDGE,
        "pydoc": pydoc(),
    }
    for name, texts in corpora.items():
        write(os.path.join(out, f"{name}.bin"), texts)
    with open(os.path.join(out, "index.txt"), "w") as f:
        for name, texts in corpora.items():
            f.write(f"{name} {len(texts)}\n")


if __name__ == "__main__":
    main()
