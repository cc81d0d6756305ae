// The grammar's view of a tokenizer: fm::Vocabulary from an fm::Tokenizer (header-only, so that
// neither library links the other).
#pragma once

#include "fm/grammar.h"
#include "fm/tokenizer.h"

#include <cstdint>
#include <vector>

namespace fm {

/// The bytes of every token id below `width` (the model's logits width, >= the tokenizer's
/// vocabSize()): special tokens and ids the tokenizer does not have get none, so they are
/// never generated, except the `eos` ids, allowed where the text is complete.
inline Vocabulary grammarVocabulary(const Tokenizer &tokenizer, int64_t width,
                                    std::vector<int32_t> eos) {
  Vocabulary v;
  v.tokens.resize(size_t(width));
  for (size_t id = 0; id < tokenizer.vocabSize() && id < size_t(width); ++id)
    if (tokenizer.hasId(TokenId(id)) && !tokenizer.isSpecial(TokenId(id)))
      v.tokens[id] = tokenizer.tokenBytes(TokenId(id));
  v.eos = std::move(eos);
  return v;
}

} // namespace fm
