// Builds one gpu.func per fmk.group (GpuKernels.h; the targets' lowerings
// take the result to SPIR-V or NVVM).
//
// One workgroup of kWorkgroupSize invocations per row (block_id.x is the
// row, the row's position is pos + row): every op loops its columns with
// invocation t taking columns t, t + T, ...; reductions (RMSNorm, head norm)
// sum per invocation, then across the workgroup: through subgroup
// reductions where the ABI has a subgroup width, else a workgroup-memory
// tree (no assumption about the subgroup width). Intermediate rows live in
// workgroup memory, reused once dead, as on the CPU (GroupPlan.h: views
// share storage; yielded values go straight into their result row when no
// later op reads an input). A barrier (workgroup execution, workgroup and
// global memory) follows every op, since the next op may read columns
// another invocation wrote. The i8 KV cache of a scaled cache_write is a
// buffer of i8.
#include "targets/gpu/GpuKernels.h"

#include "targets/GroupPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <map>

using namespace mlir;

namespace fm::gpugen {
namespace {

using target::GroupArg;

using target::isWeightUse;

int64_t widthOf(Value v) { return target::rowWidth(v); }

/// Where a row lives: element `base + col + j` of `mem` is column j.
struct RowRef {
  Value mem;
  Value base; // index; null means 0 (workgroup scratch)
  int64_t col = 0;
};

class KernelBuilder {
public:
  KernelBuilder(fmk::GroupOp group, const KernelAbi &abi, OpBuilder &module)
      : group(group), abi(abi), b(module), loc(group.getLoc()), ctx(group.getContext()) {}

  FailureOr<target::EntryPoint> build();

private:
  // --- small builders ----------------------------------------------------
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
  }
  using FMF = arith::FastMathFlags;
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value addi(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value muli(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value addi(Value x, int64_t c) { return c == 0 ? x : addi(x, idx(c)); }
  Value toF32(Value index) {
    Value i32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
    return arith::SIToFPOp::create(b, loc, b.getF32Type(), i32);
  }

  /// for j = tid; j < n; j += T { body(j) }
  void forCols(int64_t n, llvm::function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, tid, idx(n), idx(kWorkgroupSize));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }
  /// This invocation's part of Σ_j term(j) over its columns.
  Value partialSum(int64_t n, llvm::function_ref<Value(Value)> term) {
    auto loop = scf::ForOp::create(
        b, loc, tid, idx(n), idx(kWorkgroupSize), ValueRange{f32(0.0)},
        [&](OpBuilder &, Location, Value j, ValueRange acc) {
          scf::YieldOp::create(b, loc, add(acc[0], term(j)));
        });
    return loop.getResult(0);
  }
  void barrier() { abi.barrier(b, loc); }
  /// The workgroup's sum of every invocation's `partial`; ends with a
  /// barrier, so the buffer can be reused.
  Value reduce(Value partial) {
    if (int64_t width = abi.subgroupWidth())
      return reduceBySubgroups(partial, width);
    Value red = reductionBuffer();
    memref::StoreOp::create(b, loc, partial, red, ValueRange{tid});
    barrier();
    for (int64_t step = kWorkgroupSize / 2; step > 0; step /= 2) {
      Value active = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid, idx(step));
      auto ifOp = scf::IfOp::create(b, loc, active, /*withElseRegion=*/false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
        Value mine = memref::LoadOp::create(b, loc, red, ValueRange{tid});
        Value other = memref::LoadOp::create(b, loc, red, ValueRange{addi(tid, step)});
        memref::StoreOp::create(b, loc, add(mine, other), red, ValueRange{tid});
      }
      barrier();
    }
    Value total = memref::LoadOp::create(b, loc, red, ValueRange{idx(0)});
    barrier();
    return total;
  }
  /// Each subgroup's sum (gpu.subgroup_reduce), lane 0 of each into
  /// workgroup memory, then every invocation adds the kWorkgroupSize / width
  /// subgroup sums.
  Value reduceBySubgroups(Value partial, int64_t width) {
    Value red = reductionBuffer();
    Value sum = gpu::SubgroupReduceOp::create(b, loc, partial, gpu::AllReduceOperation::ADD,
                                              /*uniform=*/false);
    Value lane = arith::RemUIOp::create(b, loc, tid, idx(width));
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, idx(0));
    auto ifOp = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      Value warp = arith::DivUIOp::create(b, loc, tid, idx(width));
      memref::StoreOp::create(b, loc, sum, red, ValueRange{warp});
    }
    barrier();
    Value total = memref::LoadOp::create(b, loc, red, ValueRange{idx(0)});
    for (int64_t w = 1; w < kWorkgroupSize / width; ++w)
      total = add(total, memref::LoadOp::create(b, loc, red, ValueRange{idx(w)}));
    barrier();
    return total;
  }
  /// 1 / sqrt(sum / n + eps)
  Value invRms(Value sumSq, int64_t n, double eps) {
    Value rms = math::SqrtOp::create(b, loc, add(div(sumSq, f32(double(n))), f32(eps)));
    return div(f32(1.0), rms);
  }

  Value at(const RowRef &ref, Value j) {
    Value i = addi(j, ref.col);
    return ref.base ? addi(ref.base, i) : i;
  }
  Value load(const RowRef &ref, Value j) {
    return memref::LoadOp::create(b, loc, ref.mem, ValueRange{at(ref, j)});
  }
  void store(Value v, const RowRef &ref, Value j) {
    memref::StoreOp::create(b, loc, v, ref.mem, ValueRange{at(ref, j)});
  }

  // --- planning ----------------------------------------------------------
  RowRef scratch(int64_t width, unsigned opIndex, unsigned busyUntil);
  Value reductionBuffer();
  Value workgroupAlloc(int64_t floats);

  // --- ops ---------------------------------------------------------------
  LogicalResult emit(Operation *op, unsigned opIndex);
  /// cos and sin of the RoPE angle of pair i at this row's position.
  std::pair<Value, Value> ropeCosSin(Value i, double theta, int64_t headDim);

  fmk::GroupOp group;
  const KernelAbi &abi;
  OpBuilder &b;
  Location loc;
  MLIRContext *ctx;

  target::GroupPlan plan;
  llvm::DenseMap<Value, RowRef> weights; // block argument → its data
  llvm::DenseMap<Value, RowRef> rows;    // body value → its row
  SmallVector<RowRef> resultRows, cacheSlots;
  SmallVector<bool> cacheInt8;
  target::ScratchRows scratchRows;
  gpu::GPUFuncOp fn;
  Value redBuffer;
  int64_t workgroupFloats = 0;
  Operation *allocPoint = nullptr; // allocs go before it (the function entry)
  Value tid, row, pos;
};

