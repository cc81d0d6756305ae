// Importer: builds fm IR from a checked ModelSpec. Each op carries a NameLoc
// of its checkpoint prefix (model.layers.12.self_attn), and each weight is an
// fm.param naming the tensor and its file: no tensor data enters the IR.
#include "import/Importer.h"

#include "import/ModelConfig.h"
#include "dialects/fm/IR/FmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <set>

using namespace mlir;
namespace fmd = mlir::fm;

namespace fm::import {
namespace {

class Emitter {
public:
  Emitter(MLIRContext &ctx, const ModelSpec &spec, const WeightSet &weights)
      : ctx(ctx), b(&ctx), spec(spec), weights(weights) {}

  OwningOpRef<ModuleOp> run(StringRef modelDir, const ImportOptions &opts);

private:
  Location loc(StringRef name) { return NameLoc::get(b.getStringAttr(name)); }
  /// "model.norm.weight" -> "model.norm".
  static std::string stripWeight(StringRef weightName) {
    StringRef s = weightName;
    if (s.ends_with(".weight") || s.ends_with(".bias"))
      s = s.rsplit('.').first;
    return s.str();
  }
  static std::string parentPrefix(StringRef weightName) {
    // "model.layers.3.self_attn.q_proj.weight" -> "model.layers.3.self_attn"
    StringRef s = weightName;
    if (s.ends_with(".weight") || s.ends_with(".bias"))
      s = s.rsplit('.').first;
    return s.rsplit('.').first.str();
  }

  /// An fm.param for checkpoint tensor `name` (null Value for "").
  Value param(StringRef name);
  RankedTensorType actType(int64_t width) {
    return RankedTensorType::get({seqLen, width}, b.getF32Type());
  }

  void emitPhase(fmd::ModelOp model, StringRef phase, bool decode);
  Value emitLayer(Value x, Value pos, const LayerSpec &layer,
                  StringRef cache);
  /// The encode_image phase: the fm_vit encoder and its adapter.
  void emitImagePhase(fmd::ModelOp model);
  Value emitVitBlock(Value x, const VitBlockSpec &block, int64_t registers);

