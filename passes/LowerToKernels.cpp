// fm-lower-to-kernels: fm model graph → fmk kernel level.
#include "dialects/fm/IR/FmOps.h"
#include "dialects/fmk/IR/FmkDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include <cmath>
#include <tuple>

namespace mlir::fm {
#define GEN_PASS_DEF_LOWERTOKERNELSPASS
#include "passes/Passes.h.inc"

namespace {

RankedTensorType rowsOf(Value like, int64_t width) {
  auto t = cast<RankedTensorType>(like.getType());
  return RankedTensorType::get({t.getShape()[0], width}, t.getElementType());
}

class Lowering {
public:
  explicit Lowering(OpBuilder &b) : b(b) {}

  IntegerAttr i64(int64_t v) { return b.getI64IntegerAttr(v); }

  Value matmul(Location loc, Value x, ValueRange weights) {
    int64_t n = 0;
    for (Value w : weights)
      n += cast<RankedTensorType>(w.getType()).getShape()[0];
    return fmk::MatmulOp::create(b, loc, rowsOf(x, n), x, weights, Value());
  }

  Value lowerAttention(AttentionOp op) {
    Location loc = op.getLoc();
    int64_t h = op.getNumHeads(), kv = op.getNumKvHeads(), d = op.getHeadDim();
    Value n = op.getInput(), pos = op.getPos();
    Value q, k, v;
    if (Value qkv = op.getQkv()) {
      Value p = matmul(loc, n, qkv);
      q = fmk::SliceColsOp::create(b, loc, rowsOf(n, h * d), p, 0);
      k = fmk::SliceColsOp::create(b, loc, rowsOf(n, kv * d), p, h * d);
      v = fmk::SliceColsOp::create(b, loc, rowsOf(n, kv * d), p, (h + kv) * d);
    } else {
      q = matmul(loc, n, op.getQ());
      if (!op.getReuse()) {
        k = matmul(loc, n, op.getK());
        v = matmul(loc, n, op.getV());
      }
    }
    auto bias = [&](Value x, Value bv) {
      return bv ? fmk::AddBiasOp::create(b, loc, x.getType(), x, bv).getResult()
                : x;
    };
    q = bias(q, op.getQBias());
    if (k) {
      k = bias(k, op.getKBias());
      v = bias(v, op.getVBias());
    }
    if (op.getRope() != RopeStyle::none) {
      auto style = op.getRope() == RopeStyle::half ? fmk::RopeStyle::half
                                                   : fmk::RopeStyle::interleaved;
      FloatAttr theta = b.getF64FloatAttr(op.getRopeTheta()->convertToDouble());
      auto styleAttr = fmk::RopeStyleAttr::get(b.getContext(), style);
      q = fmk::RopeOp::create(b, loc, q.getType(), q, pos, i64(h), i64(d), theta,
                              styleAttr);
      if (k)
        k = fmk::RopeOp::create(b, loc, k.getType(), k, pos, i64(kv), i64(d),
                                theta, styleAttr);
    }
    FloatAttr eps = b.getF64FloatAttr(
        op.getQkNormEps() ? op.getQkNormEps()->convertToDouble() : 0);
    if (Value w = op.getQNorm())
      q = fmk::HeadNormOp::create(b, loc, q.getType(), q, w, i64(h), i64(d), eps);
    if (Value w = op.getKNorm())
      k = fmk::HeadNormOp::create(b, loc, k.getType(), k, w, i64(kv), i64(d),
                                  eps);
    if (k && op.getKScale()) {
      k = fmk::FakeQuantOp::create(b, loc, k.getType(), k, op.getKScale());
      v = fmk::FakeQuantOp::create(b, loc, v.getType(), v, op.getVScale());
    }
    // An int8 cache stores round(x / s): the scales of the layer that owns
    // the slot (a reusing layer reads with its owner's scales).
    auto cache = SymbolTable::lookupNearestSymbolFrom<KvCacheOp>(
        op, op.getCacheAttr());
    bool int8 = cache && cache.getElementType().isInteger(8);
    Value ks, vs;
    if (int8) {
      auto it = slotScales.find({op.getCacheAttr().getAttr(), op.getCacheSlot()});
      if (!op.getReuse())
        slotScales[{op.getCacheAttr().getAttr(), op.getCacheSlot()}] = {
            op.getKScale(), op.getVScale()};
      else if (it != slotScales.end())
        std::tie(ks, vs) = it->second;
      if (!op.getReuse())
        std::tie(ks, vs) = std::make_pair(op.getKScale(), op.getVScale());
    }
    if (k) {
      for (auto [x, part, s] : {std::make_tuple(k, fmk::KvPart::k, ks),
                                std::make_tuple(v, fmk::KvPart::v, vs)})
        fmk::CacheWriteOp::create(b, loc, x, pos, op.getCacheAttr(),
                                  i64(op.getCacheSlot()),
                                  fmk::KvPartAttr::get(b.getContext(), part),
                                  int8 ? s : Value());
    }
    Value a = fmk::AttentionOp::create(
        b, loc, q.getType(), q, pos, op.getCacheAttr(), i64(op.getCacheSlot()),
        i64(h), i64(kv), i64(d), op.getScaleAttr(),
        i64(op.isLocal() ? *op.getWindow() : 0), ks, vs);
    return matmul(loc, a, op.getO());
  }

