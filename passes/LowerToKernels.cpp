// fm-lower-to-kernels: fm model graph → fmk kernel level.
#include "dialects/fm/IR/FmOps.h"
#include "dialects/fmk/IR/FmkDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
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

  FailureOr<Value> lowerMlp(MlpOp op) {
    if (op.getActivation() != Activation::swiglu)
      return op.emitOpError() << "layer " << op.getLayer()
                              << ": GELU MLPs (ViT) have no CPU lowering yet";
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

  /// Moves the tracks of `tb` into its block, each op tagged
  /// fmk.track = [block, track, device], and combines them: the sum of the
  /// tracks' results (scaled for a mean), or, when the model is partitioned,
  /// per-device partial sums and one fmk.all_reduce.
  void inlineTrackBlock(TrackBlockOp tb, int64_t numDevices) {
    int64_t blk = tb.getBlock(), t = tb.getNumTracks();
    auto devs = tb.getDevicesAttr();
    SmallVector<Value> outs;
    SmallVector<int64_t> devOf;
    for (Region &r : tb.getTracks()) {
      int64_t ti = r.getRegionNumber();
      int64_t dev = numDevices > 1 && devs ? devs[ti] : -1;
      Block &body = r.front();
      body.getArgument(0).replaceAllUsesWith(tb.getInput());
      auto yield = cast<YieldOp>(body.getTerminator());
      outs.push_back(yield.getValue());
      devOf.push_back(dev);
      auto tag = b.getDenseI64ArrayAttr({blk, ti, dev});
      for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
        op.moveBefore(tb);
        op.walk([&](Operation *inner) {
          inner->setAttr(fmk::FmkDialect::kTrackAttr, tag);
        });
      }
    }
    b.setInsertionPoint(tb);
    Location loc = tb.getLoc();
    double scale = tb.getCombine() == Combine::mean ? 1.0 / double(t) : 1.0;
    auto sumOf = [&](ArrayRef<Value> vs, int64_t dev) {
      Value acc = vs.front();
      for (Value v : vs.drop_front()) {
        auto add = fmk::AddOp::create(b, loc, acc.getType(), acc, v);
        if (dev >= 0) // a device's partial sum runs on that device only
          add->setAttr(fmk::FmkDialect::kTrackAttr,
                       b.getDenseI64ArrayAttr({-1, -1, dev}));
        acc = add;
      }
      return acc;
    };
    Value result;
    if (numDevices <= 1) {
      result = sumOf(outs, -1);
      if (scale != 1.0)
        result = fmk::ScaleOp::create(b, loc, result.getType(), result,
                                      b.getF64FloatAttr(scale));
    } else {
      SmallVector<Value> partials;
      for (int64_t d = 0; d < numDevices; ++d) {
        SmallVector<Value> mine;
        for (auto [v, dv] : llvm::zip(outs, devOf))
          if (dv == d)
            mine.push_back(v);
        partials.push_back(sumOf(mine, d));
      }
      result = fmk::AllReduceOp::create(b, loc, tb.getType(), partials,
                                        b.getF64FloatAttr(scale));
    }
    tb.getResult().replaceAllUsesWith(result);
    tb.erase();
  }

  LogicalResult lowerFunction(func::FuncOp fn) {
    auto model = fn->getParentOfType<ModelOp>();
    int64_t numDevices =
        model && model.getNumDevices() ? (int64_t)*model.getNumDevices() : 1;
    for (auto tb : llvm::make_early_inc_range(
             fn.getBody().front().getOps<TrackBlockOp>()))
      inlineTrackBlock(tb, numDevices);
    for (Operation &op : llvm::make_early_inc_range(fn.getBody().front())) {
      b.setInsertionPoint(&op);
      SmallVector<Value> replacements;
      if (isa<ParamOp, func::ReturnOp>(op) ||
          isa_and_nonnull<fmk::FmkDialect>(op.getDialect()))
        continue;
      Operation *before = op.getPrevNode();
      if (auto e = dyn_cast<EmbeddingOp>(op)) {
        replacements.push_back(fmk::EmbedOp::create(
            b, e.getLoc(), e.getType(), e.getTokens(), e.getTable()));
      } else if (auto n = dyn_cast<RmsNormOp>(op)) {
        replacements.push_back(fmk::RmsNormOp::create(
            b, n.getLoc(), n.getType(), n.getInput(), n.getWeight(),
            n.getEps()));
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
                                << " has no lowering to the CPU target yet";
      }
      // Kernel ops of a track keep the track's tag.
      if (Attribute tag = op.getAttr(fmk::FmkDialect::kTrackAttr))
        for (Operation *k = before ? before->getNextNode()
                                   : &fn.getBody().front().front();
             k != &op; k = k->getNextNode())
          if (!isa<ParamOp>(k))
            k->setAttr(fmk::FmkDialect::kTrackAttr, tag);
      op.replaceAllUsesWith(replacements);
      op.erase();
    }
    return success();
  }

private:
  OpBuilder &b;
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
