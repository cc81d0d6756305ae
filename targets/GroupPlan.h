// The target-independent analysis of an fmk.group body that every target's
// row-kernel builder starts from (targets/cpu/GroupKernels.cpp,
// targets/gpu/GpuKernels.cpp): which inputs are activation rows and which
// weights, which values are views, when each value dies, which yielded
// values may be computed straight into their result row, and the reuse of
// scratch rows.
#pragma once

#include "dialects/fmk/IR/FmkDialect.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace fm::target {

/// The columns of a [rows][width] activation value.
int64_t rowWidth(mlir::Value v);

/// Whether `use` is an operand its op reads as a weight (f32 data of its
/// own shape) rather than as an activation row.
bool isWeightUse(mlir::OpOperand &use);

struct GroupPlan {
  /// The body without its yield, in order; "op i" below is ops[i], and
  /// ops.size() stands for the end-of-row result copies.
  llvm::SmallVector<mlir::Operation *> ops;
  /// Block arguments read as rows (2-D f32); the other non-index
  /// arguments are weights of static shape.
  llvm::DenseSet<mlir::Value> activations;
  /// A view (slice_cols) → the value that owns its storage.
  llvm::DenseMap<mlir::Value, mlir::Value> roots;
  /// An owning value → the index of its last reader.
  llvm::DenseMap<mlir::Value, unsigned> lastUse;
  /// A value computed straight into result row #k: it is yielded and no
  /// input row is read at or after its op (outputs may alias inputs).
  llvm::DenseMap<mlir::Value, unsigned> directResult;

  mlir::Value rootOf(mlir::Value v) const {
    auto it = roots.find(v);
    return it == roots.end() ? v : it->second;
  }

  /// The plan of `group`'s body; failure after a diagnostic on the group
  /// (an input used both as a weight and as rows, a row input that is not
  /// a 2-D f32 tensor, a weight of dynamic shape).
  static mlir::FailureOr<GroupPlan> analyze(mlir::fmk::GroupOp group);
};

/// Scratch rows reused once their value is dead: a row of `width` floats,
/// busy from op `opIndex` to op `busyUntil`, is the narrowest free row that
/// fits, else a new one from `allocate(width)`.
class ScratchRows {
public:
  mlir::Value get(int64_t width, unsigned opIndex, unsigned busyUntil,
                  llvm::function_ref<mlir::Value(int64_t)> allocate);

private:
  struct Row {
    mlir::Value mem;
    int64_t width;
    unsigned busyUntil;
  };
  llvm::SmallVector<Row> rows_;
};

} // namespace fm::target
