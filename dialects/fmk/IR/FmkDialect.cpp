// The fmk (kernel-level) dialect: registration and verifiers.
#include "dialects/fmk/IR/FmkDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace mlir::fmk;

#include "dialects/fmk/IR/FmkDialect.cpp.inc"
#include "dialects/fmk/IR/FmkEnums.cpp.inc"

void FmkDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/fmk/IR/FmkOps.cpp.inc"
      >();
}

static int64_t cols(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape()[1];
}

LogicalResult MatmulOp::verify() {
  if (getWeights().empty())
    return emitOpError() << "needs at least one weight";
  int64_t k = cols(getInput()), n = 0;
  for (Value w : getWeights()) {
    auto shape = cast<RankedTensorType>(w.getType()).getShape();
    if (shape.size() != 2 || shape[1] != k)
      return emitOpError() << "weight of shape [" << shape
                           << "] does not take " << k << " inputs";
    n += shape[0];
  }
  if (cols(getResult()) != n)
    return emitOpError() << "weights produce " << n << " columns, result has "
                         << cols(getResult());
  if (getAcc() && getAcc().getType() != getResult().getType())
    return emitOpError() << "accumulator type " << getAcc().getType()
                         << " differs from the result type";
  if (Value b = getBias()) {
    auto shape = cast<RankedTensorType>(b.getType()).getShape();
    if (shape.size() != 1 || shape[0] != n)
      return emitOpError() << "bias of shape [" << shape << "] for " << n
                           << " output columns";
  }
  if (getActivation() && getAcc())
    return emitOpError() << "an accumulating matmul cannot apply "
                         << stringifyActivation(*getActivation())
                         << " (the activation would see the sum)";
  return success();
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

static int64_t rows(Value v) { return shapeOf(v)[0]; }

LogicalResult PatchEmbedOp::verify() {
  ArrayRef<int64_t> img = shapeOf(getImage()), w = shapeOf(getWeight());
  const int64_t p = getPatch();
  if (!cast<RankedTensorType>(getImage().getType()).hasStaticShape() || p <= 0 ||
      img[1] % p || img[2] % p)
    return emitOpError() << "the image must be static and a whole number of "
                         << p << "x" << p << " patches";
  const int64_t dim = cols(getResult()), patches = (img[1] / p) * (img[2] / p);
  if (w.size() != 4 || w[0] != dim || w[1] != img[0] || w[2] != p || w[3] != p)
    return emitOpError() << "weight [" << w << "] is not [" << dim << ", "
                         << img[0] << ", " << p << ", " << p << "]";
  int64_t regs = 0;
  if (Value r = getRegisters()) {
    ArrayRef<int64_t> rs = shapeOf(r);
    if (rs.size() != 2 || rs[1] != dim)
      return emitOpError() << "registers [" << rs << "] are not [R, " << dim << "]";
    regs = rs[0];
  }
  if (Value pos = getPos();
      pos && cast<RankedTensorType>(pos.getType()).getNumElements() != patches * dim)
    return emitOpError() << "the position table holds "
                         << cast<RankedTensorType>(pos.getType()).getNumElements()
                         << " values for " << patches << " patches of " << dim;
  if (rows(getResult()) != regs + patches)
    return emitOpError() << "result has " << rows(getResult()) << " rows for "
                         << regs << " registers + " << patches << " patches";
  return success();
}

LogicalResult VitAttentionOp::verify() {
  ArrayRef<int64_t> grid = getGrid();
  const int64_t h = getNumHeads(), d = getHeadDim(), r = getNumRegisters();
  if (grid.size() != 2 || grid[0] <= 0 || grid[1] <= 0 || h <= 0 || d <= 0 ||
      r < 0 || getWindow() < 0)
    return emitOpError() << "bad shape: grid, heads, head_dim must be positive, "
                            "registers and window non-negative";
  if (cols(getQkv()) != 3 * h * d || cols(getResult()) != h * d ||
      rows(getQkv()) != r + grid[0] * grid[1] || rows(getResult()) != rows(getQkv()))
    return emitOpError() << "qkv must be [" << r + grid[0] * grid[1] << ", "
                         << 3 * h * d << "] and the result ["
                         << r + grid[0] * grid[1] << ", " << h * d << "]";
  if (getWindow() > std::max(grid[0], grid[1]))
    return emitOpError() << "window " << getWindow() << " is larger than the "
                         << grid[0] << "x" << grid[1]
                         << " grid (at most its larger side)";
  // Padding past 4x the grid is refused too (fm.vit_attention, the loader).
  if (const int64_t w = getWindow(); w > 0) {
    const double padH = double((grid[0] + w - 1) / w * w),
                 padW = double((grid[1] + w - 1) / w * w);
    if (padH * padW > 4.0 * double(grid[0]) * double(grid[1]))
      return emitOpError() << "window " << w << " pads the " << grid[0] << "x"
                           << grid[1] << " grid to more than 4x its positions";
  }
  const int64_t sh = getWindow() ? getWindow() : grid[0],
                sw = getWindow() ? getWindow() : grid[1];
  if (Value t = getRelPosH();
      t && (shapeOf(t) != ArrayRef<int64_t>{2 * sh - 1, d} ||
            shapeOf(getRelPosW()) != ArrayRef<int64_t>{2 * sw - 1, d}))
    return emitOpError() << "relative-position tables must be [" << 2 * sh - 1
                         << ", " << d << "] and [" << 2 * sw - 1 << ", " << d
                         << "]";
  if (Value p = getPad(); p && shapeOf(p) != ArrayRef<int64_t>{3 * h * d})
    return emitOpError() << "pad row must be [" << 3 * h * d << "]";
  return success();
}

LogicalResult Conv3x3Op::verify() {
  ArrayRef<int64_t> grid = getGrid(), w = shapeOf(getWeight());
  if (grid.size() != 2 || grid[0] <= 0 || grid[1] <= 0 ||
      rows(getInput()) != grid[0] * grid[1] || rows(getResult()) != rows(getInput()))
    return emitOpError() << "input and result must hold the grid's tokens";
  const int64_t cin = cols(getInput()), cout = cols(getResult());
  if (w != ArrayRef<int64_t>{cout, cin, 3, 3})
    return emitOpError() << "weight [" << w << "] is not [" << cout << ", "
                         << cin << ", 3, 3]";
  if (Value b = getBias(); b && shapeOf(b) != ArrayRef<int64_t>{cout})
    return emitOpError() << "bias must be [" << cout << "]";
  return success();
}

LogicalResult AvgPoolOp::verify() {
  const int64_t g = getGrid(), o = getOutGrid();
  if (o < 1 || o > g || rows(getInput()) != g * g || rows(getResult()) != o * o ||
      cols(getInput()) != cols(getResult()))
    return emitOpError() << "pools [" << g * g << ", w] to [" << o * o
                         << ", w] with 1 <= out_grid <= grid";
  return success();
}

LogicalResult DropRowsOp::verify() {
  if (getCount() < 0 || ShapedType::isDynamic(rows(getInput())) ||
      rows(getResult()) != rows(getInput()) - getCount() ||
      cols(getResult()) != cols(getInput()))
    return emitOpError() << "drops " << getCount() << " of "
                         << rows(getInput()) << " static rows";
  return success();
}

LogicalResult AttentionOp::verify() {
  if (getNumHeads() <= 0 || getNumKvHeads() <= 0 ||
      getNumHeads() % getNumKvHeads() != 0 || getHeadDim() <= 0)
    return emitOpError() << "bad head configuration " << getNumHeads() << "/"
                         << getNumKvHeads() << " x " << getHeadDim();
  if (cols(getQ()) != getNumHeads() * getHeadDim() ||
      cols(getResult()) != cols(getQ()))
    return emitOpError() << "q and result must have num_heads * head_dim = "
                         << getNumHeads() * getHeadDim() << " columns";
  if (getWindow() < 0)
    return emitOpError() << "window must be >= 0";
  return success();
}

LogicalResult SliceColsOp::verify() {
  if (getOffset() < 0 || getOffset() + cols(getResult()) > cols(getInput()))
    return emitOpError() << "columns [" << getOffset() << ", "
                         << getOffset() + cols(getResult())
                         << ") are outside the input's " << cols(getInput());
  return success();
}

LogicalResult GroupOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "body takes " << body.getNumArguments()
                         << " arguments for " << getInputs().size() << " inputs";
  for (auto [arg, in] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return emitOpError() << "body argument type " << arg.getType()
                           << " differs from input type " << in.getType();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield || yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "must yield values of its result types";
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getPartials().empty())
    return emitOpError() << "needs at least one partial";
  if (auto ranks = getRanksAttr()) {
    if ((size_t)ranks.size() != getPartials().size())
      return emitOpError() << ranks.size() << " ranks for "
                           << getPartials().size() << " partials";
    for (int64_t r : ranks.asArrayRef())
      if (r < 0)
        return emitOpError() << "rank " << r << " is negative";
  }
  return success();
}

