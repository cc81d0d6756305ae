// What a loaded fm::Tokenizer holds: the model and pipeline stages built from
// tokenizer.json, and what tokenizer_config.json adds.
#pragma once

#include "fm/tokenizer.h"
#include "tokenizer/AddedVocabulary.h"
#include "tokenizer/Bpe.h"
#include "tokenizer/Decoder.h"
#include "tokenizer/Normalizer.h"
#include "tokenizer/PostProcessor.h"
#include "tokenizer/PreTokenizer.h"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace fm::tok {

struct TokenizerImpl {
  std::string name; // the tokenizer.json path, for messages

  BpeModel model;
  std::vector<AddedToken> added;
  std::vector<AddedTokenInfo> addedInfo;
  AddedMatcher rawMatcher;        // added tokens with normalized: false
  AddedMatcher normalizedMatcher; // normalized: true
  std::shared_ptr<const Normalizer> normalizer;
  std::shared_ptr<const PreTokenizer> preTokenizer;
  std::shared_ptr<const PostProcessor> postProcessor;
  std::shared_ptr<const Decoder> decoder;
  std::optional<TextCut> textCut; // a Strip of the whole decoded text

  /// id -> the token string of the file (vocabulary or added token).
  std::vector<std::string> strings;
  std::vector<uint8_t> present;
  std::vector<uint8_t> special;
  /// Added tokens (and vocabulary strings outside a byte-level alphabet)
  /// by string; the rest is found through the model's map.
  std::unordered_map<std::string, TokenId> addedIds;
  bool byteLevel = false;
  /// The id of a token string as the file writes it.
  std::optional<TokenId> idOf(std::string_view token) const;

  // tokenizer_config.json
  std::string bosToken, eosToken, padToken, unkToken, chatTemplate;
  std::optional<TokenId> bosId, eosId, padId, unkId;

  mutable std::unique_ptr<BpeCache> cache = std::make_unique<BpeCache>();

  /// tokenBytes, built on first use.
  const std::vector<std::string> &contributions() const;
  /// The contribution of one token (first: the text's first token).
  std::string contribution(TokenId id, bool first) const;

  Status encode(std::string_view text, bool addSpecial,
                std::vector<TokenId> &out) const;

private:
  mutable std::once_flag contributionsOnce_;
  mutable std::vector<std::string> contributions_;
};

/// A byte-level vocabulary string back to raw bytes; false when a character
/// is outside GPT-2's alphabet.
bool toRawBytes(std::string_view s, std::string &out);

/// Builds a TokenizerImpl from file contents (TokenizerLoad.cpp).
Expected<std::shared_ptr<TokenizerImpl>>
loadTokenizer(std::string tokenizerJson, std::string_view configJson,
              const std::string &tokenizerName, const std::string &configName);

} // namespace fm::tok
