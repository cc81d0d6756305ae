// fm-partition-tracks: places the tracks of every fmk.tracks on MPI ranks and
// the combine of each track block: one collective per block over N ranks,
// plain row adds in one process.
#include "dialects/fm/IR/FmOps.h"
#include "dialects/fmk/IR/FmkDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::fm {
#define GEN_PASS_DEF_PARTITIONTRACKSPASS
#include "passes/Passes.h.inc"

namespace {

struct PartitionTracksPass
    : impl::PartitionTracksPassBase<PartitionTracksPass> {
  using Base::Base;

  void runOnOperation() override {
    const int64_t n = ranks;
    if (n < 1) {
      getOperation().emitError()
          << "fm-partition-tracks: ranks must be >= 1, got " << n;
      return signalPassFailure();
    }
    OpBuilder b(&getContext());
    getOperation().walk([&](ModelOp model) {
      // Collected first: placing a combine erases ops after the tracks.
      SmallVector<fmk::TracksOp> all;
      model.walk([&](fmk::TracksOp tracks) { all.push_back(tracks); });
      const bool any = !all.empty();
      auto place = [&](fmk::TracksOp tracks) {
        const int64_t t = tracks.getNumTracks();
        if (n > t) {
          tracks.emitOpError()
              << "cannot partition track block " << tracks.getBlock() << " ("
              << t << (t == 1 ? " track" : " tracks") << ") over " << n
              << " ranks: a track would be split across ranks, which needs a "
                 "collective inside the track block";
          return WalkResult::interrupt();
        }
        // Contiguous: rank r gets tracks [r*T/N, (r+1)*T/N).
        SmallVector<int64_t> rankOf;
        for (int64_t i = 0; i < t; ++i)
          rankOf.push_back(i * n / t);
        if (n > 1)
          tracks.setRanksAttr(b.getDenseI64ArrayAttr(rankOf));
        // Each combine once (it uses several of the results).
        llvm::SetVector<Operation *> users;
        for (Operation *user : tracks->getUsers())
          if (isa<fmk::AllReduceOp>(user))
            users.insert(user);
        for (Operation *user : users) {
          auto combine = cast<fmk::AllReduceOp>(user);
          if (n > 1) {
            // The collective: each partial is computed on its track's rank.
            SmallVector<int64_t> partialRanks;
            for (Value p : combine.getPartials())
              partialRanks.push_back(
                  p.getDefiningOp() == tracks.getOperation()
                      ? rankOf[cast<OpResult>(p).getResultNumber()]
                      : 0);
            combine.setRanksAttr(b.getDenseI64ArrayAttr(partialRanks));
            continue;
          }
          lowerToRowOps(b, combine);
        }
        return WalkResult::advance();
      };
      for (fmk::TracksOp tracks : all)
        if (place(tracks).wasInterrupted())
          return signalPassFailure();
      if (n > 1 && !any) {
        model.emitOpError() << "model '" << model.getSymName()
                            << "' has no track blocks to partition over " << n
                            << " ranks";
        return signalPassFailure();
      }
      if (n > 1)
        model.setNumRanksAttr(b.getI64IntegerAttr(n));
    });
  }

  /// One process: the combine is the sum of the partials (row adds), scaled
  /// for a mean; fm-fuse folds them into a generated kernel.
  static void lowerToRowOps(OpBuilder &b, fmk::AllReduceOp combine) {
    b.setInsertionPoint(combine);
    Location loc = combine.getLoc();
    Value acc = combine.getPartials().front();
    for (Value p : combine.getPartials().drop_front())
      acc = fmk::AddOp::create(b, loc, acc.getType(), acc, p);
    const double scale = combine.getScale().convertToDouble();
    if (scale != 1.0)
      acc = fmk::ScaleOp::create(b, loc, acc.getType(), acc,
                                 b.getF64FloatAttr(scale));
    combine.getResult().replaceAllUsesWith(acc);
    combine.erase();
  }
};

} // namespace
} // namespace mlir::fm