LogicalResult TracksOp::verify() {
  const int64_t b = getBlock();
  if (getTracks().empty())
    return emitOpError() << "track block " << b << " has no tracks";
  if (getTracks().size() != getNumResults())
    return emitOpError() << "track block " << b << ": " << getTracks().size()
                         << " tracks but " << getNumResults() << " results";
  if (auto ranks = getRanksAttr()) {
    if ((size_t)ranks.size() != getTracks().size())
      return emitOpError() << "track block " << b << ": " << ranks.size()
                           << " ranks for " << getTracks().size() << " tracks";
    for (int64_t r : ranks.asArrayRef())
      if (r < 0)
        return emitOpError() << "track block " << b << ": rank " << r
                             << " is negative";
  }
  for (Region &r : getTracks()) {
    const unsigned t = r.getRegionNumber();
    if (r.empty() || r.front().getNumArguments() != 0)
      return emitOpError() << "track " << t << " of block " << b
                           << " must be one block without arguments";
    auto yield = dyn_cast<YieldOp>(r.front().getTerminator());
    if (!yield || yield.getValues().size() != 1 ||
        yield.getValues()[0].getType() != getResult(t).getType())
      return emitOpError() << "track " << t << " of block " << b
                           << " must yield one value of type "
                           << getResult(t).getType();
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/fmk/IR/FmkOps.cpp.inc"
