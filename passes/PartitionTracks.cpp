// fm-partition-tracks: tracks → devices, one collective per track block.
#include "dialects/fm/IR/FmOps.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::fm {
#define GEN_PASS_DEF_PARTITIONTRACKSPASS
#include "passes/Passes.h.inc"

namespace {

struct PartitionTracksPass
    : impl::PartitionTracksPassBase<PartitionTracksPass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t n = devices;
    if (n < 1) {
      getOperation().emitError() << "fm-partition-tracks: devices must be >= 1, got "
                                 << n;
      return signalPassFailure();
    }
    Builder b(&getContext());
    getOperation().walk([&](ModelOp model) {
      if (n == 1)
        return;
      bool any = false;
      WalkResult walk = model.walk([&](TrackBlockOp block) {
        any = true;
        int64_t t = block.getNumTracks();
        if (n > t) {
          block.emitOpError()
              << "cannot partition track block " << block.getBlock() << " ("
              << t << (t == 1 ? " track" : " tracks") << ") over " << n
              << " devices: a track would be split across devices, which "
                 "needs a collective inside the track block";
          return WalkResult::interrupt();
        }
        SmallVector<int64_t> devs;
        for (int64_t i = 0; i < t; ++i)
          devs.push_back(i * n / t);
        block.setDevicesAttr(b.getDenseI64ArrayAttr(devs));
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return signalPassFailure();
      if (!any) {
        model.emitOpError() << "model '" << model.getSymName()
                            << "' has no track blocks to partition over " << n
                            << " devices";
        return signalPassFailure();
      }
      model.setNumDevicesAttr(b.getI64IntegerAttr(n));
    });
  }
};

} // namespace
} // namespace mlir::fm
