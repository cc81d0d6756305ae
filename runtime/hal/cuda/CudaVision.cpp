// The CUDA device's image-encoder kernels (docs/vit.md; kernels/vision.cu):
// patch embedding, LayerNorm, ViT attention, the adapter's 3x3 convolution
// (the taps unfolded into a buffer of the kernel's own, then the matmul on
// the weight as an nn.Linear [Cout][9·Cin]) and average pooling. The
// matmul's bias / GELU epilogue is CudaKernels.cpp's MatmulKernel's. The
// limits are the Vulkan kernels' (hal/gpu/GpuVisionAbi.h), so a model
// that runs on one GPU device runs on the other.
#include "hal/cuda/CudaDevice.h"
#include "hal/gpu/GpuVisionAbi.h"
#include "kernels/conv.h"

#include <algorithm>
#include <cstring>

namespace fm::hal::cuda {
namespace {

CudaQueue &cudaQueue(Queue &queue) { return static_cast<CudaQueue &>(queue); }
CUdeviceptr rowsPtr(const Rows &r) { return devicePtr(r.buffer, r.offset); }
CUdeviceptr weightPtr(const WeightDesc &w) {
  return w.present() ? devicePtr(w.buffer, w.offset) : CUdeviceptr(0);
}

Status fitsGrid(const char *kernel, int64_t n, const char *what) {
  if (n <= 65535)
    return Status::ok();
  return Status::error(std::string("cuda: ") + kernel + ": " + std::to_string(n) + " " +
                       what + " exceed the 65535 blocks of a grid's y dimension");
}

/// One launch whose grid is fixed when prepared (the encoders run on their
/// fixed shapes), or whose x is the launch's rows (`perRow`: LayerNorm).
class LaunchKernel final : public Kernel {
public:
  LaunchKernel(CUfunction fn, Dim3 grid, Dim3 block) : fn_(fn), grid_(grid), block_(block) {}
  /// The arguments, in the kernel's order (8 bytes each, as LaunchParams).
  template <typename T> LaunchKernel &arg(T v) {
    static_assert(sizeof(T) <= sizeof(uint64_t), "one slot per argument");
    uint64_t slot = 0;
    std::memcpy(&slot, &v, sizeof(T));
    args_.push_back(slot);
    return *this;
  }
  LaunchKernel &perRow(const char *name, int64_t maxRows) {
    name_ = name;
    maxRows_ = maxRows;
    return *this;
  }
  Status run(Queue &queue, const Launch &l) const override {
    CudaQueue &q = cudaQueue(queue);
    FM_RETURN_IF_ERROR(q.enter());
    Dim3 grid = grid_;
    if (maxRows_ > 0) {
      if (l.rows > maxRows_)
        return Status::error(std::string("cuda: ") + name_ + ": a launch of " +
                             std::to_string(l.rows) + " rows exceeds the " +
                             std::to_string(maxRows_) + " it was prepared for");
      grid.x = unsigned(l.rows);
    }
    q.launch(fn_, grid, block_, args_.data(), int(args_.size()));
    return Status::ok();
  }

private:
  CUfunction fn_;
  Dim3 grid_, block_;
  std::vector<uint64_t> args_;
  const char *name_ = "kernel";
  int64_t maxRows_ = 0; // per-row launches: rows the buffers hold
};

Expected<std::unique_ptr<LaunchKernel>> launchOf(CudaDevice &dev, const char *name, Dim3 grid,
                                                 Dim3 block) {
  auto fn = dev.function(name);
  if (!fn)
    return fn.status();
  return std::make_unique<LaunchKernel>(*fn, grid, block);
}

/// Rows of `r` that fit its buffer: the LayerNorm description does not say
/// how many rows a launch gives.
int64_t rowsInBuffer(const Rows &r) {
  const uint64_t end = r.buffer->size(), row = uint64_t(r.width) * 4;
  if (r.stride <= 0 || end < r.offset + row)
    return 1;
  return int64_t((end - r.offset - row) / (uint64_t(r.stride) * 4)) + 1;
}

/// The 3x3 convolution: the taps unfolded, then the matmul over them.
class Conv3x3Kernel final : public Kernel {
public:
  Status beforeFirstRun(Queue &q) override { return matmul->beforeFirstRun(q); }
  uint64_t scratchBytes() const override { return matmul->scratchBytes(); }
  Status run(Queue &queue, const Launch &) const override {
    FM_RETURN_IF_ERROR(unfold->run(queue, Launch{tokens, 0, nullptr}));
    return matmul->run(queue, Launch{tokens, 0, nullptr});
  }
  std::unique_ptr<CudaBuffer> cols;
  std::unique_ptr<Kernel> unfold, matmul;
  int64_t tokens = 0;
};

} // namespace

Expected<std::unique_ptr<Kernel>> CudaDevice::preparePatchEmbed(const PatchEmbedDesc &d) {
  const int64_t R = d.registers.present() ? d.registers.shape[0] : 0;
  const int64_t patches = (d.height / d.patch) * (d.width / d.patch);
  const int64_t taps = d.channels * d.patch * d.patch;
  if (taps > gpu::kPatchMaxTaps)
    return Status::error("cuda: patch embedding: " + std::to_string(taps) +
                         " values per patch (channels x patch^2) are over the kernel's " +
                         std::to_string(gpu::kPatchMaxTaps));
  auto k = launchOf(*this, "fm_patch_embed", {unsigned(R + patches)}, {64});
  if (!k)
    return k.status();
  (*k)->arg(rowsPtr(d.image)).arg(rowsPtr(d.out)).arg(d.out.stride).arg(int(d.channels))
      .arg(int(d.height)).arg(int(d.width)).arg(int(d.patch)).arg(int(d.out.width))
      .arg(int(R)).arg(weightPtr(d.weight)).arg(weightPtr(d.bias)).arg(weightPtr(d.pos))
      .arg(weightPtr(d.registers));
  return std::unique_ptr<Kernel>(std::move(*k));
}

Expected<std::unique_ptr<Kernel>> CudaDevice::prepareLayerNorm(const LayerNormDesc &d) {
  auto k = launchOf(*this, "fm_layer_norm", {1}, {64});
  if (!k)
    return k.status();
  (*k)->arg(rowsPtr(d.x)).arg(d.x.stride).arg(rowsPtr(d.y)).arg(d.y.stride)
      .arg(int(d.x.width)).arg(weightPtr(d.weight)).arg(weightPtr(d.bias)).arg(d.eps)
      .perRow("LayerNorm", std::min(rowsInBuffer(d.x), rowsInBuffer(d.y)));
  return std::unique_ptr<Kernel>(std::move(*k));
}

Expected<std::unique_ptr<Kernel>> CudaDevice::prepareVitAttention(const VitAttentionDesc &d) {
  const int64_t tokens = d.registers + d.gridH * d.gridW;
  if (d.headDim > gpu::kVitMaxHeadDim || d.headDim <= 0)
    return Status::error("cuda: ViT attention head_dim " + std::to_string(d.headDim) +
                         " is outside the kernel's 1.." + std::to_string(gpu::kVitMaxHeadDim));
  const bool rel = d.relPosH.present();
  const int64_t sideH = d.window ? d.window : d.gridH, sideW = d.window ? d.window : d.gridW;
  if (rel && std::max(sideH, sideW) > gpu::kVitMaxRelSide)
    return Status::error("cuda: ViT attention: a relative-position side of " +
                         std::to_string(std::max(sideH, sideW)) + " is over the kernel's " +
                         std::to_string(gpu::kVitMaxRelSide));
  FM_RETURN_IF_ERROR(fitsGrid("ViT attention", d.heads, "heads"));
  auto k = launchOf(*this, "fm_vit_attention", {unsigned(tokens), unsigned(d.heads)}, {64});
  if (!k)
    return k.status();
  (*k)->arg(rowsPtr(d.qkv)).arg(d.qkv.stride).arg(rowsPtr(d.out)).arg(d.out.stride)
      .arg(int(d.registers)).arg(int(d.gridH)).arg(int(d.gridW)).arg(int(d.heads))
      .arg(int(d.headDim)).arg(int(d.window)).arg(rel ? weightPtr(d.relPosH) : 0)
      .arg(rel ? weightPtr(d.relPosW) : 0).arg(weightPtr(d.padQkv)).arg(d.scale);
  return std::unique_ptr<Kernel>(std::move(*k));
}

Expected<std::unique_ptr<Kernel>> CudaDevice::prepareConv3x3(const Conv3x3Desc &d) {
  const int64_t tokens = d.gridH * d.gridW, cin = d.x.width, K = 9 * cin;
  FM_RETURN_IF_ERROR(fitsGrid("3x3 convolution", tokens, "tokens"));
  auto k = std::make_unique<Conv3x3Kernel>();
  k->tokens = tokens;
  auto cols = allocateDevice(uint64_t(tokens) * uint64_t(K) * 4);
  if (!cols)
    return cols.status();
  k->cols = std::move(*cols);
  auto unfold =
      launchOf(*this, "fm_unfold3x3", {unsigned((K + 255) / 256), unsigned(tokens)}, {256});
  if (!unfold)
    return unfold.status();
  (*unfold)->arg(rowsPtr(d.x)).arg(d.x.stride).arg(k->cols->ptr()).arg(int(d.gridH))
      .arg(int(d.gridW)).arg(int(cin));
  k->unfold = std::move(*unfold);
  // The weight [Cout][Cin][3][3] is the nn.Linear [Cout][9·Cin] over the taps.
  MatmulDesc m;
  m.x = Rows{k->cols.get(), 0, K, K};
  m.y = d.y;
  m.k = K;
  m.n = d.y.width;
  m.weights = {d.weight};
  m.weights[0].shape = {d.y.width, K};
  m.bias = d.bias;
  m.maxRows = tokens;
  m.activations = d.activations;
  auto mm = prepareMatmul(m);
  if (!mm)
    return mm.status();
  k->matmul = std::move(*mm);
  return std::unique_ptr<Kernel>(std::move(k));
}

Expected<std::unique_ptr<Kernel>> CudaDevice::prepareAvgPool(const AvgPoolDesc &d) {
  const int64_t s = kernels::adapterPoolStride(d.grid, d.outGrid);
  const int64_t kk = kernels::adapterPoolKernel(d.grid, d.outGrid);
  FM_RETURN_IF_ERROR(fitsGrid("average pooling", d.outGrid * d.outGrid, "output tokens"));
  auto k = launchOf(*this, "fm_avg_pool",
                    {unsigned((d.x.width + 255) / 256), unsigned(d.outGrid * d.outGrid)},
                    {256});
  if (!k)
    return k.status();
  (*k)->arg(rowsPtr(d.x)).arg(d.x.stride).arg(rowsPtr(d.y)).arg(d.y.stride)
      .arg(int(d.x.width)).arg(int(d.grid)).arg(int(d.outGrid)).arg(int(s)).arg(int(kk));
  return std::unique_ptr<Kernel>(std::move(*k));
}

} // namespace fm::hal::cuda
