// The fm dialect: C++ declarations of the dialect, its enums and attributes.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpImplementation.h"

#include "dialects/fm/IR/FmDialect.h.inc"
#include "dialects/fm/IR/FmEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/fm/IR/FmAttrs.h.inc"
