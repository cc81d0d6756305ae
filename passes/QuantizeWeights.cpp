// fm-quantize-weights: annotates projection weights (and optionally the
// embedding and the KV caches) with their low-bit storage format.
#include "dialects/fm/IR/FmOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::fm {
#define GEN_PASS_DEF_QUANTIZEWEIGHTSPASS
#include "passes/Passes.h.inc"

namespace {

struct QuantizeWeightsPass
    : impl::QuantizeWeightsPassBase<QuantizeWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    std::optional<QuantGrid> g = symbolizeQuantGrid(grid);
    if (!g) {
      getOperation().emitError() << "fm-quantize-weights: grid must be "
                                    "'balanced' or 'affine', got '"
                                 << grid << "'";
      return signalPassFailure();
    }
    auto make = [&](int64_t bitsV) -> QuantAttr {
      auto diag = [&]() { return getOperation().emitError(); };
      if (failed(QuantAttr::verify(diag, bitsV, group, *g, b.getF16Type())))
        return {};
      return QuantAttr::get(ctx, bitsV, group, *g, b.getF16Type());
    };
    // bits = 0: projections stay f32 (only the embedding and/or the cache).
    QuantAttr proj;
    if (bits != 0 && !(proj = make(bits)))
      return signalPassFailure();
    QuantAttr embed;
    if (embedBits != "none") {
      int64_t eb = 0;
      if (StringRef(embedBits).getAsInteger(10, eb) || !(embed = make(eb))) {
        getOperation().emitError()
            << "fm-quantize-weights: embed-bits must be 4, 8 or none";
        return signalPassFailure();
      }
    }
    if (floatStorage != "f32" && floatStorage != "f16") {
      getOperation().emitError()
          << "fm-quantize-weights: float-storage must be f32 or f16, got '"
          << floatStorage << "'";
      return signalPassFailure();
    }
    QuantAttr vision;
    if (visionBits != 0 && visionBits != 4 && visionBits != 8) {
      getOperation().emitError()
          << "fm-quantize-weights: vision-bits must be 0, 4 or 8, got "
          << static_cast<int64_t>(visionBits);
      return signalPassFailure();
    }
    if (visionBits != 0 && !(vision = make(visionBits)))
      return signalPassFailure();
    if (visionFloatStorage != "f32" && visionFloatStorage != "f16") {
      getOperation().emitError() << "fm-quantize-weights: vision-float-storage "
                                    "must be f32 or f16, got '"
                                 << visionFloatStorage << "'";
      return signalPassFailure();
    }
    if (kvBits != "none" && kvBits != "8") {
      getOperation().emitError() << "fm-quantize-weights: kv-bits must be 8 or none";
      return signalPassFailure();
    }

