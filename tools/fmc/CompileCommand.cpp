// `fmc compile`: checkpoint or fm IR → planned kernel IR → one executable per
// target (through the target interface) → .fmb artifact, with a one-screen
// report and progress on stderr.
#include "Commands.h"
#include "OptionChecks.h"
#include "TokenizerCheck.h"
#include "Signing.h"

#include "dialects/fm/IR/FmOps.h"
#include "dialects/fmk/IR/FmkDialect.h"
#include "import/Importer.h"
#include "import/weights/LoraMerge.h"
#include "import/weights/PeftAdapter.h"
#include "passes/Passes.h"
#include "targets/BuiltinTargets.h"
#include "targets/Target.h"
#include "targets/artifact/ArtifactWriter.h"
#include "targets/artifact/AtomicFile.h"

#include "fm/format.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <array>
#include <cmath>
#include <map>

namespace fm::cli {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::string human(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? llvm::formatv("{0:F0} B", bytes).str()
                : llvm::formatv("{0:F1} {1}", bytes, units[u]).str();
}

std::string count(double n) {
  if (n >= 1e9)
    return llvm::formatv("{0:F2}B", n / 1e9);
  if (n >= 1e6)
    return llvm::formatv("{0:F2}M", n / 1e6);
  if (n >= 1e3)
    return llvm::formatv("{0:F1}K", n / 1e3);
  return llvm::formatv("{0}", (int64_t)n);
}

int fail(const llvm::Twine &msg) {
  llvm::WithColor::error(llvm::errs(), "fmc") << msg << "\n";
  return 1;
}

void progress(llvm::StringRef line) { llvm::errs() << "fmc: " << line << "\n"; }

/// The projections LoRA adapters may update: every fmk.matmul weight that
/// is no embedding table (a tied LM head), in first-use order.
import::AdapterBase adapterBase(mlir::ModuleOp module, llvm::StringRef family,
                                llvm::StringRef name) {
  import::AdapterBase base;
  base.family = family.str();
  base.name = name.str();
  llvm::StringSet<> tables, seen;
  module.walk([&](mlir::fmk::EmbedOp e) {
    if (auto p = e.getTable().getDefiningOp<mlir::fm::ParamOp>())
      tables.insert(p.getKey());
  });
  module.walk([&](mlir::fmk::MatmulOp mm) {
    for (mlir::Value w : mm.getWeights()) {
      auto p = w.getDefiningOp<mlir::fm::ParamOp>();
      if (!p || tables.contains(p.getKey()) || !seen.insert(p.getKey()).second)
        continue;
      auto t = mlir::cast<mlir::RankedTensorType>(p.getType());
      base.projections.push_back(
          {p.getKey().str(), t.getShape()[0], t.getShape()[1]});
    }
  });
  return base;
}

} // namespace

