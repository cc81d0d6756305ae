// The CPU device's image-encoder kernels (docs/vit.md): each prepared
// kernel resolves its pointers once and calls the phase-1 kernels of
// runtime/kernels (conv.h, pointwise.h, vit_attention.h, gemm.h).
#include "hal/cpu/CpuDevice.h"

#include "hal/cpu/Linear.h"
#include "kernels/conv.h"
#include "kernels/pointwise.h"
#include "kernels/vit_attention.h"

#include <cstring>

namespace fm::hal {
namespace {

float *hostFloats(const Rows &r) {
  return reinterpret_cast<float *>(r.buffer->host() + r.offset);
}

/// An f32 weight's data, or null when the weight is absent.
const float *hostWeight(const WeightDesc &w) {
  return w.present() ? reinterpret_cast<const float *>(w.buffer->host() + w.offset)
                     : nullptr;
}

CpuQueue &cpu(Queue &queue) { return static_cast<CpuQueue &>(queue); }

/// The kernels take dense rows (the compiler plans every buffer so).
Status requireDense(const char *kernel, const char *what, const Rows &r) {
  if (r.stride == r.width)
    return Status::ok();
  return Status::error(std::string("cpu: ") + kernel + ": the " + what +
                       " buffer has a row stride of " + std::to_string(r.stride) +
                       " floats for " + std::to_string(r.width) +
                       " columns (this kernel takes dense rows)");
}

class PatchEmbedKernel final : public Kernel {
public:
  explicit PatchEmbedKernel(const PatchEmbedDesc &d)
      : d_(d), image_(hostFloats(d.image)), out_(hostFloats(d.out)),
        weight_(hostWeight(d.weight)), bias_(hostWeight(d.bias)),
        pos_(hostWeight(d.pos)), registers_(hostWeight(d.registers)),
        dim_(d.out.width),
        numRegisters_(d.registers.present() ? d.registers.shape[0] : 0) {}

  Status run(Queue &queue, const Launch &) const override {
    if (numRegisters_ > 0)
      std::memcpy(out_, registers_, size_t(numRegisters_ * dim_) * sizeof(float));
    kernels::patchEmbed(image_, d_.channels, d_.height, d_.width, d_.patch,
                        weight_, dim_, bias_, pos_, out_ + numRegisters_ * dim_,
                        cpu(queue).pool());
    return Status::ok();
  }

private:
  PatchEmbedDesc d_;
  const float *image_;
  float *out_;
  const float *weight_, *bias_, *pos_, *registers_;
  int64_t dim_, numRegisters_;
};

class LayerNormKernel final : public Kernel {
public:
  explicit LayerNormKernel(const LayerNormDesc &d)
      : x_(hostFloats(d.x)), y_(hostFloats(d.y)), weight_(hostWeight(d.weight)),
        bias_(hostWeight(d.bias)), width_(d.x.width), eps_(d.eps) {}

  Status run(Queue &queue, const Launch &l) const override {
    kernels::layerNorm(x_, l.rows, width_, weight_, bias_, eps_, y_,
                       cpu(queue).pool());
    return Status::ok();
  }

private:
  const float *x_;
  float *y_;
  const float *weight_, *bias_;
  int64_t width_;
  float eps_;
};

class VitAttentionKernel final : public Kernel {
public:
  explicit VitAttentionKernel(const VitAttentionDesc &d) {
    a_.qkv = hostFloats(d.qkv);
    a_.ldQkv = d.qkv.stride;
    a_.registers = d.registers;
    a_.gridH = d.gridH;
    a_.gridW = d.gridW;
    a_.H = d.heads;
    a_.D = d.headDim;
    a_.scale = d.scale;
    a_.window = d.window;
    a_.relPosH = hostWeight(d.relPosH);
    a_.relPosW = hostWeight(d.relPosW);
    a_.padQkv = hostWeight(d.padQkv);
    a_.out = hostFloats(d.out);
    a_.ldOut = d.out.stride;
  }

