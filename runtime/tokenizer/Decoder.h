// tokenizer.json decoders: ByteLevel, Metaspace, ByteFallback, Fuse, Strip,
// Replace and Sequence, each a step over the list of token strings as in
// HF's decode_chain.
#pragma once

#include "tokenizer/Json.h"

#include <memory>
#include <string>
#include <vector>

namespace fm::tok {

struct DecodeState {
  /// Set once the list is one string for the whole text (after Fuse or
  /// ByteLevel): a Strip then cuts the text's start and end.
  bool fused = false;
  /// Decoding one token's contribution to a longer text (tokenBytes and
  /// streaming): raw bytes stay raw (no U+FFFD), and a Strip of the fused
  /// text is left to the caller (see TextCut).
  bool contribution = false;
  /// In contribution mode: the token is the first of the text (Metaspace
  /// drops its replacement characters instead of turning them into spaces).
  bool firstToken = false;
};

/// A Strip applied to the whole fused text: up to `start` leading and `stop`
/// trailing `content` characters are cut.
struct TextCut {
  std::string content;
  size_t start = 0, stop = 0;
};

class Decoder {
public:
  virtual ~Decoder() = default;
  virtual void decodeChain(std::vector<std::string> &tokens,
                           DecodeState &state) const = 0;
  /// Walks the chain in order: `fused` tracks whether the list is one
  /// string yet; each Strip met after that adds its TextCut.
  virtual void collectTextCuts(bool &fused, std::vector<TextCut> &cuts) const {
    (void)fused;
    (void)cuts;
  }

  static Expected<std::shared_ptr<const Decoder>> fromJson(const JValue &json,
                                                           const JPath &at);
};

} // namespace fm::tok