    // key -> format; the embedding wins for a tied LM head.
    llvm::StringMap<QuantAttr> byKey;
    // Keys of the weights micro-kernels read (f16 storage candidates), and
    // of the parameters anything else reads (which must stay f32).
    // The image encoder's weights are kept apart (visionWeights): the LM's
    // options never reach them, nor theirs the LM's.
    llvm::StringSet<> kernelWeights, otherUses, visionWeights;
    auto kernelWeight = [&](Value w) {
      if (auto p = w ? w.getDefiningOp<ParamOp>() : ParamOp())
        kernelWeights.insert(p.getKey());
    };
    auto other = [&](Value w) {
      if (auto p = w ? w.getDefiningOp<ParamOp>() : ParamOp())
        otherUses.insert(p.getKey());
    };
    auto want = [&](Value w, QuantAttr q, bool override = false) {
      kernelWeight(w);
      auto p = w ? w.getDefiningOp<ParamOp>() : ParamOp();
      if (!p || !q)
        return;
      auto [it, inserted] = byKey.try_emplace(p.getKey(), q);
      if (!inserted && override)
        it->second = q;
    };
    // The encode_image functions: linear weights (qkv, o, fc1, fc2, the
    // adapter's linear) follow the vision options; everything else there
    // (patch embedding, conv, norms, biases, tables) stays f32.
    auto wantVision = [&](Value w) {
      if (auto p = w ? w.getDefiningOp<ParamOp>() : ParamOp())
        visionWeights.insert(p.getKey());
      want(w, vision);
    };
    auto isVision = [](Operation *op) {
      auto fn = op->getParentOfType<func::FuncOp>();
      auto phase = fn ? fn->getAttrOfType<StringAttr>(FmDialect::kPhaseAttrName)
                      : StringAttr();
      return phase && phase.getValue() == "encode_image";
    };
    getOperation().walk([&](Operation *op) {
      if (!isa<VitAttentionOp, MlpOp, VlAdapterOp>(op) || !isVision(op))
        return;
      if (auto a = dyn_cast<VitAttentionOp>(op)) {
        wantVision(a.getQkv());
        wantVision(a.getO());
        for (Value w : {a.getQkvBias(), a.getOBias(), a.getRelPosH(),
                        a.getRelPosW()})
          other(w);
      } else if (auto m = dyn_cast<MlpOp>(op)) {
        for (Value w : {m.getGate(), m.getUp(), m.getDown()})
          wantVision(w);
        other(m.getUpBias());
        other(m.getDownBias());
      } else if (auto ad = dyn_cast<VlAdapterOp>(op)) {
        wantVision(ad.getProjWeight());
        other(ad.getProjBias());
        other(ad.getConvWeight());
        other(ad.getConvBias());
      }
    });
    getOperation().walk([&](Operation *op) {
      if (isa<MlpOp>(op) && isVision(op))
        return;
      if (auto a = dyn_cast<AttentionOp>(op)) {
        for (Value w : {a.getQ(), a.getK(), a.getV(), a.getQkv(), a.getO()})
          want(w, proj);
        for (Value w : {a.getQBias(), a.getKBias(), a.getVBias(), a.getQNorm(),
                        a.getKNorm(), a.getKScale(), a.getVScale()})
          if (auto p = w ? w.getDefiningOp<ParamOp>() : ParamOp())
            otherUses.insert(p.getKey());
      } else if (auto m = dyn_cast<MlpOp>(op)) {
        for (Value w : {m.getGate(), m.getUp(), m.getDown()})
          want(w, proj);
      } else if (auto m = dyn_cast<MoeOp>(op)) {
        for (ValueRange ws : {m.getGate(), m.getUp(), m.getDown()})
          for (Value w : ws)
            want(w, proj);
        for (Value w : {m.getSharedGate(), m.getSharedUp(), m.getSharedDown()})
          want(w, proj);
        // The float Moe kernel reads every weight in the router's dtype.
        kernelWeight(m.getRouter());
        kernelWeight(m.getSharedExpertGate());
      } else if (auto n = dyn_cast<RmsNormOp>(op)) {
        if (auto p = n.getWeight().getDefiningOp<ParamOp>())
          otherUses.insert(p.getKey());
      } else if (auto e = dyn_cast<EmbeddingOp>(op)) {
        kernelWeight(e.getTable());
        if (embed)
          want(e.getTable(), embed, /*override=*/true);
      } else if (auto h = dyn_cast<LmHeadOp>(op)) {
        // Like the embedding (as llama.cpp keeps output.weight at higher
        // precision): the logits are the most sensitive projection.
        kernelWeight(h.getWeight());
        if (!h.getTied() && embed)
          want(h.getWeight(), embed);
      }
    });
    // The embedding's format decides for every use of its key (tied head).
    getOperation().walk([&](EmbeddingOp e) {
      if (auto p = e.getTable().getDefiningOp<ParamOp>()) {
        if (embed)
          byKey[p.getKey()] = embed;
        else
          byKey.erase(p.getKey());
      }
    });
    llvm::StringSet<> warned;
    getOperation().walk([&](ParamOp p) {
      auto it = byKey.find(p.getKey());
      if (it == byKey.end())
        return;
      auto t = cast<RankedTensorType>(p.getType());
      if (t.getRank() != 2 || t.getShape()[1] % it->second.getGroup() != 0) {
        if (warned.insert(p.getKey()).second)
          p.emitWarning() << "parameter '" << p.getKey() << "' stays unquantized: "
                          << "its input dimension " << t.getShape().back()
                          << " is not a multiple of the group "
                          << it->second.getGroup();
        return;
      }
      p.setQuantAttr(it->second);
    });
    if (floatStorage == "f16" || visionFloatStorage == "f16") {
      Type f16 = b.getF16Type();
      getOperation().walk([&](ParamOp p) {
        auto t = cast<RankedTensorType>(p.getType());
        const bool isVisionWeight = visionWeights.contains(p.getKey());
        if ((isVisionWeight ? visionFloatStorage : floatStorage) != "f16" ||
            p.getQuantAttr() || t.getRank() != 2 ||
            !kernelWeights.contains(p.getKey()) ||
            otherUses.contains(p.getKey()))
          return;
        p.setStorageAttr(TypeAttr::get(f16));
      });
    }

    if (kvBits == "8")
      quantizeCaches();
  }

  /// A cache becomes int8 when every layer that writes it fake-quantizes K
  /// and V with per-layer scales: the int8 values are then exact.
  void quantizeCaches() {
    getOperation().walk([&](ModelOp model) {
      for (auto cache : model.getBodyBlock().getOps<KvCacheOp>()) {
        bool scaled = true, written = false;
        model.walk([&](AttentionOp a) {
          if (a.getCache() != cache.getSymName() || a.getReuse())
            return;
          written = true;
          scaled &= bool(a.getKScale()) && bool(a.getVScale());
        });
        if (!written)
          continue;
        if (!scaled) {
          std::string type;
          llvm::raw_string_ostream(type) << cache.getElementType();
          cache.emitWarning() << "KV cache @" << cache.getSymName()
                              << " stays " << type
                              << ": kv-bits=8 needs per-layer K/V scales "
                                 "(k_scale/v_scale) on every layer that writes it";
          continue;
        }
        cache.setElementType(IntegerType::get(&getContext(), 8));
      }
    });
  }
};

} // namespace
} // namespace mlir::fm
