// fm-plan-memory: static arena offsets for every activation of each phase.
#include "dialects/fm/IR/FmOps.h"
#include "dialects/fmk/IR/FmkDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <map>

namespace mlir::fm {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "passes/Passes.h.inc"

namespace {

constexpr int64_t kAlignFloats = 16; // 64 bytes

int64_t alignUp(int64_t v) { return (v + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

/// First-fit allocator over [0, inf) with explicit frees.
class Arena {
public:
  int64_t allocate(int64_t size) {
    size = alignUp(size);
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < size)
        continue;
      int64_t off = it->first, len = it->second;
      free.erase(it);
      if (len > size)
        free[off + size] = len - size;
      return off;
    }
    int64_t off = top;
    top += size;
    return off;
  }
  void release(int64_t off, int64_t size) {
    size = alignUp(size);
    auto [it, ok] = free.emplace(off, size);
    (void)ok;
    // Coalesce with the neighbours.
    auto next = std::next(it);
    if (next != free.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free.erase(next);
    }
    if (it != free.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free.erase(it);
      }
    }
  }
  int64_t size() const { return top; }

private:
  std::map<int64_t, int64_t> free;
  int64_t top = 0;
};

bool isActivation(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 2 && t.getElementType().isF32() &&
         !v.getDefiningOp<ParamOp>();
}

struct PlanMemoryPass : impl::PlanMemoryPassBase<PlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](ModelOp model) {
      for (auto fn : model.getBodyBlock().getOps<func::FuncOp>())
        planFunction(fn);
    });
  }

  void planFunction(func::FuncOp fn) {
    Block &block = fn.getBody().front();
    auto phase = fn->getAttrOfType<StringAttr>(FmDialect::kPhaseAttrName);
    int64_t maxRows = (phase && phase.getValue() == "decode") ? 1 : maxRows_();
    auto floatsOf = [&](Value v) {
      auto t = cast<RankedTensorType>(v.getType());
      int64_t rows = ShapedType::isDynamic(t.getShape()[0]) ? maxRows
                                                            : t.getShape()[0];
      return rows * t.getShape()[1];
    };

    // Position of each op, and the last position at which a value is read.
    DenseMap<Operation *, int64_t> index;
    for (Operation &op : block)
      index[&op] = index.size();
    // An accumulating matmul writes into its accumulator's buffer: they are
    // one buffer, live until the last use of either.
    DenseMap<Value, Value> root;
    auto rootOf = [&](Value v) {
      while (root.count(v))
        v = root.lookup(v);
      return v;
    };
    for (auto mm : block.getOps<fmk::MatmulOp>())
      if (mm.getAcc())
        root[mm.getResult()] = mm.getAcc();
    DenseMap<Value, int64_t> lastUse;
    for (Operation &op : block)
      for (Value v : op.getOperands())
        if (isActivation(v)) {
          Value r = rootOf(v);
          lastUse[r] = std::max(lastUse.lookup(r), index[&op]);
        }

    Arena arena;
    DenseMap<Value, int64_t> offset;
    std::multimap<int64_t, Value> dying; // last use → root value
    OpBuilder b(fn.getContext());
    for (Operation &op : block) {
      int64_t at = index[&op];
      SmallVector<int64_t> offs;
      for (Value r : op.getResults()) {
        if (!isActivation(r)) {
          offs.push_back(-1);
          continue;
        }
        Value rr = rootOf(r);
        if (rr != r) {
          offs.push_back(offset.lookup(rr));
          continue;
        }
        int64_t off = arena.allocate(floatsOf(r));
        offset[r] = off;
        offs.push_back(off);
        dying.emplace(lastUse.count(r) ? lastUse.lookup(r) : at, r);
      }
      if (!offs.empty() && op.getDialect() &&
          isa<fmk::FmkDialect>(op.getDialect()))
        op.setAttr(fmk::FmkDialect::kBuffersAttr, b.getDenseI64ArrayAttr(offs));
      // Buffers whose last reader was this op are free for later ops (not
      // for this op's own results, which were allocated above).
      auto range = dying.equal_range(at);
      for (auto it = range.first; it != range.second; ++it)
        arena.release(offset.lookup(it->second), floatsOf(it->second));
      dying.erase(range.first, range.second);
    }
    fn->setAttr(fmk::FmkDialect::kArenaAttr, b.getI64IntegerAttr(arena.size()));
    fn->setAttr(fmk::FmkDialect::kMaxRowsAttr, b.getI64IntegerAttr(maxRows));
  }

  int64_t maxRows_() { return maxRows; }
};

} // namespace
} // namespace mlir::fm
