// fm-plan-memory: static arena offsets for every activation of each phase.
#include "dialects/fm/IR/FmOps.h"
#include "dialects/fmk/IR/FmkDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <functional>
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
    const bool image = phase && phase.getValue() == ModelOp::kImagePhase;
    int64_t maxRows = (phase && phase.getValue() == "decode") ? 1 : maxRows_();
    if (image) // one call per image, of the rows it returns
      if (auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
          ret && ret.getNumOperands() == 1)
        maxRows = cast<RankedTensorType>(ret.getOperand(0).getType()).getShape()[0];
    auto floatsOf = [&](Value v) {
      auto t = cast<RankedTensorType>(v.getType());
      int64_t rows = ShapedType::isDynamic(t.getShape()[0]) ? maxRows
                                                            : t.getShape()[0];
      return rows * t.getShape()[1];
    };

    // The ops in execution order: a track block's tracks (each region in
    // turn), then the fmk.tracks op itself, which marks the block's end.
    SmallVector<Operation *> order;
    DenseMap<Operation *, fmk::TracksOp> sectionOf;
    for (Operation &op : block) {
      if (auto tracks = dyn_cast<fmk::TracksOp>(op))
        for (Region &r : tracks.getTracks())
          for (Operation &inner : r.front().without_terminator()) {
            order.push_back(&inner);
            sectionOf[&inner] = tracks;
          }
      order.push_back(&op);
    }
    DenseMap<Operation *, int64_t> index;
    for (Operation *op : order)
      index[op] = index.size();

    // Values that must share one buffer: an accumulating matmul (or MoE)
    // writes into its accumulator; a track block's results are the values
    // its tracks yield.
    DenseMap<Value, Value> parent;
    std::function<Value(Value)> find = [&](Value v) -> Value {
      auto it = parent.find(v);
      if (it == parent.end() || it->second == v)
        return v;
      Value r = find(it->second);
      parent[v] = r;
      return r;
    };
    auto unite = [&](Value keep, Value other) {
      Value a = find(keep), b2 = find(other);
      if (a != b2)
        parent[b2] = a;
    };
    // Where a value starts in its set's buffer, in floats: a drop_rows view
    // `count` rows into its input (an accumulator's result where it is).
    DenseMap<Value, int64_t> shift;
    for (Operation *op : order) {
      if (auto dr = dyn_cast<fmk::DropRowsOp>(op)) {
        unite(dr.getInput(), dr.getResult());
        shift[dr.getResult()] =
            shift.lookup(dr.getInput()) +
            dr.getCount() *
                cast<RankedTensorType>(dr.getType()).getShape()[1];
      }
      if (auto mm = dyn_cast<fmk::MatmulOp>(op); mm && mm.getAcc()) {
        unite(mm.getAcc(), mm.getResult());
        shift[mm.getResult()] = shift.lookup(mm.getAcc());
      }
      if (auto moe = dyn_cast<fmk::MoeOp>(op); moe && moe.getAcc())
        unite(moe.getAcc(), moe.getResult());
      if (auto tracks = dyn_cast<fmk::TracksOp>(op))
        for (Region &r : tracks.getTracks())
          unite(cast<fmk::YieldOp>(r.front().getTerminator()).getValues()[0],
                tracks.getResult(r.getRegionNumber()));
    }

    // Tracks of a block may run concurrently: every value a track reads or
    // writes stays live to the block's end.
    DenseMap<Value, int64_t> lastUse;
    auto touch = [&](Value v, int64_t at) {
      Value r = find(v);
      lastUse[r] = std::max(lastUse.lookup(r), at);
    };
    for (Operation *op : order) {
      const int64_t at = index[op];
      auto section = sectionOf.lookup(op);
      const int64_t until = section ? index[section] : at;
      for (Value v : op->getOperands())
        if (isActivation(v))
          touch(v, until);
      if (section)
        for (Value r : op->getResults())
          if (isActivation(r))
            touch(r, until);
    }

    Arena arena;
    DenseMap<Value, int64_t> offset; // per set root
    std::multimap<int64_t, Value> dying; // last use → set root
    OpBuilder b(fn.getContext());
    // The image of an encode_image phase: live from the start to its last
    // reader (the patch embedding).
    struct {
      int64_t offset = 0, floats = 0, last = -2; // -2: none
    } imageBuffer;
    if (image && block.getNumArguments() == 1) {
      BlockArgument img = block.getArgument(0);
      auto t = cast<RankedTensorType>(img.getType());
      int64_t last = -1;
      for (Operation *user : img.getUsers())
        last = std::max(last, index.lookup(block.findAncestorOpInBlock(*user)));
      const int64_t floats = t.getNumElements();
      int64_t off = arena.allocate(floats);
      fn->setAttr(fmk::FmkDialect::kImageBufferAttr, b.getI64IntegerAttr(off));
      imageBuffer = {off, floats, last};
    }
    for (Operation *op : order) {
      const int64_t at = index[op];
      SmallVector<int64_t> offs;
      for (Value r : op->getResults()) {
        if (!isActivation(r)) {
          offs.push_back(-1);
          continue;
        }
        Value root = find(r);
        if (auto it = offset.find(root); it != offset.end()) {
          offs.push_back(it->second + shift.lookup(r));
          continue;
        }
        int64_t off = arena.allocate(floatsOf(r));
        offset[root] = off;
        offs.push_back(off);
        dying.emplace(lastUse.count(root) ? lastUse.lookup(root) : at, root);
      }
      if (!offs.empty() && op->getDialect() &&
          isa<fmk::FmkDialect>(op->getDialect()))
        op->setAttr(fmk::FmkDialect::kBuffersAttr, b.getDenseI64ArrayAttr(offs));
      // Buffers whose last reader was this op are free for later ops (not
      // for this op's own results, which were allocated above).
      auto range = dying.equal_range(at);
      for (auto it = range.first; it != range.second; ++it)
        arena.release(offset.lookup(it->second), floatsOf(it->second));
      dying.erase(range.first, range.second);
      if (imageBuffer.last == at)
        arena.release(imageBuffer.offset, imageBuffer.floats);
    }
    fn->setAttr(fmk::FmkDialect::kArenaAttr, b.getI64IntegerAttr(arena.size()));
    fn->setAttr(fmk::FmkDialect::kMaxRowsAttr, b.getI64IntegerAttr(maxRows));
  }

  int64_t maxRows_() { return maxRows; }
};

} // namespace
} // namespace mlir::fm
