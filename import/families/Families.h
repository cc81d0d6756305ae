// The config readers of the model families fmc imports, one file each
// (import/families/*.cpp): each reads its config.json fields through a
// ConfigReader and fills a ModelSpec (layers, weight names, expected
// tensors). Llama's dense fields are shared by mixtral and qwen2_moe.
#pragma once

#include "import/ConfigReader.h"
#include "import/ModelSpec.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace fm::import {

llvm::Error buildLlama(ConfigReader &f, ModelSpec &spec, llvm::StringRef file);
llvm::Error buildMixtral(ConfigReader &f, ModelSpec &spec, llvm::StringRef file);
llvm::Error buildQwen2Moe(ConfigReader &f, ModelSpec &spec, llvm::StringRef file);
llvm::Error buildAfm7(ConfigReader &f, ModelSpec &spec, llvm::StringRef file);
llvm::Error buildPtMoe(ConfigReader &f, ModelSpec &spec, llvm::StringRef file);
/// An fm_vit config (the top level of an fm_vit config.json, or an fm_vlm's
/// vision_config, `file` naming it in messages) into spec.vision and the
/// vision tensors of spec.expected.
llvm::Error buildFmVit(ConfigReader &f, ModelSpec &spec, llvm::StringRef file);
llvm::Error buildFmVlm(ConfigReader &f, ModelSpec &spec, llvm::StringRef file);
/// The decoder builder of a family (llama, afm7, pt_moe, mixtral, qwen2_moe).
llvm::Error buildDecoder(Family family, ConfigReader &f, ModelSpec &spec,
                         llvm::StringRef file);

/// llama's dense fields, which mixtral and qwen2_moe share.
struct LlamaDims {
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kvHeads = 0, headDim = 0,
          inter = 0;
  double eps = 1e-6, theta = 10000;
  bool tie = false;
};

void readLlamaFields(ConfigReader &f, LlamaDims &d, double defEps, double defTheta);
/// Checks between fields, once each field has been read successfully.
void validateLlamaDims(ConfigReader &f, LlamaDims &d);
void llamaEmbedding(SpecBuilder &b, ModelSpec &spec, const LlamaDims &d);
void llamaOutput(SpecBuilder &b, ModelSpec &spec, const LlamaDims &d);
/// A llama-style layer up to (not including) its FFN weights.
LayerSpec llamaLayer(SpecBuilder &b, const LlamaDims &d, int64_t i, bool qkvBias,
                     int64_t window);
void denseLlamaFfn(SpecBuilder &b, LayerSpec &l, const LlamaDims &d);

} // namespace fm::import
