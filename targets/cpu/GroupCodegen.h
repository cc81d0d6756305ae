// CPU code generation for fmk.group: row kernels in MLIR, native code via LLVM.
#pragma once

#include "dialects/fmk/IR/FmkDialect.h"
#include "targets/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fm::cpu {

/// Which machine the code is for.
///   "native"        the host (triple, CPU and features of this machine)
///   "x86-64-v3"     x86_64-unknown-linux-gnu, CPU x86-64-v3 (AVX2, FMA)
///   "aarch64"       aarch64-unknown-linux-gnu, ARMv8-A with NEON (Linux,
///                   Android)
///   "aarch64-apple" arm64-apple-macosx13.0, CPU apple-m1: x18 reserved,
///                   frame pointers kept (macOS; iOS links code statically)
/// Every one is an ELF shared object for the runtime's own loader
/// (runtime/hal/cpu/ElfLoader.h).
struct CpuOptions {
  std::string cpu = "native";
  /// "image": an ELF shared object in the artifact, for the runtime's
  /// loader. "static": an object file and a registration source that an
  /// application links (platforms that forbid loading code: iOS); the
  /// artifact then holds only the kernels' key.
  std::string code = "image";
};

/// The code of all groups of a module.
struct CompiledExecutable {
  /// "elf-so": a shared object for the runtime's loader; "static": kernels
  /// linked into the application (image holds their key).
  std::string format;
  std::string triple, cpu;
  /// The entry symbol of each distinct kernel name, in module walk order of
  /// the first group that has it (fm-fuse gives structurally equal groups
  /// the same kernel name; they share one function).
  std::vector<std::string> functions;
  std::vector<uint8_t> image;
  /// "static": the key (16 hex digits of a SHA-256 of the optimized code)
  /// that prefixes each function's symbol and names the kernels in the
  /// runtime's registry; the object file (ELF, or Mach-O for Apple) and
  /// the C source that registers the functions with the runtime
  /// (fm_static_kernels_register, fm/fm.h).
  std::string staticKey;
  std::vector<uint8_t> staticObject;
  std::string staticRegistration;
};

/// The arguments of a group's entry, in order (targets/Target.h).
using target::GroupArg;
using target::groupAbi;

/// The C symbol of a group's entry (target::entrySymbol). The entry has the
/// C ABI
///   void entry(void **args, int64_t rows, int64_t pos);
/// with args as groupAbi lists them; row r of every activation is at
/// position pos + r.
using target::entrySymbol;

/// Attributes of a built kernel: its entry symbol and its pointer count.
inline constexpr llvm::StringLiteral kKernelEntryAttr = "fmk.entry";
inline constexpr llvm::StringLiteral kKernelPointersAttr = "fmk.num_pointers";

/// Builds one func.func per distinct kernel name, `fmk_<kernel>_rows`
/// (scf/arith/math/memref; rank-0 memref<f32> pointer arguments in groupAbi
/// order, then rows and pos), in a new module in the same context. Returns
/// null after emitting a diagnostic on the offending op.
mlir::OwningOpRef<mlir::ModuleOp> buildGroupKernels(mlir::ModuleOp module);

/// The passes that take the kernels of buildGroupKernels (scf/arith/math/
/// memref) to the LLVM dialect: the CPU target's kernel pipeline.
void addLlvmLoweringPasses(mlir::OpPassManager &pm);

/// Generates, optimizes (LLVM O3) and compiles all groups of `module` for
/// `target`; for ELF targets links a shared object with ld.lld (ld.lld-22 or
/// ld.lld on PATH, else /usr/lib/llvm-22/bin/ld.lld) on temporary files.
/// `progress` (optional) receives one "cpu: ..." line per stage. The image
/// leaves cos/sin/sincos (RoPE, f64) and possibly memcpy undefined: the
/// loading process provides them (libm/libc; libSystem on macOS).
llvm::Expected<CompiledExecutable>
compileGroups(mlir::ModuleOp module, const CpuOptions &target,
              const std::function<void(llvm::StringRef)> &progress = {});

/// Registers `fm-cpu-build-kernels`, which replaces a module's contents with
/// buildGroupKernels(module) (for lit tests and debugging).
void registerCpuTargetPasses();

} // namespace fm::cpu
