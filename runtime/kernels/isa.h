// The instruction-set paths the kernels are built for, and which one this
// CPU runs.
#pragma once

namespace fm::kernels {

/// Kernels with several implementations (matmul, attention) have one per
/// path that this build compiles: Generic always, Avx2 and Avx512 on x86-64,
/// Neon on AArch64.
enum class KernelIsa { Generic, Avx2, Avx512, Neon };

/// "generic", "avx2", "avx512" or "neon".
const char *kernelIsaName(KernelIsa isa);
/// The best path compiled in that this CPU supports; detected once.
KernelIsa kernelIsaBest();
/// Whether `isa` is compiled in and this CPU supports it.
bool kernelIsaAvailable(KernelIsa isa);

/// x86 extensions some AVX-512 kernels take where the CPU has them (false
/// on other CPUs and builds); detected once.
bool cpuHasAvx512Vnni();
bool cpuHasGfni();

/// FM_MAX_CPU_ISA caps what the kernels use below what the CPU has, as
/// oneDNN's ONEDNN_MAX_CPU_ISA does: generic, avx2, avx512, avx512-vnni
/// (AVX-512 with VNNI and GFNI) or amx (no cap, the default). A machine
/// with AMX then runs the paths of one without it (tests, benchmarks);
/// an unknown value is ignored with a message on stderr. Read once.
/// Whether the cap lets the kernels use AMX (the CPU may still lack it).
bool cpuIsaAllowsAmx();

} // namespace fm::kernels
