// One weight's matmul on the CUDA device (CudaLinear.h).
#include "hal/cuda/CudaLinear.h"

#include "hal/cuda/kernels/qdecode.h"
#include "kernels/qformat.h"

namespace fm::hal::cuda {
namespace {
unsigned ceilDiv(int64_t n, int64_t d) { return unsigned((n + d - 1) / d); }
constexpr unsigned kMatvecThreads = 256;
} // namespace

bool usesGemm(WeightKind kind, int64_t rows) {
  return kind == WeightKind::Quant && rows >= kGemmMinRows;
}

LaunchGeometry gemmGeometry(int64_t M, int64_t N) {
  return {{ceilDiv(N, fm_cuda::kGemmTileN), ceilDiv(M, fm_cuda::kGemmTileM), 1},
          {unsigned(fm_cuda::kGemmThreads), 1, 1}};
}

LaunchGeometry matvecGeometry(int64_t M, int64_t N) {
  return {{ceilDiv(N, kMatvecThreads / 32), unsigned(M), 1},
          {kMatvecThreads, 1, 1}};
}

std::string qKernelName(const char *prefix, kernels::QuantFormat f) {
  return std::string(prefix) + "_q" + std::to_string(f.bits) + "g" +
         std::to_string(f.group) +
         (f.grid == kernels::QuantGrid::Affine ? "a" : "b");
}

Expected<Linear> Linear::make(const CudaDevice &dev, const WeightDesc &w,
                              bool tensorCores, bool int8) {
  Linear l;
  l.dev_ = &dev;
  l.w_ = devicePtr(w.buffer, w.offset);
  l.kind_ = w.kind;
  l.n_ = w.shape[0];
  l.k_ = w.shape.size() > 1 ? w.shape[1] : 0;
  std::string matvec = "fm_matvec_f32";
  if (w.kind == WeightKind::F16)
    matvec = "fm_matvec_f16";
  if (w.kind == WeightKind::Quant)
    matvec = qKernelName("fm_qmatvec_f32", w.format);
  if (w.kind == WeightKind::Quant && tensorCores) {
    auto gemm = dev.function(qKernelName("fm_qgemm_mma", w.format).c_str());
    if (!gemm)
      return gemm.status();
    l.gemm_ = *gemm;
  }
  auto fn = dev.function(matvec.c_str());
  if (!fn)
    return fn.status();
  l.matvec_ = *fn;
  if (int8 && w.kind == WeightKind::Quant) {
    auto dp4a = dev.function(qKernelName("fm_qmatvec_dp4a", w.format).c_str());
    if (!dp4a)
      return dp4a.status();
    auto quantize = dev.function("fm_quantize_x_q8");
    if (!quantize)
      return quantize.status();
    l.dp4a_ = *dp4a;
    l.quantize_ = *quantize;
  }
  return l;
}

void Linear::runInt8(CudaQueue &queue, CUdeviceptr x, int64_t xStride, CUdeviceptr y,
                     int64_t yStride, int64_t rows, bool accumulate, CUdeviceptr scratch) const {
  if (!dp4a_ || usesGemm(kind_, rows))
    return run(queue, x, xStride, y, yStride, rows, accumulate);
  const CUdeviceptr xs = scratch + CUdeviceptr(rows * k_);
  LaunchParams q;
  q.add(x).add(xStride).add(int(k_)).add(scratch).add(xs);
  dev_->launch(quantize_, {unsigned((k_ / 32 + 7) / 8), unsigned(rows)}, {256}, q, queue);
  LaunchParams p;
  p.add(w_).add(scratch).add(xs).add(y).add(yStride).add(int(n_)).add(int(k_))
      .add(int(accumulate));
  const LaunchGeometry g = matvecGeometry(rows, n_);
  dev_->launch(dp4a_, g.grid, g.block, p, queue);
}

void Linear::run(CudaQueue &queue, CUdeviceptr x, int64_t xStride, CUdeviceptr y,
                 int64_t yStride, int64_t rows, bool accumulate) const {
  LaunchParams p;
  if (gemm_ && usesGemm(kind_, rows)) {
    p.add(x).add(xStride).add(w_).add(y).add(yStride).add(int(rows))
        .add(int(n_)).add(int(k_)).add(int(accumulate));
    const LaunchGeometry g = gemmGeometry(rows, n_);
    dev_->launch(gemm_, g.grid, g.block, p, queue);
    return;
  }
  p.add(w_).add(x).add(xStride).add(y).add(yStride).add(int(n_)).add(int(k_))
      .add(int(accumulate));
  const LaunchGeometry g = matvecGeometry(rows, n_);
  dev_->launch(matvec_, g.grid, g.block, p, queue);
}

} // namespace fm::hal::cuda
