// The CPU target: generated kernels compiled to native code through LLVM
// (an ELF shared object the runtime dlopens, or a Mach-O object for Apple).
#pragma once

namespace fm::cpu {

/// Adds the "cpu" target to fm::target::TargetRegistry.
void registerCpuTarget();

} // namespace fm::cpu
