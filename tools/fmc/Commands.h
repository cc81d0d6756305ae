// The fmc subcommands; fmc.cpp parses the command line and calls these.
#pragma once

#include <cstdint>
#include <string>

namespace fm::cli {

struct ImportArgs {
  std::string modelDir;
  std::string output;      // "" = stdout (unless only the summary is wanted)
  bool printSummary = false;
  int64_t contextLength = 2048;
};
int runImport(const ImportArgs &args);

} // namespace fm::cli
