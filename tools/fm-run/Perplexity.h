// fm-run --perplexity FILE [--ctx N] [--chunks K] [--kl-base base.fmb]:
// the text of FILE through the artifact's tokenizer, scored as llama.cpp's
// llama-perplexity does (fm/perplexity.h), with a base artifact compared as
// its --kl-divergence does.
#pragma once

#include "TextRun.h"

#include "fm/communicator.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace fmrun {

struct PerplexityArgs {
  std::string file;   // --perplexity
  int64_t ctx = 0;    // --ctx; 0: the default (512, or a smaller context)
  int64_t chunks = 0; // --chunks; 0: every full window
  std::string klBase; // --kl-base
};

/// The tokens per window when --ctx is not given.
constexpr int64_t kDefaultPerplexityCtx = 512;

/// Adds --perplexity, --ctx, --chunks and --kl-base.
void addPerplexityOptions(CLI::App &app, PerplexityArgs &args);

/// After parsing: "" or why the command line cannot be run (an option of
/// another mode with --perplexity, or --ctx, --chunks, --kl-base without it).
std::string perplexityConflicts(const CLI::App &app, const PerplexityArgs &args);

/// Runs --perplexity; the exit status. `shared`: fm-run's options it shares
/// with the text modes (model, device, threads, --stats, ...).
int runPerplexity(const PerplexityArgs &args, const TextArgs &shared,
                  fm::Communicator *comm);

} // namespace fmrun
