// The text e2e tests' tokenizer oracle: @lenml/tokenizers (a JavaScript port
// of Hugging Face's tokenizers) encodes and decodes what check_text.py asks.
//
//   node text_oracle.js LENML_MAIN_JS TOKENIZER_DIR REQUEST.json OUT.json
//
// REQUEST: {"encode": [{"text": S, "add_special_tokens": B}, ...],
//           "decode": [[id, ...], ...]}
// OUT:     {"encode": [[id, ...], ...], "decode": [S, ...],
//           "eos_id": id or null, "bos_id": id or null}
// Decoding keeps special tokens (skip_special_tokens false) and does not
// clean up spaces, as fm-run prints them.
"use strict";
const fs = require("fs");
const path = require("path");

const [mainJs, tokDir, requestPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node text_oracle.js LENML_MAIN_JS TOKENIZER_DIR REQUEST.json OUT.json");
  process.exit(2);
}
const { TokenizerLoader } = require(path.resolve(mainJs));
const json = JSON.parse(fs.readFileSync(path.join(tokDir, "tokenizer.json"), "utf8"));
const cfgPath = path.join(tokDir, "tokenizer_config.json");
const cfg = fs.existsSync(cfgPath) ? JSON.parse(fs.readFileSync(cfgPath, "utf8")) : {};
const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: json, tokenizerConfig: cfg });

const request = JSON.parse(fs.readFileSync(requestPath, "utf8"));
const idOf = (token) => {
  if (typeof token === "object" && token !== null) token = token.content;
  if (typeof token !== "string") return null;
  const ids = tok.encode(token, { add_special_tokens: false });
  return ids.length === 1 ? ids[0] : null;
};
const out = {
  encode: (request.encode || []).map((e) =>
    Array.from(tok.encode(e.text, { add_special_tokens: !!e.add_special_tokens }))),
  decode: (request.decode || []).map((ids) =>
    tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false })),
  eos_id: idOf(cfg.eos_token),
  bos_id: idOf(cfg.bos_token),
};
fs.writeFileSync(outPath, JSON.stringify(out));
