// Builds one scf/arith/math/memref row kernel per fmk.group (the CPU target's
// front half; GroupCodegen.cpp lowers the result to native code).
//
// A kernel is `func.func @fmk_<kernel>_rows(%p0: memref<f32>, ..., %rows: index,
// %pos: index)`: the rank-0 memrefs are the bare pointers of groupAbi, rebuilt
// into shaped memrefs with memref.reinterpret_cast. The body is one scf.for
// over rows; inside it every op of the group runs on one row, reading and
// writing row-sized buffers:
//   * activation inputs, result buffers and cache slots are indexed [row, col];
//   * intermediates live in memref.alloca scratch rows, allocated before the
//     row loop (an alloca inside it would grow the stack every row) and reused
//     once their value is dead;
//   * slice_cols is a column offset into its input, never a copy;
//   * a yielded value is computed straight into its result row when no later
//     op reads an input row, so that a result buffer may alias an input
//     buffer; otherwise it is copied at the end of the row.
// The loops are scalar: LLVM's loop vectorizer widens them for the target
// (the reductions carry fastmath<reassoc> so that it may). Sums of squares
// and RoPE rotations also carry `contract`, so they become FMAs where the
// target has them (arith has no other way to ask for fusion).
#include "targets/cpu/GroupCodegen.h"

#include "targets/GroupPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>

using namespace mlir;

namespace fm::cpu {
namespace {

constexpr arith::FastMathFlags kSumFlags =
    arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;


int64_t widthOf(Value v) { return target::rowWidth(v); }

/// A row of some value inside the row loop: `mem[row, col + j]` for buffers
/// with a row dimension, `mem[col + j]` for scratch rows.
struct RowRef {
  Value mem;
  bool hasRowDim = false;
  int64_t col = 0;
};

/// Per-module state shared by the kernels: the RoPE frequency tables.
struct ModuleState {
  ModuleOp kernels;
  SymbolTable symbols;
  std::map<std::pair<double, int64_t>, memref::GlobalOp> freqTables;
  llvm::StringMap<std::string> kernelNames; // function name → group kernel name

  explicit ModuleState(ModuleOp m) : kernels(m), symbols(m) {}

  /// A constant table of theta^(-2i/head_dim), i < head_dim/2, in f64.
  memref::GlobalOp freqTable(Location loc, double theta, int64_t headDim) {
    auto &slot = freqTables[{theta, headDim}];
    if (slot)
      return slot;
    int64_t half = headDim / 2;
    std::vector<double> freqs(half);
    for (int64_t i = 0; i < half; ++i)
      freqs[i] = std::pow(theta, -2.0 * double(i) / double(headDim));
    OpBuilder b(kernels.getContext());
    auto type = MemRefType::get({half}, b.getF64Type());
    auto init = DenseElementsAttr::get(RankedTensorType::get({half}, b.getF64Type()),
                                       ArrayRef<double>(freqs));
    slot = memref::GlobalOp::create(b, loc, "fmk_rope_freqs", b.getStringAttr("private"),
                                    type, init, /*constant=*/true, IntegerAttr());
    symbols.insert(slot, kernels.getBody()->begin()); // renames on a clash
    return slot;
  }
};

class KernelBuilder {
public:
  KernelBuilder(fmk::GroupOp group, ModuleState &state)
      : group(group), state(state), b(group.getContext()), loc(group.getLoc()) {}

