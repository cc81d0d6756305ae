// The Vulkan device's image-encoder kernels (docs/vit.md; the CPU's are
// hal/cpu/CpuVisionKernels.cpp): patch embedding, LayerNorm, ViT attention
// (shaders/vit_attention.comp), the adapter's 3x3 convolution (unfold3x3,
// then the matmul kernel on the weight as an nn.Linear [Cout][9·Cin]) and
// average pooling, and the bias / GELU epilogue of the encoders' matmuls.
// As in VulkanKernels.cpp, every binding is resolved when a kernel is
// prepared; a run records its dispatches.
#include "hal/gpu/GpuVisionAbi.h"
#include "hal/vulkan/VulkanDevice.h"
#include "hal/vulkan/VulkanKernelUtil.h"
#include "kernels/conv.h"

#include <array>
#include <cstring>

namespace fm::hal::vk {
namespace {

VulkanQueue &vq(Queue &q) { return static_cast<VulkanQueue &>(q); }

Expected<BoundRange> bindWeight(const VulkanContext &ctx, const WeightDesc &w,
                                const std::string &what) {
  return bindRange(ctx, vbuf(w.buffer), w.offset, w.bytes, 4,
                   what + " '" + w.name + "'");
}

/// Rows of `r` that fit one binding up to the end of its buffer: the
/// LayerNorm description does not say how many rows a launch gives.
int64_t bindableRows(const VulkanContext &ctx, const Rows &r) {
  const uint64_t end = r.buffer->size(), row = uint64_t(r.width) * 4;
  int64_t rows = 1;
  if (r.stride > 0 && end >= r.offset + row)
    rows = int64_t((end - r.offset - row) / (uint64_t(r.stride) * 4)) + 1;
  return std::max<int64_t>(1, std::min(rows, rowsPerBinding(ctx, r)));
}

/// One prepared dispatch of a hand-written kernel: its pipeline, set and
/// push constants; `rows` (when set) is taken from the launch at run time.
struct Op {
  const Pipeline *pipeline = nullptr;
  VkDescriptorSet set = VK_NULL_HANDLE;
  std::array<uint8_t, 128> push{};
  uint32_t x = 1, y = 1, z = 1;

