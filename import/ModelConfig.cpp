// ModelConfig: config.json -> ModelSpec (each family's reader is in
// import/families/), and the checkpoint-vs-config checker.
#include "import/ModelConfig.h"

#include "import/ConfigReader.h"
#include "import/families/Families.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace fm::import {

const char *familyName(Family f) {
  switch (f) {
  case Family::Llama:
    return "llama";
  case Family::Afm7:
    return "afm7";
  case Family::PtMoe:
    return "pt_moe";
  case Family::Mixtral:
    return "mixtral";
  case Family::Qwen2Moe:
    return "qwen2_moe";
  case Family::FmVit:
    return "fm_vit";
  case Family::FmVlm:
    return "fm_vlm";
  }
  return "?";
}

const char *supportedModelTypes() {
  return "llama, afm7, pt_moe, mixtral, qwen2_moe, fm_vit, fm_vlm";
}

std::optional<Family> familyFromModelType(StringRef modelType) {
  for (Family f : {Family::Llama, Family::Afm7, Family::PtMoe, Family::Mixtral,
                   Family::Qwen2Moe, Family::FmVit, Family::FmVlm})
    if (modelType == familyName(f))
      return f;
  return std::nullopt;
}

Error buildDecoder(Family family, ConfigReader &f, ModelSpec &spec,
                   StringRef file) {
  switch (family) {
  case Family::Llama:
    return buildLlama(f, spec, file);
  case Family::Afm7:
    return buildAfm7(f, spec, file);
  case Family::PtMoe:
    return buildPtMoe(f, spec, file);
  case Family::Mixtral:
    return buildMixtral(f, spec, file);
  case Family::Qwen2Moe:
    return buildQwen2Moe(f, spec, file);
  case Family::FmVit:
  case Family::FmVlm:
    break;
  }
  return makeError(file + ": model_type '" + familyName(family) +
                   "' is not a decoder");
}

Expected<ModelSpec> parseModelConfig(StringRef text, StringRef nameForErrors) {
  const std::string file = nameForErrors.str();
  auto root = parseJson(text, file + ": invalid JSON: ");
  if (!root)
    return root.takeError();
  const json::Object *obj = root->getAsObject();
  if (!obj)
    return makeError(file + ": expected a JSON object, got " + brief(*root));

  const json::Value *mt = obj->get("model_type");
  if (!mt)
    return makeError(file + ": missing field 'model_type' (fmc supports " +
                     supportedModelTypes() + ")");
  auto mts = mt->getAsString();
  if (!mts)
    return makeError(file + ": field 'model_type' must be a string, got " + brief(*mt));
  auto family = familyFromModelType(*mts);
  if (!family)
    return makeError(file + ": unsupported model_type '" + *mts + "' (fmc supports " +
                     supportedModelTypes() + ")");

  ModelSpec spec;
  spec.family = *family;
  spec.modelType = mts->str();
  for (const auto &kv : *obj)
    spec.config[kv.first.str()] = jsonText(kv.second);

  ConfigReader fields(*obj, file, spec.modelType);
  Error e = *family == Family::FmVit   ? buildFmVit(fields, spec, file)
            : *family == Family::FmVlm ? buildFmVlm(fields, spec, file)
                                       : buildDecoder(*family, fields, spec, file);
  if (e)
    return std::move(e);
  if (*family == Family::FmVit) {
    // An encoder alone: no vocabulary; its width is the adapter's.
    spec.hasDecoder = false;
    spec.vocabSize = 0;
    spec.hiddenSize = spec.vision.lmHidden;
  }
  return spec;
}

Expected<ModelSpec> readModelConfig(StringRef configPath) {
  auto buf = llvm::MemoryBuffer::getFile(configPath, /*IsText=*/true);
  if (!buf)
    return makeError(configPath + ": cannot open: " + buf.getError().message());
  return parseModelConfig((*buf)->getBuffer(), configPath);
}

Error checkWeights(const ModelSpec &spec, const WeightSet &weights,
                   std::vector<std::string> &warnings) {
  std::vector<std::string> errors;
  llvm::StringSet<> expected;
  for (const ExpectedTensor &e : spec.expected) {
    expected.insert(e.name);
    std::string why = e.why.empty() ? "" : " from " + e.why;
    const TensorInfo *t = weights.lookup(e.name);
    if (!t) {
      errors.push_back(e.name + ": missing (expected " + formatShape(e.shape) + why +
                       ") in " + weights.description().str());
      continue;
    }
    // WeightSet only admits the dtypes fmc computes with; this switch keeps
    // that contract visible if DType ever grows.
    switch (t->dtype) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
      break;
    }
    if (t->shape != e.shape) {
      std::string because = e.why.empty() ? "" : " (" + e.why + ")";
      errors.push_back(e.name + ": shape " + formatShape(t->shape) + ", expected " +
                       formatShape(e.shape) + because + " in " +
                       weights.displayName(*t).str());
    }
  }
  for (const TensorInfo *t : weights.all())
    if (!expected.contains(t->name))
      warnings.push_back("unused tensor '" + t->name + "' in " +
                         weights.displayName(*t).str());
  if (errors.empty())
    return Error::success();
  std::string all;
  for (size_t i = 0; i < errors.size(); ++i)
    all += (i ? "\n" : "") + errors[i];
  return makeError(all);
}

} // namespace fm::import