  LogicalResult build();

private:
  // --- small builders ----------------------------------------------------
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v))); }

  /// for j in [0, n) { body(j) }
  void loop(int64_t n, llvm::function_ref<void(Value)> body) {
    auto forOp = scf::ForOp::create(b, loc, idx(0), idx(n), idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forOp.getBody()->getTerminator());
    body(forOp.getInductionVar());
  }
  /// sum over j in [0, n) of term(j), reassociable so that LLVM vectorizes it.
  Value sum(int64_t n, llvm::function_ref<Value(Value)> term) {
    auto forOp = scf::ForOp::create(
        b, loc, idx(0), idx(n), idx(1), ValueRange{f32(0.0)},
        [&](OpBuilder &, Location, Value j, ValueRange acc) {
          Value t = term(j);
          Value next = arith::AddFOp::create(b, loc, acc[0], t, kSumFlags);
          scf::YieldOp::create(b, loc, next);
        });
    return forOp.getResult(0);
  }
  Value offset(Value j, int64_t off) {
    return off == 0 ? j : arith::AddIOp::create(b, loc, j, idx(off)).getResult();
  }
  Value load(const RowRef &ref, Value j) {
    Value col = offset(j, ref.col);
    if (ref.hasRowDim)
      return memref::LoadOp::create(b, loc, ref.mem, ValueRange{row, col});
    return memref::LoadOp::create(b, loc, ref.mem, ValueRange{col});
  }
  void store(Value v, const RowRef &ref, Value j) {
    Value col = offset(j, ref.col);
    if (ref.hasRowDim)
      memref::StoreOp::create(b, loc, v, ref.mem, ValueRange{row, col});
    else
      memref::StoreOp::create(b, loc, v, ref.mem, ValueRange{col});
  }
  Value weight(Value w, Value j) { return memref::LoadOp::create(b, loc, w, ValueRange{j}); }
  using FMF = arith::FastMathFlags;
  Value mul(Value x, Value y, FMF fmf = FMF::none) { return arith::MulFOp::create(b, loc, x, y, fmf); }
  Value add(Value x, Value y, FMF fmf = FMF::none) { return arith::AddFOp::create(b, loc, x, y, fmf); }
  Value sub(Value x, Value y, FMF fmf = FMF::none) { return arith::SubFOp::create(b, loc, x, y, fmf); }
  /// 1 / sqrt(sum / n + eps)
  Value invRms(Value sumSq, int64_t n, double eps) {
    Value mean = arith::DivFOp::create(b, loc, sumSq, f32(double(n)));
    Value rms = math::SqrtOp::create(b, loc, add(mean, f32(eps)));
    return arith::DivFOp::create(b, loc, f32(1.0), rms);
  }

  // --- planning ----------------------------------------------------------
  LogicalResult planStorage();
  RowRef scratch(int64_t width, unsigned opIndex, unsigned busyUntil);

  // --- ops ---------------------------------------------------------------
  LogicalResult emit(Operation *op, unsigned opIndex);

  fmk::GroupOp group;
  ModuleState &state;
  OpBuilder b;
  Location loc;

  target::GroupPlan plan; // arguments, views, lifetimes, in-place results
  llvm::DenseMap<Value, Value> weights; // block argument → memref
  llvm::DenseMap<Value, RowRef> rows; // body value → where its row is
  SmallVector<Value> resultMems, cacheMems;
  target::ScratchRows scratchRows;
  /// RoPE cos/sin rows by (theta, head_dim): computed by the first RoPE of
  /// a row, live until the last one.
  std::map<std::pair<double, int64_t>, std::pair<RowRef, RowRef>> ropeTables;
  std::map<std::pair<double, int64_t>, unsigned> lastRopeUse;
  Operation *allocaPoint = nullptr;
  Value rowsArg, posArg, row;
};

/// The shared plan (GroupPlan.h), and when the RoPE tables of each (theta,
/// head_dim) die.
LogicalResult KernelBuilder::planStorage() {
  FailureOr<target::GroupPlan> analyzed = target::GroupPlan::analyze(group);
  if (failed(analyzed))
    return failure();
  plan = std::move(*analyzed);
  for (auto [i, op] : llvm::enumerate(plan.ops))
    if (auto rope = dyn_cast<fmk::RopeOp>(op))
      lastRopeUse[{rope.getTheta().convertToDouble(), rope.getHeadDim()}] = i;
  return success();
}

/// A scratch row of `width` floats, busy from op `opIndex` to op `busyUntil`:
/// reuses a row that is free before that op, else adds an alloca before the
/// row loop.
RowRef KernelBuilder::scratch(int64_t width, unsigned opIndex, unsigned busyUntil) {
  Value mem = scratchRows.get(width, opIndex, busyUntil, [&](int64_t w) -> Value {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(allocaPoint);
    auto type = MemRefType::get({w}, b.getF32Type());
    return memref::AllocaOp::create(b, loc, type, b.getI64IntegerAttr(64));
  });
  return RowRef{mem, false, 0};
}

