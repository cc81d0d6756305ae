// The paths that the kernels' path tests (TEST_P over KernelIsa: matmul,
// gemm, pointwise, ViT attention) instantiate, and how a case skips a path
// that this CPU lacks.
#pragma once

#include "kernels/isa.h"
#include "kernels/qgemm.h" // cpuName

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fm::kernels::testing {

/// The paths this build compiles, from the macro that compiles the kernels'
/// ISA files (runtime/CMakeLists.txt gives their tests FM_KERNELS_X86 or
/// FM_KERNELS_NEON too): Generic, Avx2 and Avx512 on x86-64; Generic and
/// Neon on AArch64 (on x86-64 hosts the NEON kernels are cross-built and run
/// under qemu: runtime.neon.*, runtime.vision_kernels.neon).
inline std::vector<KernelIsa> compiledPaths() {
#if defined(FM_KERNELS_X86)
  return {KernelIsa::Generic, KernelIsa::Avx2, KernelIsa::Avx512};
#elif defined(FM_KERNELS_NEON)
  return {KernelIsa::Generic, KernelIsa::Neon};
#else
  return {KernelIsa::Generic};
#endif
}

/// A compiled path this CPU does not run skips its cases in SetUp, naming
/// the CPU. The AVX-512 cases have a ctest entry of their own
/// (fm_add_kernel_path_tests in runtime/CMakeLists.txt) whose
/// SKIP_REGULAR_EXPRESSION matches this message, so that ctest reports them
/// Skipped on a CPU without AVX-512.
class KernelPathTest : public ::testing::TestWithParam<KernelIsa> {
protected:
  void SetUp() override {
    if (!kernelIsaAvailable(GetParam()))
      GTEST_SKIP() << "kernel path " << kernelIsaName(GetParam())
                   << " is not supported by this CPU (" << cpuName() << ")";
  }
};

/// The case name suffix: "generic", "avx2", "avx512" or "neon".
inline std::string kernelPathName(const ::testing::TestParamInfo<KernelIsa> &info) {
  return kernelIsaName(info.param);
}

} // namespace fm::kernels::testing
