// llama: the dense decoder, and the fields mixtral and qwen2_moe share.
#include "import/families/Families.h"

#include <cmath>

using llvm::Error;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace fm::import {

void readLlamaFields(ConfigReader &f, LlamaDims &d, double defEps, double defTheta) {
  d.vocab = f.reqInt("vocab_size");
  d.hidden = f.reqInt("hidden_size");
  d.layers = f.reqInt("num_hidden_layers");
  d.heads = f.reqInt("num_attention_heads");
  d.kvHeads = f.optInt("num_key_value_heads", 0); // HF: absent means MHA
  d.headDim = f.optInt("head_dim", 0);
  d.inter = f.reqInt("intermediate_size");
  d.eps = f.optNumber("rms_norm_eps", defEps);
  d.theta = f.ropeTheta(defTheta);
  d.tie = f.optBool("tie_word_embeddings", false);
  f.requireSilu();
}

void validateLlamaDims(ConfigReader &f, LlamaDims &d) {
  if (!d.kvHeads)
    d.kvHeads = d.heads;
  if (!d.headDim) {
    if (d.hidden % d.heads)
      f.error("hidden_size=" + Twine(d.hidden) + " is not divisible by num_attention_heads=" +
              Twine(d.heads) + " (set head_dim explicitly)");
    d.headDim = d.hidden / d.heads;
  }
  // RoPE rotates pairs of dimensions.
  if (d.headDim % 2)
    f.error("head_dim=" + Twine(d.headDim) +
            " is odd, but RoPE rotates pairs of dimensions");
  if (d.heads % d.kvHeads)
    f.error("num_attention_heads=" + Twine(d.heads) +
            " is not divisible by num_key_value_heads=" + Twine(d.kvHeads));
}

void llamaEmbedding(SpecBuilder &b, ModelSpec &spec, const LlamaDims &d) {
  spec.vocabSize = d.vocab;
  spec.hiddenSize = d.hidden;
  spec.rmsEps = d.eps;
  spec.tieWordEmbeddings = d.tie;
  spec.embedding = b.expect("model.embed_tokens.weight", {d.vocab, d.hidden},
                            kv("vocab_size", d.vocab) + ", " + kv("hidden_size", d.hidden));
}

void llamaOutput(SpecBuilder &b, ModelSpec &spec, const LlamaDims &d) {
  b.norm(spec.finalNorm, "model.norm.weight", d.hidden, "hidden_size");
  if (!d.tie)
    spec.lmHead = b.expect("lm_head.weight", {d.vocab, d.hidden},
                           kv("vocab_size", d.vocab) + ", " + kv("hidden_size", d.hidden));
}

LayerSpec llamaLayer(SpecBuilder &b, const LlamaDims &d, int64_t i, bool qkvBias,
                     int64_t window) {
  LayerSpec l;
  l.prefix = "model.layers." + std::to_string(i);
  l.index = i;
  initAttention(l.attn, d.heads, d.kvHeads, d.headDim, RopeStyle::Half, d.theta);
  if (window > 0) {
    l.attn.local = true;
    l.attn.window = window;
  }
  b.norm(l.attnNorm, l.prefix + ".input_layernorm.weight", d.hidden, "hidden_size");
  b.projections(l.attn, l.prefix + ".self_attn.", d.hidden, qkvBias, "hidden_size",
                "num_attention_heads", "num_key_value_heads");
  b.norm(l.ffnNorm, l.prefix + ".post_attention_layernorm.weight", d.hidden, "hidden_size");
  return l;
}

void denseLlamaFfn(SpecBuilder &b, LayerSpec &l, const LlamaDims &d) {
  l.ffn.intermediate = d.inter;
  b.swiglu(l.ffn.gate, l.ffn.up, l.ffn.down, l.prefix + ".mlp.", "gate_proj.weight",
           "up_proj.weight", "down_proj.weight", d.inter, "intermediate_size", d.hidden,
           "hidden_size");
}

Error buildLlama(ConfigReader &f, ModelSpec &spec, StringRef file) {
  LlamaDims d;
  readLlamaFields(f, d, 1e-6, 10000);
  // An o_proj or MLP bias has no slot in ModelSpec: refuse rather than drop it.
  f.requireFalse("attention_bias", "fmc's llama has no attention projection biases");
  f.requireFalse("mlp_bias", "fmc's llama has no MLP biases");
  if (!f.ok())
    return f.take();
  validateLlamaDims(f, d);
  if (!f.ok())
    return f.take();
  if (uint64_t n = uint64_t(d.layers) * 9 + 3; n > kMaxExpectedTensors)
    return tooManyTensors(file, n);

  SpecBuilder b(spec);
  llamaEmbedding(b, spec, d);
  std::vector<LayerSpec> layers;
  for (int64_t i = 0; i < d.layers; ++i) {
    LayerSpec l = llamaLayer(b, d, i, /*qkvBias=*/false, /*window=*/0);
    denseLlamaFfn(b, l, d);
    layers.push_back(std::move(l));
  }
  llamaOutput(b, spec, d);
  singleTrack(spec, std::move(layers));
  return Error::success();
}

} // namespace fm::import