  template <class P>
  static Expected<Op> make(VulkanDevice &dev, DescriptorSets &sets, const char *shader,
                           const std::vector<BoundRange> &ranges, const P &push) {
    static_assert(sizeof(P) <= sizeof(Op::push), "push constants over 128 bytes");
    Op op;
    auto p = dev.pipelines().get(shader, uint32_t(ranges.size()), sizeof(P));
    if (!p)
      return p.status();
    op.pipeline = *p;
    auto set = sets.make(**p, ranges);
    if (!set)
      return set.status();
    op.set = *set;
    std::memcpy(op.push.data(), &push, sizeof(P));
    return op;
  }
  Status run(VulkanQueue &q) const { return q.dispatch(*pipeline, set, push.data(), x, y, z); }
};

/// Fails with what, unless every range bound.
Status allBound(std::initializer_list<const Expected<BoundRange> *> ranges) {
  for (const Expected<BoundRange> *r : ranges)
    if (!*r)
      return r->status();
  return Status::ok();
}

Status fitsGrid(const char *kernel, int64_t n, const char *what) {
  if (n <= 65535)
    return Status::ok();
  return Status::error(std::string("vulkan: ") + kernel + ": " + std::to_string(n) + " " +
                       what + " exceed the 65535 workgroups of one dispatch dimension");
}

// --- matmul epilogue -----------------------------------------------------------

/// The base matmul (x·Wᵀ into y, or added to it), then y = act(y + bias)
/// over the launch's rows.
class EpilogueKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(VulkanDevice &dev, const MatmulDesc &d,
                                                std::unique_ptr<Kernel> base) {
    std::unique_ptr<EpilogueKernel> k(new EpilogueKernel(dev.sharedContext()));
    k->base_ = std::move(base);
    VulkanContext &ctx = dev.context();
    FM_RETURN_IF_ERROR(fitsGrid("matmul epilogue", d.maxRows, "rows"));
    auto y = bindRows(ctx, d.y, 0, d.maxRows, "matmul output (epilogue)");
    if (!y)
      return y.status();
    Expected<BoundRange> b = *y; // a stand-in binding when there is no bias
    if (d.bias.present())
      b = bindWeight(ctx, d.bias, "matmul bias");
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
    // The columns this matmul writes start at y's first.
    auto op = Op::make(dev, k->sets_, "bias_act", {*y, *b}, push);
    if (!op)
      return op.status();
    k->op_ = *op;
    k->op_.x = ceilDiv(uint64_t(d.n), 64);
    return std::unique_ptr<Kernel>(std::move(k));
  }
  Status beforeFirstRun(Queue &q) override { return base_->beforeFirstRun(q); }
  uint64_t scratchBytes() const override { return base_->scratchBytes(); }
  Status run(Queue &queue, const Launch &l) const override {
    FM_RETURN_IF_ERROR(base_->run(queue, l));
    Op op = op_;
    op.y = uint32_t(l.rows);
    return op.run(vq(queue));
  }

private:
  explicit EpilogueKernel(std::shared_ptr<VulkanContext> ctx) : sets_(std::move(ctx)) {}
  std::unique_ptr<Kernel> base_;
  DescriptorSets sets_;
  Op op_;
};

// --- the fixed-shape kernels -----------------------------------------------------

/// A kernel of one prepared dispatch whose grid does not depend on the
/// launch (the encoder runs on its fixed shapes), or whose x is the
/// launch's rows (Grid::LaunchRows: LayerNorm, a workgroup per row).
class OpKernel final : public Kernel {
public:
  enum class Grid { Fixed, LaunchRows };
  explicit OpKernel(std::shared_ptr<VulkanContext> ctx) : sets(std::move(ctx)) {}
  Status run(Queue &queue, const Launch &l) const override {
    Op op = this->op;
    if (grid == Grid::LaunchRows) {
      // The bindings hold maxRows rows: a longer launch would run past them.
      if (l.rows > maxRows)
        return Status::error(std::string("vulkan: ") + name + ": a launch of " +
                             std::to_string(l.rows) + " rows exceeds the " +
                             std::to_string(maxRows) + " rows its bindings hold");
      op.x = uint32_t(l.rows);
    }
    return op.run(vq(queue));
  }
  DescriptorSets sets;
  Op op;
  Grid grid = Grid::Fixed;
  int64_t maxRows = 0;          // Grid::LaunchRows: rows bound
  const char *name = "kernel"; // for the error above
};

/// The 3x3 convolution: the taps unfolded into a buffer of the kernel's
/// own, then the matmul (with its bias epilogue) over them.
class Conv3x3Kernel final : public Kernel {
public:
  explicit Conv3x3Kernel(std::shared_ptr<VulkanContext> ctx) : sets(std::move(ctx)) {}
  Status beforeFirstRun(Queue &q) override { return matmul->beforeFirstRun(q); }
  uint64_t scratchBytes() const override { return matmul->scratchBytes(); }
  Status run(Queue &queue, const Launch &) const override {
    FM_RETURN_IF_ERROR(unfold.run(vq(queue)));
    return matmul->run(queue, Launch{tokens, 0, nullptr, nullptr});
  }
  DescriptorSets sets;
  std::unique_ptr<Buffer> cols;
  Op unfold;
  std::unique_ptr<Kernel> matmul;
  int64_t tokens = 0;
};

} // namespace

Expected<std::unique_ptr<Kernel>> makeMatmulEpilogue(VulkanDevice &dev, const MatmulDesc &d,
                                                     std::unique_ptr<Kernel> base) {
  return EpilogueKernel::make(dev, d, std::move(base));
}

