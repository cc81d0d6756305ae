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

/// The most rows of x that the matvecs (matmulF32, matmulF16W, qmatmul)
/// run as one: each tile of w is read (and unpacked) once for all the rows,
/// and row i of the result is bit for bit what a call with row i alone
/// gives (the decode step's), so that a batch of 2-8 rows (speculative
/// verification, batched decode) decodes exactly as one row at a time.
/// Callers send more rows to the prefill kernels (qgemm, gemmF32).
constexpr int kMatvecMaxRows = 8;
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