  MLIRContext &ctx;
  OpBuilder b;
  const ModelSpec &spec;
  const WeightSet &weights;
  int64_t seqLen = ShapedType::kDynamic;
};

Type elementType(OpBuilder &b, DType d) {
  switch (d) {
  case DType::F32:
    return b.getF32Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  }
  return b.getF32Type();
}

Value Emitter::param(StringRef name) {
  if (name.empty())
    return {};
  const TensorInfo *t = weights.lookup(name);
  assert(t && "checkWeights guarantees every expected tensor exists");
  auto type = RankedTensorType::get(t->shape, elementType(b, t->dtype));
  auto op = fmd::ParamOp::create(
      b, loc(name), type, b.getStringAttr(name),
      b.getStringAttr(llvm::sys::path::filename(t->file)), fmd::QuantAttr(),
      TypeAttr());
  return op.getResult();
}

Value Emitter::emitLayer(Value x, Value pos, const LayerSpec &layer,
                         StringRef cache) {
  const AttentionSpec &a = layer.attn;
  const FfnSpec &f = layer.ffn;
  auto act = cast<RankedTensorType>(x.getType());
  FloatAttr eps = b.getF64FloatAttr(spec.rmsEps);
  std::string attnPrefix = layer.prefix + ".self_attn";
  std::string mlpPrefix = layer.prefix + ".mlp";

  Value n = fmd::RmsNormOp::create(b, loc(stripWeight(layer.attnNorm)), act, x,
                                   param(layer.attnNorm), eps);
  // The RoPE / window / norm / cache attributes, in the dialect's words.
  fmd::RopeStyle rope = a.rope == RopeStyle::None   ? fmd::RopeStyle::none
                        : a.rope == RopeStyle::Half ? fmd::RopeStyle::half
                                                    : fmd::RopeStyle::interleaved;
  bool reuse = a.reuseKvOfLayer >= 0;
  int64_t slot = reuse ? a.reuseKvOfLayer : layer.index;
  Value attn = fmd::AttentionOp::create(
      b, loc(attnPrefix), act, n, pos, param(a.q), param(a.k), param(a.v),
      param(a.qkv), param(a.o), param(a.qBias), param(a.kBias), param(a.vBias),
      param(a.qNorm), param(a.kNorm), param(a.kScale), param(a.vScale),
      b.getI64IntegerAttr(layer.index), b.getI64IntegerAttr(a.numHeads),
      b.getI64IntegerAttr(a.numKvHeads), b.getI64IntegerAttr(a.headDim),
      b.getF64FloatAttr(a.scale), fmd::RopeStyleAttr::get(&ctx, rope),
      rope == fmd::RopeStyle::none ? FloatAttr()
                                   : b.getF64FloatAttr(a.ropeTheta),
      fmd::AttentionKindAttr::get(&ctx, a.local ? fmd::AttentionKind::local
                                                : fmd::AttentionKind::global),
      a.local ? b.getI64IntegerAttr(a.window) : IntegerAttr(),
      (a.qNorm.empty() && a.kNorm.empty()) ? FloatAttr()
                                           : b.getF64FloatAttr(a.qkNormEps),
      FlatSymbolRefAttr::get(&ctx, cache), b.getI64IntegerAttr(slot),
      reuse ? b.getUnitAttr() : UnitAttr());
  Value h = fmd::AddOp::create(b, loc(layer.prefix), x, attn);

  Value n2 = fmd::RmsNormOp::create(b, loc(stripWeight(layer.ffnNorm)),
                                    act, h, param(layer.ffnNorm), eps);
  Value ffn;
  if (!f.moe) {
    ffn = fmd::MlpOp::create(
        b, loc(mlpPrefix), act, n2, param(f.gate), param(f.up), param(f.down),
        Value(), Value(), b.getI64IntegerAttr(layer.index),
        fmd::ActivationAttr::get(&ctx, fmd::Activation::swiglu));
  } else {
    SmallVector<Value> gates, ups, downs;
    for (int64_t e = 0; e < f.numExperts; ++e) {
      gates.push_back(param(f.expertGate[e]));
      ups.push_back(param(f.expertUp[e]));
      downs.push_back(param(f.expertDown[e]));
    }
    ffn = fmd::MoeOp::create(
        b, loc(parentPrefix(f.router)), act, n2, param(f.router), gates, ups,
        downs, param(f.sharedGate), param(f.sharedUp), param(f.sharedDown),
        param(f.sharedExpertGate), b.getI64IntegerAttr(layer.index),
        b.getI64IntegerAttr(f.numExperts), b.getI64IntegerAttr(f.topK),
        f.normTopK ? b.getUnitAttr() : UnitAttr());
  }
  return fmd::AddOp::create(b, loc(layer.prefix), h, ffn);
}

Value Emitter::emitVitBlock(Value x, const VitBlockSpec &k, int64_t registers) {
  const VisionSpec &v = spec.vision;
  auto type = cast<RankedTensorType>(x.getType());
  FloatAttr eps = b.getF64FloatAttr(v.eps);
  Value n = fmd::LayerNormOp::create(b, loc(k.prefix + ".norm1"), type, x,
                                     param(k.norm1Weight), param(k.norm1Bias),
                                     eps);
  const bool window = !k.global;
  Value a = fmd::VitAttentionOp::create(
      b, loc(k.prefix + ".attn"), type, n, param(k.qkv), param(k.proj),
      param(k.qkvBias), param(k.projBias), param(k.relPosH), param(k.relPosW),
      b.getI64IntegerAttr(k.index), b.getI64IntegerAttr(v.heads),
      b.getI64IntegerAttr(v.headDim),
      b.getF64FloatAttr(1.0 / std::sqrt(double(v.headDim))),
      fmd::VitAttentionModeAttr::get(&ctx, window ? fmd::VitAttentionMode::window
                                                  : fmd::VitAttentionMode::global),
      window ? b.getI64IntegerAttr(v.window) : IntegerAttr(),
      b.getDenseI64ArrayAttr({v.grid, v.grid}), b.getI64IntegerAttr(registers));
  Value h = fmd::AddOp::create(b, loc(k.prefix), x, a);
  Value n2 = fmd::LayerNormOp::create(b, loc(k.prefix + ".norm2"), type, h,
                                      param(k.norm2Weight), param(k.norm2Bias),
                                      eps);
  fmd::Activation act = v.activation == VitActivation::GeluTanh
                            ? fmd::Activation::gelu_tanh
                        : v.activation == VitActivation::QuickGelu
                            ? fmd::Activation::quick_gelu
                            : fmd::Activation::gelu;
  Value m = fmd::MlpOp::create(b, loc(k.prefix + ".mlp"), type, n2, Value(),
                               param(k.fc1), param(k.fc2), param(k.fc1Bias),
                               param(k.fc2Bias), b.getI64IntegerAttr(k.index),
                               fmd::ActivationAttr::get(&ctx, act));
  return fmd::AddOp::create(b, loc(k.prefix), h, m);
}

void Emitter::emitImagePhase(fmd::ModelOp model) {
  const VisionSpec &v = spec.vision;
  b.setInsertionPointToEnd(&model.getBodyBlock());
  const int64_t g = v.grid, C = v.hidden, R = v.registers;
  auto f32 = b.getF32Type();
  auto imageType = RankedTensorType::get({3, v.imageSize, v.imageSize}, f32);
  auto tokensType = RankedTensorType::get({v.numTokens(), v.lmHidden}, f32);
  auto rows = [&](int64_t n) { return RankedTensorType::get({n, C}, f32); };
  auto fn = func::FuncOp::create(b, loc("vision"), fmd::ModelOp::kImagePhase,
                                 b.getFunctionType({imageType}, {tokensType}));
  fn->setAttr(fmd::FmDialect::kPhaseAttrName,
              b.getStringAttr(fmd::ModelOp::kImagePhase));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);