int runCompile(const CompileArgs &args) {
  target::registerBuiltinTargets();
  auto targets = target::parseTargetList(args.target);
  if (!targets)
    return fail(llvm::toString(targets.takeError()));
  if (args.devicesAlias)
    llvm::WithColor::warning(llvm::errs(), "fmc")
        << "--devices is deprecated (it meant MPI ranks): use --ranks "
        << args.ranks << "\n";
  // What the checkpoint bounds, before the long part.
  const bool fromCheckpoint = llvm::sys::fs::is_directory(args.input);
  int64_t context = args.contextLength;
  if (fromCheckpoint) {
    auto c = importContext(args.input, args.contextLength, args.contextGiven);
    if (!c)
      return fail(llvm::toString(c.takeError()));
    context = *c;
    // One prefill call writes its rows' K/V at as many positions.
    if (args.maxPrefillGiven && args.maxPrefill > context)
      return fail(llvm::formatv("--max-prefill {0}: must be <= {1}, the "
                                "--context (a prefill call's tokens all take "
                                "a KV cache position)",
                                args.maxPrefill, context));
  } else if (args.contextGiven) {
    return fail(llvm::formatv("--context {0}: applies when importing a "
                              "checkpoint directory; {1} is fm IR, whose KV "
                              "caches already have their size",
                              args.contextLength, args.input));
  }
  auto t0 = Clock::now();
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::fm::FmDialect, mlir::fmk::FmkDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect>();

  // 1. Import, or read fm IR.
  mlir::OwningOpRef<mlir::ModuleOp> module;
  import::WeightSet weights;
  bool haveWeights = false;
  if (fromCheckpoint) {
    progress("importing " + args.input);
    import::ImportOptions opts;
    opts.contextLength = context;
    std::vector<std::string> warnings;
    auto m = import::importModel(ctx, args.input, opts, warnings, nullptr,
                                 &weights);
    for (const std::string &w : warnings)
      llvm::WithColor::warning(llvm::errs(), "fmc") << w << "\n";
    if (!m)
      return fail(llvm::toString(m.takeError()));
    module = std::move(*m);
    haveWeights = true;
  } else {
    llvm::SourceMgr sm;
    mlir::SourceMgrDiagnosticHandler handler(sm, &ctx);
    module = mlir::parseSourceFile<mlir::ModuleOp>(args.input, sm, &ctx);
    if (!module)
      return fail("cannot read fm IR from " + args.input);
  }
  double importMs = msSince(t0);

  // The tokenizer to embed, checked against the model before the long part.
  std::optional<CheckedTokenizer> tokenizer;
  {
    mlir::fm::ModelOp m;
    for (auto op : module->getOps<mlir::fm::ModelOp>())
      m = op;
    if (m) {
      std::string modelDir = llvm::sys::fs::is_directory(args.input)
                                 ? args.input
                                 : m.getWeights().value_or("").str();
      auto checked = checkTokenizer(args.tokenizer, modelDir, m.getVocabSize());
      if (!checked)
        return fail(llvm::toString(checked.takeError()));
      tokenizer = std::move(*checked);
    }
  }

  // 2. The fm pass pipeline down to the planned kernel level.
  auto t1 = Clock::now();
  progress("running the fm pipeline (quantize, share-kv, lower, partition, "
           "fuse, plan)");
  mlir::PassManager pm(&ctx);
  mlir::fm::CompileOptions copts;
  copts.maxPrefillRows = args.maxPrefill;
  copts.ranks = args.ranks;
  const bool f16 = args.quant == "f16";
  copts.floatStorage = f16 ? "f16" : "f32";
  copts.quantBits =
      args.quant == "none" || f16 ? 0 : std::stoi(args.quant.substr(1));
  copts.quantGroup = args.group;
  copts.quantGrid = args.grid;
  copts.embedBits = args.embedBits;
  copts.kvBits = args.kvBits;
  const bool visionF16 = args.visionQuant == "f16";
  copts.visionFloatStorage = visionF16 ? "f16" : "f32";
  copts.visionBits = args.visionQuant == "none" || visionF16
                         ? 0
                         : std::stoi(args.visionQuant.substr(1));
  mlir::fm::buildFmCompilePipeline(pm, copts);
  if (mlir::failed(pm.run(*module)))
    return fail("the fm pipeline failed (see the diagnostics above)");
  double passMs = msSince(t1);
  if (!args.dumpIr.empty()) {
    std::string err;
    auto out = mlir::openOutputFile(args.dumpIr, &err);
    if (!out)
      return fail(err);
    module->print(out->os());
    out->keep();
  }

  // 3. One executable per target for the fused kernels.
  auto t2 = Clock::now();
  target::TargetOptions topts{
      {"cpu", args.cpu}, {"cpu-code", args.cpuCode}, {"metal", args.metal},
      {"cuda-arch", args.cudaArch}};
  std::vector<target::SerializedExecutable> executables;
  const bool anyKernels = !target::kernelNames(*module).empty();
  for (const target::Target *t : *targets) {
    if (llvm::Error e = target::checkMicroKernels(*module, *t))
      return fail(llvm::toString(std::move(e)));
    if (!anyKernels)
      continue;
    mlir::OwningOpRef<mlir::ModuleOp> kernels = target::uniqueKernels(*module);
    auto exe = t->serializeExecutable(*kernels, topts, progress);
    if (!exe)
      return fail(llvm::toString(exe.takeError()));
    for (const std::string &w : exe->warnings)
      llvm::WithColor::warning(llvm::errs(), "fmc") << w << "\n";
    executables.push_back(std::move(*exe));
  }
  double codegenMs = msSince(t2);

  // 4. The artifact, with the weights the fm.model names.
  auto t3 = Clock::now();
  mlir::fm::ModelOp model;
  for (auto m : module->getOps<mlir::fm::ModelOp>())
    model = m;
  if (!model)
    return fail(args.input + " has no fm.model");
  if (!haveWeights) {
    if (!model.getWeights())
      return fail("fm.model has no 'weights' directory to read the parameters "
                  "from");
    auto opened = import::WeightSet::openDirectory(*model.getWeights());
    if (!opened)
      return fail(llvm::toString(opened.takeError()));
    weights = std::move(*opened);
  }
  // LoRA adapters to merge: read against the module's projections, then
  // applied as the weights stream (W + scale·s·B·A before quantization).
  std::vector<import::PeftAdapter> merged;
  std::vector<std::pair<const import::PeftAdapter *, double>> mergeUses;
  merged.reserve(args.mergeAdapters.size());
  for (const std::string &arg : args.mergeAdapters) {
    auto parsed = import::parseAdapterArg(arg, "--merge-adapter");
    if (!parsed)
      return fail(llvm::toString(parsed.takeError()));
    auto adapter = import::readPeftAdapter(
        parsed->path, adapterBase(*module, model.getFamily(), args.input));
    if (!adapter)
      return fail(llvm::toString(adapter.takeError()));
    merged.push_back(std::move(*adapter));
    mergeUses.emplace_back(&merged.back(), parsed->scale);
  }
  import::MergedWeightSource mergedWeights(weights, mergeUses);
  const import::WeightSource &source =
      merged.empty() ? static_cast<const import::WeightSource &>(weights)
                     : mergedWeights;

  writer::TrailerMaker trailer;
  if (!args.signKey.empty()) {
    auto signer = signatureTrailer(args.signKey, model.getFamily().str(),
                                   model.getSymName().str());
    if (!signer)
      return fail("--sign: " + llvm::toString(signer.takeError()));
    trailer = std::move(*signer);
  }
  progress("writing " + args.output);
  writer::WeightPlanOptions planOptions;
  planOptions.cpuGemmCopies =
      !args.noCpuGemmCopies &&
      llvm::any_of(*targets, [](const target::Target *t) {
        return t->name() == "cpu";
      });
  auto summary = writer::writeArtifact(*module, executables, source,
                                       args.output, progress,
                                       tokenizer ? &tokenizer->files : nullptr,
                                       trailer, planOptions);
  if (!summary)
    return fail(llvm::toString(summary.takeError()));
  // What a target writes beside the artifact (statically linked kernels).
  for (const target::SerializedExecutable &e : executables)
    for (const target::SerializedExecutable::SideFile &f : e.sideFiles) {
      const std::string path = args.output + f.suffix;
      auto file = writer::AtomicFile::create(path);
      if (!file)
        return fail(path + ": " + llvm::toString(file.takeError()));
      if (llvm::Error err = file->write(f.data.data(), f.data.size()))
        return fail(path + ": " + llvm::toString(std::move(err)));
      if (llvm::Error err = file->commit())
        return fail(path + ": " + llvm::toString(std::move(err)));
      progress("wrote " + path);
    }
  double writeMs = msSince(t3);

  // 5. The report.
  auto &os = llvm::outs();
  os << llvm::formatv("fmc compile: {0} model '{1}' -> {2}\n", model.getFamily(),
                      model.getSymName(), args.output);
  for (const target::SerializedExecutable &e : executables)
    os << llvm::formatv("  target        {0} ({1})\n", e.target, e.summary);
  if (executables.empty())
    for (const target::Target *t : *targets)
      os << llvm::formatv("  target        {0} (no generated kernels)\n",
                          t->name());
  os << llvm::formatv("  layers        {0}\n", summary->numLayers);
  os << llvm::formatv("  parameters    {0} in {1} tensors\n",
                      count(summary->parameters), summary->numWeights);
  os << llvm::formatv("  weights       {0} ({1}{2})\n", human(summary->weightBytes),
                      args.quant == "none" ? "f32" : args.quant,
                      args.visionQuant == "none"
                          ? std::string()
                          : ", image encoder " + args.visionQuant);
  if (summary->quantizedElements) {
    // Per bit width: bits/weight with the scales, and the error.
    std::map<unsigned, std::array<double, 4>> byBits; // elems, bytes, err, sum
    for (const writer::QuantErrorEntry &e : summary->quantErrors) {
      auto &a = byBits[e.bits];
      a[0] += e.elements;
      a[1] += e.bytes;
      a[2] += e.sqError;
      a[3] += e.sqSum;
    }
    for (auto &[bits, a] : byBits)
      os << llvm::formatv("  quantized     {0} weights to {1} bits: {2:F3} bits/weight "
                          "(scales included), relative RMS error {3:F4}\n",
                          count(a[0]), bits, 8.0 * a[1] / a[0],
                          a[3] > 0 ? std::sqrt(a[2] / a[3]) : 0.0);
  }
  if (summary->gemmCopies)
    os << llvm::formatv("  cpu gemm      {0} copies of {1} packed weights in the "
                        "Panel16 layout (prefill's GEMM; --no-cpu-gemm-copies "
                        "omits them)\n",
                        human(summary->gemmCopyBytes), summary->gemmCopies);
  os << llvm::formatv("  artifact      {0}\n", human(summary->artifactBytes));
  os << llvm::formatv("  KV per token  {0} ({1})\n", human(summary->kvBytesPerToken),
                      args.kvBits == "8" ? "int8 where the layers have scales" : "f32");
  os << llvm::formatv("  arena         {0} (max {1} tokens per prefill call)\n",
                      human(summary->arenaBytes), args.maxPrefill);
  if (summary->numTracks) {
    unsigned blocks = summary->numTrackBlocks;
    unsigned perToken = summary->collectivesPerPhase.count("decode")
                            ? summary->collectivesPerPhase.at("decode")
                            : 0;
    os << llvm::formatv("  tracks        {0} tracks x {1} blocks of depth {2}, "
                        "over {3} rank(s)\n",
                        summary->numTracks, blocks,
                        blocks ? summary->numLayers / blocks : 0,
                        summary->ranks);
    os << llvm::formatv("  collectives   {0} per token (one all-reduce per track "
                        "block; tensor parallelism would need 2L = {1})\n",
                        perToken, 2 * summary->numLayers);
  }
  std::string phases;
  for (auto &[phase, n] : summary->commandsPerPhase)
    phases += llvm::formatv("{0}{1} {2}", phases.empty() ? "" : ", ", phase, n);
  os << llvm::formatv("  kernels       {0} generated; commands: {1}\n",
                      summary->numKernels, phases);
  os << (tokenizer ? tokenizer->report
                   : "  tokenizer     none (no tokenizer.json beside the "
                     "checkpoint: fm-run takes --tokens only)\n");
  if (args.report && !summary->quantErrors.empty()) {
    os << "  quantization error per tensor (relative RMS):\n";
    for (const writer::QuantErrorEntry &e : summary->quantErrors)
      os << llvm::formatv("    {0,-56} w{1}  {2:F5}\n", e.name, e.bits, e.relativeRms);
  }
  for (size_t i = 0; i < merged.size(); ++i)
    os << llvm::formatv("  merged        adapter '{0}': {1} projections, rank "
                        "{2}, scale {3} x alpha/r\n",
                        merged[i].name, merged[i].loras.size(), merged[i].r,
                        llvm::format("%g", mergeUses[i].second));
  os << llvm::formatv("  digests       program {0}, weights {1}, source {2} "
                      "(BLAKE2b-256)\n",
                      format::hex(summary->programDigest).substr(0, 16),
                      format::hex(summary->weightsDigest).substr(0, 16),
                      format::hex(summary->sourceDigest).substr(0, 16));
  if (!args.signKey.empty())
    os << llvm::formatv("  signed        with {0}\n", args.signKey);
  os << llvm::formatv("  time          import {0:F0} ms, passes {1:F0} ms, "
                      "codegen {2:F0} ms, write {3:F0} ms, total {4:F0} ms\n",
                      importMs, passMs, codegenMs, writeMs, msSince(t0));
  return 0;
}

} // namespace fm::cli
