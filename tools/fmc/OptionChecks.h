// fmc's option checks against the checkpoint: --context and --max-prefill of
// an import (the one-line range checks are common/OptionChecks.h).
#pragma once

#include "common/OptionChecks.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace fm::cli {

/// The context the checkpoint in `modelDir` was trained for: its
/// config.json's max_position_embeddings (a VLM's in text_config), where it
/// says. fmc's RoPE is unscaled, so positions past it were never trained.
std::optional<int64_t> trainedContext(llvm::StringRef modelDir);

/// --context of an import of `modelDir`: past the trained context it is
/// refused when `given` on the command line; the default comes down to the
/// trained context (with a note on stderr). The context to import with.
llvm::Expected<int64_t> importContext(llvm::StringRef modelDir,
                                      int64_t context, bool given);

} // namespace fm::cli
