// The fmk (kernel-level) dialect: declarations.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/fmk/IR/FmkDialect.h.inc"
#include "dialects/fmk/IR/FmkEnums.h.inc"

#define GET_OP_CLASSES
#include "dialects/fmk/IR/FmkOps.h.inc"