  Value x = fmd::PatchEmbedOp::create(
      b, loc("vision.patch_embed"), rows(g * g), body->getArgument(0),
      param(v.patchWeight), param(v.patchBias), param(v.posEmbed),
      b.getI64IntegerAttr(v.patchSize));
  if (R)
    x = fmd::RegisterTokensOp::create(b, loc("vision.registers"), rows(R + g * g),
                                      x, param(v.registerTokens));
  for (const VitBlockSpec &k : v.blocks)
    x = emitVitBlock(x, k, R);
  if (R)
    x = fmd::DropRegistersOp::create(b, loc("vision.registers"), rows(g * g), x,
                                     b.getI64IntegerAttr(R));
  x = fmd::LayerNormOp::create(b, loc("vision.norm"), rows(g * g), x,
                               param(v.normWeight), param(v.normBias),
                               b.getF64FloatAttr(v.eps));
  for (const VitBlockSpec &k : v.adapterBlocks)
    x = emitVitBlock(x, k, 0);
  Value t = fmd::VlAdapterOp::create(
      b, loc("adapter"), tokensType, x, param(v.adapterLinear),
      param(v.adapterLinearBias), param(v.adapterConv), param(v.adapterConvBias),
      b.getDenseI64ArrayAttr({g, g}), b.getI64IntegerAttr(0),
      b.getI64IntegerAttr(3), b.getI64IntegerAttr(v.numTokens()));
  func::ReturnOp::create(b, loc("vision"), t);

