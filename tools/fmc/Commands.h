// The fmc subcommands; fmc.cpp parses the command line and calls these.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fm::cli {

struct ImportArgs {
  std::string modelDir;
  std::string output;      // "" = stdout (unless only the summary is wanted)
  bool printSummary = false;
  int64_t contextLength = 2048;
  bool contextGiven = false; // --context on the command line
};
int runImport(const ImportArgs &args);

struct CompileArgs {
  std::string input;       // checkpoint directory or fm IR (.mlir)
  std::string output;
  std::string target = "cpu";   // a list: "cpu,vulkan"
  std::string cpu = "native";
  std::string cpuCode = "image";
  std::string metal = "macos"; // the MSL platform of --target metal
  std::string cudaArch = "sm_80"; // the GPU of --target cuda
  std::string quant = "none";   // none | f16 | w2 | w4 | w8 (the LM)
  std::string visionQuant = "none"; // none | f16 | w4 | w8 (image encoder)
  int64_t group = 64;
  std::string grid = "balanced";
  std::string embedBits = "none";
  std::string kvBits = "none";
  bool report = false;           // per-tensor quantization error
  int64_t contextLength = 2048;
  int64_t maxPrefill = 64;
  bool contextGiven = false, maxPrefillGiven = false; // on the command line
  int64_t ranks = 1;       // MPI ranks the tracks are partitioned over
  bool devicesAlias = false; // given as the deprecated --devices
  std::string dumpIr;      // write the planned kernel-level IR here
  std::string tokenizer;   // tokenizer.json (or its directory) to embed; "":
                           // the one beside the checkpoint, if any
  std::string signKey;     // sign with this minisign secret key file
  /// With --target cpu: no Panel16 GEMM copies of the packed weights (the
  /// runtime then repacks them when a prefill first runs).
  bool noCpuGemmCopies = false;
  /// PEFT adapter directories to merge, "DIR[:scale]" (W + scale·s·B·A).
  std::vector<std::string> mergeAdapters;
};
int runCompile(const CompileArgs &args);

struct KeygenArgs {
  std::string output;      // writes output.key and output.pub
  bool force = false;      // replace existing files
};
int runKeygen(const KeygenArgs &args);

struct CompileAdapterArgs {
  std::string adapterDir; // PEFT: adapter_config.json + adapter_model.safetensors
  std::string base;       // the .fmb it is for
  std::string output;     // the .fmba
  std::string quant = "f16"; // f16 | w8
};
int runCompileAdapter(const CompileAdapterArgs &args);

struct InspectArgs {
  std::string artifact;
  bool json = false;
  bool verifyHash = false;
  std::string extractExecutable; // write the generated code here
  std::string target;            // of the executable to extract
  std::vector<std::string> trustedKeys; // verify the signature with these
  std::string statementOut;      // write the signed statement here
  std::string signatureOut;      // write the signature (.minisig) here
};
int runInspect(const InspectArgs &args);
/// `fmc inspect` of a .fmba (runInspect calls it for one).
int runInspectAdapter(const InspectArgs &args);

} // namespace fm::cli
