// fm-share-kv: gives cache slots only to layers that write K/V, so a layer
// that reuses another layer's cache costs no cache memory.
#include "dialects/fm/IR/FmOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::fm {
#define GEN_PASS_DEF_SHAREKVPASS
#include "passes/Passes.h.inc"

namespace {

struct ShareKvPass : impl::ShareKvPassBase<ShareKvPass> {
  void runOnOperation() override {
    getOperation().walk([&](ModelOp model) {
      if (failed(compactCaches(model)) || failed(addPrefillLast(model)))
        signalPassFailure();
    });
  }

  /// Clones the `prefill` phase into `prefill_last`, which produces only the
  /// last position's logits: from the first layer that writes no cache (a
  /// KV-reusing layer, or else the final norm), everything runs on the last
  /// row alone. Layers before it must run on every row: they fill the cache.
  LogicalResult addPrefillLast(ModelOp model) {
    auto prefill = dyn_cast_or_null<func::FuncOp>(model.lookupPhase("prefill"));
    if (!prefill || model.lookupPhase("prefill_last"))
      return success();
    OpBuilder b(prefill);
    b.setInsertionPointAfter(prefill);
    auto fn = cast<func::FuncOp>(b.clone(*prefill));
    fn.setSymName("prefill_last");
    fn->setAttr(FmDialect::kPhaseAttrName, b.getStringAttr("prefill_last"));
    Block &body = fn.getBody().front();

    // The residual stream entering the first op that only feeds the logits.
    Operation *cut = nullptr;
    for (Operation &op : body) {
      if (isa<TrackBlockOp>(op))
        continue; // every track block writes caches: the cut comes later
      auto attn = dyn_cast<AttentionOp>(op);
      if (attn && attn.getReuse()) {
        cut = attn.getInput().getDefiningOp(); // its input norm
        break;
      }
      if (isa<LmHeadOp>(op)) {
        cut = cast<LmHeadOp>(op).getInput().getDefiningOp(); // final norm
        break;
      }
    }
    if (!cut || cut->getNumOperands() == 0)
      return success();
    Value stream = cut->getOperand(0);
    Value pos = body.getArgument(1);
    auto streamType = cast<RankedTensorType>(stream.getType());
    if (streamType.getShape()[0] == 1)
      return success();
    b.setInsertionPoint(cut);
    auto take = TakeLastOp::create(
        b, cut->getLoc(),
        RankedTensorType::get({1, streamType.getShape()[1]},
                              streamType.getElementType()),
        b.getIndexType(), stream, pos);
    // Everything from `cut` on sees one row at the last position.
    for (Operation *op = cut; op; op = op->getNextNode()) {
      op->replaceUsesOfWith(stream, take.getResult());
      op->replaceUsesOfWith(pos, take.getLastPos());
      for (Value r : op->getResults()) {
        auto t = dyn_cast<RankedTensorType>(r.getType());
        if (t && t.getRank() == 2 && ShapedType::isDynamic(t.getShape()[0]))
          r.setType(RankedTensorType::get({1, t.getShape()[1]},
                                          t.getElementType()));
      }
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    fn.setFunctionType(b.getFunctionType(fn.getArgumentTypes(),
                                         ret.getOperandTypes()));
    return success();
  }

  /// Renumbers the owned slots of each cache densely (in order of first
  /// write) and shrinks the cache to them. Every phase function must agree on
  /// the slots a layer owns, so the mapping is computed over the whole model.
  LogicalResult compactCaches(ModelOp model) {
    // cache -> (old slot -> new slot)
    llvm::MapVector<StringAttr, llvm::MapVector<int64_t, int64_t>> remap;
    model.walk([&](AttentionOp attn) {
      if (attn.getReuse())
        return;
      auto &slots = remap[attn.getCacheAttr().getAttr()];
      slots.insert({attn.getCacheSlot(), (int64_t)slots.size()});
    });
    Builder b(model.getContext());
    WalkResult walk = model.walk([&](AttentionOp attn) {
      auto &slots = remap[attn.getCacheAttr().getAttr()];
      auto it = slots.find(attn.getCacheSlot());
      if (it == slots.end()) {
        attn.emitOpError() << attn.describe() << " reuses slot "
                           << attn.getCacheSlot() << " of @" << attn.getCache()
                           << ", but no layer writes that slot";
        return WalkResult::interrupt();
      }
      attn.setCacheSlot(it->second);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    for (auto cache : model.getBodyBlock().getOps<KvCacheOp>()) {
      auto it = remap.find(cache.getSymNameAttr());
      int64_t owned = it == remap.end() ? 0 : (int64_t)it->second.size();
      if (owned == 0) {
        cache.emitWarning() << "KV cache @" << cache.getSymName()
                            << " is written by no layer";
        continue;
      }
      cache.setLayers(owned);
    }
    return success();
  }
};

} // namespace
} // namespace mlir::fm
