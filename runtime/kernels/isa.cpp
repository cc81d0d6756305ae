// Detects which kernel instruction sets this CPU runs, once.
#include "kernels/isa.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace fm::kernels {
namespace {

struct Support {
  bool avx2 = false;
  bool avx512 = false;
  bool neon = false;
  bool avx512Vnni = false;
  bool gfni = false;
  bool amxAllowed = true;
};

// FM_MAX_CPU_ISA's levels, lowest first (isa.h).
enum class Level { Generic, Avx2, Avx512, Avx512Vnni, Amx };

Level maxLevel() {
  const char *v = std::getenv("FM_MAX_CPU_ISA");
  if (!v || !*v)
    return Level::Amx;
  static const struct {
    const char *name;
    Level level;
  } kLevels[] = {{"generic", Level::Generic}, {"avx2", Level::Avx2},
                 {"avx512", Level::Avx512}, {"avx512-vnni", Level::Avx512Vnni},
                 {"amx", Level::Amx}};
  for (const auto &l : kLevels)
    if (!std::strcmp(v, l.name))
      return l.level;
  std::fprintf(stderr,
               "fm: FM_MAX_CPU_ISA='%s' is not one of generic, avx2, avx512, "
               "avx512-vnni, amx; ignored\n",
               v);
  return Level::Amx;
}

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
  const Level cap = maxLevel();
  if (cap < Level::Amx)
    s.amxAllowed = false;
  if (cap < Level::Avx512Vnni)
    s.avx512Vnni = s.gfni = false;
  if (cap < Level::Avx512)
    s.avx512 = false;
  if (cap < Level::Avx2)
    s.avx2 = s.neon = false;
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

bool cpuIsaAllowsAmx() { return support().amxAllowed; }

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
