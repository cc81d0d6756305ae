// The peer for tokenizer_bench.cpp: @lenml/tokenizers under node, the same
// load and encode measurements on the same text.
//
//   node lenml_bench.js LENML_MAIN_JS TOKENIZER_DIR TEXT_FILE...
"use strict";
const fs = require("fs");
const path = require("path");
const [mainJs, dir, ...files] = process.argv.slice(2);
const { TokenizerLoader } = require(path.resolve(mainJs));
const text = files.map((f) => fs.readFileSync(f, "utf8")).join("");
const bytes = Buffer.byteLength(text, "utf8");
const now = () => Number(process.hrtime.bigint()) / 1e9;
const median = (v) => v.slice().sort((a, b) => a - b)[Math.floor(v.length / 2)];

function load() {
  // Reading and parsing the files is part of loading, as for fmc.
  const json = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const cfgPath = path.join(dir, "tokenizer_config.json");
  const cfg = fs.existsSync(cfgPath) ? JSON.parse(fs.readFileSync(cfgPath, "utf8")) : {};
  return TokenizerLoader.fromPreTrained({ tokenizerJSON: json, tokenizerConfig: cfg });
}
const loads = [];
let tok;
for (let r = 0; r < 5; r++) {
  const t0 = now();
  tok = load();
  loads.push(now() - t0);
}
let t0 = now();
const tokens = tok.encode(text, { add_special_tokens: false }).length;
const cold = now() - t0;
const warm = [];
let total = 0;
while (total < 2.0 || warm.length < 3) {
  t0 = now();
  tok.encode(text, { add_special_tokens: false });
  const dt = now() - t0;
  warm.push(dt);
  total += dt;
}
const mb = bytes / 1e6;
console.log(JSON.stringify({ impl: "lenml", bytes, tokens, load_ms: +(median(loads) * 1e3).toFixed(1),
  encode_cold_mb_s: +(mb / cold).toFixed(2), encode_mb_s: +(mb / median(warm)).toFixed(2) }));
