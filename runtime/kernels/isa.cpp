// Detects which kernel instruction sets this CPU runs, once.
#include "kernels/isa.h"

#include <initializer_list>

namespace fm::kernels {
namespace {

struct Support {
  bool avx2 = false;
  bool avx512 = false;
  bool neon = false;
  bool avx512Vnni = false;
  bool gfni = false;
};

Support detect() {
  Support s;
#if defined(FM_KERNELS_X86)
  // __builtin_cpu_supports also checks that the OS saves the wide registers.
  __builtin_cpu_init();
  s.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
  s.avx512 = __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
  s.avx512Vnni = s.avx512 && __builtin_cpu_supports("avx512vnni");
  s.gfni = __builtin_cpu_supports("gfni");
#elif defined(FM_KERNELS_NEON)
  s.neon = true; // Baseline on AArch64.
#endif
  return s;
}

const Support &support() {
  static const Support s = detect();
  return s;
}

} // namespace

const char *kernelIsaName(KernelIsa isa) {
  switch (isa) {
  case KernelIsa::Generic:
    return "generic";
  case KernelIsa::Avx2:
    return "avx2";
  case KernelIsa::Avx512:
    return "avx512";
  case KernelIsa::Neon:
    return "neon";
  }
  return "unknown";
}

bool kernelIsaAvailable(KernelIsa isa) {
  switch (isa) {
  case KernelIsa::Generic:
    return true;
  case KernelIsa::Avx2:
    return support().avx2;
  case KernelIsa::Avx512:
    return support().avx512;
  case KernelIsa::Neon:
    return support().neon;
  }
  return false;
}

bool cpuHasAvx512Vnni() { return support().avx512Vnni; }

bool cpuHasGfni() { return support().gfni; }

KernelIsa kernelIsaBest() {
  static const KernelIsa best = [] {
    for (KernelIsa isa : {KernelIsa::Avx512, KernelIsa::Avx2, KernelIsa::Neon})
      if (kernelIsaAvailable(isa))
        return isa;
    return KernelIsa::Generic;
  }();
  return best;
}

} // namespace fm::kernels
