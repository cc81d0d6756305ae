// The Metal device's image-encoder kernels, a mirror of
// hal/vulkan/VulkanVision.cpp (docs/vit.md; the CPU's are
// hal/cpu/CpuVisionKernels.cpp): patch embedding, LayerNorm, ViT attention,
// the adapter's 3x3 convolution (unfold3x3, then the matmul kernel on the
// weight as an nn.Linear [Cout][9·Cin]) and average pooling, and the bias /
// GELU epilogue of the encoders' matmuls. The same GLSL kernels (translated
// to MSL), bindings, push constants (hal/gpu/GpuVisionAbi.h) and grids as
// on Vulkan; every binding is resolved when a kernel is prepared.
//
// UNVERIFIED: never compiled or run (the project has no Mac). Objective-C++.
#include "hal/gpu/GpuVisionAbi.h"
#include "hal/metal/MetalDevice.h"
#include "hal/metal/MetalKernelUtil.h"
#include "kernels/conv.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>

namespace fm::hal::mtl {
namespace {

MetalQueue &mq(Queue &q) { return static_cast<MetalQueue &>(q); }

Expected<BoundRange> bindWeight(const WeightDesc &w, const std::string &what) {
  return bindRange(mbuf(w.buffer), w.offset, w.bytes, 4, what + " '" + w.name + "'");
}

/// Rows of `r` that fit up to the end of its buffer: the LayerNorm
/// description does not say how many rows a launch gives (Metal has no
/// per-binding size limit, unlike Vulkan's rowsPerBinding).
int64_t bindableRows(const Rows &r) {
  const uint64_t end = r.buffer->size(), row = uint64_t(r.width) * 4;
  int64_t rows = 1;
  if (r.stride > 0 && end >= r.offset + row)
    rows = int64_t((end - r.offset - row) / (uint64_t(r.stride) * 4)) + 1;
  return std::max<int64_t>(1, rows);
}

/// One prepared dispatch of a hand-written kernel: its pipeline, bindings
/// and push constants.
struct Op {
  const Pipeline *pipeline = nullptr;
  std::vector<BoundRange> ranges;
  std::array<uint8_t, 128> push{};
  uint32_t x = 1, y = 1, z = 1;

  template <class P>
  static Expected<Op> make(MetalDevice &dev, const char *shader,
                           const std::vector<BoundRange> &ranges, const P &push) {
    static_assert(sizeof(P) <= sizeof(Op::push), "push constants over 128 bytes");
    Op op;
    auto p = dev.pipelines().get(shader, uint32_t(ranges.size()), sizeof(P));
    if (!p)
      return p.status();
    op.pipeline = *p;
    op.ranges = ranges;
    std::memcpy(op.push.data(), &push, sizeof(P));
    return op;
  }
  Status run(MetalQueue &q) const {
    return q.dispatch(*pipeline, ranges.data(), push.data(), x, y, z);
  }
};

/// Fails with the first range's error, unless every range bound.
Status allBound(std::initializer_list<const Expected<BoundRange> *> ranges) {
  for (const Expected<BoundRange> *r : ranges)
    if (!*r)
      return r->status();
  return Status::ok();
}

// --- matmul epilogue -----------------------------------------------------------

/// The base matmul (x·Wᵀ into y, or added to it), then y = act(y + bias)
/// over the launch's rows.
class EpilogueKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(MetalDevice &dev, const MatmulDesc &d,
                                                std::unique_ptr<Kernel> base) {
    std::unique_ptr<EpilogueKernel> k(new EpilogueKernel());
    k->base_ = std::move(base);
    auto y = bindRows(d.y, 0, d.maxRows, "matmul output (epilogue)");
    if (!y)
      return y.status();
    Expected<BoundRange> b = *y; // a stand-in binding when there is no bias
    if (d.bias.present())
      b = bindWeight(d.bias, "matmul bias");
    if (!b)
      return b.status();
    gpu::BiasActPush push{y->elem,
                          uint32_t(d.y.stride),
                          uint32_t(d.n),
                          d.bias.present() ? b->elem : 0u,
                          d.bias.present() ? 1u : 0u,
                          uint32_t(d.activation)};
    static_assert(uint32_t(Activation::Gelu) == 1 && uint32_t(Activation::GeluTanh) == 2 &&
                      uint32_t(Activation::QuickGelu) == 3,
                  "bias_act.comp's act codes");
    auto op = Op::make(dev, "bias_act", {*y, *b}, push);
    if (!op)
      return op.status();
    k->op_ = std::move(*op);
    k->op_.x = ceilDiv(uint64_t(d.n), 64);
    return std::unique_ptr<Kernel>(std::move(k));
  }
  Status beforeFirstRun(Queue &q) override { return base_->beforeFirstRun(q); }
  uint64_t scratchBytes() const override { return base_->scratchBytes(); }
  Status run(Queue &queue, const Launch &l) const override {
    FM_RETURN_IF_ERROR(base_->run(queue, l));
    return mq(queue).dispatch(*op_.pipeline, op_.ranges.data(), op_.push.data(), op_.x,
                              uint32_t(l.rows), 1);
  }

private:
  EpilogueKernel() = default;
  std::unique_ptr<Kernel> base_;
  Op op_;
};

// --- the fixed-shape kernels -----------------------------------------------------

/// A kernel of one prepared dispatch whose grid does not depend on the
/// launch (the encoder runs on its fixed shapes), or whose x is the
/// launch's rows (Grid::LaunchRows: LayerNorm, a threadgroup per row).
class OpKernel final : public Kernel {
public:
  enum class Grid { Fixed, LaunchRows };
  Status run(Queue &queue, const Launch &l) const override {
    const uint32_t x = grid == Grid::LaunchRows ? uint32_t(l.rows) : op.x;
    return mq(queue).dispatch(*op.pipeline, op.ranges.data(), op.push.data(), x, op.y, op.z);
  }
  Op op;
  Grid grid = Grid::Fixed;
};

/// The 3x3 convolution: the taps unfolded into a buffer of the kernel's
/// own, then the matmul (with its bias epilogue) over them.
class Conv3x3Kernel final : public Kernel {
public:
  Status beforeFirstRun(Queue &q) override { return matmul->beforeFirstRun(q); }
  uint64_t scratchBytes() const override { return matmul->scratchBytes(); }
  Status run(Queue &queue, const Launch &) const override {
    FM_RETURN_IF_ERROR(unfold.run(mq(queue)));
    return matmul->run(queue, Launch{tokens, 0, nullptr, nullptr});
  }
  std::unique_ptr<Buffer> cols;
  Op unfold;
  std::unique_ptr<Kernel> matmul;
  int64_t tokens = 0;
};

} // namespace