  model.setImageMeanAttr(b.getDenseF64ArrayAttr({v.mean[0], v.mean[1], v.mean[2]}));
  model.setImageStdAttr(b.getDenseF64ArrayAttr({v.std[0], v.std[1], v.std[2]}));
  model.setImageResampleAttr(b.getStringAttr(v.bilinear ? "bilinear" : "bicubic"));
  if (spec.imageTokenIndex >= 0)
    model.setImageTokenIndexAttr(b.getI64IntegerAttr(spec.imageTokenIndex));
}

void Emitter::emitPhase(fmd::ModelOp model, StringRef phase, bool decode) {
  seqLen = decode ? 1 : ShapedType::kDynamic;
  b.setInsertionPointToEnd(&model.getBodyBlock());
  auto tokensType = RankedTensorType::get({seqLen}, b.getI32Type());
  auto logitsType = actType(spec.vocabSize);
  auto fnType = b.getFunctionType({tokensType, b.getIndexType()}, {logitsType});
  auto fn = func::FuncOp::create(b, loc(spec.modelType), phase, fnType);
  fn->setAttr(fmd::FmDialect::kPhaseAttrName, b.getStringAttr(phase));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  Value tokens = body->getArgument(0), pos = body->getArgument(1);

  auto act = actType(spec.hiddenSize);
  Value emb = param(spec.embedding);
  Value x = fmd::EmbeddingOp::create(b, loc(stripWeight(spec.embedding)),
                                     act, tokens, emb);
  for (auto [bi, block] : llvm::enumerate(spec.blocks)) {
    if (!spec.parallelTracks) {
      for (const LayerSpec &layer : block.tracks[0])
        x = emitLayer(x, pos, layer, "kv");
      continue;
    }
    auto tb = fmd::TrackBlockOp::create(
        b, loc(llvm::formatv("model.blocks.{0}", bi).str()), x, (int64_t)bi,
        spec.trackBlockDepth,
        spec.combine == Combine::Mean ? fmd::Combine::mean : fmd::Combine::sum,
        (unsigned)block.tracks.size());
    OpBuilder::InsertionGuard guard(b);
    for (auto [t, track] : llvm::enumerate(block.tracks)) {
      Block &tb0 = tb.getTracks()[t].front();
      b.setInsertionPointToStart(&tb0);
      Value r = tb0.getArgument(0);
      std::string cache = llvm::formatv("kv_t{0}", t).str();
      for (const LayerSpec &layer : track)
        r = emitLayer(r, pos, layer, cache);
      fmd::YieldOp::create(
          b, loc(llvm::formatv("model.blocks.{0}.tracks.{1}", bi, t).str()), r);
    }
    x = tb.getResult();
  }
  Value out = fmd::RmsNormOp::create(b, loc(stripWeight(spec.finalNorm)),
                                     act, x, param(spec.finalNorm),
                                     b.getF64FloatAttr(spec.rmsEps));
  bool tied = spec.lmHead.empty();
  Value head = param(tied ? spec.embedding : spec.lmHead);
  Value logits = fmd::LmHeadOp::create(
      b, loc(tied ? "lm_head" : stripWeight(spec.lmHead)),
      logitsType, out, head, tied ? b.getUnitAttr() : UnitAttr());
  func::ReturnOp::create(b, loc(spec.modelType), logits);
}

OwningOpRef<ModuleOp> Emitter::run(StringRef modelDir,
                                   const ImportOptions &opts) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc(modelDir));
  b.setInsertionPointToEnd(module->getBody());
  auto model = fmd::ModelOp::create(b, loc(spec.modelType), opts.modelName,
                                    familyName(spec.family), spec.vocabSize,
                                    spec.hiddenSize);
  // The config as read, for the artifact's metadata.
  SmallVector<NamedAttribute> config;
  for (auto &[k, v] : spec.config)
    config.push_back(b.getNamedAttr(k, b.getStringAttr(v)));
  model.setConfigAttr(b.getDictionaryAttr(config));
  SmallString<256> abs(modelDir);
  llvm::sys::fs::make_absolute(abs);
  llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
  model.setWeightsAttr(b.getStringAttr(abs));

  if (spec.hasVision)
    emitImagePhase(model);
  if (!spec.hasDecoder)
    return module;
  // One cache per track (one in all for models without tracks); a slot per
  // layer index, which fm-share-kv later compacts to the owning layers.
  b.setInsertionPointToEnd(&model.getBodyBlock());
  const AttentionSpec &a0 = spec.blocks.front().tracks.front().front().attn;
  int64_t slots = spec.parallelTracks ? spec.numLayersPerTrack() : 0;
  if (!spec.parallelTracks)
    for (const LayerSpec &l : spec.blocks.front().tracks.front())
      if (l.attn.reuseKvOfLayer < 0)
        slots = std::max(slots, l.index + 1);
  int64_t tracks = spec.parallelTracks ? spec.numTracks : 1;
  for (int64_t t = 0; t < tracks; ++t) {
    std::string name =
        spec.parallelTracks ? llvm::formatv("kv_t{0}", t).str() : "kv";
    fmd::KvCacheOp::create(b, loc(name), name, slots, a0.numKvHeads, a0.headDim,
                           opts.contextLength, b.getF32Type());
  }
  emitPhase(model, "prefill", /*decode=*/false);
  emitPhase(model, "decode", /*decode=*/true);
  return module;
}

