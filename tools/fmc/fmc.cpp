// fmc: the ahead-of-time compiler's command line (import, compile, inspect).
#include "Commands.h"

#include <CLI/CLI.hpp>

int main(int argc, char **argv) {
  CLI::App app{"fmc: ahead-of-time compiler for foundation-model graphs"};
  app.require_subcommand(1);

  fm::cli::ImportArgs imp;
  CLI::App *importCmd = app.add_subcommand(
      "import", "Import a checkpoint directory (config.json + *.safetensors) "
                "into fm IR");
  importCmd->add_option("model_dir", imp.modelDir, "checkpoint directory")
      ->required();
  importCmd->add_option("-o,--output", imp.output,
                        "write the fm IR here (default: stdout)");
  importCmd->add_flag("--print-summary", imp.printSummary,
                      "print a table of the model instead of the IR "
                      "(with -o, both)");
  importCmd->add_option("--context", imp.contextLength,
                        "positions each KV cache holds")
      ->check(CLI::PositiveNumber)
      ->default_val(2048);

  CLI11_PARSE(app, argc, argv);
  if (importCmd->parsed())
    return fm::cli::runImport(imp);
  return 1;
}