  /// act(x · wᵀ + bias): a matmul with its epilogue.
  Value linear(Location loc, Value x, Value w, Value bias,
               fmk::ActivationAttr act = {}) {
    int64_t n = cast<RankedTensorType>(w.getType()).getShape()[0];
    return fmk::MatmulOp::create(b, loc, rowsOf(x, n), x, ValueRange{w},
                                 Value(), bias, act);
  }

  /// The ViT MLPs: fc2(act(fc1(x) + b1)) + b2, the activation and the
  /// biases in the matmuls' epilogues.
  Value lowerGeluMlp(MlpOp op) {
    Location loc = op.getLoc();
    fmk::Activation act = op.getActivation() == Activation::gelu_tanh
                              ? fmk::Activation::gelu_tanh
                          : op.getActivation() == Activation::quick_gelu
                              ? fmk::Activation::quick_gelu
                              : fmk::Activation::gelu;
    Value h = linear(loc, op.getInput(), op.getUp(), op.getUpBias(),
                     fmk::ActivationAttr::get(b.getContext(), act));
    return linear(loc, h, op.getDown(), op.getDownBias());
  }

  /// qkv projection (+ bias), the attention micro-kernel, the output
  /// projection (+ bias). A window layer's padded tokens take the qkv bias
  /// as their qkv row (they are 0 after LN1).
  Value lowerVitAttention(VitAttentionOp op) {
    Location loc = op.getLoc();
    Value qkv = linear(loc, op.getInput(), op.getQkv(), op.getQkvBias());
    const bool window = op.getMode() == VitAttentionMode::window;
    Value a = fmk::VitAttentionOp::create(
        b, loc, rowsOf(op.getInput(), op.getNumHeads() * op.getHeadDim()), qkv,
        op.getRelPosH(), op.getRelPosW(), window ? op.getQkvBias() : Value(),
        i64(op.getNumHeads()), i64(op.getHeadDim()), op.getScaleAttr(),
        i64(window ? *op.getWindow() : 0), op.getGridAttr(),
        i64(op.getNumRegisters()));
    return linear(loc, a, op.getO(), op.getOBias());
  }

  Value lowerPatchEmbed(PatchEmbedOp op) {
    return fmk::PatchEmbedOp::create(b, op.getLoc(), op.getType(), op.getImage(),
                                     op.getWeight(), op.getBias(), op.getPos(),
                                     Value(), i64(op.getPatchSize()));
  }

  /// The registers go into the patch embedding that makes their tokens: one
  /// kernel writes [registers ; patches + pos].
  FailureOr<Value> lowerRegisterTokens(RegisterTokensOp op) {
    auto pe = op.getInput().getDefiningOp<fmk::PatchEmbedOp>();
    if (!pe || !pe->hasOneUse() || pe.getRegisters())
      return op.emitOpError()
             << "register tokens must be prepended to the output of an "
                "fm.patch_embed that nothing else reads";
    Value x = fmk::PatchEmbedOp::create(b, op.getLoc(), op.getType(),
                                        pe.getImage(), pe.getWeight(),
                                        pe.getBias(), pe.getPos(),
                                        op.getRegisters(), pe.getPatchAttr());
    dead.push_back(pe); // once the register op is gone
    return x;
  }

