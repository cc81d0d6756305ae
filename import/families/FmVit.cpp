// fm_vit: fmc's image-encoder schema (docs/vit.md): a ViT (plain, or
// ViTDet windows with Register-Window registers and decomposed relative
// positions) and its vision-language adapter.
#include "import/families/Families.h"

#include <cmath>
#include <limits>
#include <set>

using llvm::Error;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace fm::import {
namespace {

/// Three numbers (image_mean / image_std); `nonZero` for a divisor.
void readTriple(ConfigReader &f, StringRef key, double out[3], bool nonZero) {
  const json::Value *v = f.get(key);
  if (!v)
    return;
  const json::Array *a = v->getAsArray();
  if (!a || a->size() != 3) {
    f.error("field '" + key + "' must be a list of 3 numbers (R, G, B), got " +
            brief(*v));
    return;
  }
  for (size_t i = 0; i < 3; ++i) {
    auto d = (*a)[i].getAsNumber();
    if (!d || !std::isfinite(*d) || (nonZero && *d == 0.0)) {
      f.error(key + "[" + Twine(i) + "] must be a " +
              (nonZero ? "non-zero " : "") + "number, got " + brief((*a)[i]));
      continue;
    }
    out[i] = *d;
  }
}

/// One pre-LN block's tensors: `relSide` > 0 adds the rel-pos tables of
/// that extent.
VitBlockSpec vitBlock(SpecBuilder &b, const VisionSpec &v, std::string prefix,
                      int64_t index, bool global, int64_t relSide) {
  VitBlockSpec k;
  k.prefix = std::move(prefix);
  k.index = index;
  k.global = global;
  const std::string p = k.prefix + ".";
  const int64_t C = v.hidden, I = v.intermediate;
  const std::string c = kv("hidden_size", C);
  const std::string qkvWhy = "3 x " + c;
  const std::string mlpIn = kv("intermediate_size", I) + ", " + c;
  const std::string mlpOut = c + ", " + kv("intermediate_size", I);
  k.norm1Weight = b.expect(p + "norm1.weight", {C}, c);
  k.norm1Bias = b.expect(p + "norm1.bias", {C}, c);
  k.qkv = b.expect(p + "attn.qkv.weight", {3 * C, C}, qkvWhy + ", " + c);
  if (v.qkvBias)
    k.qkvBias = b.expect(p + "attn.qkv.bias", {3 * C}, qkvWhy + " (qkv_bias)");
  k.proj = b.expect(p + "attn.proj.weight", {C, C}, c);
  k.projBias = b.expect(p + "attn.proj.bias", {C}, c);
  if (relSide > 0) {
    const std::string why =
        "2 x " + std::string(global ? "grid " : "window_size=") +
        std::to_string(relSide) + " - 1, head_dim=" + std::to_string(v.headDim) +
        (global ? " (a global layer spans the image_size/patch_size grid)" : "");
    k.relPosH = b.expect(p + "attn.rel_pos_h", {2 * relSide - 1, v.headDim}, why);
    k.relPosW = b.expect(p + "attn.rel_pos_w", {2 * relSide - 1, v.headDim}, why);
  }
  k.norm2Weight = b.expect(p + "norm2.weight", {C}, c);
  k.norm2Bias = b.expect(p + "norm2.bias", {C}, c);
  k.fc1 = b.expect(p + "mlp.fc1.weight", {I, C}, mlpIn);
  k.fc1Bias = b.expect(p + "mlp.fc1.bias", {I}, kv("intermediate_size", I));
  k.fc2 = b.expect(p + "mlp.fc2.weight", {C, I}, mlpOut);
  k.fc2Bias = b.expect(p + "mlp.fc2.bias", {C}, c);
  return k;
}

} // namespace

Error buildFmVit(ConfigReader &f, ModelSpec &spec, StringRef file) {
  VisionSpec &v = spec.vision;
  v.imageSize = f.reqInt("image_size");
  v.patchSize = f.reqInt("patch_size");
  v.hidden = f.reqInt("hidden_size");
  const int64_t layers = f.reqInt("num_layers");
  v.heads = f.reqInt("num_heads");
  v.intermediate = f.reqInt("intermediate_size");
  v.activation = static_cast<VitActivation>(
      f.optChoice("hidden_act", {"gelu", "gelu_tanh", "quick_gelu"}, 0));
  v.eps = f.optNumber("layer_norm_eps", 1e-6);
  v.qkvBias = f.optBool("qkv_bias", true);
  v.window = f.optInt("window_size", 0, /*min=*/0);
  v.relPos = f.optBool("rel_pos", false);
  v.registers = f.optInt("num_registers", 0, /*min=*/0);
  readTriple(f, "image_mean", v.mean, /*nonZero=*/false);
  readTriple(f, "image_std", v.std, /*nonZero=*/true);
  v.bilinear = f.optChoice("resample", {"bicubic", "bilinear"}, 0) == 1;

  // global_layers: distinct layer indices (of a windowed ViT).
  std::set<int64_t> global;
  if (const json::Array *gl = f.optArray("global_layers"))
    for (size_t i = 0; i < gl->size(); ++i) {
      auto g = (*gl)[i].getAsInteger();
      if (!g || *g < 0 || (layers > 0 && *g >= layers))
        f.error("global_layers[" + Twine(i) + "] must be a layer index in [0, " +
                Twine(layers) + "), got " + brief((*gl)[i]));
      else if (!global.insert(*g).second)
        f.error("global_layers[" + Twine(i) + "] repeats layer " + Twine(*g));
    }

  // The adapter: its own object, its own messages.
  int64_t adapterLayers = 0;
  std::string adapterFile = (file + ": adapter").str();
  Error adapterErrors = Error::success();
  if (const json::Value *av = f.get("adapter")) {
    if (const json::Object *ao = av->getAsObject()) {
      ConfigReader a(*ao, adapterFile, "fm_vit");
      v.lmHidden = a.reqInt("lm_hidden_size");
      v.outGrid = a.reqInt("grid");
      adapterLayers = a.optInt("num_layers", 0, /*min=*/0);
      if (!a.ok())
        adapterErrors = a.take();
    } else {
      f.error("field 'adapter' must be an object {lm_hidden_size, grid, "
              "num_layers}, got " + brief(*av));
    }
  } else {
    f.missing("adapter");
  }
  if (!f.ok() || adapterErrors)
    return llvm::joinErrors(f.ok() ? Error::success() : f.take(),
                            std::move(adapterErrors));

  if (v.imageSize % v.patchSize)
    f.error("image_size=" + Twine(v.imageSize) + " is not a multiple of patch_size=" +
            Twine(v.patchSize));
  if (v.hidden % v.heads)
    f.error("hidden_size=" + Twine(v.hidden) + " is not divisible by num_heads=" +
            Twine(v.heads));
  if (!f.ok())
    return f.take();
  v.grid = v.imageSize / v.patchSize;
  v.headDim = v.hidden / v.heads;
  if (v.outGrid > v.grid)
    return makeError(adapterFile + ": grid=" + Twine(v.outGrid) +
                     " must be at most the patch grid image_size/patch_size=" +
                     Twine(v.grid) + " (the adapter pools the patch grid)");
  if (v.window > v.grid)
    return makeError(file + ": window_size=" + Twine(v.window) +
                     " must be at most the patch grid image_size/patch_size=" +
                     Twine(v.grid) + " (a larger window is one window of "
                     "mostly zero padding)");
  // A grid of g^2 patches times C must fit the activation sizes fmc uses.
  if (v.grid > 65536 || uint64_t(v.grid) * v.grid * uint64_t(v.hidden) >
                            uint64_t(std::numeric_limits<int32_t>::max()))
    return makeError(file + ": a " + Twine(v.grid) + "x" + Twine(v.grid) +
                     " patch grid of hidden_size=" + Twine(v.hidden) +
                     " is more than fmc supports");
  if (uint64_t n = (uint64_t(layers) + uint64_t(adapterLayers)) * 16 + 10;
      n > kMaxExpectedTensors)
    return tooManyTensors(file, n);

  spec.hasVision = true;
  SpecBuilder b(spec);
  const int64_t C = v.hidden, p = v.patchSize, g = v.grid;
  const std::string c = kv("hidden_size", C);
  v.patchWeight = b.expect("vision.patch_embed.weight", {C, 3, p, p},
                           c + ", 3 channels, " + kv("patch_size", p));
  v.patchBias = b.expect("vision.patch_embed.bias", {C}, c);
  v.posEmbed = b.expect("vision.pos_embed", {1, g, g, C},
                        "the image_size/patch_size=" + std::to_string(g) +
                            " grid, " + c);
  if (v.registers)
    v.registerTokens = b.expect("vision.registers", {v.registers, C},
                                kv("num_registers", v.registers) + ", " + c);
  for (int64_t i = 0; i < layers; ++i) {
    const bool isGlobal = v.window == 0 || global.count(i);
    v.blocks.push_back(vitBlock(b, v, "vision.blocks." + std::to_string(i), i,
                                isGlobal,
                                v.relPos ? (isGlobal ? g : v.window) : 0));
  }
  v.normWeight = b.expect("vision.norm.weight", {C}, c);
  v.normBias = b.expect("vision.norm.bias", {C}, c);
  for (int64_t j = 0; j < adapterLayers; ++j)
    v.adapterBlocks.push_back(vitBlock(b, v, "adapter.blocks." + std::to_string(j),
                                       layers + j, /*global=*/true, 0));
  const int64_t D = v.lmHidden;
  const std::string d = "adapter " + kv("lm_hidden_size", D);
  v.adapterLinear = b.expect("adapter.linear.weight", {D, C}, d + ", " + c);
  v.adapterLinearBias = b.expect("adapter.linear.bias", {D}, d);
  v.adapterConv = b.expect("adapter.conv.weight", {D, D, 3, 3},
                           d + " in and out, a 3x3 kernel");
  v.adapterConvBias = b.expect("adapter.conv.bias", {D}, d);
  return Error::success();
}

} // namespace fm::import
