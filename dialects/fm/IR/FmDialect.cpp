// The fm dialect: registration, attributes and the `fm.phase` attribute check.
#include "dialects/fm/IR/FmDialect.h"

#include "dialects/fm/IR/FmOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fm;

#include "dialects/fm/IR/FmDialect.cpp.inc"
#include "dialects/fm/IR/FmEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/fm/IR/FmAttrs.cpp.inc"

void FmDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/fm/IR/FmOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/fm/IR/FmAttrs.cpp.inc"
      >();
}

LogicalResult FmDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  if (attr.getName() != kPhaseAttrName)
    return op->emitError() << "unknown fm attribute '"
                           << attr.getName().getValue() << "'";
  auto phase = dyn_cast<StringAttr>(attr.getValue());
  if (!isa<func::FuncOp>(op))
    return op->emitError() << "'fm.phase' marks a func.func, not '"
                           << op->getName() << "'";
  if (!phase || !llvm::is_contained({"prefill", "prefill_last", "decode",
                                     "encode_image"},
                                    phase.getValue()))
    return op->emitError() << "'fm.phase' must be \"prefill\", "
                              "\"prefill_last\", \"decode\" or \"encode_image\"";
  if (!isa_and_nonnull<ModelOp>(op->getParentOp()))
    return op->emitError() << "phase function '"
                           << cast<func::FuncOp>(op).getSymName()
                           << "' must be inside an fm.model";
  return success();
}

//===----------------------------------------------------------------------===//
// QuantAttr
//===----------------------------------------------------------------------===//

LogicalResult QuantAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                unsigned bits, int64_t group, QuantGrid grid,
                                Type scale) {
  if (bits != 2 && bits != 4 && bits != 8)
    return emitError() << "quantization to " << bits
                       << " bits is not supported (2, 4 or 8)";
  if (group <= 0 || group % 32 != 0)
    return emitError() << "quantization group " << group
                       << " must be a positive multiple of 32";
  if (!scale.isF16() && !scale.isF32() && !scale.isBF16())
    return emitError() << "quantization scale type must be f16, bf16 or f32";
  (void)grid;
  return success();
}

double QuantAttr::bitsPerWeight() const {
  double scaleBits = getScale().getIntOrFloatBitWidth();
  // Affine grids store a minimum next to each scale.
  if (getGrid() == QuantGrid::affine)
    scaleBits *= 2;
  return getBits() + scaleBits / double(getGroup());
}
