// fm-share-kv: gives cache slots only to layers that write K/V, so a layer
// that reuses another layer's cache costs no cache memory.
#include "dialects/fm/IR/FmOps.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::fm {
#define GEN_PASS_DEF_SHAREKVPASS
#include "passes/Passes.h.inc"

namespace {

struct ShareKvPass : impl::ShareKvPassBase<ShareKvPass> {
  void runOnOperation() override {
    getOperation().walk([&](ModelOp model) {
      if (failed(compactCaches(model)))
        signalPassFailure();
    });
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