Value KernelBuilder::workgroupAlloc(int64_t floats) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(allocPoint);
  workgroupFloats += floats;
  return abi.workgroupBuffer(b, loc, fn, floats);
}

Value KernelBuilder::reductionBuffer() {
  if (!redBuffer)
    redBuffer = workgroupAlloc(kWorkgroupSize);
  return redBuffer;
}

RowRef KernelBuilder::scratch(int64_t width, unsigned opIndex, unsigned busyUntil) {
  Value mem = scratchRows.get(width, opIndex, busyUntil,
                              [&](int64_t w) { return workgroupAlloc(w); });
  return RowRef{mem, Value(), 0};
}

std::pair<Value, Value> KernelBuilder::ropeCosSin(Value i, double theta, int64_t headDim) {
  // freq_i = theta^(-2i / head_dim) = exp(i * c), c = -2 ln(theta) / head_dim
  // (SPIR-V's GLSL set has no exp2 that MLIR lowers). c is split into c_hi
  // (12 significant bits: i * c_hi is exact for i < 2^12) and c_lo, so the
  // exponent is right to ~1e-9.
  const double c = -2.0 * std::log(theta) / double(headDim);
  int exponent = 0;
  const double mantissa = std::frexp(c, &exponent);
  const double cHi = std::ldexp(std::round(std::ldexp(mantissa, 12)), exponent - 12);
  const double cLo = c - cHi;
  Value fi = toF32(i);
  Value e = add(mul(fi, f32(cHi)), mul(fi, f32(cLo)));
  Value freq = math::ExpOp::create(b, loc, e);
  Value angle = mul(toF32(addi(pos, row)), freq);
  // Reduced to [-pi, pi] by 2pi in three parts (Cody-Waite): GPU sin/cos
  // are only specified near zero.
  const double twoPi = 6.283185307179586476925;
  const double p1 = 6.28125;                       // 8 significant bits
  const double p2 = std::ldexp(std::round(std::ldexp(twoPi - p1, 24)), -24);
  const double p3 = twoPi - p1 - p2;
  Value k = math::RoundEvenOp::create(b, loc, mul(angle, f32(1.0 / twoPi)));
  Value r = sub(sub(sub(angle, mul(k, f32(p1))), mul(k, f32(p2))), mul(k, f32(p3)));
  return {math::CosOp::create(b, loc, r), math::SinOp::create(b, loc, r)};
}