std::string humanBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return llvm::formatv(u == 0 ? "{0:F0} {1}" : "{0:F1} {1}", bytes, units[u]);
}

std::string humanCount(double n) {
  if (n >= 1e9)
    return llvm::formatv("{0:F2}B", n / 1e9);
  if (n >= 1e6)
    return llvm::formatv("{0:F2}M", n / 1e6);
  if (n >= 1e3)
    return llvm::formatv("{0:F1}K", n / 1e3);
  return llvm::formatv("{0}", (int64_t)n);
}

const char *ropeName(RopeStyle r) {
  return r == RopeStyle::None ? "none" : r == RopeStyle::Half ? "half" : "interleaved";
}

/// The encoder's lines of `fmc import --print-summary`.
void printVision(llvm::raw_ostream &os, const ModelSpec &spec) {
  const VisionSpec &v = spec.vision;
  const char *act = v.activation == VitActivation::GeluTanh    ? "gelu_tanh"
                    : v.activation == VitActivation::QuickGelu ? "quick_gelu"
                                                               : "gelu";
  int64_t globalLayers = 0;
  for (const VitBlockSpec &k : v.blocks)
    globalLayers += k.global;
  os << llvm::formatv("image      {0}x{0} in {1}x{1} patches = {2}x{2} grid, "
                      "{3} registers, {4} resize\n",
                      v.imageSize, v.patchSize, v.grid, v.registers,
                      v.bilinear ? "bilinear" : "bicubic");
  os << llvm::formatv("encoder    {0} layers of width {1} ({2} heads x {3}, mlp "
                      "{4} {5}), {6} global",
                      v.blocks.size(), v.hidden, v.heads, v.headDim,
                      v.intermediate, act, globalLayers);
  if (v.window)
    os << llvm::formatv(", {0} window {1}x{1}", v.blocks.size() - globalLayers,
                        v.window);
  os << (v.relPos ? ", rel-pos" : "") << (v.qkvBias ? "" : ", no qkv bias")
     << "\n";
  os << llvm::formatv("adapter    {0} transformer layers, linear {1} -> {2}, "
                      "conv 3x3, pool to {3}x{3} = {4} image tokens\n",
                      v.adapterBlocks.size(), v.hidden, v.lmHidden, v.outGrid,
                      v.numTokens());
  if (spec.imageTokenIndex >= 0)
    os << llvm::formatv("image tok  {0} (its placeholder in prompts)\n",
                        spec.imageTokenIndex);
}

} // namespace

OwningOpRef<ModuleOp> emitModel(MLIRContext &ctx, const ModelSpec &spec,
                                const WeightSet &weights, StringRef modelDir,
                                const ImportOptions &opts) {
  ctx.loadDialect<fmd::FmDialect, func::FuncDialect>();
  return Emitter(ctx, spec, weights).run(modelDir, opts);
}

llvm::Expected<OwningOpRef<ModuleOp>>
importModel(MLIRContext &ctx, StringRef modelDir, const ImportOptions &opts,
            std::vector<std::string> &warnings, ModelSpec *specOut,
            WeightSet *weightsOut) {
  SmallString<256> configPath(modelDir);
  llvm::sys::path::append(configPath, "config.json");
  auto spec = readModelConfig(configPath);
  if (!spec)
    return spec.takeError();
  auto weights = WeightSet::openDirectory(modelDir);
  if (!weights)
    return weights.takeError();
  if (llvm::Error e = checkWeights(*spec, *weights, warnings))
    return std::move(e);
  OwningOpRef<ModuleOp> module = emitModel(ctx, *spec, *weights, modelDir, opts);
  if (failed(mlir::verify(*module)))
    return llvm::createStringError(
        "%s: the imported IR does not verify (see the diagnostics above)",
        modelDir.str().c_str());
  if (specOut)
    *specOut = std::move(*spec);
  if (weightsOut)
    *weightsOut = std::move(*weights);
  return std::move(module);
}