Expected<std::unique_ptr<Kernel>> makeMatmulEpilogue(MetalDevice &dev, const MatmulDesc &d,
                                                     std::unique_ptr<Kernel> base) {
  return EpilogueKernel::make(dev, d, std::move(base));
}

Expected<std::unique_ptr<Kernel>> MetalDevice::preparePatchEmbed(const PatchEmbedDesc &d) {
  const int64_t R = d.registers.present() ? d.registers.shape[0] : 0;
  const int64_t patches = (d.height / d.patch) * (d.width / d.patch);
  const int64_t taps = d.channels * d.patch * d.patch;
  if (taps > gpu::kPatchMaxTaps)
    return Status::error("metal: patch embedding: " + std::to_string(taps) +
                         " values per patch (channels x patch^2) are over the kernel's " +
                         std::to_string(gpu::kPatchMaxTaps));
  auto k = std::make_unique<OpKernel>();
  auto img = bindRows(d.image, 0, 1, "the image");
  auto w = bindWeight(d.weight, "patch embedding weight");
  auto b = bindWeight(d.bias, "patch embedding bias");
  auto pos = d.pos.present() ? bindWeight(d.pos, "position embedding") : w;
  auto reg = R > 0 ? bindWeight(d.registers, "registers") : w;
  auto out = bindRows(d.out, 0, R + patches, "patch embedding output");
  FM_RETURN_IF_ERROR(allBound({&img, &w, &b, &pos, &reg, &out}));
  gpu::PatchEmbedPush push{img->elem,
                           out->elem,
                           uint32_t(d.out.stride),
                           uint32_t(d.channels),
                           uint32_t(d.height),
                           uint32_t(d.width),
                           uint32_t(d.patch),
                           uint32_t(d.out.width),
                           uint32_t(R),
                           w->elem,
                           b->elem,
                           d.pos.present() ? pos->elem : 0u,
                           R > 0 ? reg->elem : 0u,
                           d.pos.present() ? 1u : 0u};
  auto op = Op::make(*this, "patch_embed", {*img, *w, *b, *pos, *reg, *out}, push);
  if (!op)
    return op.status();
  k->op = std::move(*op);
  k->op.x = uint32_t(R + patches);
  return std::unique_ptr<Kernel>(std::move(k));
}

Expected<std::unique_ptr<Kernel>> MetalDevice::prepareLayerNorm(const LayerNormDesc &d) {
  auto k = std::make_unique<OpKernel>();
  const int64_t rows = std::min(bindableRows(d.x), bindableRows(d.y));
  auto x = bindRows(d.x, 0, rows, "LayerNorm input");
  auto y = bindRows(d.y, 0, rows, "LayerNorm output");
  auto w = bindWeight(d.weight, "LayerNorm weight");
  auto b = bindWeight(d.bias, "LayerNorm bias");
  FM_RETURN_IF_ERROR(allBound({&x, &y, &w, &b}));
  gpu::LayerNormPush push{x->elem, uint32_t(d.x.stride), y->elem,  uint32_t(d.y.stride),
                          uint32_t(d.x.width), w->elem, b->elem, d.eps};
  auto op = Op::make(*this, "layer_norm", {*x, *y, *w, *b}, push);
  if (!op)
    return op.status();
  k->op = std::move(*op);
  k->grid = OpKernel::Grid::LaunchRows;
  return std::unique_ptr<Kernel>(std::move(k));
}

