// qwen2_moe: llama with qkv biases, MoE layers every decoder_sparse_step and
// a sigmoid-gated shared expert.
#include "import/families/Families.h"

#include <cmath>

using llvm::Error;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace fm::import {

Error buildQwen2Moe(ConfigReader &f, ModelSpec &spec, StringRef file) {
  LlamaDims d;
  readLlamaFields(f, d, 1e-6, 10000);
  int64_t experts = f.reqInt("num_experts");
  int64_t topK = f.reqInt("num_experts_per_tok");
  int64_t moeInter = f.reqInt("moe_intermediate_size");
  int64_t sharedInter = f.reqInt("shared_expert_intermediate_size");
  bool normTopK = f.optBool("norm_topk_prob", false);
  int64_t step = f.optInt("decoder_sparse_step", 1);
  const json::Array *mlpOnly = f.optArray("mlp_only_layers");
  f.requireFalse("use_sliding_window",
                 "fmc does not implement qwen2_moe's per-layer sliding window");
  if (!f.ok())
    return f.take();
  validateLlamaDims(f, d);
  if (topK > experts)
    f.error("num_experts_per_tok=" + Twine(topK) + " exceeds num_experts=" + Twine(experts));
  std::vector<bool> denseOnly(size_t(d.layers), false);
  if (mlpOnly) {
    for (size_t i = 0; i < mlpOnly->size(); ++i) {
      const json::Value &v = (*mlpOnly)[i];
      auto n = v.getAsUINT64();
      if (!n || *n >= uint64_t(d.layers))
        f.error("mlp_only_layers[" + Twine(i) + "] must be a layer index below " +
                "num_hidden_layers=" + Twine(d.layers) + ", got " + brief(v));
      else
        denseOnly[*n] = true;
    }
  }
  if (!f.ok())
    return f.take();
  if (uint64_t n = uint64_t(d.layers) * (16 + 3 * uint64_t(experts)) + 3;
      n > kMaxExpectedTensors)
    return tooManyTensors(file, n);

  SpecBuilder b(spec);
  llamaEmbedding(b, spec, d);
  std::vector<LayerSpec> layers;
  for (int64_t i = 0; i < d.layers; ++i) {
    LayerSpec l = llamaLayer(b, d, i, /*qkvBias=*/true, /*window=*/0);
    // Same rule as transformers' Qwen2MoeDecoderLayer.
    bool sparse = (i + 1) % step == 0 && !denseOnly[size_t(i)];
    if (!sparse) {
      denseLlamaFfn(b, l, d);
    } else {
      FfnSpec &ffn = l.ffn;
      ffn.moe = true;
      ffn.intermediate = moeInter;
      ffn.numExperts = experts;
      ffn.topK = topK;
      ffn.normTopK = normTopK;
      std::string p = l.prefix + ".mlp.";
      b.experts(ffn, p + "gate.weight", "num_experts", p, "gate_proj.weight",
                "up_proj.weight", "down_proj.weight", "moe_intermediate_size", d.hidden,
                "hidden_size");
      ffn.sharedIntermediate = sharedInter;
      b.swiglu(ffn.sharedGate, ffn.sharedUp, ffn.sharedDown, p + "shared_expert.",
               "gate_proj.weight", "up_proj.weight", "down_proj.weight", sharedInter,
               "shared_expert_intermediate_size", d.hidden, "hidden_size");
      ffn.sharedExpertGate = b.expect(p + "shared_expert_gate.weight", {1, d.hidden},
                                      "one gate logit, " + kv("hidden_size", d.hidden));
    }
    layers.push_back(std::move(l));
  }
  llamaOutput(b, spec, d);
  singleTrack(spec, std::move(layers));
  return Error::success();
}

} // namespace fm::import