Expected<std::unique_ptr<Kernel>> VulkanDevice::preparePatchEmbed(const PatchEmbedDesc &d) {
  const int64_t R = d.registers.present() ? d.registers.shape[0] : 0;
  const int64_t patches = (d.height / d.patch) * (d.width / d.patch);
  const int64_t taps = d.channels * d.patch * d.patch;
  if (taps > gpu::kPatchMaxTaps)
    return Status::error("vulkan: patch embedding: " + std::to_string(taps) +
                         " values per patch (channels x patch^2) are over the kernel's " +
                         std::to_string(gpu::kPatchMaxTaps));
  FM_RETURN_IF_ERROR(fitsGrid("patch embedding", R + patches, "output rows"));
  auto k = std::make_unique<OpKernel>(ctx_);
  auto img = bindRows(*ctx_, d.image, 0, 1, "the image");
  auto w = bindWeight(*ctx_, d.weight, "patch embedding weight");
  auto b = bindWeight(*ctx_, d.bias, "patch embedding bias");
  auto pos = d.pos.present() ? bindWeight(*ctx_, d.pos, "position embedding") : w;
  auto reg = R > 0 ? bindWeight(*ctx_, d.registers, "registers") : w;
  auto out = bindRows(*ctx_, d.out, 0, R + patches, "patch embedding output");
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
  auto op = Op::make(*this, k->sets, "patch_embed", {*img, *w, *b, *pos, *reg, *out}, push);
  if (!op)
    return op.status();
  k->op = *op;
  k->op.x = uint32_t(R + patches);
  return std::unique_ptr<Kernel>(std::move(k));
}

Expected<std::unique_ptr<Kernel>> VulkanDevice::prepareLayerNorm(const LayerNormDesc &d) {
  auto k = std::make_unique<OpKernel>(ctx_);
  const int64_t rows = std::min(bindableRows(*ctx_, d.x), bindableRows(*ctx_, d.y));
  auto x = bindRows(*ctx_, d.x, 0, rows, "LayerNorm input");
  auto y = bindRows(*ctx_, d.y, 0, rows, "LayerNorm output");
  auto w = bindWeight(*ctx_, d.weight, "LayerNorm weight");
  auto b = bindWeight(*ctx_, d.bias, "LayerNorm bias");
  FM_RETURN_IF_ERROR(allBound({&x, &y, &w, &b}));
  gpu::LayerNormPush push{x->elem, uint32_t(d.x.stride), y->elem,  uint32_t(d.y.stride),
                          uint32_t(d.x.width), w->elem, b->elem, d.eps};
  auto op = Op::make(*this, k->sets, "layer_norm", {*x, *y, *w, *b}, push);
  if (!op)
    return op.status();
  k->op = *op;
  k->grid = OpKernel::Grid::LaunchRows;
  k->maxRows = std::min<int64_t>(rows, 65535); // one dispatch dimension
  k->name = "LayerNorm";
  return std::unique_ptr<Kernel>(std::move(k));
}