  Value dropRows(Location loc, Value x, int64_t count) {
    if (count == 0)
      return x;
    auto t = cast<RankedTensorType>(x.getType());
    auto type = RankedTensorType::get({t.getShape()[0] - count, t.getShape()[1]},
                                      t.getElementType());
    return fmk::DropRowsOp::create(b, loc, type, x, i64(count));
  }

  /// linear (+ bias), the 3x3 convolution (+ bias), the average pooling.
  FailureOr<Value> lowerVlAdapter(VlAdapterOp op) {
    if (op.getConvKernel() != 3)
      return op.emitOpError() << "vl_adapter: a " << op.getConvKernel() << "x"
                              << op.getConvKernel()
                              << " convolution has no kernel (3x3 does)";
    Location loc = op.getLoc();
    Value x = dropRows(loc, op.getInput(), op.getNumRegisters());
    Value y = linear(loc, x, op.getProjWeight(), op.getProjBias());
    Value c = fmk::Conv3x3Op::create(b, loc, y.getType(), y, op.getConvWeight(),
                                     op.getConvBias(), op.getGridAttr());
    const int64_t out = (int64_t)std::llround(std::sqrt((double)op.getNumTokens()));
    return fmk::AvgPoolOp::create(b, loc, op.getType(), c, i64(op.getGrid()[0]),
                                  i64(out))
        .getResult();
  }

  FailureOr<Value> lowerMlp(MlpOp op) {
    if (op.getActivation() != Activation::swiglu)
      return lowerGeluMlp(op);
    Location loc = op.getLoc();
    Value n = op.getInput();
    Value g = matmul(loc, n, op.getGate());
    Value u = matmul(loc, n, op.getUp());
    Value h = fmk::SiluMulOp::create(b, loc, g.getType(), g, u);
    return matmul(loc, h, op.getDown());
  }

  Value lowerMoe(MoeOp op) {
    return fmk::MoeOp::create(
        b, op.getLoc(), op.getType(), op.getInput(), op.getRouter(),
        op.getGate(), op.getUp(), op.getDown(), op.getSharedGate(),
        op.getSharedUp(), op.getSharedDown(), op.getSharedExpertGate(),
        Value(), i64(op.getTopK()),
        op.getNormTopkProb() ? b.getUnitAttr() : UnitAttr());
  }

  /// fm.track_block → fmk.tracks (the tracks' layers, lowered, one region
  /// each) and the fmk.all_reduce that combines the tracks' outputs (the
  /// sum, scaled for a mean); fm-partition-tracks places it.
  LogicalResult lowerTrackBlock(TrackBlockOp tb) {
    const int64_t t = tb.getNumTracks();
    b.setInsertionPoint(tb);
    Location loc = tb.getLoc();
    SmallVector<Type> types(t, tb.getType());
    auto tracks = fmk::TracksOp::create(b, loc, types, i64(tb.getBlock()),
                                        DenseI64ArrayAttr(), unsigned(t));
    for (Region &r : tb.getTracks()) {
      Region &dst = tracks.getTracks()[r.getRegionNumber()];
      dst.takeBody(r);
      Block &body = dst.front();
      body.getArgument(0).replaceAllUsesWith(tb.getInput());
      body.eraseArgument(0);
      auto yield = cast<YieldOp>(body.getTerminator());
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(yield);
      fmk::YieldOp::create(b, yield.getLoc(), yield->getOperands());
      yield.erase();
      if (failed(lowerBlock(body)))
        return failure();
    }
    b.setInsertionPoint(tb);
    const double scale = tb.getCombine() == Combine::mean ? 1.0 / double(t) : 1.0;
    auto combine = fmk::AllReduceOp::create(b, loc, tb.getType(),
                                            tracks.getResults(),
                                            b.getF64FloatAttr(scale),
                                            DenseI64ArrayAttr());
    tb.getResult().replaceAllUsesWith(combine.getResult());
    tb.erase();
    return success();
  }

  LogicalResult lowerFunction(func::FuncOp fn) {
    return lowerBlock(fn.getBody().front());
  }

