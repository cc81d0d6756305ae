// fm_vlm: a decoder of any supported family (text_config) whose image
// placeholders take the tokens of an fm_vit encoder (vision_config), both
// in one set of safetensors (docs/vit.md).
#include "import/families/Families.h"

#include "import/ModelConfig.h"

using llvm::Error;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace fm::import {

Error buildFmVlm(ConfigReader &f, ModelSpec &spec, StringRef file) {
  const json::Object *text = nullptr, *vision = nullptr;
  for (auto [key, slot] : {std::make_pair("text_config", &text),
                           std::make_pair("vision_config", &vision)}) {
    const json::Value *v = f.get(key);
    if (!v)
      f.missing(key);
    else if (!(*slot = v->getAsObject()))
      f.error("field '" + Twine(key) + "' must be an object, got " + brief(*v));
  }
  const int64_t imageToken = f.reqInt("image_token_index", /*min=*/0);
  if (!f.ok())
    return f.take();

  // The decoder: its own model_type, its own messages.
  const std::string textFile = (file + ": text_config").str();
  auto tmt = text->getString("model_type");
  if (!tmt)
    return makeError(textFile + ": missing field 'model_type' (the decoder's "
                                "family: llama, afm7, pt_moe, mixtral, qwen2_moe)");
  std::optional<Family> family = familyFromModelType(*tmt);
  if (!family || *family == Family::FmVit || *family == Family::FmVlm)
    return makeError(textFile + ": model_type '" + *tmt +
                     "' is not a decoder fmc supports (llama, afm7, pt_moe, "
                     "mixtral, qwen2_moe)");
  ConfigReader t(*text, textFile, tmt->str());
  Error decoder = buildDecoder(*family, t, spec, textFile);
  // The encoder, whether or not the decoder had errors: all of them at once.
  const std::string visionFile = (file + ": vision_config").str();
  ConfigReader v(*vision, visionFile, "fm_vit");
  Error encoder = Error::success();
  if (auto vmt = vision->getString("model_type"); vmt && *vmt != "fm_vit")
    encoder = makeError(visionFile + ": model_type '" + *vmt +
                        "' is not fm_vit (the only image encoder fmc imports)");
  else
    encoder = buildFmVit(v, spec, visionFile);
  if (decoder || encoder)
    return llvm::joinErrors(std::move(decoder), std::move(encoder));

  spec.textFamily = *family;
  spec.hasDecoder = true;
  spec.imageTokenIndex = imageToken;
  if (imageToken >= spec.vocabSize)
    f.error("image_token_index=" + Twine(imageToken) +
            " is outside the decoder's vocabulary (text_config vocab_size=" +
            Twine(spec.vocabSize) + ")");
  if (spec.vision.lmHidden != spec.hiddenSize)
    f.error("vision_config adapter lm_hidden_size=" + Twine(spec.vision.lmHidden) +
            " must equal the decoder's hidden size " + Twine(spec.hiddenSize) +
            " (the image tokens replace embedding rows)");
  if (!f.ok())
    return f.take();
  return Error::success();
}

} // namespace fm::import