LogicalResult KernelBuilder::build() {
  if (failed(planStorage()))
    return failure();
  MLIRContext *ctx = group.getContext();
  Block &body = group.getBody().front();
  std::vector<GroupArg> abi = groupAbi(group);

  // Signature: the pointers (rank-0 memrefs, bare-pointer eligible), rows, pos.
  SmallVector<Type> argTypes(abi.size(), MemRefType::get({}, b.getF32Type()));
  {
    // An int8 cache slot (a cache write with a scale) is an i8 pointer.
    SmallVector<fmk::CacheWriteOp> writes;
    body.walk([&](fmk::CacheWriteOp op) { writes.push_back(op); });
    for (auto [n, arg] : llvm::enumerate(abi))
      if (arg.kind == GroupArg::Cache && writes[arg.index].getScale())
        argTypes[n] = MemRefType::get({}, b.getI8Type());
  }
  argTypes.push_back(b.getIndexType());
  argTypes.push_back(b.getIndexType());
  std::string entry = entrySymbol(group);
  std::string name = entry.substr(0, entry.size() - strlen("_entry")) + "_rows";
  // fm-fuse gives structurally equal groups the same kernel name: build the
  // first one only.
  auto [seen, inserted] = state.kernelNames.try_emplace(name, group.getKernel().str());
  if (!inserted) {
    if (seen->second != group.getKernel())
      return group.emitOpError() << "kernel names '" << seen->second << "' and '"
                                 << group.getKernel() << "' give the same symbol " << entry;
    auto other = state.symbols.lookup<func::FuncOp>(name);
    if (!other || other->getAttrOfType<IntegerAttr>(kKernelPointersAttr).getInt() !=
                      int64_t(abi.size()))
      return group.emitOpError() << "shares kernel '" << group.getKernel()
                                 << "' with a group of a different signature";
    return success();
  }
  b.setInsertionPointToEnd(state.kernels.getBody());
  auto fn = func::FuncOp::create(b, loc, name, FunctionType::get(ctx, argTypes, {}));
  state.symbols.insert(fn);
  fn->setAttr(kKernelEntryAttr, b.getStringAttr(entry));
  fn->setAttr(kKernelPointersAttr, b.getI64IntegerAttr(abi.size()));
  b.setInsertionPointToStart(fn.addEntryBlock());
  rowsArg = fn.getArgument(abi.size());
  posArg = fn.getArgument(abi.size() + 1);

  // Shaped views of the pointers.
  auto f32 = b.getF32Type();
  auto rowsOf = [&](Value ptr, int64_t width, Value numRows) -> Value {
    auto type = MemRefType::get({ShapedType::kDynamic, width}, f32);
    return memref::ReinterpretCastOp::create(
        b, loc, type, ptr, b.getIndexAttr(0),
        ArrayRef<OpFoldResult>{numRows, b.getIndexAttr(width)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(width), b.getIndexAttr(1)});
  };
  auto yield = cast<fmk::YieldOp>(body.getTerminator());
  SmallVector<fmk::CacheWriteOp> cacheWrites;
  body.walk([&](fmk::CacheWriteOp op) { cacheWrites.push_back(op); });
  Value cacheRows; // pos + rows, the rows of a cache slot we may touch
  for (auto [n, arg] : llvm::enumerate(abi)) {
    Value ptr = fn.getArgument(n);
    switch (arg.kind) {
    case GroupArg::Input: {
      BlockArgument in = body.getArgument(arg.index);
      if (plan.activations.contains(in)) {
        rows[in] = RowRef{rowsOf(ptr, widthOf(in), rowsArg), true, 0};
        break;
      }
      auto type = cast<RankedTensorType>(in.getType());
      weights[in] = type.getRank() == 0
                        ? ptr
                        : memref::ReinterpretCastOp::create(
                              b, loc, MemRefType::get({type.getNumElements()}, f32), ptr,
                              0, ArrayRef<int64_t>{type.getNumElements()},
                              ArrayRef<int64_t>{1}).getResult();
      break;
    }
    case GroupArg::Result:
      resultMems.push_back(rowsOf(ptr, widthOf(group.getResult(arg.index)), rowsArg));
      break;
    case GroupArg::Cache:
      if (!cacheRows)
        cacheRows = arith::AddIOp::create(b, loc, posArg, rowsArg);
      if (cacheWrites[arg.index].getScale()) {
        int64_t width = widthOf(cacheWrites[arg.index].getInput());
        cacheMems.push_back(memref::ReinterpretCastOp::create(
            b, loc, MemRefType::get({ShapedType::kDynamic, width}, b.getI8Type()),
            ptr, b.getIndexAttr(0),
            ArrayRef<OpFoldResult>{cacheRows, b.getIndexAttr(width)},
            ArrayRef<OpFoldResult>{b.getIndexAttr(width), b.getIndexAttr(1)}));
      } else {
        cacheMems.push_back(
            rowsOf(ptr, widthOf(cacheWrites[arg.index].getInput()), cacheRows));
      }
      break;
    }
  }
  // Every index input is the position: RoPE and cache writes use posArg.

  // The row loop; scratch allocas go right before it.
  auto rowLoop = scf::ForOp::create(b, loc, idx(0), rowsArg, idx(1));
  allocaPoint = rowLoop;
  func::ReturnOp::create(b, loc);
  b.setInsertionPoint(rowLoop.getBody()->getTerminator());
  row = rowLoop.getInductionVar();
  for (auto [i, op] : llvm::enumerate(plan.ops))
    if (failed(emit(op, i)))
      return failure();

  // Yielded values not computed in place: copy them into their result rows.
  for (auto [k, v] : llvm::enumerate(yield.getValues())) {
    auto it = plan.directResult.find(v);
    if (it != plan.directResult.end() && it->second == k)
      continue;
    if (!rows.count(v))
      return group.emitOpError() << "yields result #" << k << " that is not an activation";
    RowRef src = rows[v], dst{resultMems[k], true, 0};
    loop(widthOf(v), [&](Value j) { store(load(src, j), dst, j); });
  }
  return success();
}

