// tokenizer.json post-processors: TemplateProcessing (BOS/EOS around the
// text), Bert/RobertaProcessing, ByteLevel (nothing to add) and Sequence.
#pragma once

#include "tokenizer/Json.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace fm::tok {

class PostProcessor {
public:
  virtual ~PostProcessor() = default;
  /// The ids of one sequence with the special tokens the template adds.
  virtual void process(std::vector<int32_t> &ids) const = 0;

  static Expected<std::shared_ptr<const PostProcessor>>
  fromJson(const JValue &json, const JPath &at);

  /// A TemplateProcessing that puts `prefix` before and `suffix` after.
  static std::shared_ptr<const PostProcessor>
  wrap(std::vector<int32_t> prefix, std::vector<int32_t> suffix);
};

} // namespace fm::tok
