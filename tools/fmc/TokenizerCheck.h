// The tokenizer `fmc compile` embeds: found beside the checkpoint (or given
// by --tokenizer), checked against the model and its configs, its chat
// template compiled and rendered once, and a line for the report.
#pragma once

#include "targets/artifact/TokenizerFiles.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace fm::cli {

struct CheckedTokenizer {
  writer::TokenizerFiles files; // what the artifact embeds
  std::string report;           // the report's lines, indented, each ending "\n"
};

/// `path`: the --tokenizer argument (a tokenizer.json, or a directory with
/// one), or "" to look in `modelDir` (the checkpoint: config.json and
/// perhaps generation_config.json beside it). nullopt when there is no
/// --tokenizer and no tokenizer.json in `modelDir`. Errors name the file
/// and the field: a tokenizer that does not load, ids past the model's
/// `vocabSize`, bos/eos ids of the configs that are out of range or no
/// token, a chat template that does not compile or cannot render a
/// conversation.
llvm::Expected<std::optional<CheckedTokenizer>>
checkTokenizer(const std::string &path, const std::string &modelDir,
               int64_t vocabSize);

} // namespace fm::cli
