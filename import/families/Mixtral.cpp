// mixtral: llama with a top-k MoE FFN in every layer (block_sparse_moe).
#include "import/families/Families.h"

#include <cmath>

using llvm::Error;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace fm::import {

Error buildMixtral(ConfigReader &f, ModelSpec &spec, StringRef file) {
  LlamaDims d;
  // HF MixtralConfig's defaults, which differ from llama's.
  readLlamaFields(f, d, 1e-5, 1e6);
  int64_t experts = f.reqInt("num_local_experts");
  int64_t topK = f.reqInt("num_experts_per_tok");
  // Mixtral applies a sliding window to every layer when one is configured.
  int64_t window = f.optInt("sliding_window", 0);
  if (!f.ok())
    return f.take();
  validateLlamaDims(f, d);
  if (topK > experts)
    f.error("num_experts_per_tok=" + Twine(topK) + " exceeds num_local_experts=" +
            Twine(experts));
  if (!f.ok())
    return f.take();
  if (uint64_t n = uint64_t(d.layers) * (7 + 3 * uint64_t(experts)) + 3;
      n > kMaxExpectedTensors)
    return tooManyTensors(file, n);

  SpecBuilder b(spec);
  llamaEmbedding(b, spec, d);
  std::vector<LayerSpec> layers;
  for (int64_t i = 0; i < d.layers; ++i) {
    LayerSpec l = llamaLayer(b, d, i, /*qkvBias=*/false, window);
    FfnSpec &ffn = l.ffn;
    ffn.moe = true;
    ffn.intermediate = d.inter;
    ffn.numExperts = experts;
    ffn.topK = topK;
    ffn.normTopK = true;
    std::string p = l.prefix + ".block_sparse_moe.";
    b.experts(ffn, p + "gate.weight", "num_local_experts", p, "w1.weight", "w3.weight",
              "w2.weight", "intermediate_size", d.hidden, "hidden_size");
    layers.push_back(std::move(l));
  }
  llamaOutput(b, spec, d);
  singleTrack(spec, std::move(layers));
  return Error::success();
}

} // namespace fm::import
