// `fmc compile-adapter`: a PEFT LoRA adapter directory + the .fmb of its
// base → a .fmba bound to the base's source digest and architecture, every
// tensor checked against the base's projections, with a one-screen report.
#include "Commands.h"

#include "import/weights/PeftAdapter.h"
#include "targets/artifact/AdapterWriter.h"

#include "fm/artifact.h"
#include "fm/format.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <set>

namespace fm::cli {
namespace {

namespace fa = ::fm::artifact;

int fail(const llvm::Twine &msg) {
  llvm::WithColor::error(llvm::errs(), "fmc") << msg << "\n";
  return 1;
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

/// The base's projections: MatMul weights that are no embedding table, in
/// command order (a fused matmul's stacked weights consecutive).
import::AdapterBase adapterBase(const ArtifactFile &a) {
  const fa::Artifact &root = a.root();
  import::AdapterBase base;
  base.family = root.family()->str();
  base.name = a.name();
  std::set<uint32_t> tables, seen;
  for (const fa::Program *p : *root.programs())
    for (const fa::Command *c : *p->commands())
      if (const fa::Embed *e = c->op_as_Embed())
        tables.insert(e->table_weight());
  for (const fa::Program *p : *root.programs())
    for (const fa::Command *c : *p->commands())
      if (const fa::MatMul *mm = c->op_as_MatMul())
        for (uint32_t w : *mm->weights()) {
          if (tables.count(w) || !seen.insert(w).second)
            continue;
          const fa::Weight &weight = *root.weights()->Get(w);
          base.projections.push_back({weight.name()->str(),
                                      weight.shape()->Get(0),
                                      weight.shape()->Get(1)});
        }
  return base;
}

/// "q_proj x2, k_proj x2" for the report.
std::string moduleCounts(const import::PeftAdapter &adapter) {
  std::vector<std::pair<std::string, int>> counts;
  for (const import::LoraWeights &l : adapter.loras) {
    llvm::StringRef module = l.module;
    std::string kind =
        (module.contains('.') ? module.rsplit('.').second : module).str();
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto &c) { return c.first == kind; });
    if (it == counts.end())
      counts.emplace_back(kind, 1);
    else
      ++it->second;
  }
  std::string s;
  for (const auto &[kind, n] : counts)
    s += llvm::formatv("{0}{1} x{2}", s.empty() ? "" : ", ", kind, n).str();
  return s;
}

} // namespace

int runCompileAdapter(const CompileAdapterArgs &args) {
  auto base = ArtifactFile::open(args.base, ArtifactFile::Options());
  if (!base)
    return fail(base.message());
  const ArtifactFile &b = **base;
  if (!b.hasSourceDigest())
    return fail(args.base + " records no source-weights digest (an fmc from "
                            "before adapters compiled it): recompile it");
  auto adapter = import::readPeftAdapter(args.adapterDir, adapterBase(b));
  if (!adapter)
    return fail(llvm::toString(adapter.takeError()));

  writer::AdapterBaseInfo info;
  const fa::Artifact &root = b.root();
  info.family = root.family()->str();
  info.modelName = root.model_name() ? root.model_name()->str() : "";
  info.vocabSize = root.vocab_size();
  info.hiddenSize = root.hidden_size();
  info.numLayers = root.num_layers();
  info.sourceDigest = b.sourceDigest();
  writer::AdapterWriteOptions options;
  options.w8 = args.quant == "w8";
  auto s = writer::writeAdapter(*adapter, info, options, args.output);
  if (!s)
    return fail(llvm::toString(s.takeError()));

  auto &os = llvm::outs();
  os << llvm::formatv("fmc compile-adapter: adapter '{0}' for {1} model '{2}' "
                      "-> {3}\n",
                      adapter->name, info.family, info.modelName, args.output);
  os << llvm::formatv("  base          {0} (hidden {1}, {2} layers, source {3})\n",
                      args.base, info.hiddenSize, info.numLayers,
                      format::hex(info.sourceDigest).substr(0, 16));
  os << llvm::formatv("  loras         {0} projections: {1}\n", s->loras,
                      moduleCounts(*adapter));
  const char *rule = adapter->rslora ? "alpha/sqrt(r), rsLoRA" : "alpha/r";
  auto g = [](double v) { return llvm::format("%g", v); };
  if (s->minRank == s->maxRank && s->minScale == s->maxScale)
    os << llvm::formatv("  rank          {0}, alpha {1}, scale {2} ({3})\n",
                        s->maxRank, g(adapter->alpha), g(s->maxScale), rule);
  else
    os << llvm::formatv("  rank          {0}..{1}, scale {2}..{3} ({4})\n",
                        s->minRank, s->maxRank, g(s->minScale), g(s->maxScale),
                        rule);
  os << llvm::formatv("  parameters    {0} ({1} of matrices)\n", s->parameters,
                      human(double(s->dataBytes)));
  if (s->q8Matrices)
    os << llvm::formatv("  weights       w8: {0} matrices in 8 bits (relative "
                        "RMS error {1:F5}), {2} f16\n",
                        s->q8Matrices,
                        s->sqSum > 0 ? std::sqrt(s->sqError / s->sqSum) : 0.0,
                        s->f16Matrices);
  else
    os << llvm::formatv("  weights       f16: {0} matrices\n", s->f16Matrices);
  os << llvm::formatv("  file          {0}, digest {1} (BLAKE2b-256)\n",
                      human(double(s->fileBytes)),
                      format::hex(s->digest).substr(0, 16));
  return 0;
}

} // namespace fm::cli