FailureOr<target::EntryPoint> KernelBuilder::build() {
  FailureOr<target::GroupPlan> analyzed = target::GroupPlan::analyze(group);
  if (failed(analyzed))
    return failure();
  plan = std::move(*analyzed);
  Block &body = group.getBody().front();
  const std::vector<GroupArg> abi = target::groupAbi(group);
  SmallVector<fmk::CacheWriteOp> cacheWrites;
  body.walk([&](fmk::CacheWriteOp op) { cacheWrites.push_back(op); });

  // The signature: a buffer per argument, then the push words.
  SmallVector<Type> argTypes;
  target::EntryPoint entry;
  entry.name = target::entrySymbol(group);
  entry.workgroupSize = {uint32_t(kWorkgroupSize), 1, 1};
  for (const GroupArg &arg : abi) {
    const bool i8 = arg.kind == GroupArg::Cache && cacheWrites[arg.index].getScale();
    argTypes.push_back(this->abi.bufferType(i8 ? Type(b.getI8Type()) : Type(b.getF32Type())));
    target::Binding binding;
    binding.set = 0;
    binding.binding = uint32_t(entry.bindings.size());
    binding.access = arg.kind == GroupArg::Input ? target::Binding::Access::Read
                                                 : target::Binding::Access::Write;
    entry.bindings.push_back(binding);
  }
  const bool offsets = this->abi.offsetsInPushWords();
  const int64_t numPush = 2 + (offsets ? int64_t(abi.size()) : 0);
  if (numPush * 4 > this->abi.maxPushBytes())
    return group.emitOpError() << "has " << abi.size()
                               << " arguments: their offsets, rows and pos exceed the "
                               << this->abi.maxPushBytes()
                               << " bytes of push constants every device has";
  for (Type t : this->abi.pushArgTypes(ctx, numPush))
    argTypes.push_back(t);
  entry.pushConstants.push_back({"rows", 0, 4});
  entry.pushConstants.push_back({"pos", 4, 4});
  if (offsets)
    for (size_t i = 0; i < abi.size(); ++i)
      entry.pushConstants.push_back({"offset." + std::to_string(i), uint32_t(8 + 4 * i), 4});

  fn = gpu::GPUFuncOp::create(b, loc, entry.name, b.getFunctionType(argTypes, {}));
  fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  this->abi.decorate(fn, argTypes.size());

  OpBuilder::InsertionGuard guard(b);
  Block &entryBlock = fn.getBody().front();
  b.setInsertionPointToStart(&entryBlock);
  auto ret = gpu::ReturnOp::create(b, loc);
  b.setInsertionPoint(ret);
  // Allocations go first, ahead of every use.
  allocPoint = arith::ConstantIndexOp::create(b, loc, 0);
  row = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  // A copy: workgroup attributions (NVVM) add block arguments later.
  SmallVector<Value> pushArgs(fn.getArguments().slice(abi.size(), argTypes.size() - abi.size()));
  auto pushWord = [&](int64_t i) -> Value {
    Value v = this->abi.pushWord(b, loc, pushArgs, i);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  };
  pos = pushWord(1);
  for (auto [n, arg] : llvm::enumerate(abi)) {
    Value mem = fn.getArgument(n);
    Value off = offsets ? pushWord(2 + int64_t(n)) : idx(0);
    switch (arg.kind) {
    case GroupArg::Input: {
      BlockArgument in = body.getArgument(arg.index);
      if (plan.activations.contains(in))
        rows[in] = RowRef{mem, addi(off, muli(row, idx(widthOf(in)))), 0};
      else
        weights[in] = RowRef{mem, off, 0};
      break;
    }
    case GroupArg::Result:
      resultRows.push_back(
          RowRef{mem, addi(off, muli(row, idx(widthOf(group.getResult(arg.index))))), 0});
      break;
    case GroupArg::Cache:
      cacheSlots.push_back(RowRef{mem, off, 0});
      cacheInt8.push_back(bool(cacheWrites[arg.index].getScale()));
      break;
    }
  }

  for (auto [i, op] : llvm::enumerate(plan.ops))
    if (failed(emit(op, i)))
      return failure();

  auto yield = cast<fmk::YieldOp>(body.getTerminator());
  for (auto [k, v] : llvm::enumerate(yield.getValues())) {
    auto it = plan.directResult.find(v);
    if (it != plan.directResult.end() && it->second == k)
      continue;
    if (!rows.count(v))
      return group.emitOpError() << "yields result #" << k << " that is not an activation";
    RowRef src = rows[v], dst = resultRows[k];
    forCols(widthOf(v), [&](Value j) { store(load(src, j), dst, j); });
  }
  if (workgroupFloats * 4 > kWorkgroupMemoryBytes)
    return group.emitOpError() << "needs " << workgroupFloats * 4
                               << " bytes of workgroup memory for its intermediate rows "
                                  "(the GPU targets keep to "
                               << kWorkgroupMemoryBytes << ")";
  return entry;
}

