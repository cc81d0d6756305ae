// Verifiers, builders and custom syntax of the fm operations. Verifier
// messages speak the model's language: they name the layer (and the track)
// and the config-level quantity that is wrong.
#include "dialects/fm/IR/FmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fm;

namespace {

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? "?" : std::to_string(d);
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// The key of the parameter behind `v`, for messages ("" if not a param).
std::string paramName(Value v) {
  if (auto p = v.getDefiningOp<ParamOp>())
    return ("'" + p.getKey() + "'").str();
  return "";
}

/// "track 1 of block 0, " when `op` sits in a track block, else "".
std::string trackPrefix(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp()) {
    auto block = dyn_cast<TrackBlockOp>(parent);
    if (!block)
      continue;
    Region *r = op->getParentRegion();
    while (r && r->getParentOp() != block)
      r = r->getParentOp()->getParentRegion();
    return ("track " + Twine(r ? r->getRegionNumber() : 0) + " of block " +
            Twine(block.getBlock()) + ", ")
        .str();
  }
  return "";
}

/// Checks that weight `v` has `expected` shape; `why` explains it in config terms.
LogicalResult checkWeight(Operation *op, StringRef who, StringRef role, Value v,
                          ArrayRef<int64_t> expected, StringRef why) {
  if (!v)
    return success();
  ArrayRef<int64_t> got = shapeOf(v);
  if (got == expected)
    return success();
  std::string name = paramName(v);
  return op->emitOpError() << who << ": " << role << " weight"
                           << (name.empty() ? "" : " ") << name << " has shape "
                           << shapeStr(got) << ", expected "
                           << shapeStr(expected) << " (" << why << ")";
}

/// The static feature width of an activation, or failure with a message.
FailureOr<int64_t> featureDim(Operation *op, Value act, StringRef who) {
  int64_t h = shapeOf(act)[1];
  if (ShapedType::isDynamic(h)) {
    op->emitOpError() << who << ": the feature dimension must be static";
    return failure();
  }
  return h;
}

