// `fmc inspect` of a .fmba LoRA adapter: its base, its digest (verified at
// every open) and every projection it updates, readably or as JSON.
#include "Commands.h"

#include "fm/adapter.h"
#include "fm/format.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace fm::cli {
namespace {

namespace fad = ::fm::adapter;

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "fmc") << message << "\n";
  return 1;
}

std::string matrixText(const fad::Matrix &m) {
  std::string s = llvm::formatv("[{0}, {1}] {2}", m.rows(), m.cols(),
                                adapterDtypeName(m.dtype()));
  if (m.dtype() == fad::DType::Q8)
    s += llvm::formatv("/{0}", m.group());
  return s;
}

llvm::json::Object matrixJson(const fad::Matrix &m) {
  return llvm::json::Object{{"rows", int64_t(m.rows())},
                            {"cols", int64_t(m.cols())},
                            {"dtype", adapterDtypeName(m.dtype())},
                            {"group", int64_t(m.group())},
                            {"offset", int64_t(m.offset())},
                            {"bytes", int64_t(m.size())}};
}

} // namespace

int runInspectAdapter(const InspectArgs &args) {
  if (!args.extractExecutable.empty() || !args.target.empty())
    return fail(args.artifact + " is a LoRA adapter: it has no executable");
  auto file = AdapterFile::open(args.artifact, AdapterFile::Options());
  if (!file)
    return fail(file.message());
  const AdapterFile &a = **file;
  const fad::Adapter &root = a.root();
  const fad::Base &base = *root.base();
  auto str = [](const flatbuffers::String *s) { return s ? s->str() : std::string(); };

  if (args.json) {
    llvm::json::Object out;
    out["file"] = args.artifact;
    out["kind"] = "adapter";
    out["schema_version"] = int64_t(root.schema_version());
    out["name"] = str(root.name());
    out["base"] = llvm::json::Object{
        {"family", base.family()->str()},
        {"model_name", str(base.model_name())},
        {"vocab_size", int64_t(base.vocab_size())},
        {"hidden_size", int64_t(base.hidden_size())},
        {"num_layers", int64_t(base.num_layers())},
        {"source_digest", format::hex(a.baseSourceDigest())},
        {"name_or_path", str(base.name_or_path())}};
    out["digest"] = format::hex(a.digest());
    out["file_bytes"] = int64_t(a.fileSize());
    out["data_bytes"] = int64_t(a.dataSize());
    out["parameters"] = a.parameters();
    llvm::json::Array loras;
    for (const fad::Lora *l : *root.loras())
      loras.push_back(llvm::json::Object{{"weight", l->weight()->str()},
                                         {"module", str(l->peft_module())},
                                         {"rank", int64_t(l->rank())},
                                         {"alpha", double(l->alpha())},
                                         {"scale", double(l->scale())},
                                         {"a", matrixJson(*l->a())},
                                         {"b_t", matrixJson(*l->b_t())}});
    out["loras"] = std::move(loras);
    if (root.peft_config()) {
      if (auto cfg = llvm::json::parse(root.peft_config()->str()))
        out["peft_config"] = std::move(*cfg);
      else
        llvm::consumeError(cfg.takeError());
    }
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(out)))
                 << "\n";
    return 0;
  }

  auto &os = llvm::outs();
  os << llvm::formatv("{0}: fmc LoRA adapter v{1} '{2}', {3} bytes\n",
                      args.artifact, root.schema_version(), str(root.name()),
                      a.fileSize());
  os << llvm::formatv("  base          {0} '{1}' (vocab {2}, hidden {3}, {4} "
                      "layers), source {5}\n",
                      base.family()->str(), str(base.model_name()),
                      base.vocab_size(), base.hidden_size(), base.num_layers(),
                      format::hex(a.baseSourceDigest()).substr(0, 16));
  if (base.name_or_path() && base.name_or_path()->size())
    os << "  trained on    " << base.name_or_path()->str() << "\n";
  os << llvm::formatv("  digest        {0} (verified)\n",
                      format::hex(a.digest()).substr(0, 16));
  os << llvm::formatv("  parameters    {0} in {1} projections, {2} bytes of "
                      "matrices\n",
                      a.parameters(), root.loras()->size(), a.dataSize());
  for (const fad::Lora *l : *root.loras())
    os << llvm::formatv("    {0,-52} r {1,3}  scale {2,-8}  A {3}  B^T {4}\n",
                        l->weight()->str(), l->rank(),
                        llvm::formatv("{0}", llvm::format("%g", l->scale())).str(),
                        matrixText(*l->a()), matrixText(*l->b_t()));
  return 0;
}

} // namespace fm::cli