void printSummary(llvm::raw_ostream &os, const ModelSpec &spec,
                  const WeightSet &weights, const ImportOptions &opts) {
  uint64_t params = 0, bytes = 0;
  std::set<std::string> used;
  for (const ExpectedTensor &e : spec.expected)
    used.insert(e.name);
  for (const TensorInfo *t : weights.all())
    if (used.count(t->name)) {
      params += t->numElements();
      bytes += t->nbytes;
    }
  int64_t layersPerTrack = 0;
  for (const TrackBlockSpec &blk : spec.blocks)
    layersPerTrack += blk.tracks.front().size();

  os << "model      " << familyName(spec.family) << " (model_type \""
     << spec.modelType << "\")\n";
  if (spec.hasVision)
    printVision(os, spec);
  if (!spec.hasDecoder) {
    os << llvm::formatv("parameters {0} ({1}) in {2} tensors\n",
                        humanCount(params), humanBytes((double)bytes),
                        used.size());
    return;
  }
  if (spec.hasVision)
    os << "decoder    " << familyName(spec.textFamily) << "\n";
  os << llvm::formatv("vocab      {0}\nhidden     {1}\n", spec.vocabSize,
                      spec.hiddenSize);
  if (spec.parallelTracks)
    os << llvm::formatv("tracks     {0} tracks x {1} blocks x depth {2} "
                        "({3} layers per track), combine {4}\n",
                        spec.numTracks, spec.numTrackBlocks,
                        spec.trackBlockDepth, layersPerTrack,
                        spec.combine == Combine::Mean ? "mean" : "sum");
  else
    os << llvm::formatv("layers     {0}\n", layersPerTrack);
  os << llvm::formatv("lm head    {0}\n",
                      spec.lmHead.empty() ? "tied to the embedding"
                                          : spec.lmHead.c_str());
  os << "\n";
  os << llvm::formatv("{0,-6} {1,-34} {2,-44} {3}\n", "layer", "prefix",
                      "attention", "ffn");
  int64_t owning = 0, moeLayers = 0;
  for (const TrackBlockSpec &blk : spec.blocks)
    for (auto [t, track] : llvm::enumerate(blk.tracks))
      for (const LayerSpec &l : track) {
        const AttentionSpec &a = l.attn;
        std::string attn = llvm::formatv(
            "{0} {1}h/{2}kv x {3}", a.local ? "local" : "global", a.numHeads,
            a.numKvHeads, a.headDim);
        if (a.local)
          attn += llvm::formatv(" win {0}", a.window).str();
        attn += std::string(" rope ") + ropeName(a.rope);
        if (a.qkNorm)
          attn += " qk-norm";
        if (a.kvFakeQuant)
          attn += " kv-int8";
        if (a.reuseKvOfLayer >= 0)
          attn += llvm::formatv(" reuses-kv-of {0}", a.reuseKvOfLayer).str();
        else
          ++owning;
        std::string ffn;
        if (l.ffn.moe) {
          ++moeLayers;
          ffn = llvm::formatv("moe {0} experts top-{1} x {2}{3}",
                              l.ffn.numExperts, l.ffn.topK,
                              l.ffn.intermediate,
                              l.ffn.sharedGate.empty() ? "" : " +shared");
        } else {
          ffn = llvm::formatv("swiglu {0}", l.ffn.intermediate);
        }
        os << llvm::formatv("{0,-6} {1,-34} {2,-44} {3}\n", l.index, l.prefix,
                            attn, ffn);
      }
  os << "\n";
  const AttentionSpec &a0 = spec.blocks.front().tracks.front().front().attn;
  int64_t caches = spec.parallelTracks ? spec.numTracks : 1;
  int64_t perTok = 2 * owning * a0.numKvHeads * a0.headDim * 4;
  os << llvm::formatv("kv caches  {0} x ({1} owning layers of {2} kv heads x "
                      "{3}) f32, {4} per token, capacity {5}\n",
                      caches, owning / caches, a0.numKvHeads, a0.headDim,
                      humanBytes((double)perTok), opts.contextLength);
  if (moeLayers)
    os << llvm::formatv("moe        {0} MoE layers\n", moeLayers);
  os << llvm::formatv("parameters {0} ({1}) in {2} tensors\n", humanCount(params),
                      humanBytes((double)bytes), used.size());
}

} // namespace fm::import
