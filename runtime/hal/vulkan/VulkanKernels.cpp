// The Vulkan device's prepared kernels: every binding is resolved and its
// descriptor set written when the kernel is prepared (device buffers never
// move), so a run records dispatches with their push constants and nothing
// else. The MoE kernel is in VulkanMoe.cpp.
#include "hal/vulkan/VulkanDevice.h"
#include "hal/vulkan/VulkanExecutable.h"
#include "hal/vulkan/VulkanKernelUtil.h"
#include "hal/vulkan/VulkanMatmulPlan.h"

#include <chrono>
#include <cstring>

namespace fm::hal::vk {
namespace {

VulkanQueue &vq(Queue &q) { return static_cast<VulkanQueue &>(q); }

// --- embed -----------------------------------------------------------------

using EmbedPush = gpu::EmbedPush;

/// Rows of `r` a launch may reach: up to the end of its buffer (EmbedDesc
/// and CopyRowDesc do not say how many rows the program gives), at most
/// `limit`.
int64_t rowsToEnd(const VulkanContext &, const Rows &r, int64_t limit) {
  const uint64_t end = r.buffer->size(), row = uint64_t(r.width) * 4;
  int64_t rows = 1;
  if (r.stride > 0 && end >= r.offset + row)
    rows = int64_t((end - r.offset - row) / (uint64_t(r.stride) * 4)) + 1;
  return std::max<int64_t>(1, std::min(rows, limit));
}

/// One dispatch per token. A table larger than one binding is bound through
/// windows of maxRange bytes every maxRange / 2 bytes, so that every row
/// (at most half a window) lies wholly inside one of them; the output rows
/// in chunks of what one binding covers. A descriptor set per (window,
/// chunk).
class EmbedKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(VulkanDevice &dev, const EmbedDesc &d) {
    std::unique_ptr<EmbedKernel> k(new EmbedKernel(dev.sharedContext()));
    FM_RETURN_IF_ERROR(k->init(dev, d));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    VulkanQueue &q = vq(queue);
    for (int64_t r = 0; r < l.rows; ++r) {
      if (l.embedRows && l.embedRows[r]) { // a VLM's image token: its host row
        FM_RETURN_IF_ERROR(q.update(vbuf(out_.buffer),
                                    out_.offset + uint64_t(r) * uint64_t(out_.stride) * 4,
                                    l.embedRows[r], uint64_t(out_.width) * 4));
        continue;
      }
      const uint64_t row = uint64_t(l.tokens[r]) * rowBytes_;
      const size_t w = std::min<size_t>(row / step_, windows_.size() - 1);
      const size_t c = std::min<size_t>(size_t(r / chunkRows_), outElems_.size() - 1);
      EmbedPush push;
      push.rowOff =
          windows_[w].tableElem + uint32_t((row - windows_[w].start) / elemSize_);
      push.outOff = outElems_[c] + uint32_t(r - int64_t(c) * chunkRows_) * outStride_;
      push.width = width_;
      FM_RETURN_IF_ERROR(q.dispatch(*pipeline_, sets_[w * outElems_.size() + c], &push,
                                    ceilDiv(width_, 64), 1, 1, r > 0));
    }
    return Status::ok();
  }

private:
  explicit EmbedKernel(std::shared_ptr<VulkanContext> ctx) : pool_(std::move(ctx)) {}

  Status init(VulkanDevice &dev, const EmbedDesc &d) {
    VulkanContext &ctx = dev.context();
    WeightBinding wb(d.table);
    out_ = d.out;
    width_ = uint32_t(d.out.width);
    elemSize_ = wb.elemSize;
    rowBytes_ = uint64_t(wb.rowElems(d.table, d.out.width)) * wb.elemSize;
    outStride_ = uint32_t(d.out.stride);
    auto p = dev.pipelines().get("embed_" + wb.suffix, 2, sizeof(EmbedPush), wb.spec);
    if (!p)
      return p.status();
    pipeline_ = *p;
    // The output rows a launch may reach, in chunks of one binding.
    chunkRows_ = rowsPerBinding(ctx, d.out);
    if (chunkRows_ <= 0)
      return Status::error("vulkan: an embedding row exceeds one storage-buffer binding");
    const int64_t rows = rowsToEnd(ctx, d.out, INT64_MAX);
    std::vector<BoundRange> outs;
    for (int64_t r0 = 0; r0 < rows; r0 += chunkRows_) {
      auto out = bindRows(ctx, d.out, r0, std::min(chunkRows_, rows - r0),
                          "the embedding output");
      if (!out)
        return out.status();
      outs.push_back(*out);
      outElems_.push_back(out->elem);
    }
    const uint64_t align = ctx.offsetAlignment();
    const uint64_t window = (ctx.maxRange() - align) / align * align;
    step_ = d.table.bytes <= window ? window : window / 2 / align * align;
    if (d.table.bytes > window && rowBytes_ > window - step_)
      return Status::error("vulkan: embedding rows of " + std::to_string(rowBytes_) +
                           " bytes do not fit half a storage-buffer binding");
    for (uint64_t start = 0;; start += step_) {
      const uint64_t bytes = std::min(window, d.table.bytes - start);
      auto t = bindRange(ctx, vbuf(d.table.buffer), d.table.offset + start, bytes,
                         elemSize_, "embedding table '" + d.table.name + "'");
      if (!t)
        return t.status();
      for (const BoundRange &out : outs) {
        auto set = pool_.make(*pipeline_, {*t, out});
        if (!set)
          return set.status();
        sets_.push_back(*set);
      }
      windows_.push_back({start, t->elem});
      if (start + bytes >= d.table.bytes)
        break;
    }
    return Status::ok();
  }

