// A packed f32 GEMM for many-row products (image encoders, long prefills):
// y = x·wᵀ (+ bias) (+ y), with a runtime choice of instruction-set path.
#pragma once

#include "kernels/isa.h"

#include <cstdint>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::kernels {

/// y[M][N] = x[M][K] · w[N][K]ᵀ + bias[N], plus the old y when
/// `accumulate` (a fused residual add); all row-major, w an nn.Linear weight
/// (out × in), `bias` may be null. y must not overlap x, w or bias.
///
/// Unlike matmulF32 (dot products per output, built for decode and short
/// prefills) this copies blocks of x and w into panels laid out for an
/// outer-product register tile (GotoBLAS/BLIS), which pays off from a few
/// dozen rows on: the ViT blocks' qkv/proj/MLP matmuls over 10^3 tokens.
/// Per-thread panel buffers are kept between calls (thread_local), so a
/// call allocates nothing once each thread has run one of the largest
/// shape. Work is split across `pool` (may be null) by column slabs, or
/// row blocks when N is narrow; every output element is computed by one
/// thread in a fixed order, so results do not depend on the thread count.
void gemmF32(const float *x, int64_t M, int64_t K, const float *w, int64_t N,
             const float *bias, float *y, bool accumulate,
             fm::rt::ThreadPool *pool);

/// The block y[m0, m1) x [n0, n1) of gemmF32 (best path) on the calling
/// thread, for callers that split the work across threads themselves (the
/// fused LoRA matmul of hal/cpu/CpuLora.cpp); y is dense (rows N apart).
void gemmF32Block(const float *x, int64_t M, int64_t K, const float *w,
                  int64_t N, const float *bias, float *y, bool accumulate,
                  int64_t m0, int64_t m1, int64_t n0, int64_t n1);

/// gemmF32 on an explicit path, which must be available
/// (kernelIsaAvailable); for tests and benchmarks.
void gemmF32On(KernelIsa isa, const float *x, int64_t M, int64_t K,
               const float *w, int64_t N, const float *bias, float *y,
               bool accumulate, fm::rt::ThreadPool *pool);

} // namespace fm::kernels
