// What `fmc inspect` says about an artifact's embedded tokenizer.
#pragma once

#include "fm/artifact.h"

#include "llvm/Support/JSON.h"

#include <string>

namespace fm::cli {

/// The report's lines ("  tokenizer     ..."), each ending "\n".
std::string tokenizerText(const ArtifactFile &artifact);
/// {"source", "bytes", "vocab_size", "bos", "eos", "chat_template",
/// "stop_ids", ...}, or null when there is none.
llvm::json::Value tokenizerJson(const ArtifactFile &artifact);

} // namespace fm::cli