LogicalResult KernelBuilder::emit(Operation *op, unsigned opIndex) {
  auto out = [&](Value v) -> RowRef {
    auto it = plan.directResult.find(v);
    if (it != plan.directResult.end())
      return resultRows[it->second];
    return scratch(widthOf(v), opIndex, plan.lastUse.lookup(v));
  };
  auto rowOf = [&](Value v) -> FailureOr<RowRef> {
    auto it = rows.find(v);
    if (it == rows.end())
      return op->emitOpError() << "reads a value that is not an activation row";
    return it->second;
  };
  auto weightArg = [&](Value v, int64_t size) -> FailureOr<RowRef> {
    auto it = weights.find(v);
    if (it == weights.end())
      return op->emitOpError() << "weight must be an input of the group";
    int64_t n = cast<RankedTensorType>(v.getType()).getNumElements();
    if (n != size)
      return op->emitOpError() << "weight has " << n << " elements, expected " << size;
    return it->second;
  };
  auto elementwise = [&](Value result, llvm::function_ref<Value(Value)> f) {
    RowRef y = out(result);
    forCols(widthOf(result), [&](Value j) { store(f(j), y, j); });
    rows[result] = y;
    barrier();
    return success();
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](fmk::RmsNormOp op) -> LogicalResult {
        int64_t w = widthOf(op.getInput());
        auto x = rowOf(op.getInput());
        auto g = weightArg(op.getWeight(), w);
        if (failed(x) || failed(g))
          return failure();
        Value total = reduce(partialSum(w, [&](Value j) {
          Value v = load(*x, j);
          return mul(v, v);
        }));
        Value inv = invRms(total, w, op.getEps().convertToDouble());
        return elementwise(op.getResult(),
                           [&](Value j) { return mul(mul(load(*x, j), inv), load(*g, j)); });
      })
      .Case([&](fmk::AddOp op) -> LogicalResult {
        auto l = rowOf(op.getLhs()), r = rowOf(op.getRhs());
        if (failed(l) || failed(r))
          return failure();
        return elementwise(op.getResult(), [&](Value j) { return add(load(*l, j), load(*r, j)); });
      })
      .Case([&](fmk::ScaleOp op) -> LogicalResult {
        auto x = rowOf(op.getInput());
        if (failed(x))
          return failure();
        Value factor = f32(op.getFactor().convertToDouble());
        return elementwise(op.getResult(), [&](Value j) { return mul(load(*x, j), factor); });
      })
      .Case([&](fmk::AddBiasOp op) -> LogicalResult {
        int64_t w = widthOf(op.getInput());
        auto x = rowOf(op.getInput());
        auto bias = weightArg(op.getBias(), w);
        if (failed(x) || failed(bias))
          return failure();
        return elementwise(op.getResult(),
                           [&](Value j) { return add(load(*x, j), load(*bias, j)); });
      })
      .Case([&](fmk::SiluMulOp op) -> LogicalResult {
        auto g = rowOf(op.getGate()), u = rowOf(op.getUp());
        if (failed(g) || failed(u))
          return failure();
        return elementwise(op.getResult(), [&](Value j) {
          Value gj = load(*g, j);
          Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, gj));
          return mul(div(gj, add(f32(1.0), e)), load(*u, j));
        });
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
        const bool interleaved = op.getStyle() == fmk::RopeStyle::interleaved;
        RowRef y = out(op.getResult());
        // Pair p of the row: head p / half, index i = p % half; each
        // invocation reads and writes both columns of its pairs.
        forCols(heads * half, [&](Value p) {
          Value h = arith::DivUIOp::create(b, loc, p, idx(half));
          Value i = arith::RemUIOp::create(b, loc, p, idx(half));
          Value base = muli(h, idx(hd));
          Value ia = interleaved ? addi(base, muli(i, idx(2))) : addi(base, i);
          Value ib = addi(ia, interleaved ? 1 : half);
          auto [c, s] = ropeCosSin(i, op.getTheta().convertToDouble(), hd);
          Value a = load(*x, ia), bv = load(*x, ib);
          store(sub(mul(a, c), mul(bv, s)), y, ia);
          store(add(mul(bv, c), mul(a, s)), y, ib);
        });
        rows[op.getResult()] = y;
        barrier();
        return success();
      })
      .Case([&](fmk::HeadNormOp op) -> LogicalResult {
        int64_t heads = op.getNumHeads(), hd = op.getHeadDim();
        if (heads * hd != widthOf(op.getInput()))
          return op.emitOpError() << "needs num_heads * head_dim = " << widthOf(op.getInput())
                                  << " columns";
        auto x = rowOf(op.getInput());
        auto g = weightArg(op.getWeight(), hd);
        if (failed(x) || failed(g))
          return failure();
        RowRef y = out(op.getResult());
        const double eps = op.getEps().convertToDouble();
        // Heads in turn (a uniform loop: its barriers are reached by all).
        auto loop = scf::ForOp::create(b, loc, idx(0), idx(heads), idx(1));
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(loop.getBody()->getTerminator());
          Value base = muli(loop.getInductionVar(), idx(hd));
          RowRef xh = *x, yh = y;
          xh.base = xh.base ? addi(xh.base, base) : base;
          yh.base = yh.base ? addi(yh.base, base) : base;
          Value total = reduce(partialSum(hd, [&](Value d) {
            Value v = load(xh, d);
            return mul(v, v);
          }));
          Value inv = invRms(total, hd, eps);
          forCols(hd, [&](Value d) { store(mul(mul(load(xh, d), inv), load(*g, d)), yh, d); });
        }
        rows[op.getResult()] = y;
        barrier();
        return success();
      })
      .Case([&](fmk::FakeQuantOp op) -> LogicalResult {
        auto x = rowOf(op.getInput());
        auto scale = weightArg(op.getScale(), 1);
        if (failed(x) || failed(scale))
          return failure();
        Value s = load(*scale, idx(0));
        return elementwise(op.getResult(), [&](Value j) {
          Value q = math::RoundEvenOp::create(b, loc, div(load(*x, j), s));
          q = arith::MaximumFOp::create(b, loc, q, f32(-128.0));
          q = arith::MinimumFOp::create(b, loc, q, f32(127.0));
          return mul(q, s);
        });
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
        // The slot's row is the position pos + row.
        const int64_t w = widthOf(op.getInput());
        RowRef slot = cacheSlots[n];
        slot.base = addi(slot.base, muli(addi(pos, row), idx(w)));
        if (Value scale = op.getScale()) {
          auto sArg = weightArg(scale, 1);
          if (failed(sArg))
            return failure();
          Value s = load(*sArg, idx(0));
          forCols(w, [&](Value j) {
            Value q = math::RoundEvenOp::create(b, loc, div(load(*x, j), s));
            q = arith::MaximumFOp::create(b, loc, q, f32(-128.0));
            q = arith::MinimumFOp::create(b, loc, q, f32(127.0));
            store(arith::FPToSIOp::create(b, loc, b.getI8Type(), q), slot, j);
          });
        } else {
          forCols(w, [&](Value j) { store(load(*x, j), slot, j); });
        }
        barrier();
        return success();
      })
      .Default([&](Operation *op) {
        return op->emitOpError() << "is not a row op the GPU targets can compile";
      });
}

} // namespace