  LogicalResult lowerBlock(Block &block) {
    for (Operation &op : llvm::make_early_inc_range(block)) {
      b.setInsertionPoint(&op);
      SmallVector<Value> replacements;
      if (isa<ParamOp, func::ReturnOp>(op) ||
          isa_and_nonnull<fmk::FmkDialect>(op.getDialect()))
        continue;
      if (auto tb = dyn_cast<TrackBlockOp>(op)) {
        if (failed(lowerTrackBlock(tb)))
          return failure();
        continue;
      }
      if (auto e = dyn_cast<EmbeddingOp>(op)) {
        replacements.push_back(fmk::EmbedOp::create(
            b, e.getLoc(), e.getType(), e.getTokens(), e.getTable()));
      } else if (auto n = dyn_cast<RmsNormOp>(op)) {
        replacements.push_back(fmk::RmsNormOp::create(
            b, n.getLoc(), n.getType(), n.getInput(), n.getWeight(),
            n.getEps()));
      } else if (auto n = dyn_cast<LayerNormOp>(op)) {
        replacements.push_back(fmk::LayerNormOp::create(
            b, n.getLoc(), n.getType(), n.getInput(), n.getWeight(),
            n.getBias(), n.getEps()));
      } else if (auto pe = dyn_cast<PatchEmbedOp>(op)) {
        replacements.push_back(lowerPatchEmbed(pe));
      } else if (auto rt = dyn_cast<RegisterTokensOp>(op)) {
        FailureOr<Value> r = lowerRegisterTokens(rt);
        if (failed(r))
          return failure();
        replacements.push_back(*r);
      } else if (auto va = dyn_cast<VitAttentionOp>(op)) {
        replacements.push_back(lowerVitAttention(va));
      } else if (auto dr = dyn_cast<DropRegistersOp>(op)) {
        replacements.push_back(
            dropRows(dr.getLoc(), dr.getInput(), dr.getNumRegisters()));
      } else if (auto ad = dyn_cast<VlAdapterOp>(op)) {
        FailureOr<Value> r = lowerVlAdapter(ad);
        if (failed(r))
          return failure();
        replacements.push_back(*r);
      } else if (auto a = dyn_cast<AddOp>(op)) {
        replacements.push_back(fmk::AddOp::create(b, a.getLoc(), a.getType(),
                                                  a.getLhs(), a.getRhs()));
      } else if (auto attn = dyn_cast<AttentionOp>(op)) {
        replacements.push_back(lowerAttention(attn));
      } else if (auto mlp = dyn_cast<MlpOp>(op)) {
        FailureOr<Value> r = lowerMlp(mlp);
        if (failed(r))
          return failure();
        replacements.push_back(*r);
      } else if (auto moe = dyn_cast<MoeOp>(op)) {
        replacements.push_back(lowerMoe(moe));
      } else if (auto head = dyn_cast<LmHeadOp>(op)) {
        replacements.push_back(
            matmul(head.getLoc(), head.getInput(), head.getWeight()));
      } else if (auto take = dyn_cast<TakeLastOp>(op)) {
        auto k = fmk::TakeLastOp::create(b, take.getLoc(), take.getType(0),
                                         b.getIndexType(), take.getInput(),
                                         take.getPos());
        replacements.append({k.getResult(), k.getLastPos()});
      } else {
        return op.emitOpError() << op.getName().getStringRef()
                                << " has no lowering to the kernel level yet";
      }
      op.replaceAllUsesWith(replacements);
      op.erase();
    }
    for (Operation *op : dead)
      op->erase();
    dead.clear();
    return success();
  }

private:
  OpBuilder &b;
  /// Kernels that a later op folded into its own, erased after the block.
  SmallVector<Operation *> dead;
  /// (cache, slot) → the K/V scales of the layer that writes it.
  DenseMap<std::pair<Attribute, int64_t>, std::pair<Value, Value>> slotScales;
};

struct LowerToKernelsPass
    : impl::LowerToKernelsPassBase<LowerToKernelsPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    Lowering lowering(b);
    getOperation().walk([&](ModelOp model) {
      for (auto fn : model.getBodyBlock().getOps<func::FuncOp>())
        if (failed(lowering.lowerFunction(fn)))
          return signalPassFailure();
    });
  }
};

} // namespace
} // namespace mlir::fm