  struct Window {
    uint64_t start;     // table byte of the window's first byte
    uint32_t tableElem; // that byte's element in the binding
  };
  DescriptorSets pool_;
  const Pipeline *pipeline_ = nullptr;
  Rows out_;
  std::vector<Window> windows_;
  std::vector<VkDescriptorSet> sets_; // [window][output chunk]
  std::vector<uint32_t> outElems_;    // per output chunk: its row 0's element
  int64_t chunkRows_ = 1;
  uint64_t step_ = 1, rowBytes_ = 0;
  uint32_t elemSize_ = 4, width_ = 0, outStride_ = 0;
};

// --- matmul ----------------------------------------------------------------

/// One dispatch per (weight block, rows chunk): adjacent weights of one
/// layout are one block (as on the CPU); a block larger than one binding is
/// split by weight rows, and activations larger than one binding by rows
/// (planMatmul, VulkanMatmulPlan.h).
class MatmulKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(VulkanDevice &dev, const MatmulDesc &d) {
    std::unique_ptr<MatmulKernel> k(new MatmulKernel(dev.sharedContext()));
    FM_RETURN_IF_ERROR(k->init(dev, d));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    VulkanQueue &q = vq(queue);
    bool first = true;
    for (const Part &part : parts_) {
      if (part.m0 >= l.rows)
        continue;
      MatmulPush push = part.push;
      push.M = uint32_t(std::min(part.rows, l.rows - part.m0));
      FM_RETURN_IF_ERROR(q.dispatch(*part.pipeline, part.set, &push, part.gx, part.gy,
                                    ceilDiv(push.M, kMr), !first));
      first = false;
    }
    return Status::ok();
  }

private:
  explicit MatmulKernel(std::shared_ptr<VulkanContext> ctx) : sets_(std::move(ctx)) {}

  Status init(VulkanDevice &dev, const MatmulDesc &d) {
    auto plan = planMatmul(dev.context(), d);
    if (!plan)
      return plan.status();
    for (const MatmulPart &mp : *plan) {
      auto pipeline =
          dev.pipelines().get("matmul_" + mp.b.suffix, 3, sizeof(MatmulPush), mp.b.spec);
      if (!pipeline)
        return pipeline.status();
      auto set = sets_.make(**pipeline, {mp.x, mp.wr, mp.y});
      if (!set)
        return set.status();
      Part part;
      part.pipeline = *pipeline;
      part.set = *set;
      part.m0 = mp.m0;
      part.rows = mp.rows;
      part.push = mp.push;
      part.gx = mp.gx;
      part.gy = mp.gy;
      parts_.push_back(part);
    }
    return Status::ok();
  }

  struct Part {
    const Pipeline *pipeline = nullptr;
    VkDescriptorSet set = VK_NULL_HANDLE;
    int64_t m0 = 0, rows = 0;
    MatmulPush push{};
    uint32_t gx = 1, gy = 1;
  };
  DescriptorSets sets_;
  std::vector<Part> parts_;
};

// --- attention -------------------------------------------------------------

using AttentionPush = gpu::AttentionPush;

class AttentionKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(VulkanDevice &dev, const AttentionDesc &d) {
    std::unique_ptr<AttentionKernel> k(new AttentionKernel(dev.sharedContext()));
    VulkanContext &ctx = dev.context();
    if (d.headDim > 512)
      return Status::error("vulkan: attention head_dim " + std::to_string(d.headDim) +
                           " is over the kernel's 512");
    auto p = dev.pipelines().get(d.k.int8 ? "attention_i8" : "attention_f32", 4,
                                 sizeof(AttentionPush));
    if (!p)
      return p.status();
    k->pipeline_ = *p;
    const uint32_t elem = d.k.int8 ? 1 : 4;
    auto q = bindRows(ctx, d.q, 0, d.maxRows, "attention q");
    auto o = bindRows(ctx, d.out, 0, d.maxRows, "attention out");
    auto kc = bindRange(ctx, vbuf(d.k.buffer), d.k.offset,
                        uint64_t(d.k.capacity) * d.k.width * elem, elem, "the K cache slot");
    auto vc = bindRange(ctx, vbuf(d.v.buffer), d.v.offset,
                        uint64_t(d.v.capacity) * d.v.width * elem, elem, "the V cache slot");
    for (auto *r : {&q, &o, &kc, &vc})
      if (!*r)
        return r->status();
    auto set = k->sets_.make(**p, {*q, *o, *kc, *vc});
    if (!set)
      return set.status();
    k->set_ = *set;
    k->push_ = {q->elem,
                uint32_t(d.q.stride),
                o->elem,
                uint32_t(d.out.stride),
                kc->elem,
                vc->elem,
                0,
                uint32_t(d.heads),
                uint32_t(d.kvHeads),
                uint32_t(d.headDim),
                uint32_t(d.window),
                d.scale * (d.k.int8 ? d.kScale : 1.0f),
                d.k.int8 ? d.vScale : 1.0f};
    k->heads_ = uint32_t(d.heads);
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    AttentionPush push = push_;
    push.pos0 = uint32_t(l.pos);
    return vq(queue).dispatch(*pipeline_, set_, &push, heads_, uint32_t(l.rows), 1);
  }

private:
  explicit AttentionKernel(std::shared_ptr<VulkanContext> ctx) : sets_(std::move(ctx)) {}
  DescriptorSets sets_;
  const Pipeline *pipeline_ = nullptr;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  AttentionPush push_{};
  uint32_t heads_ = 0;
};

// --- rows: copies, sums, scales ----------------------------------------------

using RowsPush = gpu::RowsPush;

/// y = alpha · y + beta · x over a launch's rows (shaders/rows.comp).
struct RowsOp {
  const Pipeline *pipeline = nullptr;
  VkDescriptorSet set = VK_NULL_HANDLE;
  RowsPush push{};

  static Expected<RowsOp> make(VulkanDevice &dev, DescriptorSets &sets, const Rows &x,
                               const Rows &y, int64_t rows, float alpha, float beta) {
    RowsOp op;
    auto p = dev.pipelines().get("rows", 2, sizeof(RowsPush));
    if (!p)
      return p.status();
    op.pipeline = *p;
    auto bx = bindRows(dev.context(), x, 0, rows, "rows input");
    auto by = bindRows(dev.context(), y, 0, rows, "rows output");
    if (!bx)
      return bx.status();
    if (!by)
      return by.status();
    auto set = sets.make(**p, {*bx, *by});
    if (!set)
      return set.status();
    op.set = *set;
    op.push = {bx->elem, uint32_t(x.stride), by->elem, uint32_t(y.stride),
               uint32_t(y.width), alpha, beta};
    return op;
  }
  Status run(VulkanQueue &q, int64_t rows, uint32_t xRow = 0) const {
    RowsPush p = push;
    p.xOff += xRow * p.xStride;
    return q.dispatch(*pipeline, set, &p, ceilDiv(p.width, 64), uint32_t(rows), 1);
  }
};

class CopyRowKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(VulkanDevice &dev, const CopyRowDesc &d,
                                                int64_t maxRows) {
    std::unique_ptr<CopyRowKernel> k(new CopyRowKernel(dev.sharedContext()));
    Rows dst = d.dst;
    dst.width = d.src.width;
    auto op = RowsOp::make(dev, k->sets_, d.src, dst, 1, 0.0f, 1.0f);
    if (!op)
      return op.status();
    // The source row is the launch's last: bind all the rows it may be.
    auto bx = bindRows(dev.context(), d.src, 0, maxRows, "copy source");
    auto by = bindRows(dev.context(), dst, 0, 1, "copy destination");
    if (!bx)
      return bx.status();
    if (!by)
      return by.status();
    k->sets_.write(op->set, {*bx, *by});
    op->push.xOff = bx->elem;
    k->op_ = *op;
    return std::unique_ptr<Kernel>(std::move(k));
  }
  Status run(Queue &queue, const Launch &l) const override {
    if (op_.push.width == 0)
      return Status::ok();
    return op_.run(vq(queue), 1, uint32_t(l.rows - 1));
  }

