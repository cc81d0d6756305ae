// tokenizer.json normalizers: NFC/NFD/NFKC/NFKD (utf8proc), Prepend, Replace,
// Strip and Sequence, with Hugging Face's semantics.
#pragma once

#include "tokenizer/Json.h"

#include <memory>
#include <string>

namespace fm::tok {

class Normalizer {
public:
  virtual ~Normalizer() = default;
  /// Rewrites `text` (valid UTF-8) in place; it stays valid UTF-8.
  virtual Status normalize(std::string &text) const = 0;

  /// The normalizer described by `json` (an object with a "type").
  static Expected<std::shared_ptr<const Normalizer>> fromJson(const JValue &json,
                                                              const JPath &at);
};

} // namespace fm::tok
