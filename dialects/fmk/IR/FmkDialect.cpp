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
