// The CUDA device's hand-written kernels (kernels/*.cu) as PTX, compiled by
// clang's CUDA mode at build time and embedded by cuda.cmake
// (CudaPtx.cpp is generated): one module per source file.
#pragma once

#include <cstddef>

namespace fm::hal::cuda {

struct PtxModule {
  const char *name; // the source file's stem: "matvec", "attention", ...
  const char *ptx;  // NUL-terminated PTX text
};

extern const PtxModule kPtxModules[];
extern const size_t kNumPtxModules;

} // namespace fm::hal::cuda