LogicalResult KernelBuilder::emit(Operation *op, unsigned opIndex) {
  auto out = [&](Value v) -> RowRef {
    auto it = plan.directResult.find(v);
    if (it != plan.directResult.end())
      return RowRef{resultMems[it->second], true, 0};
    return scratch(widthOf(v), opIndex, plan.lastUse.lookup(v));
  };
  auto rowOf = [&](Value v) -> FailureOr<RowRef> {
    auto it = rows.find(v);
    if (it == rows.end())
      return op->emitOpError() << "reads a value that is not an activation row";
    return it->second;
  };
  auto weightArg = [&](Value v, int64_t size) -> FailureOr<Value> {
    Value mem = weights.lookup(v);
    if (!mem)
      return op->emitOpError() << "weight must be an input of the group";
    int64_t n = cast<RankedTensorType>(v.getType()).getNumElements();
    if (n != size)
      return op->emitOpError() << "weight has " << n << " elements, expected " << size;
    return mem;
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](fmk::RmsNormOp op) -> LogicalResult {
        int64_t w = widthOf(op.getInput());
        auto x = rowOf(op.getInput());
        auto g = weightArg(op.getWeight(), w);
        if (failed(x) || failed(g))
          return failure();
        Value inv = invRms(sum(w, [&](Value j) {
                             Value xj = load(*x, j);
                             return mul(xj, xj, FMF::contract);
                           }),
                           w, op.getEps().convertToDouble());
        RowRef y = out(op.getResult());
        loop(w, [&](Value j) { store(mul(mul(load(*x, j), inv), weight(*g, j)), y, j); });
        rows[op.getResult()] = y;
        return success();
      })
      .Case([&](fmk::AddOp op) -> LogicalResult {
        auto l = rowOf(op.getLhs()), r = rowOf(op.getRhs());
        if (failed(l) || failed(r))
          return failure();
        RowRef y = out(op.getResult());
        loop(widthOf(op.getResult()),
             [&](Value j) { store(add(load(*l, j), load(*r, j)), y, j); });
        rows[op.getResult()] = y;
        return success();
      })
      .Case([&](fmk::ScaleOp op) -> LogicalResult {
        auto x = rowOf(op.getInput());
        if (failed(x))
          return failure();
        RowRef y = out(op.getResult());
        Value factor = f32(op.getFactor().convertToDouble());
        loop(widthOf(op.getResult()),
             [&](Value j) { store(mul(load(*x, j), factor), y, j); });
        rows[op.getResult()] = y;
        return success();
      })
      .Case([&](fmk::AddBiasOp op) -> LogicalResult {
        int64_t w = widthOf(op.getInput());
        auto x = rowOf(op.getInput());
        auto bias = weightArg(op.getBias(), w);
        if (failed(x) || failed(bias))
          return failure();
        RowRef y = out(op.getResult());
        loop(w, [&](Value j) { store(add(load(*x, j), weight(*bias, j)), y, j); });
        rows[op.getResult()] = y;
        return success();
      })
      .Case([&](fmk::SiluMulOp op) -> LogicalResult {
        auto g = rowOf(op.getGate()), u = rowOf(op.getUp());
        if (failed(g) || failed(u))
          return failure();
        RowRef y = out(op.getResult());
        loop(widthOf(op.getResult()), [&](Value j) {
          Value gj = load(*g, j);
          Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, gj));
          Value silu = arith::DivFOp::create(b, loc, gj, add(f32(1.0), e));
          store(mul(silu, load(*u, j)), y, j);
        });
        rows[op.getResult()] = y;
        return success();
      })
      .Case([&](fmk::SliceColsOp op) -> LogicalResult {
        auto x = rowOf(op.getInput());
        if (failed(x))
          return failure();
        RowRef view = *x;
        view.col += op.getOffset();
        rows[op.getResult()] = view;
        return success();
      })
      .Case([&](fmk::RopeOp op) -> LogicalResult {
        int64_t heads = op.getNumHeads(), hd = op.getHeadDim(), half = hd / 2;
        if (hd % 2 != 0 || heads * hd != widthOf(op.getInput()))
          return op.emitOpError() << "needs an even head_dim and num_heads * head_dim = "
                                  << widthOf(op.getInput()) << " columns";
        auto x = rowOf(op.getInput());
        if (failed(x))
          return failure();
        bool interleaved = op.getStyle() == fmk::RopeStyle::interleaved;
        // cos/sin of this row's angles, once per pair index, into two
        // scratch rows (the head loop below then runs contiguously); shared
        // by the group's RoPEs of equal theta and head_dim (q and k).
        double theta = op.getTheta().convertToDouble();
        auto [tables, fresh] = ropeTables.try_emplace({theta, hd});
        if (fresh) {
          memref::GlobalOp table = state.freqTable(loc, theta, hd);
          Value freqs = memref::GetGlobalOp::create(b, loc, table.getType(), table.getSymName());
          Value p = arith::AddIOp::create(b, loc, posArg, row);
          Value pf = arith::SIToFPOp::create(
              b, loc, b.getF64Type(), arith::IndexCastOp::create(b, loc, b.getI64Type(), p));
          unsigned lastRope = lastRopeUse.at({theta, hd});
          tables->second = {scratch(half, opIndex, lastRope), scratch(half, opIndex, lastRope)};
          RowRef cosRow = tables->second.first, sinRow = tables->second.second;
          loop(half, [&](Value i) {
            Value angle = arith::MulFOp::create(b, loc, pf, memref::LoadOp::create(b, loc, freqs, i));
            Value c = arith::TruncFOp::create(b, loc, b.getF32Type(), math::CosOp::create(b, loc, angle));
            Value s = arith::TruncFOp::create(b, loc, b.getF32Type(), math::SinOp::create(b, loc, angle));
            store(c, cosRow, i);
            store(s, sinRow, i);
          });
        }
        RowRef cosRow = tables->second.first, sinRow = tables->second.second;
        RowRef y = out(op.getResult());
        loop(heads, [&](Value h) {
          Value base = arith::MulIOp::create(b, loc, h, idx(hd));
          loop(half, [&](Value i) {
            Value ia, ib;
            if (interleaved) {
              ia = arith::AddIOp::create(b, loc, base, arith::MulIOp::create(b, loc, i, idx(2)));
              ib = offset(ia, 1);
            } else {
              ia = arith::AddIOp::create(b, loc, base, i);
              ib = offset(ia, half);
            }
            Value a = load(*x, ia), bb = load(*x, ib);
            Value c = load(cosRow, i), s = load(sinRow, i);
            auto fc = FMF::contract;
            store(sub(mul(a, c, fc), mul(bb, s, fc), fc), y, ia);
            store(add(mul(bb, c, fc), mul(a, s, fc), fc), y, ib);
          });
        });
        rows[op.getResult()] = y;
        return success();
      })
      .Case([&](fmk::HeadNormOp op) -> LogicalResult {
        int64_t heads = op.getNumHeads(), hd = op.getHeadDim();
        if (heads * hd != widthOf(op.getInput()))
          return op.emitOpError() << "needs num_heads * head_dim = "
                                  << widthOf(op.getInput()) << " columns";
        auto x = rowOf(op.getInput());
        auto g = weightArg(op.getWeight(), hd);
        if (failed(x) || failed(g))
          return failure();
        RowRef y = out(op.getResult());
        double eps = op.getEps().convertToDouble();
        loop(heads, [&](Value h) {
          RowRef xh = *x, yh = y;
          Value base = arith::MulIOp::create(b, loc, h, idx(hd));
          auto at = [&](Value i) { return arith::AddIOp::create(b, loc, base, i).getResult(); };
          Value inv = invRms(sum(hd, [&](Value i) {
                               Value v = load(xh, at(i));
                               return mul(v, v, FMF::contract);
                             }),
                             hd, eps);
          loop(hd, [&](Value i) {
            Value col = at(i);
            store(mul(mul(load(xh, col), inv), weight(*g, i)), yh, col);
          });
        });
        rows[op.getResult()] = y;
        return success();
      })
      .Case([&](fmk::FakeQuantOp op) -> LogicalResult {
        auto x = rowOf(op.getInput());
        auto scale = weightArg(op.getScale(), 1);
        if (failed(x) || failed(scale))
          return failure();
        auto scaleType = cast<MemRefType>(scale->getType());
        Value s = scaleType.getRank() == 0
                      ? memref::LoadOp::create(b, loc, *scale, ValueRange{}).getResult()
                      : weight(*scale, idx(0));
        RowRef y = out(op.getResult());
        Value lo = f32(-128.0), hi = f32(127.0);
        loop(widthOf(op.getResult()), [&](Value j) {
          Value q = math::RoundEvenOp::create(b, loc, arith::DivFOp::create(b, loc, load(*x, j), s));
          Value below = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, q, lo);
          q = arith::SelectOp::create(b, loc, below, lo, q);
          Value above = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, q, hi);
          q = arith::SelectOp::create(b, loc, above, hi, q);
          store(mul(q, s), y, j);
        });
        rows[op.getResult()] = y;
        return success();
      })
      .Case([&](fmk::CacheWriteOp op) -> LogicalResult {
        auto x = rowOf(op.getInput());
        if (failed(x))
          return failure();
        unsigned n = 0;
        for (Operation *other : plan.ops) {
          if (other == op)
            break;
          n += isa<fmk::CacheWriteOp>(other);
        }
        // The slot's row is the position pos + r, not the loop row r.
        Value p = arith::AddIOp::create(b, loc, posArg, row);
        Value slot = cacheMems[n];
        if (Value scale = op.getScale()) {
          // int8: clamp(roundeven(x / s), -128, 127).
          auto sArg = weightArg(scale, 1);
          if (failed(sArg))
            return failure();
          Value s = memref::LoadOp::create(b, loc, *sArg, ValueRange{});
          Value lo = f32(-128.0), hi = f32(127.0);
          loop(widthOf(op.getInput()), [&](Value j) {
            Value q = math::RoundEvenOp::create(
                b, loc, arith::DivFOp::create(b, loc, load(*x, j), s));
            q = arith::MaximumFOp::create(b, loc, q, lo);
            q = arith::MinimumFOp::create(b, loc, q, hi);
            Value i8 = arith::FPToSIOp::create(b, loc, b.getI8Type(), q);
            memref::StoreOp::create(b, loc, i8, slot, ValueRange{p, j});
          });
          return success();
        }
        loop(widthOf(op.getInput()), [&](Value j) {
          memref::StoreOp::create(b, loc, load(*x, j), slot, ValueRange{p, j});
        });
        return success();
      })
      .Default([&](Operation *op) {
        return op->emitOpError() << "is not a row op the CPU target can compile";
      });
}

} // namespace

OwningOpRef<ModuleOp> buildGroupKernels(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  ctx->loadDialect<func::FuncDialect, scf::SCFDialect, arith::ArithDialect,
                   math::MathDialect, memref::MemRefDialect>();
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(module.getLoc());
  ModuleState state(*kernels);
  bool failed = false;
  module.walk([&](fmk::GroupOp group) {
    if (mlir::failed(KernelBuilder(group, state).build()))
      failed = true;
  });
  if (failed)
    return nullptr;
  // Fold, hoist the constants to the function entries and CSE them: the
  // kernels read better and lower the same.
  IRRewriter rewriter(ctx);
  DominanceInfo dominance;
  (void)applyPatternsGreedily(kernels->getBodyRegion(), FrozenRewritePatternSet());
  eliminateCommonSubExpressions(rewriter, dominance, *kernels);
  if (mlir::failed(verify(*kernels)))
    return nullptr;
  return kernels;
}

} // namespace fm::cpu
