// The test oracle: @lenml/tokenizers (a JavaScript port of Hugging Face's
// tokenizers, run under node) encodes every text of a corpus file.
//
//   node oracle.js LENML_MAIN_JS TOKENIZER_DIR CORPUS_DIR OUT_PREFIX CORPUS...
//
// reads CORPUS_DIR/<CORPUS>.bin and writes OUT_PREFIX.<CORPUS>.bin, which holds, per text: u32 n, n x u32 ids (JavaScript's regexes as they
// are), then u32 m, m x u32 ids with the pre-tokenizer regexes rewritten to
// give \s and \S Oniguruma's (Rust's) meaning, or m = 0xFFFFFFFF when the
// text holds no character where the two differ (U+0085 is White_Space for
// Oniguruma, not for JavaScript; U+FEFF the other way round). That second
// run is how the test tells a known JavaScript deviation from a bug.
"use strict";
const fs = require("fs");
const path = require("path");

const [mainJs, tokDir, corpusDir, outPrefix, ...corpora] = process.argv.slice(2);
if (!corpora.length) {
  console.error("usage: node oracle.js LENML_MAIN_JS TOKENIZER_DIR CORPUS_DIR OUT_PREFIX CORPUS...");
  process.exit(2);
}
const { TokenizerLoader } = require(path.resolve(mainJs));

function load() {
  const json = JSON.parse(fs.readFileSync(path.join(tokDir, "tokenizer.json"), "utf8"));
  const cfgPath = path.join(tokDir, "tokenizer_config.json");
  const cfg = fs.existsSync(cfgPath) ? JSON.parse(fs.readFileSync(cfgPath, "utf8")) : {};
  return TokenizerLoader.fromPreTrained({ tokenizerJSON: json, tokenizerConfig: cfg });
}

// \s as Oniguruma (and Unicode White_Space) has it.
const WS = "\\t\\n\\x0B\\f\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000";
function rustWhitespace(src) {
  let out = "", inClass = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === "\\" && i + 1 < src.length) {
      const e = src[i + 1];
      if (e === "s") { out += inClass ? WS : `[${WS}]`; i++; continue; }
      if (e === "S" && !inClass) { out += `[^${WS}]`; i++; continue; }
      out += c + e; i++; continue;
    }
    if (c === "[" && !inClass) inClass = true;
    else if (c === "]" && inClass) inClass = false;
    out += c;
  }
  return out;
}

// Rewrites every RegExp held in the pre-tokenizer tree (whose nodes are
// "Callable"s: functions carrying fields).
function patch(node, seen = new Set()) {
  if (!node || !["object", "function"].includes(typeof node) || seen.has(node)) return;
  seen.add(node);
  for (const key of Object.keys(node)) {
    const v = node[key];
    if (v instanceof RegExp) node[key] = new RegExp(rustWhitespace(v.source), v.flags);
    else patch(v, seen);
  }
}

const stock = load();
const rust = load();
patch(rust.pre_tokenizer);

// Invalid bytes become U+FFFD (WHATWG); a leading U+FEFF is text, not a BOM.
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
const differs = /[\u0085\uFEFF]/;
function put(chunks, ids) {
  const b = Buffer.alloc(4 + 4 * ids.length);
  b.writeUInt32LE(ids.length, 0);
  for (let i = 0; i < ids.length; i++) b.writeUInt32LE(ids[i], 4 + 4 * i);
  chunks.push(b);
}

for (const corpus of corpora) {
  const data = fs.readFileSync(path.join(corpusDir, corpus + ".bin"));
  const chunks = [];
  let off = 0;
  while (off < data.length) {
    const n = data.readUInt32LE(off);
    const text = decoder.decode(data.subarray(off + 4, off + 4 + n));
    off += 4 + n;
    put(chunks, stock.encode(text, { add_special_tokens: false }));
    if (differs.test(text)) {
      put(chunks, rust.encode(text, { add_special_tokens: false }));
    } else {
      const b = Buffer.alloc(4);
      b.writeUInt32LE(0xFFFFFFFF, 0);
      chunks.push(b);
    }
  }
  fs.writeFileSync(`${outPrefix}.${corpus}.bin`, Buffer.concat(chunks));
}