LogicalResult sameAsInput(Operation *op, StringRef who, Value in, Value out) {
  if (in.getType() != out.getType())
    return op->emitOpError() << who << ": result type " << out.getType()
                             << " differs from the input type " << in.getType();
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// ModelOp
//===----------------------------------------------------------------------===//

void ModelOp::build(OpBuilder &b, OperationState &state, StringRef name,
                    StringRef family, int64_t vocab, int64_t hidden) {
  state.addAttribute(getSymNameAttrName(state.name), b.getStringAttr(name));
  state.addAttribute(getFamilyAttrName(state.name), b.getStringAttr(family));
  state.addAttribute(getVocabSizeAttrName(state.name), b.getI64IntegerAttr(vocab));
  state.addAttribute(getHiddenSizeAttrName(state.name),
                     b.getI64IntegerAttr(hidden));
  Region *body = state.addRegion();
  body->push_back(new Block());
}

LogicalResult ModelOp::verifyImageInput(Operation *imagePhase) {
  auto image = dyn_cast_or_null<func::FuncOp>(imagePhase);
  std::string model = ("model '" + getSymName() + "'").str();
  const bool attrs = getImageMean() || getImageStd() || getImageResample() ||
                     getImageTokenIndex();
  if (!image) {
    if (attrs)
      return emitOpError() << model
                           << ": image_mean, image_std, image_resample and "
                              "image_token_index need an encode_image phase";
    return success();
  }
  FunctionType type = image.getFunctionType();
  auto in = type.getNumInputs() == 1
                ? dyn_cast<RankedTensorType>(type.getInput(0))
                : RankedTensorType();
  auto out = type.getNumResults() == 1
                 ? dyn_cast<RankedTensorType>(type.getResult(0))
                 : RankedTensorType();
  if (!in || in.getRank() != 3 || !in.hasStaticShape() ||
      !in.getElementType().isF32() || !out || out.getRank() != 2 ||
      !out.hasStaticShape())
    return image.emitOpError()
           << model << ": the encode_image phase takes one static [channels, "
                       "height, width] f32 image and returns static [tokens, "
                       "width] image tokens, got "
           << type;
  const int64_t channels = in.getShape()[0];
  for (auto [name, values] : {std::make_pair("image_mean", getImageMean()),
                              std::make_pair("image_std", getImageStd())}) {
    if (!values)
      continue;
    if ((int64_t)values->size() != channels)
      return emitOpError() << model << ": " << name << " has "
                           << values->size() << " values for an image of "
                           << channels << " channels";
    for (double v : *values)
      if (!std::isfinite(v) || (StringRef(name) == "image_std" && v == 0.0))
        return emitOpError() << model << ": " << name << " holds " << v
                             << " (finite values; image_std non-zero)";
  }
  if (auto r = getImageResample(); r && *r != "bicubic" && *r != "bilinear")
    return emitOpError() << model << ": image_resample '" << *r
                         << "' is not bicubic or bilinear";
  if (auto idx = getImageTokenIndex()) {
    if ((int64_t)*idx < 0 || (int64_t)*idx >= (int64_t)getVocabSize())
      return emitOpError() << model << ": image_token_index " << *idx
                           << " is outside the vocabulary of "
                           << getVocabSize() << " tokens";
    if (out.getShape()[1] != (int64_t)getHiddenSize())
      return emitOpError() << model << ": the image tokens are "
                           << out.getShape()[1]
                           << " wide but the decoder's hidden size is "
                           << getHiddenSize()
                           << " (adapter lm_hidden_size must equal it)";
  }
  return success();
}

Operation *ModelOp::lookupPhase(StringRef phase) {
  for (auto fn : getBodyBlock().getOps<func::FuncOp>()) {
    auto attr = fn->getAttrOfType<StringAttr>(FmDialect::kPhaseAttrName);
    if (attr && attr.getValue() == phase)
      return fn;
  }
  return nullptr;
}

LogicalResult ModelOp::verifyRegions() {
  llvm::StringMap<Operation *> phases;
  for (auto fn : getBodyBlock().getOps<func::FuncOp>())
    if (auto p = fn->getAttrOfType<StringAttr>(FmDialect::kPhaseAttrName))
      if (!phases.try_emplace(p.getValue(), fn).second)
        return fn.emitOpError() << "model '" << getSymName() << "' has two \""
                                << p.getValue() << "\" phase functions";
  auto image = dyn_cast_or_null<func::FuncOp>(phases.lookup(kImagePhase));
  const bool decoder = phases.size() > (image ? 1u : 0u);
  if ((int64_t)getHiddenSize() <= 0 ||
      ((int64_t)getVocabSize() <= 0 && (decoder || !image)))
    return emitOpError() << "model '" << getSymName()
                         << "': vocab_size and hidden_size must be positive"
                         << " (vocab_size may be 0 only in an image encoder "
                            "without a decoder)";
  if (failed(verifyImageInput(image.getOperation())))
    return failure();
  // The KV plan of each function: every slot has one writer, and a layer that
  // reuses a slot reads one that an earlier layer writes.
  for (Operation &fnOp : getBodyBlock()) {
    DenseMap<std::pair<Attribute, int64_t>, AttentionOp> writers;
    SmallVector<AttentionOp> readers;
    WalkResult walk = fnOp.walk([&](AttentionOp attn) {
      auto key = std::make_pair(Attribute(attn.getCacheAttr()),
                                attn.getCacheSlot());
      if (attn.getReuse()) {
        readers.push_back(attn);
        return WalkResult::advance();
      }
      auto [it, inserted] = writers.try_emplace(key, attn);
      if (!inserted) {
        attn.emitOpError() << attn.describe() << " writes slot "
                           << attn.getCacheSlot() << " of @"
                           << attn.getCache() << ", which "
                           << it->second.describe() << " already writes";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    for (AttentionOp reader : readers) {
      auto it = writers.find(
          {Attribute(reader.getCacheAttr()), reader.getCacheSlot()});
      if (it == writers.end())
        return reader.emitOpError()
               << reader.describe() << " reuses slot " << reader.getCacheSlot()
               << " of @" << reader.getCache()
               << ", but no layer writes that slot";
      AttentionOp writer = it->second;
      // Compare positions in the reader's block (the writer may be nested in
      // a track block there).
      Operation *w = reader->getBlock()->findAncestorOpInBlock(*writer);
      if (w && w != reader.getOperation() && !w->isBeforeInBlock(reader))
        return reader.emitOpError()
               << reader.describe() << " reuses the KV cache of "
               << writer.describe() << ", which comes after it";
      if (writer->getBlock() != reader->getBlock() &&
          !writer->getParentRegion()->isAncestor(reader->getParentRegion()) &&
          !reader->getParentRegion()->isAncestor(writer->getParentRegion()))
        return reader.emitOpError()
               << reader.describe() << " reuses the KV cache of "
               << writer.describe() << ", which runs in another track";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ParamOp, KvCacheOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (getKey().empty())
    return emitOpError() << "a parameter needs a non-empty checkpoint key";
  auto type = cast<RankedTensorType>(getType());
  if (!type.hasStaticShape())
    return emitOpError() << "parameter '" << getKey()
                         << "' must have a static shape, got " << type;
  if (auto st = getStorageAttr()) {
    Type t = st.getValue();
    if (!t.isF16() && !t.isF32())
      return emitOpError() << "parameter '" << getKey() << "': storage " << t
                           << " is not supported (f16 or f32)";
    if (getQuantAttr())
      return emitOpError() << "parameter '" << getKey()
                           << "' has both a quantized format and a storage type";
  }
  if (auto q = getQuantAttr()) {
    if (type.getRank() == 0)
      return emitOpError() << "parameter '" << getKey()
                           << "' is a scalar and cannot be quantized";
    int64_t in = type.getShape().back();
    if (in % q.getGroup() != 0)
      return emitOpError() << "parameter '" << getKey()
                           << "': quantization group " << q.getGroup()
                           << " does not divide its input dimension " << in;
  }
  return success();
}

LogicalResult KvCacheOp::verify() {
  for (auto [name, v] : {std::make_pair("layers", (int64_t)getLayers()),
                         std::make_pair("kv_heads", (int64_t)getKvHeads()),
                         std::make_pair("head_dim", (int64_t)getHeadDim()),
                         std::make_pair("capacity", (int64_t)getCapacity())})
    if (v <= 0)
      return emitOpError() << "KV cache @" << getSymName() << ": " << name
                           << " must be positive, got " << v;
  Type t = getElementType();
  if (!t.isF32() && !t.isF16() && !t.isBF16() && !t.isInteger(8))
    return emitOpError() << "KV cache @" << getSymName()
                         << ": element type must be f32, f16, bf16 or i8, got "
                         << t;
  return success();
}

int64_t KvCacheOp::bytesPerToken() {
  int64_t elem = (getElementType().getIntOrFloatBitWidth() + 7) / 8;
  return 2 * getLayers() * getKvHeads() * getHeadDim() * elem;
}

//===----------------------------------------------------------------------===//
// EmbeddingOp, RmsNormOp, LayerNormOp, LmHeadOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  ArrayRef<int64_t> table = shapeOf(getTable());
  if (table.size() != 2)
    return emitOpError() << "embedding table must be [vocab, hidden], got "
                         << shapeStr(table);
  ArrayRef<int64_t> out = shapeOf(getResult());
  if (out[1] != table[1])
    return emitOpError() << "embedding of width " << table[1]
                         << " cannot produce activations of width "
                         << dimStr(out[1]);
  int64_t s = shapeOf(getTokens())[0];
  if (!ShapedType::isDynamic(s) && !ShapedType::isDynamic(out[0]) && s != out[0])
    return emitOpError() << s << " tokens cannot produce " << out[0] << " rows";
  return success();
}

LogicalResult RmsNormOp::verify() {
  FailureOr<int64_t> h = featureDim(*this, getInput(), "rms_norm");
  if (failed(h))
    return failure();
  if (getEps().convertToDouble() <= 0)
    return emitOpError() << "rms_norm: eps must be positive";
  if (failed(checkWeight(*this, "rms_norm", "norm", getWeight(), {*h},
                         "hidden size")))
    return failure();
  return sameAsInput(*this, "rms_norm", getInput(), getResult());
}

LogicalResult LayerNormOp::verify() {
  FailureOr<int64_t> h = featureDim(*this, getInput(), "layer_norm");
  if (failed(h))
    return failure();
  if (getEps().convertToDouble() <= 0)
    return emitOpError() << "layer_norm: eps must be positive";
  if (failed(checkWeight(*this, "layer_norm", "norm", getWeight(), {*h},
                         "hidden size")) ||
      failed(checkWeight(*this, "layer_norm", "bias", getBias(), {*h},
                         "hidden size")))
    return failure();
  return sameAsInput(*this, "layer_norm", getInput(), getResult());
}

LogicalResult LmHeadOp::verify() {
  FailureOr<int64_t> h = featureDim(*this, getInput(), "lm_head");
  if (failed(h))
    return failure();
  ArrayRef<int64_t> w = shapeOf(getWeight());
  if (w.size() != 2 || w[1] != *h)
    return emitOpError() << "lm_head: weight has shape " << shapeStr(w)
                         << ", expected [vocab, " << *h << "]";
  if (shapeOf(getResult())[1] != w[0])
    return emitOpError() << "lm_head: " << w[0]
                         << " vocabulary rows cannot produce logits of width "
                         << dimStr(shapeOf(getResult())[1]);
  if (getTied()) {
    auto param = getWeight().getDefiningOp<ParamOp>();
    bool isEmbedding = false;
    if (param) {
      if (auto fn = (*this)->getParentOfType<func::FuncOp>())
        fn.walk([&](EmbeddingOp e) {
          if (auto t = e.getTable().getDefiningOp<ParamOp>())
            isEmbedding |= t.getKey() == param.getKey();
        });
    }
    if (!isEmbedding)
      {
      std::string name = paramName(getWeight());
      return emitOpError() << "lm_head is tied, but its weight "
                           << (name.empty() ? "" : name + " ")
                           << "is not the token embedding table";
    }
  }
  return success();
}

LogicalResult TakeLastOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  if (out[0] != 1 || out[1] != in[1])
    return emitOpError() << "take_last of " << shapeStr(in) << " must give [1, "
                         << dimStr(in[1]) << "], got " << shapeStr(out);
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

std::string AttentionOp::describe() {
  return trackPrefix(*this) + "layer " + std::to_string(getLayer());
}

LogicalResult AttentionOp::verify() {
  std::string who = describe();
  int64_t heads = (int64_t)getNumHeads(), kv = (int64_t)getNumKvHeads(),
          hd = (int64_t)getHeadDim();
  if (heads <= 0 || kv <= 0 || hd <= 0)
    return emitOpError() << who << ": num_heads (" << heads
                         << "), num_kv_heads (" << kv << ") and head_dim ("
                         << hd << ") must be positive";
  if (heads % kv != 0)
    return emitOpError() << who << ": " << heads
                         << " query heads cannot be grouped over " << kv
                         << " KV heads";
  if (getScale().convertToDouble() <= 0)
    return emitOpError() << who << ": attention scale must be positive";

  // Positional encoding.
  if (getRope() == RopeStyle::none) {
    if (getRopeTheta())
      return emitOpError() << who << ": rope_theta given without RoPE";
  } else {
    if (!getRopeTheta() || getRopeTheta()->convertToDouble() <= 0)
      return emitOpError() << who << ": RoPE needs a positive rope_theta";
    if (hd % 2 != 0)
      return emitOpError() << who << ": RoPE needs an even head_dim, got " << hd;
  }

  // Global or local.
  if (isLocal()) {
    int64_t window = getWindow() ? (int64_t)*getWindow() : 0;
    if (window <= 0)
      return emitOpError() << who
                           << ": local attention needs a window > 0, got "
                           << window;
  } else if (getWindow()) {
    return emitOpError() << who << ": global attention takes no window";
  }

  // Projections present.
  if (getQ() && getQkv())
    return emitOpError() << who << ": has both a q and a fused qkv projection";
  if (!getQ() && !getQkv())
    return emitOpError() << who << ": needs a q or a fused qkv projection";
  if (getReuse()) {
    for (auto [name, v] :
         {std::make_pair("k", getK()), std::make_pair("v", getV()),
          std::make_pair("qkv", getQkv()), std::make_pair("k_bias", getKBias()),
          std::make_pair("v_bias", getVBias()),
          std::make_pair("k_norm", getKNorm()),
          std::make_pair("k_scale", getKScale()),
          std::make_pair("v_scale", getVScale())})
      if (v)
        return emitOpError() << who << " reuses the KV cache of an earlier "
                             << "layer and must not have its own K/V weights "
                                "(found "
                             << name << ")";
  } else if (!getQkv() && (!getK() || !getV())) {
    return emitOpError() << who
                         << ": owns a KV cache slot but has no K/V projection";
  }
  if (bool(getKScale()) != bool(getVScale()))
    return emitOpError() << who
                         << ": KV fake-quant needs both k_scale and v_scale";
  if ((getQNorm() || getKNorm()) && !getQkNormEps())
    return emitOpError() << who << ": q/k norms need qk_norm_eps";

  // Shapes.
  FailureOr<int64_t> hOr = featureDim(*this, getInput(), who);
  if (failed(hOr))
    return failure();
  int64_t h = *hOr;
  std::string qwhy = "num_heads=" + std::to_string(heads) +
                     ", head_dim=" + std::to_string(hd);
  std::string kvwhy = "num_kv_heads=" + std::to_string(kv) +
                      ", head_dim=" + std::to_string(hd);
  std::string qkvwhy = "(num_heads + 2 * num_kv_heads) * head_dim with " +
                       qwhy + ", num_kv_heads=" + std::to_string(kv);
  if (failed(checkWeight(*this, who, "q", getQ(), {heads * hd, h}, qwhy)) ||
      failed(checkWeight(*this, who, "k", getK(), {kv * hd, h}, kvwhy)) ||
      failed(checkWeight(*this, who, "v", getV(), {kv * hd, h}, kvwhy)) ||
      failed(checkWeight(*this, who, "qkv", getQkv(),
                         {(heads + 2 * kv) * hd, h}, qkvwhy)) ||
      failed(checkWeight(*this, who, "o", getO(), {h, heads * hd}, qwhy)) ||
      failed(checkWeight(*this, who, "q_bias", getQBias(), {heads * hd}, qwhy)) ||
      failed(checkWeight(*this, who, "k_bias", getKBias(), {kv * hd}, kvwhy)) ||
      failed(checkWeight(*this, who, "v_bias", getVBias(), {kv * hd}, kvwhy)) ||
      failed(checkWeight(*this, who, "q_norm", getQNorm(), {hd}, "head_dim")) ||
      failed(checkWeight(*this, who, "k_norm", getKNorm(), {hd}, "head_dim")) ||
      failed(checkWeight(*this, who, "k_scale", getKScale(), {}, "a scalar")) ||
      failed(checkWeight(*this, who, "v_scale", getVScale(), {}, "a scalar")))
    return failure();
  if (failed(sameAsInput(*this, who, getInput(), getResult())))
    return failure();

  // The cache it writes or reads.
  auto cache =
      SymbolTable::lookupNearestSymbolFrom<KvCacheOp>(*this, getCacheAttr());
  if (!cache)
    return emitOpError() << who << ": no KV cache named @" << getCache();
  int64_t slot = (int64_t)getCacheSlot();
  if (slot < 0 || slot >= (int64_t)cache.getLayers())
    return emitOpError() << who << ": slot " << slot << " of @"
                         << getCache() << " is out of range (the cache has "
                         << cache.getLayers() << " slots)";
  if (cache.getKvHeads() != kv || cache.getHeadDim() != hd)
    return emitOpError() << who << ": attends with " << kv << " KV heads of "
                         << hd << ", but @" << getCache() << " holds "
                         << cache.getKvHeads() << " heads of "
                         << cache.getHeadDim();
  if (cache.getElementType().isInteger(8) && !getReuse() && !getKScale())
    return emitOpError() << who << ": writes the int8 cache @" << getCache()
                         << " but has no k_scale/v_scale";
  return success();
}

//===----------------------------------------------------------------------===//
// MlpOp, MoeOp
//===----------------------------------------------------------------------===//

LogicalResult MlpOp::verify() {
  std::string who = trackPrefix(*this) + "layer " + std::to_string(getLayer());
  FailureOr<int64_t> hOr = featureDim(*this, getInput(), who);
  if (failed(hOr))
    return failure();
  int64_t h = *hOr;
  bool swiglu = getActivation() == Activation::swiglu;
  if (swiglu && !getGate())
    return emitOpError() << who << ": a SwiGLU MLP needs a gate projection";
  if (!swiglu && getGate())
    return emitOpError() << who << ": a GELU MLP has no gate projection";
  ArrayRef<int64_t> up = shapeOf(getUp());
  if (up.size() != 2)
    return emitOpError() << who << ": up weight must be 2-D, got "
                         << shapeStr(up);
  int64_t inter = up[0];
  std::string why = "intermediate_size=" + std::to_string(inter) +
                    ", hidden_size=" + std::to_string(h);
  if (failed(checkWeight(*this, who, "up", getUp(), {inter, h}, why)) ||
      failed(checkWeight(*this, who, "gate", getGate(), {inter, h}, why)) ||
      failed(checkWeight(*this, who, "down", getDown(), {h, inter}, why)) ||
      failed(checkWeight(*this, who, "up_bias", getUpBias(), {inter}, why)) ||
      failed(checkWeight(*this, who, "down_bias", getDownBias(), {h}, why)))
    return failure();
  return sameAsInput(*this, who, getInput(), getResult());
}

LogicalResult MoeOp::verify() {
  std::string who = trackPrefix(*this) + "layer " + std::to_string(getLayer());
  int64_t e = getNumExperts(), k = getTopK();
  if (e <= 0)
    return emitOpError() << who << ": an MoE layer needs at least one expert";
  if (k <= 0)
    return emitOpError() << who << ": top-k must be at least 1, got " << k;
  if (k > e)
    return emitOpError() << who << ": top-k " << k << " exceeds the " << e
                         << " experts";
  for (auto [name, n] : {std::make_pair("gate", getGate().size()),
                         std::make_pair("up", getUp().size()),
                         std::make_pair("down", getDown().size())})
    if ((int64_t)n != e)
      return emitOpError() << who << ": " << n << " expert " << name
                           << " weights for " << e << " experts";
  FailureOr<int64_t> hOr = featureDim(*this, getInput(), who);
  if (failed(hOr))
    return failure();
  int64_t h = *hOr;
  if (failed(checkWeight(*this, who, "router", getRouter(), {e, h},
                         "num_experts=" + std::to_string(e) +
                             ", hidden_size=" + std::to_string(h))))
    return failure();
  ArrayRef<int64_t> g0 = shapeOf(getGate()[0]);
  if (g0.size() != 2)
    return emitOpError() << who << ": expert gate weight must be 2-D, got "
                         << shapeStr(g0);
  int64_t inter = g0[0];
  std::string why = "moe_intermediate_size=" + std::to_string(inter) +
                    ", hidden_size=" + std::to_string(h);
  for (int64_t i = 0; i < e; ++i) {
    std::string ex = who + " expert " + std::to_string(i);
    if (failed(checkWeight(*this, ex, "gate", getGate()[i], {inter, h}, why)) ||
        failed(checkWeight(*this, ex, "up", getUp()[i], {inter, h}, why)) ||
        failed(checkWeight(*this, ex, "down", getDown()[i], {h, inter}, why)))
      return failure();
  }
  int shared = bool(getSharedGate()) + bool(getSharedUp()) +
               bool(getSharedDown()) + bool(getSharedExpertGate());
  if (shared != 0 && shared != 4)
    return emitOpError() << who
                         << ": a shared expert needs shared_gate, shared_up, "
                            "shared_down and shared_expert_gate";
  if (shared == 4) {
    ArrayRef<int64_t> sg = shapeOf(getSharedGate());
    int64_t si = sg.size() == 2 ? sg[0] : -1;
    std::string swhy = "shared_expert_intermediate_size=" +
                       std::to_string(si) + ", hidden_size=" + std::to_string(h);
    if (failed(checkWeight(*this, who, "shared_gate", getSharedGate(), {si, h},
                           swhy)) ||
        failed(checkWeight(*this, who, "shared_up", getSharedUp(), {si, h},
                           swhy)) ||
        failed(checkWeight(*this, who, "shared_down", getSharedDown(), {h, si},
                           swhy)) ||
        failed(checkWeight(*this, who, "shared_expert_gate",
                           getSharedExpertGate(), {1, h}, "hidden_size")))
      return failure();
  }
  return sameAsInput(*this, who, getInput(), getResult());
}

//===----------------------------------------------------------------------===//
// TrackBlockOp
//===----------------------------------------------------------------------===//

void TrackBlockOp::build(OpBuilder &b, OperationState &state, Value input,
                         int64_t block, int64_t depth, Combine combine,
                         unsigned numTracks) {
  state.addOperands(input);
  state.addTypes(input.getType());
  state.addAttribute(getBlockAttrName(state.name), b.getI64IntegerAttr(block));
  state.addAttribute(getDepthAttrName(state.name), b.getI64IntegerAttr(depth));
  state.addAttribute(getCombineAttrName(state.name),
                     CombineAttr::get(b.getContext(), combine));
  for (unsigned t = 0; t < numTracks; ++t) {
    Region *r = state.addRegion();
    Block *body = new Block();
    body->addArgument(input.getType(), state.location);
    r->push_back(body);
  }
}

ParseResult TrackBlockOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::UnresolvedOperand input;
  Type type;
  llvm::SMLoc attrLoc = parser.getCurrentLocation();
  if (parser.parseOperand(input) ||
      parser.parseOptionalAttrDict(result.attributes) || parser.parseColon() ||
      parser.parseType(type) ||
      parser.resolveOperand(input, type, result.operands))
    return failure();
  result.addTypes(type);
  // The generic checks would only say the attribute is missing.
  if (Attribute c = result.attributes.get("combine"); c && !isa<CombineAttr>(c))
    return parser.emitError(attrLoc)
           << "attribute 'combine' failed to satisfy constraint: how track "
              "outputs are reduced (#fm<combine mean> or #fm<combine sum>)";
  while (succeeded(parser.parseOptionalKeyword("track"))) {
    SmallVector<OpAsmParser::Argument> args;
    if (parser.parseArgumentList(args, OpAsmParser::Delimiter::Paren,
                                 /*allowType=*/true))
      return failure();
    Region *region = result.addRegion();
    if (parser.parseRegion(*region, args))
      return failure();
  }
  return success();
}

void TrackBlockOp::print(OpAsmPrinter &p) {
  p << " " << getInput();
  p.printOptionalAttrDict((*this)->getAttrs());
  p << " : " << getType();
  for (Region &r : getTracks()) {
    p.printNewline();
    p << "  track (";
    if (!r.empty())
      llvm::interleaveComma(r.getArguments(), p,
                            [&](BlockArgument a) { p.printRegionArgument(a); });
    p << ") ";
    p.printRegion(r, /*printEntryBlockArgs=*/false);
  }
}

LogicalResult TrackBlockOp::verify() {
  int64_t b = getBlock();
  if (getTracks().empty())
    return emitOpError() << "track block " << b << " has no tracks";
  if ((int64_t)getDepth() <= 0)
    return emitOpError() << "track block " << b << ": depth must be positive";
  if (failed(sameAsInput(*this, "track block " + std::to_string(b), getInput(),
                         getResult())))
    return failure();
  DenseMap<Attribute, unsigned> cacheOwner;
  for (Region &r : getTracks()) {
    unsigned t = r.getRegionNumber();
    std::string who =
        "track " + std::to_string(t) + " of block " + std::to_string(b);
    if (r.empty() || r.front().getNumArguments() != 1 ||
        r.front().getArgument(0).getType() != getInput().getType())
      return emitOpError() << who << " must take the block input ("
                           << getInput().getType() << ") as its one argument";
    auto yield = r.front().empty() ? YieldOp()
                                   : dyn_cast<YieldOp>(r.front().back());
    if (!yield)
      return emitOpError() << who << " must end with fm.yield";
    if (yield.getValue().getType() != getType())
      return emitOpError() << who << " yields " << yield.getValue().getType()
                           << ", but the block's result is " << getType();
    int64_t layers = 0;
    WalkResult walk = r.walk([&](AttentionOp attn) {
      ++layers;
      auto [it, inserted] = cacheOwner.try_emplace(attn.getCacheAttr(), t);
      if (!inserted && it->second != t) {
        emitOpError() << "tracks " << it->second << " and " << t << " of block "
                      << b << " share the KV cache @" << attn.getCache()
                      << ", but tracks must be independent";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    if (layers != (int64_t)getDepth())
      return emitOpError() << who << " has " << layers
                           << (layers == 1 ? " layer" : " layers")
                           << ", but the block has depth " << getDepth();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ViT
//===----------------------------------------------------------------------===//

LogicalResult PatchEmbedOp::verify() {
  ArrayRef<int64_t> img = shapeOf(getImage());
  ArrayRef<int64_t> w = shapeOf(getWeight());
  int64_t p = (int64_t)getPatchSize();
  if (!cast<RankedTensorType>(getImage().getType()).hasStaticShape())
    return emitOpError() << "patch_embed: the image must have a static shape, got "
                         << getImage().getType();
  if (p <= 0)
    return emitOpError() << "patch_embed: patch size must be positive";
  if (w.size() != 4 || w[1] != img[0] || w[2] != p || w[3] != p)
    return emitOpError() << "patch_embed: weight has shape " << shapeStr(w)
                         << ", expected [dim, " << img[0] << ", " << p << ", "
                         << p << "] (channels, patch " << p << ")";
  if (img[1] % p != 0 || img[2] % p != 0)
    return emitOpError() << "patch_embed: image " << img[1] << "x" << img[2]
                         << " is not a whole number of " << p << "x" << p
                         << " patches";
  int64_t gh = img[1] / p, gw = img[2] / p, n = gh * gw;
  if (failed(checkWeight(*this, "patch_embed", "bias", getBias(), {w[0]},
                         "embedding dim")))
    return failure();
  if (Value pos = getPos(); pos && shapeOf(pos) != ArrayRef<int64_t>{1, gh, gw, w[0]} &&
                            failed(checkWeight(*this, "patch_embed", "pos", pos,
                                               {n, w[0]},
                                               "patches x dim, or [1, " +
                                                   std::to_string(gh) + ", " +
                                                   std::to_string(gw) +
                                                   ", dim]")))
    return failure();
  ArrayRef<int64_t> out = shapeOf(getResult());
  if (out[0] != n || out[1] != w[0])
    return emitOpError() << "patch_embed: result must be " << shapeStr({n, w[0]})
                         << " (" << img[1] / p << "x" << img[2] / p
                         << " patches), got " << shapeStr(out);
  return success();
}

LogicalResult RegisterTokensOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), reg = shapeOf(getRegisters());
  ArrayRef<int64_t> out = shapeOf(getResult());
  if (reg.size() != 2 || reg[1] != in[1])
    return emitOpError() << "register tokens must be [count, " << in[1]
                         << "], got " << shapeStr(reg);
  int64_t want = ShapedType::isDynamic(in[0]) ? ShapedType::kDynamic
                                              : in[0] + reg[0];
  if (out[1] != in[1] || out[0] != want)
    return emitOpError() << "register_tokens: result must be "
                         << shapeStr({want, in[1]}) << ", got "
                         << shapeStr(out);
  return success();
}

LogicalResult VitAttentionOp::verify() {
  std::string who = "vit layer " + std::to_string(getLayer());
  ArrayRef<int64_t> grid = getGrid();
  if (grid.size() != 2 || grid[0] <= 0 || grid[1] <= 0)
    return emitOpError() << who << ": grid must be two positive sizes";
  int64_t heads = (int64_t)getNumHeads(), hd = (int64_t)getHeadDim(),
          r = (int64_t)getNumRegisters();
  if (heads <= 0 || hd <= 0 || r < 0)
    return emitOpError() << who << ": num_heads and head_dim must be positive "
                         << "and num_registers non-negative";
  int64_t sh = grid[0], sw = grid[1]; // the relative-position extent
  if (getMode() == VitAttentionMode::window) {
    int64_t w = getWindow() ? (int64_t)*getWindow() : 0;
    if (w <= 0)
      return emitOpError() << who << ": window attention needs a window > 0";
    // A window wider than both sides is one window of mostly padding.
    if (w > std::max(grid[0], grid[1]))
      return emitOpError() << who << ": window " << w << " is larger than the "
                           << grid[0] << "x" << grid[1]
                           << " grid (at most its larger side)";
    // On a thin grid the larger side still allows windows whose padding is
    // most of the work; the runtime's loader refuses padding past 4x the
    // grid (every window up to the smaller side is under it).
    const double padH = double((grid[0] + w - 1) / w * w),
                 padW = double((grid[1] + w - 1) / w * w);
    if (padH * padW > 4.0 * double(grid[0]) * double(grid[1]))
      return emitOpError() << who << ": window " << w << " pads the "
                           << grid[0] << "x" << grid[1]
                           << " grid to more than 4x its positions";
    sh = sw = w;
  } else if (getWindow()) {
    return emitOpError() << who << ": global attention takes no window";
  }
  if (bool(getRelPosH()) != bool(getRelPosW()))
    return emitOpError() << who
                         << ": relative positions need both rel_pos_h and "
                            "rel_pos_w";
  std::string relWhy =
      getMode() == VitAttentionMode::window
          ? "2 x window - 1 positions of head_dim"
          : "2 x grid - 1 positions of head_dim (a global layer spans the grid)";
  if (failed(checkWeight(*this, who, "rel_pos_h", getRelPosH(), {2 * sh - 1, hd},
                         relWhy)) ||
      failed(checkWeight(*this, who, "rel_pos_w", getRelPosW(), {2 * sw - 1, hd},
                         relWhy)))
    return failure();
  FailureOr<int64_t> hOr = featureDim(*this, getInput(), who);
  if (failed(hOr))
    return failure();
  int64_t h = *hOr, tokens = shapeOf(getInput())[0];
  if (!ShapedType::isDynamic(tokens) && tokens != r + grid[0] * grid[1])
    return emitOpError() << who << ": " << tokens << " tokens, expected " << r
                         << " registers + " << grid[0] << "x" << grid[1]
                         << " patches";
  std::string why = "num_heads=" + std::to_string(heads) +
                    ", head_dim=" + std::to_string(hd);
  if (failed(checkWeight(*this, who, "qkv", getQkv(), {3 * heads * hd, h},
                         why)) ||
      failed(checkWeight(*this, who, "o", getO(), {h, heads * hd}, why)) ||
      failed(checkWeight(*this, who, "qkv_bias", getQkvBias(),
                         {3 * heads * hd}, why)) ||
      failed(checkWeight(*this, who, "o_bias", getOBias(), {h}, why)))
    return failure();
  return sameAsInput(*this, who, getInput(), getResult());
}

LogicalResult DropRegistersOp::verify() {
  int64_t r = (int64_t)getNumRegisters();
  if (r < 0)
    return emitOpError() << "drop_registers: num_registers must be "
                            "non-negative, got "
                         << r;
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  int64_t want = ShapedType::isDynamic(in[0]) ? ShapedType::kDynamic : in[0] - r;
  if (!ShapedType::isDynamic(want) && want < 0)
    return emitOpError() << "drop_registers: " << in[0]
                         << " tokens hold fewer than " << r << " registers";
  if (out[1] != in[1] || out[0] != want)
    return emitOpError() << "drop_registers: result must be "
                         << shapeStr({want, in[1]}) << ", got " << shapeStr(out);
  return success();
}

LogicalResult VlAdapterOp::verify() {
  ArrayRef<int64_t> grid = getGrid();
  if (grid.size() != 2 || grid[0] <= 0 || grid[1] <= 0)
    return emitOpError() << "vl_adapter: grid must be two positive sizes";
  if (grid[0] != grid[1])
    return emitOpError() << "vl_adapter: the adapter pools a square patch "
                            "grid, got "
                         << grid[0] << "x" << grid[1];
  int64_t n = (int64_t)getNumTokens();
  int64_t side = (int64_t)std::llround(std::sqrt((double)std::max<int64_t>(n, 0)));
  if (n <= 0 || side * side != n)
    return emitOpError() << "vl_adapter: " << n
                         << " image tokens is not a square number";
  if (side > grid[0])
    return emitOpError() << "vl_adapter: cannot pool the " << grid[0] << "x"
                         << grid[1] << " patch grid to " << side << "x" << side
                         << " tokens (the adapter grid must be at most the "
                            "patch grid)";
  if ((int64_t)getNumRegisters() < 0)
    return emitOpError() << "vl_adapter: num_registers must be non-negative, got "
                         << (int64_t)getNumRegisters();
  int64_t k = (int64_t)getConvKernel();
  if (k <= 0 || k % 2 == 0)
    return emitOpError() << "vl_adapter: conv kernel must be odd, got " << k;
  FailureOr<int64_t> hOr = featureDim(*this, getInput(), "vl_adapter");
  if (failed(hOr))
    return failure();
  int64_t tokens = shapeOf(getInput())[0];
  if (!ShapedType::isDynamic(tokens) &&
      tokens != getNumRegisters() + grid[0] * grid[1])
    return emitOpError() << "vl_adapter: " << tokens << " tokens, expected "
                         << getNumRegisters() << " registers + " << grid[0]
                         << "x" << grid[1] << " patches";
  ArrayRef<int64_t> pw = shapeOf(getProjWeight());
  if (pw.size() != 2 || pw[1] != *hOr)
    return emitOpError() << "vl_adapter: projection has shape " << shapeStr(pw)
                         << ", expected [lm_hidden, " << *hOr << "]";
  int64_t d = pw[0];
  if (failed(checkWeight(*this, "vl_adapter", "proj_bias", getProjBias(), {d},
                         "lm_hidden")) ||
      failed(checkWeight(*this, "vl_adapter", "conv", getConvWeight(),
                         {d, d, k, k}, "lm_hidden x lm_hidden x kernel x kernel")) ||
      failed(checkWeight(*this, "vl_adapter", "conv_bias", getConvBias(), {d},
                         "lm_hidden")))
    return failure();
  ArrayRef<int64_t> out = shapeOf(getResult());
  if (out[0] != n || out[1] != d)
    return emitOpError() << "vl_adapter: result must be " << shapeStr({n, d})
                         << ", got " << shapeStr(out);
  return success();
}

#define GET_OP_CLASSES
#include "dialects/fm/IR/FmOps.cpp.inc"
