// The target interface of the compiler, in the spirit of IREE's
// TargetBackend (compiler/src/iree/compiler/Dialect/HAL/Target/
// TargetBackend.h): a target names itself, says which fmk ops its runtime
// device provides as hand-written micro-kernels, runs its pass pipeline on
// the fmk kernel groups and serializes them into one executable (bytes, the
// ordered entry points, and per-entry binding and launch metadata). The
// program (the commands) stays target-independent, so one artifact carries
// one executable per target of `fmc compile --target cpu,vulkan`.
#pragma once

#include "dialects/fmk/IR/FmkDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fm::target {

/// One argument of a group's entry function, on every target (the Dispatch
/// command lists its arguments in this order).
///
/// The pointers are, in order: every non-index input (an activation: row 0 of
/// a contiguous [rows][width] f32 buffer; a weight: its f32 data, whatever
/// its declared element type), then one output buffer per result ([rows][width]
/// contiguous), then, for each fmk.cache_write in the body in order, the base
/// of that cache slot's K or V part ([capacity][width] f32).
///
/// Outputs may alias inputs only exactly (same buffer, same width): every row
/// reads its inputs before any write that could clobber them.
struct GroupArg {
  enum Kind { Input, Result, Cache } kind;
  /// The input or result number, or the number of the CacheWriteOp in the body.
  unsigned index;
};

std::vector<GroupArg> groupAbi(mlir::fmk::GroupOp group);

/// The exported name of a group's kernel on every target,
/// "fmk_<kernel>_entry" (characters other than [A-Za-z0-9_] of the kernel
/// name become '_'): the CPU's C symbol, a GPU target's entry point.
std::string entrySymbol(mlir::fmk::GroupOp group);

/// How a GPU entry point binds one argument (a storage buffer), in groupAbi
/// order.
struct Binding {
  enum class Access : uint8_t { Read, Write, ReadWrite };
  uint32_t set = 0, binding = 0;
  Access access = Access::Read;
};

/// One push constant of a GPU entry point ("rows", "pos").
struct PushConstant {
  std::string name;
  uint32_t offset = 0, size = 0; // bytes
};

/// One exported function: its symbol or entry-point name and, for GPU
/// targets, how to launch it. CPU entries have no launch metadata (the C
/// ABI `void f(void **args, int64_t rows, int64_t pos)`). The GPU targets'
/// group kernels run one workgroup per row (a grid of `rows` x 1 x 1).
struct EntryPoint {
  std::string name;
  std::vector<uint32_t> workgroupSize; // [x, y, z] or empty
  std::vector<Binding> bindings;
  std::vector<PushConstant> pushConstants;
};

/// What a target makes of a module of kernel groups.
struct SerializedExecutable {
  std::string target; // the Target's name
  std::string format; // "elf-so", "static", "spirv", "msl", "ptx", ...
  std::string triple, cpu;
  std::vector<uint8_t> data;
  /// One per distinct kernel, in the order the groups of the module give
  /// (the same for every target of an artifact).
  std::vector<EntryPoint> entries;
  /// One line for the compile report: "x86_64-pc-linux-gnu, cpu znver4, elf-so".
  std::string summary;
  /// What the compile should warn about (a kernel that spills registers).
  std::vector<std::string> warnings;
  /// Files written beside the artifact, named artifact path + suffix (the
  /// CPU target's statically linked kernels: ".kernels.o", ".kernels.c").
  struct SideFile {
    std::string suffix;
    std::vector<uint8_t> data;
  };
  std::vector<SideFile> sideFiles;
};

/// Target options of `fmc compile`, by name ("cpu" → "native").
using TargetOptions = std::map<std::string, std::string>;

/// An option a target reads, for messages and --help.
struct TargetOption {
  std::string name, help;
};

class Target {
public:
  virtual ~Target() = default;

  /// "cpu", "vulkan", "metal", "cuda": the Executable.target it writes, and
  /// the device that runs it.
  virtual llvm::StringRef name() const = 0;
  virtual llvm::StringRef description() const = 0;
  virtual std::vector<TargetOption> options() const { return {}; }

  /// Whether the target's runtime device provides `opName` ("fmk.matmul",
  /// "fmk.attention", ...) as a hand-written micro-kernel. Every fmk op of a
  /// program that is not in an fmk.group must be provided.
  virtual bool providesMicroKernel(llvm::StringRef opName) const = 0;

  /// The passes the target runs on the module of its built kernels (for the
  /// CPU: the lowering of the group kernels to the LLVM dialect).
  virtual void buildKernelPipeline(mlir::OpPassManager &pm) const = 0;

  /// Compiles every distinct fmk.group of `kernels` (a module of one
  /// function per distinct kernel, see uniqueKernels) into one executable.
  /// `progress` (optional) gets one line per stage.
  virtual llvm::Expected<SerializedExecutable>
  serializeExecutable(mlir::ModuleOp kernels, const TargetOptions &options,
                      const std::function<void(llvm::StringRef)> &progress) const = 0;
};

/// The targets fmc knows, by name.
class TargetRegistry {
public:
  /// Adds `target` (a second target of one name replaces the first).
  static void add(std::unique_ptr<Target> target);
  static const Target *lookup(llvm::StringRef name);
  /// The names, sorted.
  static std::vector<std::string> names();
};

/// "cpu" or "cpu,vulkan": each name once, each known; the error for an
/// unknown one lists the known ones.
llvm::Expected<std::vector<const Target *>>
parseTargetList(llvm::StringRef list);

/// A module with one function per distinct fmk.group kernel of `module` (in
/// walk order of the first group that has each kernel name), the group
/// cloned into a body whose arguments stand for the group's operands: what
/// serializeExecutable takes.
mlir::OwningOpRef<mlir::ModuleOp> uniqueKernels(mlir::ModuleOp module);

/// The distinct kernel names of `module`'s groups, in that order.
std::vector<std::string> kernelNames(mlir::ModuleOp module);

/// The layer an op came from: the first NameLoc of its location
/// ("model.layers.3.self_attn"), or "" (what messages and the artifact's
/// commands name).
std::string layerName(mlir::Location loc);

/// Checks that every fmk op of `module` outside the groups is a
/// micro-kernel of `target` (an error names the op and its layer).
llvm::Error checkMicroKernels(mlir::ModuleOp module, const Target &target);

} // namespace fm::target