private:
  explicit CopyRowKernel(std::shared_ptr<VulkanContext> ctx) : sets_(std::move(ctx)) {}
  DescriptorSets sets_;
  RowsOp op_;
};

/// This rank's partials summed on the device; across ranks through the
/// host: the queue is flushed, the rows downloaded, summed by the
/// communicator, uploaded back, then scaled on the device.
class AllReduceKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(VulkanDevice &dev, const AllReduceDesc &d) {
    std::unique_ptr<AllReduceKernel> k(new AllReduceKernel(dev));
    k->out_ = d.out;
    k->comm_ = d.comm;
    k->stats_ = d.stats;
    bool inPlace = false;
    std::vector<Rows> others;
    for (const Rows &in : d.inputs) {
      if (in.buffer == d.out.buffer && in.offset == d.out.offset &&
          in.stride == d.out.stride)
        inPlace = true;
      else
        others.push_back(in);
    }
    bool first = !inPlace;
    for (const Rows &in : others) {
      auto op = RowsOp::make(dev, k->sets_, in, d.out, d.maxRows, first ? 0.0f : 1.0f, 1.0f);
      if (!op)
        return op.status();
      k->sums_.push_back(*op);
      first = false;
    }
    if (first) { // no partials at all: out = 0
      auto op = RowsOp::make(dev, k->sets_, d.out, d.out, d.maxRows, 0.0f, 0.0f);
      if (!op)
        return op.status();
      k->sums_.push_back(*op);
    }
    if (d.scale != 1.0f) {
      auto op = RowsOp::make(dev, k->sets_, d.out, d.out, d.maxRows, d.scale, 0.0f);
      if (!op)
        return op.status();
      k->scale_ = *op;
      k->hasScale_ = true;
    }
    if (d.comm && d.comm->size() > 1)
      k->host_.resize(size_t(d.maxRows) * size_t(d.out.width));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    const auto t0 = std::chrono::steady_clock::now();
    VulkanQueue &q = vq(queue);
    if (out_.width > 0) {
      for (const RowsOp &op : sums_)
        FM_RETURN_IF_ERROR(op.run(q, l.rows));
      if (comm_ && comm_->size() > 1) {
        FM_RETURN_IF_ERROR(q.flush());
        const uint64_t row = uint64_t(out_.width) * 4;
        float *host = host_.data();
        for (int64_t r = 0; r < l.rows; ++r)
          FM_RETURN_IF_ERROR(dev_.download(*out_.buffer,
                                           out_.offset + uint64_t(r) * out_.stride * 4,
                                           host + r * out_.width, row));
        FM_RETURN_IF_ERROR(comm_->allReduceSum(host, l.rows * out_.width));
        for (int64_t r = 0; r < l.rows; ++r)
          FM_RETURN_IF_ERROR(dev_.upload(*out_.buffer,
                                         out_.offset + uint64_t(r) * out_.stride * 4,
                                         host + r * out_.width, row));
      }
      if (hasScale_)
        FM_RETURN_IF_ERROR(scale_.run(q, l.rows));
    }
    if (stats_) {
      stats_->allReduces += 1;
      stats_->ms += std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    }
    return Status::ok();
  }

private:
  explicit AllReduceKernel(VulkanDevice &dev) : dev_(dev), sets_(dev.sharedContext()) {}
  VulkanDevice &dev_;
  DescriptorSets sets_;
  Rows out_;
  std::vector<RowsOp> sums_;
  RowsOp scale_;
  bool hasScale_ = false;
  Communicator *comm_ = nullptr;
  CollectiveStats *stats_ = nullptr;
  mutable std::vector<float> host_; // staging for the collective, sized once
};

// --- generated functions -----------------------------------------------------

