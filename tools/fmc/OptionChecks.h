// fmc's option checks: a count whose refusal is one line naming the option,
// the value given and the range ("--max-prefill 0: must be >= 1"), and the
// --context and --max-prefill of an import against the checkpoint.
#pragma once

#include <CLI/CLI.hpp>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace fm::cli {

/// A refused option value, thrown by checkCount. It is no
/// CLI::ValidationError, so CLI11 neither catches it nor rewrites it as
/// "--name: ..."; CLI::App::parse throws it as it is, with CLI11's
/// ValidationError exit code (105) as fmc's other bad values.
class OptionValueError : public CLI::ParseError {
public:
  explicit OptionValueError(std::string message)
      : CLI::ParseError("OptionValueError", std::move(message),
                        CLI::ExitCodes::ValidationError) {}
};

/// An integer >= `min` (and <= 2^63 - 1).
CLI::Option *checkCount(CLI::Option *option, int64_t min);

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
