// GroupPlan.h: the group-body analysis every row-kernel builder shares.
#include "targets/GroupPlan.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;

namespace fm::target {

int64_t rowWidth(Value v) { return cast<RankedTensorType>(v.getType()).getShape()[1]; }

bool isWeightUse(OpOperand &use) {
  Operation *op = use.getOwner();
  if (auto w = dyn_cast<fmk::CacheWriteOp>(op))
    return w.getScale() && use.get() == w.getScale();
  return isa<fmk::RmsNormOp, fmk::AddBiasOp, fmk::HeadNormOp, fmk::FakeQuantOp>(op) &&
         use.getOperandNumber() == 1;
}

FailureOr<GroupPlan> GroupPlan::analyze(fmk::GroupOp group) {
  GroupPlan p;
  Block &body = group.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    if (arg.getType().isIndex())
      continue;
    bool asWeight = false, asRow = false;
    for (OpOperand &use : arg.getUses())
      (isWeightUse(use) ? asWeight : asRow) = true;
    if (asWeight && asRow)
      return group.emitOpError() << "input #" << arg.getArgNumber()
                                 << " is used both as a weight and as activation rows";
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return group.emitOpError() << "input #" << arg.getArgNumber() << " of type "
                                 << arg.getType() << " is not a ranked tensor";
    if (!asWeight && type.getRank() == 2 && type.getElementType().isF32() &&
        (asRow || type.isDynamicDim(0))) {
      p.activations.insert(arg);
      continue;
    }
    if (asRow)
      return group.emitOpError() << "input #" << arg.getArgNumber() << " of type " << type
                                 << " is read as rows but is not a 2-D f32 tensor";
    if (!type.hasStaticShape())
      return group.emitOpError() << "weight input #" << arg.getArgNumber()
                                 << " has a dynamic shape " << type;
  }

  auto yield = cast<fmk::YieldOp>(body.getTerminator());
  for (Operation &op : body.without_terminator())
    p.ops.push_back(&op);
  const unsigned end = p.ops.size();
  for (Operation *op : p.ops)
    if (auto slice = dyn_cast<fmk::SliceColsOp>(op))
      p.roots[slice.getResult()] = p.rootOf(slice.getInput());
  // The last op that reads an input row: no result row is written before
  // it, since a result buffer may be an input buffer.
  int lastInputRead = -1;
  for (auto [i, op] : llvm::enumerate(p.ops))
    for (Value v : op->getOperands()) {
      Value root = p.rootOf(v);
      p.lastUse[root] = i;
      if (p.activations.contains(root))
        lastInputRead = i;
    }
  llvm::DenseMap<Value, unsigned> firstYield;
  for (auto [k, v] : llvm::enumerate(yield.getValues())) {
    Value root = p.rootOf(v);
    p.lastUse[root] = end;
    if (p.activations.contains(root))
      lastInputRead = end;
    firstYield.try_emplace(v, k);
  }
  for (auto [i, op] : llvm::enumerate(p.ops)) {
    if (isa<fmk::SliceColsOp, fmk::CacheWriteOp>(op) || op->getNumResults() != 1)
      continue;
    Value v = op->getResult(0);
    auto it = firstYield.find(v);
    if (it != firstYield.end() && int(i) >= lastInputRead)
      p.directResult[v] = it->second;
  }
  return p;
}

Value ScratchRows::get(int64_t width, unsigned opIndex, unsigned busyUntil,
                       llvm::function_ref<Value(int64_t)> allocate) {
  Row *best = nullptr;
  for (Row &r : rows_)
    if (r.width >= width && r.busyUntil < opIndex && (!best || r.width < best->width))
      best = &r;
  if (!best) {
    rows_.push_back({allocate(width), width, 0});
    best = &rows_.back();
  }
  best->busyUntil = std::max(opIndex, busyUntil);
  return best->mem;
}

} // namespace fm::target
