// Test-only: a Hugging Face tokenizer.json vocabulary as the byte strings fm::Vocabulary wants
// (the tokenizer branch will provide fm::Tokenizer::tokenBytes() for the product).
#pragma once

#include "fm/grammar.h"

#include <string>
#include <vector>

namespace fm::test {

/// Byte-level BPE (GPT-2's byte<->unicode table, e.g. Qwen, Llama 3) or SentencePiece-style
/// (U+2581 -> space, <0xXX> byte-fallback tokens, e.g. Llama 2). Special added tokens get no
/// bytes; `eosNames` are looked up among all tokens and become the eos ids.
Expected<Vocabulary> loadTokenizerJson(const std::string &path,
                                       const std::vector<std::string> &eosNames);

} // namespace fm::test