/// A function of the artifact's SPIR-V: one workgroup per row (the Vulkan
/// target's convention), its arguments bound in Dispatch order and their
/// element offsets, rows and pos in its push constants.
class DispatchKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(VulkanDevice &dev, const DispatchDesc &d) {
    const auto *exe = static_cast<const VulkanExecutable *>(d.executable);
    if (!exe || d.function >= exe->numFunctions())
      return Status::error("vulkan: dispatch of function " + std::to_string(d.function) +
                           ", which the loaded executable does not have");
    const VulkanExecutable::Function &fn = exe->function(d.function);
    if (fn.pipeline.bindings != d.args.size())
      return Status::error("vulkan: function '" + fn.name + "' binds " +
                           std::to_string(fn.pipeline.bindings) + " buffers, the dispatch has " +
                           std::to_string(d.args.size()) + " arguments");
    std::unique_ptr<DispatchKernel> k(new DispatchKernel(dev.sharedContext()));
    k->fn_ = &fn;
    VulkanContext &ctx = dev.context();
    std::vector<BoundRange> ranges;
    for (size_t i = 0; i < d.args.size(); ++i) {
      const DispatchArg &a = d.args[i];
      const std::string what = "argument " + std::to_string(i) + " of '" + fn.name + "'";
      Expected<BoundRange> r = Status::error("unset");
      switch (a.kind) {
      case DispatchArg::Kind::Buffer:
        r = bindRows(ctx, a.rows, 0, d.maxRows, what);
        break;
      case DispatchArg::Kind::Weight:
        r = bindRange(ctx, vbuf(a.weight.buffer), a.weight.offset, a.weight.bytes, 4, what);
        break;
      case DispatchArg::Kind::Cache: {
        const uint32_t elem = a.cache.int8 ? 1 : 4;
        r = bindRange(ctx, vbuf(a.cache.buffer), a.cache.offset,
                      uint64_t(a.cache.capacity) * a.cache.width * elem, elem, what);
        break;
      }
      }
      if (!r)
        return r.status();
      ranges.push_back(*r);
    }
    auto set = k->sets_.make(fn.pipeline, ranges);
    if (!set)
      return set.status();
    k->set_ = *set;
    for (const BoundRange &r : ranges)
      k->offsets_.push_back(r.elem);
    k->push_.resize(fn.push.size());
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    using P = VulkanExecutable::Function::Push;
    for (size_t i = 0; i < fn_->push.size(); ++i) {
      const auto &[kind, arg] = fn_->push[i];
      push_[i] = kind == P::Rows  ? uint32_t(l.rows)
                 : kind == P::Pos ? uint32_t(l.pos)
                                  : offsets_[arg];
    }
    return vq(queue).dispatch(fn_->pipeline, set_, push_.data(), uint32_t(l.rows), 1, 1);
  }

private:
  explicit DispatchKernel(std::shared_ptr<VulkanContext> ctx) : sets_(std::move(ctx)) {}
  DescriptorSets sets_;
  const VulkanExecutable::Function *fn_ = nullptr;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  std::vector<uint32_t> offsets_;
  mutable std::vector<uint32_t> push_; // sized at prepare time
};

} // namespace

Expected<std::unique_ptr<Kernel>> makeMoeKernel(VulkanDevice &dev, const MoeDesc &d);
Expected<std::unique_ptr<Kernel>> makeLoraMatmul(VulkanDevice &dev, const MatmulDesc &d);
Expected<std::unique_ptr<Kernel>> makeMatmulEpilogue(VulkanDevice &dev, const MatmulDesc &d,
                                                     std::unique_ptr<Kernel> base);

Expected<std::unique_ptr<Kernel>> VulkanDevice::prepareEmbed(const EmbedDesc &d) {
  return EmbedKernel::make(*this, d);
}
Expected<std::unique_ptr<Kernel>> VulkanDevice::prepareMatmul(const MatmulDesc &d) {
  // Adapters: the fused LoRA matmul in its place (VulkanLora.cpp).
  auto base = d.lora.empty() ? MatmulKernel::make(*this, d) : makeLoraMatmul(*this, d);
  if (!base || (!d.bias.present() && d.activation == Activation::None))
    return base;
  // The image encoders' bias and GELU: an epilogue after it (VulkanVision.cpp).
  return makeMatmulEpilogue(*this, d, std::move(*base));
}
Expected<std::unique_ptr<Kernel>> VulkanDevice::prepareAttention(const AttentionDesc &d) {
  return AttentionKernel::make(*this, d);
}
Expected<std::unique_ptr<Kernel>> VulkanDevice::prepareMoe(const MoeDesc &d) {
  return makeMoeKernel(*this, d);
}
Expected<std::unique_ptr<Kernel>> VulkanDevice::prepareDispatch(const DispatchDesc &d) {
  return DispatchKernel::make(*this, d);
}
Expected<std::unique_ptr<Kernel>> VulkanDevice::prepareCopyRow(const CopyRowDesc &d) {
  // The source may be any row of a multi-row buffer: bind up to its end.
  return CopyRowKernel::make(*this, d, rowsToEnd(*ctx_, d.src, rowsPerBinding(*ctx_, d.src)));
}
Expected<std::unique_ptr<Kernel>> VulkanDevice::prepareAllReduce(const AllReduceDesc &d) {
  return AllReduceKernel::make(*this, d);
}

} // namespace fm::hal::vk
