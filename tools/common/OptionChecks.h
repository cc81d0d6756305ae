// The tools' option checks (fmc, fm-run): CLI11 checks whose refusal is one
// line naming the option, the value given and the valid range ("--top-p 2:
// must be in (0, 1]"), and the --threads clamp. No LLVM: fm-run builds with
// the runtime alone.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace fm::cli {

/// A refused option value, thrown by the checks below. It is no
/// CLI::ValidationError, so CLI11 neither catches it nor rewrites it as
/// "--name: ..."; CLI::App::parse throws it as it is (with CLI11's
/// ValidationError exit code, for tools that use those).
class OptionValueError : public CLI::ParseError {
public:
  explicit OptionValueError(std::string message)
      : CLI::ParseError("OptionValueError", std::move(message),
                        CLI::ExitCodes::ValidationError) {}
};

/// An integer in [min, max]. `range` says what is valid for the refusal,
/// e.g. "must be >= 0 (0: all)"; a value past `max` (the variable's type)
/// is refused as too large.
CLI::Option *checkInteger(CLI::Option *option, int64_t min, int64_t max,
                          std::string range);

/// An integer >= `min` (and <= 2^63 - 1): "must be >= min".
CLI::Option *checkCount(CLI::Option *option, int64_t min);

/// A finite number (as a float) for which `ok` holds; `range` says which,
/// e.g. "must be in (0, 1]".
CLI::Option *checkReal(CLI::Option *option, std::function<bool(double)> ok,
                       std::string range);

/// An unsigned 64-bit integer (--seed): [0, 2^64 - 1]; "-1" is refused
/// rather than wrapped around.
CLI::Option *checkUint64(CLI::Option *option);

/// A memory size (--max-memory): bytes, or a number with K, M, G or T
/// (1024-based, B and iB allowed: 512M, 1.5GiB). The option then holds the
/// byte count.
CLI::Option *checkMemorySize(CLI::Option *option);

/// Parses the command line into `app`. --help: the help, and its exit code.
/// A bad command line: one line on stderr, "TOOL: error: MESSAGE", and
/// `errorCode`, or CLI11's own code (105 a bad value, 106 a missing one)
/// where `errorCode` < 0. Nothing once the command line is parsed.
std::optional<int> parseCommandLine(CLI::App &app, int argc, char **argv,
                                    const char *tool, int errorCode = -1);

/// --threads past this machine's hardware threads comes down to them, with
/// a one-line warning on stderr naming `tool` when `warn` (oversubscribing
/// the cores only slows the kernels down, and command lines travel between
/// machines); `threads` as it was where the count is unknown.
int clampThreads(const char *tool, int threads, bool warn);

} // namespace fm::cli
