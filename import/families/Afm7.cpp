// afm7: Apple's on-device model (the layout of mlx_lm/models/afm7.py): fused
// qkv, q/k norms, int8 K/V fake-quant, KV-reuse layers, tied LM head.
#include "import/families/Families.h"

#include <cmath>

using llvm::Error;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace fm::import {

Error buildAfm7(ConfigReader &f, ModelSpec &spec, StringRef file) {
  int64_t vocab = f.reqInt("vocab_size");
  int64_t hidden = f.reqInt("hidden_dim");
  int64_t numLayers = f.reqInt("num_layers");
  int64_t reuse = f.reqInt("num_kv_reuse_layers", /*min=*/0);
  int64_t heads = f.reqInt("num_heads");
  int64_t kvHeads = f.reqInt("num_kv_heads");
  double factor = f.optNumber("hidden_dim_scale_factor", 3.25);
  double theta = f.ropeTheta(50000, /*paramsReplaceTheta=*/true);
  double eps = f.optNumber("rms_norm_eps", 1e-5);
  if (!f.ok())
    return f.take();
  if (hidden % heads)
    f.error("hidden_dim=" + Twine(hidden) + " is not divisible by num_heads=" + Twine(heads));
  if (heads % kvHeads)
    f.error("num_heads=" + Twine(heads) + " is not divisible by num_kv_heads=" +
            Twine(kvHeads));
  if (reuse >= numLayers)
    f.error("num_kv_reuse_layers=" + Twine(reuse) + " must be less than num_layers=" +
            Twine(numLayers) + " (reuse layers read the KV cache of the last regular layer)");
  // Python's int(hidden_dim * factor): the product in double, truncated.
  double ffnD = double(hidden) * factor;
  int64_t ffn = ffnD < double(kMaxSize) ? int64_t(ffnD) : 0;
  if (ffn < 1)
    f.error("int(hidden_dim * hidden_dim_scale_factor) = " + fmtDouble(std::trunc(ffnD)) +
            " is not a valid FFN size");
  if (!f.ok())
    return f.take();
  if (uint64_t n = uint64_t(numLayers) * 11 + 2; n > kMaxExpectedTensors)
    return tooManyTensors(file, n);

  const int64_t headDim = hidden / heads;
  // RoPE rotates pairs of dimensions.
  if (headDim % 2)
    return makeError(file + ": head_dim=hidden_dim/num_heads=" + Twine(headDim) +
                     " is odd, but RoPE rotates pairs of dimensions");
  const int64_t regular = numLayers - reuse;
  const std::string hdWhy = "head_dim=hidden_dim/num_heads=" + std::to_string(headDim);
  const std::string qWhy = kv("num_heads", heads) + ", " + kv("head_dim", headDim);
  const std::string ffnKey =
      "int(hidden_dim*hidden_dim_scale_factor=" + fmtDouble(factor) + ")";

  spec.vocabSize = vocab;
  spec.hiddenSize = hidden;
  spec.rmsEps = eps;
  spec.tieWordEmbeddings = true; // the LM head is the embedding, transposed
  SpecBuilder b(spec);
  spec.embedding = b.expect("model.embedding.weight", {vocab, hidden},
                            kv("vocab_size", vocab) + ", " + kv("hidden_dim", hidden));

  std::vector<LayerSpec> layers;
  for (int64_t i = 0; i < numLayers; ++i) {
    const bool isReuse = i >= regular;
    LayerSpec l;
    l.prefix = isReuse ? "model.kv_reuse_layers." + std::to_string(i - regular)
                       : "model.layers." + std::to_string(i);
    l.index = i;
    AttentionSpec &a = l.attn;
    initAttention(a, heads, kvHeads, headDim, RopeStyle::Interleaved, theta);
    a.qkNorm = true; // q_norm/k_norm are nn.RMSNorm(head_dim): eps stays MLX's 1e-5
    b.norm(l.attnNorm, l.prefix + ".input_layernorm.weight", hidden, "hidden_dim");
    const std::string p = l.prefix + ".self_attn.";
    if (!isReuse) {
      a.kvFakeQuant = true;
      a.qkv = b.expect(p + "qkv_proj.weight", {(heads + 2 * kvHeads) * headDim, hidden},
                       kv("num_heads", heads) + ", " + kv("num_kv_heads", kvHeads) + ", " +
                           kv("head_dim", headDim));
    } else {
      // The cache it reads is already roped, normed and quantized.
      a.reuseKvOfLayer = regular - 1;
      a.q = b.expect(p + "q_proj.weight", {heads * headDim, hidden}, qWhy);
    }
    a.o = b.expect(p + "out_proj.weight", {hidden, heads * headDim},
                   kv("hidden_dim", hidden) + ", " + qWhy);
    a.qNorm = b.expect(p + "q_norm.weight", {headDim}, hdWhy);
    if (!isReuse) {
      a.kNorm = b.expect(p + "k_norm.weight", {headDim}, hdWhy);
      a.kScale = b.expect(p + "quant_key_scale", {}, "a per-layer scalar (0-d)");
      a.vScale = b.expect(p + "quant_value_scale", {}, "a per-layer scalar (0-d)");
    }
    l.ffn.intermediate = ffn;
    b.swiglu(l.ffn.gate, l.ffn.up, l.ffn.down, l.prefix + ".mlp.", "gate_proj.weight",
             "up_proj.weight", "down_proj.weight", ffn, ffnKey, hidden, "hidden_dim");
    b.norm(l.ffnNorm, l.prefix + ".post_attention_layernorm.weight", hidden, "hidden_dim");
    layers.push_back(std::move(l));
  }
  b.norm(spec.finalNorm, "model.output_norm.weight", hidden, "hidden_dim");
  singleTrack(spec, std::move(layers));
  return Error::success();
}

} // namespace fm::import
