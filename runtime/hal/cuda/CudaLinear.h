// One nn.Linear weight on the CUDA device, y[M][N] (+)= x[M][K] · Wᵀ with
// f32 activations: the matvec kernels (kernels/matvec.cu, one warp per
// output) for few rows, and for a packed weight from kGemmMinRows rows on
// the tensor-core GEMM (kernels/gemm.cu, 64 x 64 tiles of qdecode.h). Used
// by the Matmul and Moe kernels (CudaKernels.cpp, CudaMoe.cpp); the launch
// geometry is plain host code with its own unit test.
#pragma once

#include "hal/cuda/CudaDevice.h"

namespace fm::hal::cuda {

/// Rows from which a packed weight's matmul runs on the tensor cores: one
/// m16 fragment of rows; below it the GEMM's tile is mostly padding and a
/// matvec per row reads the weight no more often than the L2 keeps it.
constexpr int64_t kGemmMinRows = 16;

struct LaunchGeometry {
  Dim3 grid, block;
};

/// Whether `rows` rows of a weight of `kind` run on the tensor-core GEMM.
bool usesGemm(WeightKind kind, int64_t rows);
/// fm_qgemm_mma_*: one block of kGemmThreads per 64 x 64 tile of Y,
/// grid (ceil(N / 64), ceil(M / 64)).
LaunchGeometry gemmGeometry(int64_t M, int64_t N);
/// fm_matvec_* / fm_qmatvec_*: 8 warps per block, one output each, grid
/// (ceil(N / 8), M).
LaunchGeometry matvecGeometry(int64_t M, int64_t N);

/// fm_qmatvec_<path>_q<bits>g<group><b|a> (kernels/matvec.cu) and
/// fm_qgemm_mma_q<bits>g<group><b|a> (kernels/gemm.cu).
std::string qKernelName(const char *prefix, kernels::QuantFormat f);

class Linear {
public:
  /// `tensorCores` false keeps every row count on the f32-activation
  /// matvec: the MoE router, whose top-k an f16 rounding of x could flip
  /// against the CPU's choice.
  static Expected<Linear> make(const CudaDevice &dev, const WeightDesc &w,
                               bool tensorCores = true, bool int8 = false);
  /// Records y (+)= x · Wᵀ for `rows` rows (row r at x + r·xStride
  /// floats) on `queue`.
  void run(CudaQueue &queue, CUdeviceptr x, int64_t xStride, CUdeviceptr y,
           int64_t yStride, int64_t rows, bool accumulate) const;
  /// run() with x rounded to int8 per 32 inputs (QActivations::Int8, the
  /// dp4a matvec) where the Linear was made `int8`, the weight is packed
  /// and the rows are below kGemmMinRows (as the Matmul kernel); else
  /// run(). `scratch` holds rows·k int8 then rows·k/32 floats.
  void runInt8(CudaQueue &queue, CUdeviceptr x, int64_t xStride, CUdeviceptr y,
               int64_t yStride, int64_t rows, bool accumulate, CUdeviceptr scratch) const;
  int64_t outputs() const { return n_; }

private:
  const CudaDevice *dev_ = nullptr;
  CUfunction matvec_ = nullptr, gemm_ = nullptr;
  CUfunction dp4a_ = nullptr, quantize_ = nullptr; // made int8, packed
  CUdeviceptr w_ = 0;
  WeightKind kind_ = WeightKind::F32;
  int64_t n_ = 0, k_ = 0;
};

} // namespace fm::hal::cuda
