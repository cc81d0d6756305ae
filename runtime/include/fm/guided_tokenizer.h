// The grammar's view of a tokenizer: fm::Vocabulary from an fm::Tokenizer, and the tool-call
// syntax its chat template uses (header-only, so that neither library links the other).
#pragma once

#include "fm/grammar.h"
#include "fm/guided.h"
#include "fm/tokenizer.h"

#include <cstdint>
#include <string>
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

/// How a model with `tokenizer` marks a tool call in its text: Qwen's `<tool_call>` marker
/// (then a newline, forced) where the chat template writes it and the tokenizer has it as a
/// token, else the call as bare JSON (`{"name"`, the ToolCallSyntax default).
inline Expected<ToolCallSyntax> toolCallSyntax(const Tokenizer &tokenizer) {
  ToolCallSyntax syntax;
  auto marker = tokenizer.tokenToId("<tool_call>");
  if (!marker || tokenizer.chatTemplate().find("<tool_call>") == std::string::npos)
    return syntax;
  syntax.opener = "<tool_call>";
  syntax.openerIsCall = false;
  syntax.openerTokens = {*marker};
  auto nl = tokenizer.encode("\n");
  if (!nl)
    return nl.status();
  syntax.afterOpener = *nl;
  return syntax;
}

} // namespace fm