OwningOpRef<ModuleOp> buildGpuKernels(ModuleOp module, const KernelAbi &abi,
                                      std::vector<target::EntryPoint> *entries) {
  MLIRContext *ctx = module.getContext();
  ctx->loadDialect<gpu::GPUDialect, scf::SCFDialect, arith::ArithDialect,
                   math::MathDialect, memref::MemRefDialect>();
  abi.loadDialects(ctx);
  OwningOpRef<ModuleOp> out = ModuleOp::create(module.getLoc());
  (*out)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
  if (failed(abi.prepareModule(*out)))
    return nullptr;
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(out->getBody());
  auto kernels = gpu::GPUModuleOp::create(b, module.getLoc(), "fmk_kernels");
  b.setInsertionPointToEnd(kernels.getBody());
  llvm::StringSet<> seen;
  bool failed = false;
  module.walk([&](fmk::GroupOp group) {
    if (failed || !seen.insert(group.getKernel()).second)
      return;
    auto entry = KernelBuilder(group, abi, b).build();
    if (mlir::failed(entry)) {
      failed = true;
      return;
    }
    if (entries)
      entries->push_back(std::move(*entry));
  });
  if (failed)
    return nullptr;
  // Fold and CSE: the kernels read better and lower the same.
  IRRewriter rewriter(ctx);
  DominanceInfo dominance;
  (void)applyPatternsGreedily(out->getBodyRegion(), FrozenRewritePatternSet());
  eliminateCommonSubExpressions(rewriter, dominance, *out);
  if (mlir::failed(verify(*out)))
    return nullptr;
  return out;
}

} // namespace fm::gpugen
