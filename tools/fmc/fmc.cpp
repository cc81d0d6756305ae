// fmc: the ahead-of-time compiler's command line (import, compile,
// compile-adapter, inspect).
#include "Commands.h"
#include "OptionChecks.h"

#include <CLI/CLI.hpp>

#include "llvm/Support/WithColor.h"

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
  CLI::Option *importContext = fm::cli::checkCount(
      importCmd
          ->add_option("--context", imp.contextLength,
                       "positions each KV cache holds, >= 1 and at most the "
                       "checkpoint's max_position_embeddings (default: 2048, "
                       "or that when it is less)")
          ->default_val(2048),
      1);

  fm::cli::CompileArgs comp;
  CLI::App *compileCmd = app.add_subcommand(
      "compile", "Compile a checkpoint directory or fm IR into a .fmb artifact");
  compileCmd->add_option("input", comp.input,
                         "checkpoint directory or .mlir file")
      ->required();
  compileCmd->add_option("-o,--output", comp.output, "the artifact to write")
      ->required();
  compileCmd->add_option("--target", comp.target,
                         "code generation targets, a comma-separated list "
                         "(one executable each in the artifact): cpu, "
                         "vulkan, metal, cuda")
      ->default_val("cpu");
  compileCmd->add_option("--cpu", comp.cpu, "CPU to generate code for")
      ->check(CLI::IsMember({"native", "x86-64-v3", "aarch64", "aarch64-apple", "aarch64-ios"}))
      ->default_val("native");
  compileCmd->add_option("--cpu-code", comp.cpuCode,
                         "how the CPU kernels ship: image (in the artifact, mapped by the "
                         "runtime's loader) or static (OUTPUT.kernels.o and OUTPUT.kernels.c "
                         "beside it, linked into the application: iOS)")
      ->check(CLI::IsMember({"image", "static"}))
      ->default_val("image");
  compileCmd->add_option("--metal", comp.metal,
                         "Metal platform of --target metal: macos (11+) or ios (14+)")
      ->check(CLI::IsMember({"macos", "ios"}))
      ->default_val("macos");
  compileCmd->add_option("--cuda-arch", comp.cudaArch,
                         "GPU of --target cuda: sm_80 (default; the driver "
                         "JITs its PTX for newer GPUs), sm_86, sm_89, sm_90")
      ->default_val("sm_80");
  compileCmd->add_option("--quant", comp.quant,
                         "projection weights: none (f32), f16, w2, w4 or w8 bits")
      ->check(CLI::IsMember({"none", "f16", "w2", "w4", "w8"}))
      ->default_val("none");
  compileCmd->add_option("--vision-quant", comp.visionQuant,
                         "image encoder linear weights (qkv, proj, fc1, fc2, "
                         "adapter linear; --quant leaves them f32): none "
                         "(f32), f16, w4 or w8 bits")
      ->check(CLI::IsMember({"none", "f16", "w4", "w8"}))
      ->default_val("none");
  compileCmd->add_option("--group", comp.group, "weights per quantization scale")
      ->check(CLI::IsMember({32, 64, 128}))
      ->default_val(64);
  compileCmd->add_option("--grid", comp.grid, "quantization grid")
      ->check(CLI::IsMember({"balanced", "affine"}))
      ->default_val("balanced");
  compileCmd->add_option("--embed-bits", comp.embedBits,
                         "token embedding (and tied LM head) bits")
      ->check(CLI::IsMember({"4", "8", "none"}))
      ->default_val("none");
  compileCmd->add_option("--kv-bits", comp.kvBits,
                         "KV cache bits (8 needs per-layer K/V scales, as afm7 has)")
      ->check(CLI::IsMember({"8", "none"}))
      ->default_val("none");
  compileCmd->add_flag("--report", comp.report,
                       "print the quantization error of every tensor");
  CLI::Option *compileContext = fm::cli::checkCount(
      compileCmd
          ->add_option("--context", comp.contextLength,
                       "positions each KV cache holds, when importing a "
                       "checkpoint directory: >= 1 and at most its "
                       "max_position_embeddings (default: 2048, or that when "
                       "it is less)")
          ->default_val(2048),
      1);
  CLI::Option *maxPrefill = fm::cli::checkCount(
      compileCmd
          ->add_option("--max-prefill", comp.maxPrefill,
                       "the most prompt tokens one prefill call processes, "
                       ">= 1 and at most --context")
          ->default_val(64),
      1);
  fm::cli::checkCount(
      compileCmd
          ->add_option("--ranks", comp.ranks,
                       "partition the tracks over this many MPI ranks, >= 1 "
                       "(a track block's tracks must split evenly over them); "
                       "one all-reduce per track block")
          ->default_val(1),
      1);
  fm::cli::checkCount(compileCmd->add_option_function<int64_t>(
                          "--devices",
                          [&comp](int64_t n) {
                            comp.ranks = n;
                            comp.devicesAlias = true;
                          },
                          "deprecated: the old name of --ranks"),
                      1);
  compileCmd->add_option("--dump-ir", comp.dumpIr,
                         "also write the planned kernel-level IR here");
  compileCmd->add_option("--tokenizer", comp.tokenizer,
                         "embed this tokenizer.json (or the one in this "
                         "directory; its tokenizer_config.json beside it) "
                         "instead of the checkpoint's own");
  compileCmd->add_flag("--no-cpu-gemm-copies", comp.noCpuGemmCopies,
                       "with --target cpu, do not store the packed weights a "
                       "second time in prefill's GEMM layout (a smaller "
                       "file; fm-run then repacks them on the first prefill)");
  compileCmd->add_option("--sign", comp.signKey,
                         "sign the artifact's digests with this minisign "
                         "secret key (fmc keygen, minisign -G -W); the "
                         "signature goes in a trailer after the data section");

  fm::cli::KeygenArgs keygen;
  CLI::App *keygenCmd = app.add_subcommand(
      "keygen", "Make an Ed25519 key pair for signing artifacts (minisign's "
                "formats: NAME.key, unencrypted, and NAME.pub)");
  keygenCmd->add_option("-o,--output", keygen.output,
                        "NAME: writes NAME.key and NAME.pub")
      ->required();
  keygenCmd->add_flag("-f,--force", keygen.force, "replace existing files");
  compileCmd->add_option("--merge-adapter", comp.mergeAdapters,
                         "merge a PEFT LoRA adapter directory into the "
                         "weights before quantization, W + scale * "
                         "(alpha/r) * B A (DIR[:scale], repeatable)")
      ->allow_extra_args(false); // one directory per --merge-adapter

  fm::cli::CompileAdapterArgs cadapt;
  CLI::App *compileAdapterCmd = app.add_subcommand(
      "compile-adapter",
      "Compile a PEFT LoRA adapter directory for one base model into a .fmba");
  compileAdapterCmd
      ->add_option("adapter_dir", cadapt.adapterDir,
                   "PEFT adapter directory (adapter_config.json, "
                   "adapter_model.safetensors)")
      ->required();
  compileAdapterCmd
      ->add_option("--base", cadapt.base,
                   "the base model (.fmb) the adapter is for: it attaches to "
                   "every build of the same checkpoint")
      ->required();
  compileAdapterCmd->add_option("-o,--output", cadapt.output, "the .fmba to write")
      ->required();
  compileAdapterCmd
      ->add_option("--quant", cadapt.quant,
                   "adapter matrices: f16, or w8 (8 bits in groups of 32)")
      ->check(CLI::IsMember({"f16", "w8"}))
      ->default_val("f16");

  fm::cli::InspectArgs insp;
  CLI::App *inspectCmd = app.add_subcommand(
      "inspect", "Print what a .fmb artifact or a .fmba adapter holds");
  inspectCmd->add_option("artifact", insp.artifact, "the .fmb or .fmba file")
      ->required();
  inspectCmd->add_flag("--json", insp.json, "print JSON");
  inspectCmd->add_flag("--verify-hash", insp.verifyHash,
                       "also check the weights against their digest "
                       "(the program digest is checked at every load)");
  inspectCmd->add_option("--extract-executable", insp.extractExecutable,
                         "write the generated code of --target (a shared "
                         "object, object file, SPIR-V, ...) to this file");
  inspectCmd->add_option("--target", insp.target,
                         "the executable to extract (default: the only one)");
  inspectCmd->add_option("--trusted-key", insp.trustedKeys,
                         "verify the signature with this public key (fails "
                         "when the artifact is not signed by one of them)");
  inspectCmd->add_option("--statement-out", insp.statementOut,
                         "write the bytes the signature signs (the message "
                         "for minisign -V -m)");
  inspectCmd->add_option("--signature-out", insp.signatureOut,
                         "write the signature as a .minisig file (for "
                         "minisign -V -x)");

  if (auto code = fm::cli::parseCommandLine(app, argc, argv, "fmc"))
    return *code;
  imp.contextGiven = importContext->count() > 0;
  comp.contextGiven = compileContext->count() > 0;
  comp.maxPrefillGiven = maxPrefill->count() > 0;
  if (importCmd->parsed())
    return fm::cli::runImport(imp);
  if (compileCmd->parsed())
    return fm::cli::runCompile(comp);
  if (compileAdapterCmd->parsed())
    return fm::cli::runCompileAdapter(cadapt);
  if (inspectCmd->parsed())
    return fm::cli::runInspect(insp);
  if (keygenCmd->parsed())
    return fm::cli::runKeygen(keygen);
  return 1;
}
