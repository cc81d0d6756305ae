// tokenizer.json pre-tokenizers: ByteLevel (with its GPT-2 regex), Split (the
// file's regex, every behavior), Metaspace, Digits and Sequence, cutting one
// normalized segment into the pieces the model tokenizes.
#pragma once

#include "tokenizer/Json.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fm::tok {

/// One segment being pre-tokenized: its text (which Metaspace and ByteLevel's
/// prefix space rewrite) and the non-empty pieces [start, end) of it, in order.
struct Pieces {
  std::string text;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  /// The segment starts the input (Metaspace's prepend_scheme "first").
  bool atInputStart = false;
};

class PreTokenizer {
public:
  virtual ~PreTokenizer() = default;
  virtual Status apply(Pieces &pieces) const = 0;
  /// ByteLevel somewhere in it: the model sees bytes, not characters.
  virtual bool isByteLevel() const { return false; }

  static Expected<std::shared_ptr<const PreTokenizer>>
  fromJson(const JValue &json, const JPath &at);
};

} // namespace fm::tok