Expected<std::unique_ptr<Kernel>>
VulkanDevice::prepareVitAttention(const VitAttentionDesc &d) {
  const int64_t tokens = d.registers + d.gridH * d.gridW;
  if (d.headDim > gpu::kVitMaxHeadDim)
    return Status::error("vulkan: ViT attention head_dim " + std::to_string(d.headDim) +
                         " is over the kernel's " + std::to_string(gpu::kVitMaxHeadDim));
  const bool rel = d.relPosH.present();
  const int64_t sideH = d.window ? d.window : d.gridH, sideW = d.window ? d.window : d.gridW;
  if (rel && std::max(sideH, sideW) > gpu::kVitMaxRelSide)
    return Status::error("vulkan: ViT attention: a relative-position side of " +
                         std::to_string(std::max(sideH, sideW)) + " is over the kernel's " +
                         std::to_string(gpu::kVitMaxRelSide));
  FM_RETURN_IF_ERROR(fitsGrid("ViT attention", tokens, "tokens"));
  FM_RETURN_IF_ERROR(fitsGrid("ViT attention", d.heads, "heads"));
  auto k = std::make_unique<OpKernel>(ctx_);
  auto qkv = bindRows(*ctx_, d.qkv, 0, tokens, "ViT attention qkv");
  auto out = bindRows(*ctx_, d.out, 0, tokens, "ViT attention output");
  // Absent tables bind a stand-in (the qkv rows), which the kernel never reads.
  auto rh = rel ? bindWeight(*ctx_, d.relPosH, "rel-pos table") : qkv;
  auto rw = rel ? bindWeight(*ctx_, d.relPosW, "rel-pos table") : qkv;
  auto pad = d.padQkv.present() ? bindWeight(*ctx_, d.padQkv, "padded-token qkv") : qkv;
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
  auto op = Op::make(*this, k->sets, "vit_attention", {*qkv, *out, *rh, *rw, *pad}, push);
  if (!op)
    return op.status();
  k->op = *op;
  k->op.x = uint32_t(tokens);
  k->op.y = uint32_t(d.heads);
  return std::unique_ptr<Kernel>(std::move(k));
}

Expected<std::unique_ptr<Kernel>> VulkanDevice::prepareConv3x3(const Conv3x3Desc &d) {
  const int64_t tokens = d.gridH * d.gridW, cin = d.x.width, K = 9 * cin;
  auto k = std::make_unique<Conv3x3Kernel>(ctx_);
  k->tokens = tokens;
  auto cols = allocate(uint64_t(tokens) * uint64_t(K) * 4, MemorySpace::Device);
  if (!cols)
    return cols.status();
  k->cols = std::move(*cols);
  Rows colRows{k->cols.get(), 0, K, K};
  FM_RETURN_IF_ERROR(fitsGrid("3x3 convolution", tokens, "tokens"));
  auto x = bindRows(*ctx_, d.x, 0, tokens, "3x3 convolution input");
  auto c = bindRows(*ctx_, colRows, 0, tokens, "3x3 convolution taps");
  FM_RETURN_IF_ERROR(allBound({&x, &c}));
  gpu::Unfold3x3Push push{x->elem, uint32_t(d.x.stride), c->elem, uint32_t(d.gridH),
                          uint32_t(d.gridW), uint32_t(cin)};
  auto op = Op::make(*this, k->sets, "unfold3x3", {*x, *c}, push);
  if (!op)
    return op.status();
  k->unfold = *op;
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

Expected<std::unique_ptr<Kernel>> VulkanDevice::prepareAvgPool(const AvgPoolDesc &d) {
  const int64_t s = kernels::adapterPoolStride(d.grid, d.outGrid);
  const int64_t kk = kernels::adapterPoolKernel(d.grid, d.outGrid);
  auto k = std::make_unique<OpKernel>(ctx_);
  FM_RETURN_IF_ERROR(fitsGrid("average pooling", d.outGrid * d.outGrid, "output tokens"));
  auto x = bindRows(*ctx_, d.x, 0, d.grid * d.grid, "average pooling input");
  auto y = bindRows(*ctx_, d.y, 0, d.outGrid * d.outGrid, "average pooling output");
  FM_RETURN_IF_ERROR(allBound({&x, &y}));
  gpu::AvgPoolPush push{x->elem,          uint32_t(d.x.stride), y->elem,
                        uint32_t(d.y.stride), uint32_t(d.x.width), uint32_t(d.grid),
                        uint32_t(d.outGrid), uint32_t(s),          uint32_t(kk)};
  auto op = Op::make(*this, k->sets, "avg_pool", {*x, *y}, push);
  if (!op)
    return op.status();
  k->op = *op;
  k->op.x = ceilDiv(uint64_t(d.x.width), 64);
  k->op.y = uint32_t(d.outGrid * d.outGrid);
  return std::unique_ptr<Kernel>(std::move(k));
}

} // namespace fm::hal::vk
