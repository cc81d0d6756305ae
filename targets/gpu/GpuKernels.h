// The GPU targets' shared front half: each distinct fmk.group becomes a
// gpu.func (one workgroup per row, 1-D buffers, rows/pos in 32-bit push
// words); what differs between SPIR-V (Vulkan, Metal) and NVVM (CUDA) is the
// target's KernelAbi.
#pragma once

#include "targets/Target.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <vector>

namespace fm::gpugen {

/// Invocations per workgroup of every group kernel. A multiple of every
/// subgroup width (8 on lavapipe, 32 on NVIDIA and Apple, 64 on AMD).
constexpr int64_t kWorkgroupSize = 64;

/// The most workgroup memory a group kernel may use for its intermediate
/// rows and reductions: Vulkan's guaranteed minimum of
/// maxComputeSharedMemorySize (Metal gives 32 KiB, CUDA 48 KiB static).
constexpr int64_t kWorkgroupMemoryBytes = 16384;

/// How one GPU target's kernels receive their arguments, synchronize and
/// get workgroup memory (CODEGEN.md §3-5: the same source needs different
/// spellings for SPIR-V and NVVM).
class KernelAbi {
public:
  virtual ~KernelAbi() = default;

  /// Loads the dialects of the ABI's types, ops and attributes.
  virtual void loadDialects(mlir::MLIRContext *ctx) const = 0;
  /// Sets the container module's attributes (SPIR-V: the target env).
  /// Failure after a diagnostic.
  virtual mlir::LogicalResult prepareModule(mlir::ModuleOp module) const = 0;
  /// A 1-D storage buffer argument of `element`s.
  virtual mlir::MemRefType bufferType(mlir::Type element) const = 0;
  /// Whether each argument's element offset travels as push word
  /// "offset.<i>" (SPIR-V binds at an aligned offset below row 0); else the
  /// runtime passes every buffer at its row 0.
  virtual bool offsetsInPushWords() const = 0;
  /// The most bytes of push words a kernel may take.
  virtual int64_t maxPushBytes() const = 0;
  /// The argument types that carry `words` 32-bit push words (after the
  /// buffers).
  virtual llvm::SmallVector<mlir::Type> pushArgTypes(mlir::MLIRContext *ctx,
                                                     int64_t words) const = 0;
  /// Push word `i` as an i32, from the push arguments.
  virtual mlir::Value pushWord(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::ValueRange pushArgs, int64_t i) const = 0;
  /// Target attributes of a kernel of `numArgs` arguments.
  virtual void decorate(mlir::gpu::GPUFuncOp fn, unsigned numArgs) const = 0;
  /// A workgroup barrier that also orders workgroup and global memory.
  virtual void barrier(mlir::OpBuilder &b, mlir::Location loc) const = 0;
  /// A workgroup-memory buffer of `floats` f32 for `fn`; `b` is at the
  /// function's entry.
  virtual mlir::Value workgroupBuffer(mlir::OpBuilder &b, mlir::Location loc,
                                      mlir::gpu::GPUFuncOp fn,
                                      int64_t floats) const = 0;
  /// The subgroup width reductions may rely on (gpu.subgroup_reduce, which
  /// the target expands to shuffles), or 0: a workgroup-memory tree only.
  virtual int64_t subgroupWidth() const = 0;
};

/// Builds a gpu.module "fmk_kernels" of gpu.funcs, one per distinct
/// fmk.group kernel of `module` (walk order), in a new module of the same
/// context. A kernel is
///   gpu.func @fmk_<kernel>_entry(%a0: <buffer>, ..., <push args>) kernel
/// with the buffers in target::groupAbi order (entry i: binding (0, i)) and
/// the push words [rows, pos, (offset.0 .. offset.N-1)]. `entries`
/// (optional) gets each function's launch metadata. Returns null after a
/// diagnostic on the offending op.
mlir::OwningOpRef<mlir::ModuleOp>
buildGpuKernels(mlir::ModuleOp module, const KernelAbi &abi,
                std::vector<target::EntryPoint> *entries = nullptr);

} // namespace fm::gpugen
