// fm-fuse: projection merging, residual folding and row-op grouping at the
// kernel level (see Passes.td).
#include "dialects/fm/IR/FmOps.h"
#include "dialects/fmk/IR/FmkDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::fm {
#define GEN_PASS_DEF_FUSEPASS
#include "passes/Passes.h.inc"

namespace {

bool isRowOp(Operation *op) {
  return isa<fmk::RmsNormOp, fmk::AddOp, fmk::AddBiasOp, fmk::SiluMulOp,
             fmk::SliceColsOp, fmk::RopeOp, fmk::HeadNormOp, fmk::FakeQuantOp,
             fmk::CacheWriteOp, fmk::ScaleOp>(op);
}

/// (1) Matmuls of one input become one matmul over the stacked weights.
void mergeProjections(Block &block) {
  llvm::MapVector<Value, SmallVector<fmk::MatmulOp>> byInput;
  for (auto mm : block.getOps<fmk::MatmulOp>())
    if (!mm.getAcc() && !mm.getBias() && !mm.getActivation())
      byInput[mm.getInput()].push_back(mm);
  for (auto &[input, mms] : byInput) {
    if (mms.size() < 2)
      continue;
    fmk::MatmulOp first = mms.front();
    SmallVector<Value> weights;
    for (fmk::MatmulOp mm : mms)
      for (Value w : mm.getWeights()) {
        // Parameters have no operands: hoisting one is always legal.
        if (Operation *def = w.getDefiningOp();
            def && def->getBlock() == &block && first->isBeforeInBlock(def))
          def->moveBefore(first);
        weights.push_back(w);
      }
    OpBuilder b(first);
    int64_t n = 0;
    for (Value w : weights)
      n += cast<RankedTensorType>(w.getType()).getShape()[0];
    auto inType = cast<RankedTensorType>(input.getType());
    auto merged = fmk::MatmulOp::create(
        b, first.getLoc(),
        RankedTensorType::get({inType.getShape()[0], n}, inType.getElementType()),
        input, weights, Value());
    b.setInsertionPointAfter(merged);
    int64_t offset = 0;
    for (fmk::MatmulOp mm : mms) {
      auto slice = fmk::SliceColsOp::create(b, mm.getLoc(), mm.getType(),
                                            merged.getResult(), offset);
      offset += cast<RankedTensorType>(mm.getType()).getShape()[1];
      mm.getResult().replaceAllUsesWith(slice.getResult());
    }
    for (fmk::MatmulOp mm : mms)
      mm.erase();
  }
}

/// Whether `v` may be overwritten in place by an op of `block`: only a
/// value of that block (inside a track, a value from above is the block
/// input, which the other tracks still read).
bool ownedBy(Value v, Block &block) { return v.getParentBlock() == &block; }

/// (2) add(r, matmul(x)) → matmul(x) acc(r), when r dies at the add.
void foldResiduals(Block &block) {
  for (auto add : llvm::make_early_inc_range(block.getOps<fmk::AddOp>())) {
    for (unsigned i = 0; i < 2; ++i) {
      Value prod = add->getOperand(i), resid = add->getOperand(1 - i);
      if (auto moe = prod.getDefiningOp<fmk::MoeOp>()) {
        if (moe.getAcc() || !prod.hasOneUse() || moe->getBlock() != &block ||
            resid == moe.getInput() || !ownedBy(resid, block) ||
            !llvm::all_of(resid.getUsers(), [&](Operation *u) {
              return u == add || u->isBeforeInBlock(moe);
            }))
          continue;
        if (Operation *def = resid.getDefiningOp();
            def && def->getBlock() == &block && moe->isBeforeInBlock(def))
          continue;
        moe.getAccMutable().assign(resid);
        add.getResult().replaceAllUsesWith(moe.getResult());
        add.erase();
        break;
      }
      auto mm = prod.getDefiningOp<fmk::MatmulOp>();
      // An activation epilogue would see the sum: such a product stays.
      if (!mm || mm.getAcc() || mm.getActivation() || !prod.hasOneUse() ||
          mm->getBlock() != &block)
        continue;
      // The accumulator is overwritten in place: nothing may read it later.
      bool deadAfter = llvm::all_of(resid.getUsers(), [&](Operation *u) {
        return u == add || u->isBeforeInBlock(mm);
      });
      if (!deadAfter || resid == mm.getInput() || !ownedBy(resid, block))
        continue;
      if (Operation *def = resid.getDefiningOp();
          def && def->getBlock() == &block && mm->isBeforeInBlock(def))
        continue;
      OpBuilder b(mm);
      auto acc = fmk::MatmulOp::create(b, mm.getLoc(), mm.getType(),
                                       mm.getInput(), mm.getWeights(), resid,
                                       mm.getBias(), fmk::ActivationAttr());
      add.getResult().replaceAllUsesWith(acc.getResult());
      add.erase();
      mm.erase();
      break;
    }
  }
}

/// A structural signature of a group body: equal signatures mean the same
/// generated code (cache symbols and slots are pointer arguments).
std::string signature(fmk::GroupOp group) {
  std::string s;
  llvm::raw_string_ostream os(s);
  DenseMap<Value, unsigned> ids;
  for (BlockArgument a : group.getBody().getArguments()) {
    ids[a] = ids.size();
    os << a.getType() << ";";
  }
  for (Operation &op : group.getBody().front()) {
    os << op.getName() << "(";
    for (Value v : op.getOperands())
      os << ids.lookup(v) << ",";
    os << ")";
    for (NamedAttribute attr : op.getAttrs())
      if (attr.getName() != "cache" && attr.getName() != "slot")
        os << attr.getName() << "=" << attr.getValue() << ",";
    for (Value r : op.getResults()) {
      ids[r] = ids.size();
      os << r.getType() << ",";
    }
    os << ";";
  }
  return s;
}

/// (3) Runs of row ops become fmk.group ops.
void groupRowOps(Block &block, llvm::StringMap<std::string> &kernelBySig,
                 unsigned &counter) {
  SmallVector<SmallVector<Operation *>> runs;
  SmallVector<Operation *> run;
  for (Operation &op : block) {
    if (isRowOp(&op)) {
      run.push_back(&op);
    } else if (!isa<ParamOp>(op)) {
      if (!run.empty())
        runs.push_back(std::move(run));
      run.clear();
    }
  }
  if (!run.empty())
    runs.push_back(std::move(run));

  for (SmallVector<Operation *> &ops : runs) {
    llvm::SmallPtrSet<Operation *, 16> inRun(ops.begin(), ops.end());
    llvm::SetVector<Value> inputs, outputs;
    for (Operation *op : ops) {
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || !inRun.contains(def))
          inputs.insert(v);
      }
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(),
                         [&](Operation *u) { return !inRun.contains(u); }))
          outputs.insert(r);
    }
    Operation *last = ops.back();
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    SmallVector<Type> resultTypes;
    for (Value v : outputs)
      resultTypes.push_back(v.getType());
    auto group = fmk::GroupOp::create(b, ops.front()->getLoc(), resultTypes,
                                      b.getStringAttr(""), inputs.getArrayRef());
    Block *body = new Block();
    group.getBody().push_back(body);
    IRMapping map;
    for (Value v : inputs)
      map.map(v, body->addArgument(v.getType(), v.getLoc()));
    OpBuilder inner = OpBuilder::atBlockEnd(body);
    for (Operation *op : ops)
      inner.clone(*op, map);
    SmallVector<Value> yielded;
    for (Value v : outputs)
      yielded.push_back(map.lookup(v));
    fmk::YieldOp::create(inner, last->getLoc(), yielded);
    for (auto [v, r] : llvm::zip(outputs, group.getResults()))
      Value(v).replaceAllUsesWith(r);
    for (Operation *op : llvm::reverse(ops))
      op->erase();

    std::string sig = signature(group);
    auto [it, inserted] =
        kernelBySig.try_emplace(sig, "k" + std::to_string(counter));
    if (inserted)
      ++counter;
    group.setKernel(it->second);
  }
}

struct FusePass : impl::FusePassBase<FusePass> {
  void runOnOperation() override {
    llvm::StringMap<std::string> kernelBySig;
    unsigned counter = 0;
    getOperation().walk([&](ModelOp model) {
      for (auto fn : model.getBodyBlock().getOps<func::FuncOp>()) {
        // Each track of a track block on its own, then the function body
        // (where a track block is one op).
        SmallVector<Block *> blocks;
        fn.walk([&](fmk::TracksOp tracks) {
          for (Region &r : tracks.getTracks())
            blocks.push_back(&r.front());
        });
        blocks.push_back(&fn.getBody().front());
        for (Block *block : blocks) {
          mergeProjections(*block);
          foldResiduals(*block);
          groupRowOps(*block, kernelBySig, counter);
        }
      }
    });
  }
};

} // namespace
} // namespace mlir::fm