Expected<std::unique_ptr<Kernel>>
MetalDevice::prepareVitAttention(const VitAttentionDesc &d) {
  const int64_t tokens = d.registers + d.gridH * d.gridW;
  if (d.headDim > gpu::kVitMaxHeadDim)
    return Status::error("metal: ViT attention head_dim " + std::to_string(d.headDim) +
                         " is over the kernel's " + std::to_string(gpu::kVitMaxHeadDim));
  const bool rel = d.relPosH.present();
  const int64_t sideH = d.window ? d.window : d.gridH, sideW = d.window ? d.window : d.gridW;
  if (rel && std::max(sideH, sideW) > gpu::kVitMaxRelSide)
    return Status::error("metal: ViT attention: a relative-position side of " +
                         std::to_string(std::max(sideH, sideW)) + " is over the kernel's " +
                         std::to_string(gpu::kVitMaxRelSide));
  auto k = std::make_unique<OpKernel>();
  auto qkv = bindRows(d.qkv, 0, tokens, "ViT attention qkv");
  auto out = bindRows(d.out, 0, tokens, "ViT attention output");
  // Absent tables bind a stand-in (the qkv rows), which the kernel never reads.
  auto rh = rel ? bindWeight(d.relPosH, "rel-pos table") : qkv;
  auto rw = rel ? bindWeight(d.relPosW, "rel-pos table") : qkv;
  auto pad = d.padQkv.present() ? bindWeight(d.padQkv, "padded-token qkv") : qkv;
  FM_RETURN_IF_ERROR(allBound({&qkv, &out, &rh, &rw, &pad}));
  gpu::VitAttentionPush push{qkv->elem,
                             uint32_t(d.qkv.stride),
                             out->elem,
                             uint32_t(d.out.stride),
                             uint32_t(d.registers),
                             uint32_t(d.gridH),
                             uint32_t(d.gridW),
                             uint32_t(d.heads),
                             uint32_t(d.headDim),
                             uint32_t(d.window),
                             rel ? rh->elem : 0u,
                             rel ? rw->elem : 0u,
                             d.padQkv.present() ? pad->elem : 0u,
                             (rel ? 1u : 0u) | (d.padQkv.present() ? 2u : 0u),
                             d.scale};
  auto op = Op::make(*this, "vit_attention", {*qkv, *out, *rh, *rw, *pad}, push);
  if (!op)
    return op.status();
  k->op = std::move(*op);
  k->op.x = uint32_t(tokens);
  k->op.y = uint32_t(d.heads);
  return std::unique_ptr<Kernel>(std::move(k));
}

Expected<std::unique_ptr<Kernel>> MetalDevice::prepareConv3x3(const Conv3x3Desc &d) {
  const int64_t tokens = d.gridH * d.gridW, cin = d.x.width, K = 9 * cin;
  auto k = std::make_unique<Conv3x3Kernel>();
  k->tokens = tokens;
  auto cols = allocate(uint64_t(tokens) * uint64_t(K) * 4, MemorySpace::Device);
  if (!cols)
    return cols.status();
  k->cols = std::move(*cols);
  Rows colRows{k->cols.get(), 0, K, K};
  auto x = bindRows(d.x, 0, tokens, "3x3 convolution input");
  auto c = bindRows(colRows, 0, tokens, "3x3 convolution taps");
  FM_RETURN_IF_ERROR(allBound({&x, &c}));
  gpu::Unfold3x3Push push{x->elem, uint32_t(d.x.stride), c->elem, uint32_t(d.gridH),
                          uint32_t(d.gridW), uint32_t(cin)};
  auto op = Op::make(*this, "unfold3x3", {*x, *c}, push);
  if (!op)
    return op.status();
  k->unfold = std::move(*op);
  k->unfold.x = ceilDiv(uint64_t(K), 64);
  k->unfold.y = uint32_t(tokens);
  // The weight [Cout][Cin][3][3] is the nn.Linear [Cout][9·Cin] over the taps.
  MatmulDesc m;
  m.x = colRows;
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

Expected<std::unique_ptr<Kernel>> MetalDevice::prepareAvgPool(const AvgPoolDesc &d) {
  const int64_t s = kernels::adapterPoolStride(d.grid, d.outGrid);
  const int64_t kk = kernels::adapterPoolKernel(d.grid, d.outGrid);
  auto k = std::make_unique<OpKernel>();
  auto x = bindRows(d.x, 0, d.grid * d.grid, "average pooling input");
  auto y = bindRows(d.y, 0, d.outGrid * d.outGrid, "average pooling output");
  FM_RETURN_IF_ERROR(allBound({&x, &y}));
  gpu::AvgPoolPush push{x->elem,          uint32_t(d.x.stride), y->elem,
                        uint32_t(d.y.stride), uint32_t(d.x.width), uint32_t(d.grid),
                        uint32_t(d.outGrid), uint32_t(s),          uint32_t(kk)};
  auto op = Op::make(*this, "avg_pool", {*x, *y}, push);
  if (!op)
    return op.status();
  k->op = std::move(*op);
  k->op.x = ceilDiv(uint64_t(d.x.width), 64);
  k->op.y = uint32_t(d.outGrid * d.outGrid);
  return std::unique_ptr<Kernel>(std::move(k));
}

} // namespace fm::hal::mtl