  Status run(Queue &queue, const Launch &) const override {
    kernels::vitAttention(a_, cpu(queue).pool());
    return Status::ok();
  }

private:
  kernels::VitAttentionArgs a_;
};

class Conv3x3Kernel final : public Kernel {
public:
  explicit Conv3x3Kernel(const Conv3x3Desc &d)
      : x_(hostFloats(d.x)), y_(hostFloats(d.y)), gridH_(d.gridH),
        gridW_(d.gridW), cin_(d.x.width), cout_(d.y.width),
        weight_(rt::WeightRef()), bias_(hostWeight(d.bias)) {
    weight_.data = d.weight.buffer->host() + d.weight.offset;
    weight_.kind = d.weight.kind == WeightKind::Quant ? rt::WeightRef::Kind::Quant
                   : d.weight.kind == WeightKind::F16 ? rt::WeightRef::Kind::F16
                                                      : rt::WeightRef::Kind::F32;
    weight_.format = d.weight.format;
    weight_.activations = d.activations;
    // Other formats multiply the unfolded taps in queue scratch.
    if (weight_.kind != rt::WeightRef::Kind::F32)
      scratch_ = uint64_t(gridH_ * gridW_) * 9 * cin_ * sizeof(float);
  }

  uint64_t scratchBytes() const override { return scratch_; }

  Status run(Queue &queue, const Launch &) const override {
    CpuQueue &q = cpu(queue);
    if (weight_.kind == rt::WeightRef::Kind::F32) {
      kernels::conv3x3(x_, gridH_, gridW_, cin_,
                       static_cast<const float *>(weight_.data), cout_, bias_,
                       y_, q.pool());
      return Status::ok();
    }
    float *cols = reinterpret_cast<float *>(q.scratch());
    const int64_t tokens = gridH_ * gridW_, K = 9 * cin_;
    kernels::conv3x3Unfold(x_, gridH_, gridW_, cin_, cols, q.pool());
    rt::linear(weight_, cols, tokens, K, cout_, y_, false, q.pool());
    if (bias_)
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t o = 0; o < cout_; ++o)
          y_[t * cout_ + o] += bias_[o];
    return Status::ok();
  }

private:
  const float *x_;
  float *y_;
  int64_t gridH_, gridW_, cin_, cout_;
  rt::WeightRef weight_;
  const float *bias_;
  uint64_t scratch_ = 0;
};

class AvgPoolKernel final : public Kernel {
public:
  explicit AvgPoolKernel(const AvgPoolDesc &d)
      : x_(hostFloats(d.x)), y_(hostFloats(d.y)), grid_(d.grid),
        outGrid_(d.outGrid), width_(d.x.width) {}

  Status run(Queue &queue, const Launch &) const override {
    kernels::adapterAvgPool(x_, grid_, width_, outGrid_, y_, cpu(queue).pool());
    return Status::ok();
  }

private:
  const float *x_;
  float *y_;
  int64_t grid_, outGrid_, width_;
};

} // namespace

Expected<std::unique_ptr<Kernel>>
CpuDevice::preparePatchEmbed(const PatchEmbedDesc &d) {
  FM_RETURN_IF_ERROR(requireDense("patch embedding", "out", d.out));
  return std::unique_ptr<Kernel>(new PatchEmbedKernel(d));
}

Expected<std::unique_ptr<Kernel>>
CpuDevice::prepareLayerNorm(const LayerNormDesc &d) {
  FM_RETURN_IF_ERROR(requireDense("LayerNorm", "x", d.x));
  FM_RETURN_IF_ERROR(requireDense("LayerNorm", "y", d.y));
  return std::unique_ptr<Kernel>(new LayerNormKernel(d));
}

Expected<std::unique_ptr<Kernel>>
CpuDevice::prepareVitAttention(const VitAttentionDesc &d) {
  return std::unique_ptr<Kernel>(new VitAttentionKernel(d));
}

Expected<std::unique_ptr<Kernel>>
CpuDevice::prepareConv3x3(const Conv3x3Desc &d) {
  FM_RETURN_IF_ERROR(requireDense("3x3 convolution", "x", d.x));
  FM_RETURN_IF_ERROR(requireDense("3x3 convolution", "y", d.y));
  return std::unique_ptr<Kernel>(new Conv3x3Kernel(d));
}

Expected<std::unique_ptr<Kernel>>
CpuDevice::prepareAvgPool(const AvgPoolDesc &d) {
  FM_RETURN_IF_ERROR(requireDense("average pooling", "x", d.x));
  FM_RETURN_IF_ERROR(requireDense("average pooling", "y", d.y));
  return std::unique_ptr<Kernel>(new AvgPoolKernel(d));
}

} // namespace fm::hal
