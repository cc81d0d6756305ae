// The tokenizer files an artifact embeds (fmb.fbs TokenizerFiles): what
// `fmc compile` found beside the checkpoint (or was given by --tokenizer)
// and checked against the model; the writer stores them verbatim.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fm::writer {

struct TokenizerFiles {
  std::string tokenizerJson; // tokenizer.json, byte for byte
  std::string configJson;    // tokenizer_config.json ("" when there is none)
  std::string source;        // where tokenizer.json was read, for messages
  /// Ids that end a generation (EOS of the tokenizer config and the model
  /// configs), each below the model's vocab_size.
  std::vector<int32_t> stopIds;
};

} // namespace fm::writer
