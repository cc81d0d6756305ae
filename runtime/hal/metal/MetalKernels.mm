// The Metal device's prepared kernels, a mirror of hal/vulkan/VulkanKernels.cpp:
// every binding is resolved when the kernel is prepared (buffers never
// move), so a run encodes dispatches with their push constants and nothing
// else. The binding indices, push-constant structs and dispatch grids are
// the Vulkan device's, for the same kernels (translated to MSL). Metal has
// no per-binding range limit, so the Vulkan device's splitting of large
// tables, weights and activations over several bindings is not needed: one
// binding each. The MoE kernel is in MetalMoe.mm, LoRA in MetalLora.mm.
#include "hal/metal/MetalDevice.h"
#include "hal/metal/MetalExecutable.h"
#include "hal/metal/MetalKernelUtil.h"

#include <chrono>
#include <cstring>

namespace fm::hal::mtl {
namespace {

MetalQueue &mq(Queue &q) { return static_cast<MetalQueue &>(q); }

// --- embed -----------------------------------------------------------------

using EmbedPush = gpu::EmbedPush;

/// One dispatch per token (shaders/embed.comp): the table and the output
/// bound once, the row's element offsets in the push constants.
class EmbedKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(MetalDevice &dev, const EmbedDesc &d) {
    std::unique_ptr<EmbedKernel> k(new EmbedKernel());
    WeightBinding wb(d.table);
    k->out_ = d.out;
    k->width_ = uint32_t(d.out.width);
    k->elemSize_ = wb.elemSize;
    k->rowBytes_ = uint64_t(wb.rowElems(d.table, d.out.width)) * wb.elemSize;
    k->outStride_ = uint32_t(d.out.stride);
    if (d.table.bytes / wb.elemSize >= (uint64_t(1) << 32))
      return Status::error("metal: embedding table '" + d.table.name +
                           "' has more elements than the kernel's 32-bit offsets reach");
    auto p = dev.pipelines().get("embed_" + wb.suffix, 2, sizeof(EmbedPush), wb.spec);
    if (!p)
      return p.status();
    k->pipeline_ = *p;
    auto t = bindRange(mbuf(d.table.buffer), d.table.offset, d.table.bytes, wb.elemSize,
                       "embedding table '" + d.table.name + "'");
    if (!t)
      return t.status();
    auto out = bindRows(d.out, 0, 1, "the embedding output");
    if (!out)
      return out.status();
    k->ranges_ = {*t, *out};
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    MetalQueue &q = mq(queue);
    for (int64_t r = 0; r < l.rows; ++r) {
      if (l.embedRows && l.embedRows[r]) { // a VLM's image token: its host row
        FM_RETURN_IF_ERROR(q.update(mbuf(out_.buffer),
                                    out_.offset + uint64_t(r) * uint64_t(out_.stride) * 4,
                                    l.embedRows[r], uint64_t(out_.width) * 4));
        continue;
      }
      const uint64_t row = uint64_t(l.tokens[r]) * rowBytes_;
      EmbedPush push;
      push.rowOff = ranges_[0].elem + uint32_t(row / elemSize_);
      push.outOff = ranges_[1].elem + uint32_t(r) * outStride_;
      push.width = width_;
      FM_RETURN_IF_ERROR(
          q.dispatch(*pipeline_, ranges_.data(), &push, ceilDiv(width_, 64), 1, 1));
    }
    return Status::ok();
  }

private:
  EmbedKernel() = default;
  const Pipeline *pipeline_ = nullptr;
  std::vector<BoundRange> ranges_; // table, output
  Rows out_;
  uint64_t rowBytes_ = 0;
  uint32_t elemSize_ = 4, width_ = 0, outStride_ = 0;
};

// --- matmul ----------------------------------------------------------------

/// One dispatch per weight block: adjacent weights of one layout are one
/// block (as on the CPU and on Vulkan).
class MatmulKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(MetalDevice &dev, const MatmulDesc &d) {
    std::unique_ptr<MatmulKernel> k(new MatmulKernel());
    FM_RETURN_IF_ERROR(k->init(dev, d));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    MetalQueue &q = mq(queue);
    for (const Part &part : parts_) {
      MatmulPush push = part.push;
      push.M = uint32_t(l.rows);
      FM_RETURN_IF_ERROR(q.dispatch(*part.pipeline, part.ranges.data(), &push, part.gx,
                                    part.gy, ceilDiv(push.M, kMr)));
    }
    return Status::ok();
  }

private:
  MatmulKernel() = default;

  Status init(MetalDevice &dev, const MatmulDesc &d) {
    struct Block {
      const WeightDesc *w;
      WeightBinding b;
      int64_t rows, col0;
      uint64_t bytes;
    };
    std::vector<Block> blocks;
    int64_t col = 0;
    for (size_t i = 0; i < d.weights.size(); ++i) {
      const WeightDesc &w = d.weights[i];
      WeightBinding b(w);
      const int64_t rows = w.shape[0];
      if (!blocks.empty() && blocks.back().w->buffer == w.buffer &&
          blocks.back().w->offset + blocks.back().bytes == w.offset &&
          blocks.back().b.sameAs(b)) {
        blocks.back().rows += rows;
        blocks.back().bytes += w.bytes;
      } else {
        blocks.push_back({&w, b, rows, col, w.bytes});
      }
      col += rows;
    }
    auto x = bindRows(d.x, 0, d.maxRows, "matmul input");
    auto y = bindRows(d.y, 0, d.maxRows, "matmul output");
    if (!x)
      return x.status();
    if (!y)
      return y.status();
    for (const Block &blk : blocks) {
      const uint32_t rowElems = blk.b.rowElems(*blk.w, d.k);
      auto pipeline =
          dev.pipelines().get("matmul_" + blk.b.suffix, 3, sizeof(MatmulPush), blk.b.spec);
      if (!pipeline)
        return pipeline.status();
      auto w = bindRange(mbuf(blk.w->buffer), blk.w->offset, blk.bytes, blk.b.elemSize,
                         "weight '" + blk.w->name + "'");
      if (!w)
        return w.status();
      Part part;
      part.pipeline = *pipeline;
      part.ranges = {*x, *w, *y};
      part.push = {x->elem,
                   uint32_t(d.x.stride),
                   y->elem + uint32_t(blk.col0),
                   uint32_t(d.y.stride),
                   w->elem,
                   rowElems,
                   uint32_t(d.k),
                   uint32_t(blk.rows),
                   0,
                   0,
                   d.accumulate ? 1u : 0u};
      foldTiles(ceilDiv(uint64_t(blk.rows), kTeams), &part.gx, &part.gy);
      part.push.tilesX = part.gx;
      parts_.push_back(std::move(part));
    }
    return Status::ok();
  }

  struct Part {
    const Pipeline *pipeline = nullptr;
    std::vector<BoundRange> ranges; // x, w, y
    MatmulPush push{};
    uint32_t gx = 1, gy = 1;
  };
  std::vector<Part> parts_;
};

// --- attention -------------------------------------------------------------

using AttentionPush = gpu::AttentionPush;

class AttentionKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(MetalDevice &dev, const AttentionDesc &d) {
    std::unique_ptr<AttentionKernel> k(new AttentionKernel());
    if (d.headDim > 512)
      return Status::error("metal: attention head_dim " + std::to_string(d.headDim) +
                           " is over the kernel's 512");
    auto p = dev.pipelines().get(d.k.int8 ? "attention_i8" : "attention_f32", 4,
                                 sizeof(AttentionPush));
    if (!p)
      return p.status();
    k->pipeline_ = *p;
    const uint32_t elem = d.k.int8 ? 1 : 4;
    auto q = bindRows(d.q, 0, d.maxRows, "attention q");
    auto o = bindRows(d.out, 0, d.maxRows, "attention out");
    auto kc = bindRange(mbuf(d.k.buffer), d.k.offset,
                        uint64_t(d.k.capacity) * d.k.width * elem, elem, "the K cache slot");
    auto vc = bindRange(mbuf(d.v.buffer), d.v.offset,
                        uint64_t(d.v.capacity) * d.v.width * elem, elem, "the V cache slot");
    for (auto *r : {&q, &o, &kc, &vc})
      if (!*r)
        return r->status();
    // Bindings as shaders/attention.comp declares them: q 0, out 1, K 2, V 3.
    k->ranges_ = {*q, *o, *kc, *vc};
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
    return mq(queue).dispatch(*pipeline_, ranges_.data(), &push, heads_, uint32_t(l.rows), 1);
  }

private:
  AttentionKernel() = default;
  const Pipeline *pipeline_ = nullptr;
  std::vector<BoundRange> ranges_;
  AttentionPush push_{};
  uint32_t heads_ = 0;
};

// --- rows: copies, sums, scales ----------------------------------------------

using RowsPush = gpu::RowsPush;

/// y = alpha · y + beta · x over a launch's rows (shaders/rows.comp).
struct RowsOp {
  const Pipeline *pipeline = nullptr;
  std::vector<BoundRange> ranges; // x, y
  RowsPush push{};

  static Expected<RowsOp> make(MetalDevice &dev, const Rows &x, const Rows &y, int64_t rows,
                               float alpha, float beta) {
    RowsOp op;
    auto p = dev.pipelines().get("rows", 2, sizeof(RowsPush));
    if (!p)
      return p.status();
    op.pipeline = *p;
    auto bx = bindRows(x, 0, rows, "rows input");
    auto by = bindRows(y, 0, rows, "rows output");
    if (!bx)
      return bx.status();
    if (!by)
      return by.status();
    op.ranges = {*bx, *by};
    op.push = {bx->elem, uint32_t(x.stride), by->elem, uint32_t(y.stride),
               uint32_t(y.width), alpha, beta};
    return op;
  }
  Status run(MetalQueue &q, int64_t rows, uint32_t xRow = 0) const {
    RowsPush p = push;
    p.xOff += xRow * p.xStride;
    return q.dispatch(*pipeline, ranges.data(), &p, ceilDiv(p.width, 64), uint32_t(rows), 1);
  }
};

class CopyRowKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(MetalDevice &dev, const CopyRowDesc &d) {
    std::unique_ptr<CopyRowKernel> k(new CopyRowKernel());
    Rows dst = d.dst;
    dst.width = d.src.width;
    // The source row is the launch's last: a binding reaches every row.
    auto op = RowsOp::make(dev, d.src, dst, 1, 0.0f, 1.0f);
    if (!op)
      return op.status();
    k->op_ = std::move(*op);
    return std::unique_ptr<Kernel>(std::move(k));
  }
  Status run(Queue &queue, const Launch &l) const override {
    if (op_.push.width == 0)
      return Status::ok();
    return op_.run(mq(queue), 1, uint32_t(l.rows - 1));
  }

private:
  CopyRowKernel() = default;
  RowsOp op_;
};

/// This rank's partials summed on the device; across ranks through the
/// host: the queue is flushed, the rows downloaded, summed by the
/// communicator, uploaded back, then scaled on the device.
class AllReduceKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(MetalDevice &dev, const AllReduceDesc &d) {
    std::unique_ptr<AllReduceKernel> k(new AllReduceKernel(dev));
    k->out_ = d.out;
    k->comm_ = d.comm;
    k->stats_ = d.stats;
    bool inPlace = false;
    std::vector<Rows> others;
    for (const Rows &in : d.inputs) {
      if (in.buffer == d.out.buffer && in.offset == d.out.offset && in.stride == d.out.stride)
        inPlace = true;
      else
        others.push_back(in);
    }
    bool first = !inPlace;
    for (const Rows &in : others) {
      auto op = RowsOp::make(dev, in, d.out, d.maxRows, first ? 0.0f : 1.0f, 1.0f);
      if (!op)
        return op.status();
      k->sums_.push_back(std::move(*op));
      first = false;
    }
    if (first) { // no partials at all: out = 0
      auto op = RowsOp::make(dev, d.out, d.out, d.maxRows, 0.0f, 0.0f);
      if (!op)
        return op.status();
      k->sums_.push_back(std::move(*op));
    }
    if (d.scale != 1.0f) {
      auto op = RowsOp::make(dev, d.out, d.out, d.maxRows, d.scale, 0.0f);
      if (!op)
        return op.status();
      k->scale_ = std::move(*op);
      k->hasScale_ = true;
    }
    if (d.comm && d.comm->size() > 1)
      k->host_.resize(size_t(d.maxRows) * size_t(d.out.width));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    const auto t0 = std::chrono::steady_clock::now();
    MetalQueue &q = mq(queue);
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
      stats_->ms +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
              .count();
    }
    return Status::ok();
  }

private:
  explicit AllReduceKernel(MetalDevice &dev) : dev_(dev) {}
  MetalDevice &dev_;
  Rows out_;
  std::vector<RowsOp> sums_;
  RowsOp scale_;
  bool hasScale_ = false;
  Communicator *comm_ = nullptr;
  CollectiveStats *stats_ = nullptr;
  mutable std::vector<float> host_; // staging for the collective, sized once
};

// --- generated functions -----------------------------------------------------

/// A function of the artifact's MSL: one threadgroup per row (the Vulkan
/// target's convention, kept by the translation), its arguments bound in
/// Dispatch order and their element offsets, rows and pos in its push
/// constants.
class DispatchKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(const DispatchDesc &d) {
    const auto *exe = static_cast<const MetalExecutable *>(d.executable);
    if (!exe || d.function >= exe->numFunctions())
      return Status::error("metal: dispatch of function " + std::to_string(d.function) +
                           ", which the loaded executable does not have");
    const MetalExecutable::Function &fn = exe->function(d.function);
    if (fn.pipeline.bindings != d.args.size())
      return Status::error("metal: function '" + fn.name + "' binds " +
                           std::to_string(fn.pipeline.bindings) + " buffers, the dispatch has " +
                           std::to_string(d.args.size()) + " arguments");
    std::unique_ptr<DispatchKernel> k(new DispatchKernel());
    k->fn_ = &fn;
    for (size_t i = 0; i < d.args.size(); ++i) {
      const DispatchArg &a = d.args[i];
      const std::string what = "argument " + std::to_string(i) + " of '" + fn.name + "'";
      Expected<BoundRange> r = Status::error("metal: " + what + ": unset");
      switch (a.kind) {
      case DispatchArg::Kind::Buffer:
        r = bindRows(a.rows, 0, d.maxRows, what);
        break;
      case DispatchArg::Kind::Weight:
        r = bindRange(mbuf(a.weight.buffer), a.weight.offset, a.weight.bytes, 4, what);
        break;
      case DispatchArg::Kind::Cache: {
        const uint32_t elem = a.cache.int8 ? 1 : 4;
        r = bindRange(mbuf(a.cache.buffer), a.cache.offset,
                      uint64_t(a.cache.capacity) * a.cache.width * elem, elem, what);
        break;
      }
      }
      if (!r)
        return r.status();
      k->ranges_.push_back(*r);
      k->offsets_.push_back(r->elem);
    }
    k->push_.resize(fn.push.size());
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    using P = MetalExecutable::Function::Push;
    for (size_t i = 0; i < fn_->push.size(); ++i) {
      const auto &[kind, arg] = fn_->push[i];
      push_[i] = kind == P::Rows  ? uint32_t(l.rows)
                 : kind == P::Pos ? uint32_t(l.pos)
                                  : offsets_[arg];
    }
    return mq(queue).dispatch(fn_->pipeline, ranges_.data(), push_.data(), uint32_t(l.rows),
                              1, 1);
  }

private:
  DispatchKernel() = default;
  const MetalExecutable::Function *fn_ = nullptr;
  std::vector<BoundRange> ranges_;
  std::vector<uint32_t> offsets_;
  mutable std::vector<uint32_t> push_; // sized at prepare time
};

} // namespace

Expected<std::unique_ptr<Kernel>> makeMoeKernel(MetalDevice &dev, const MoeDesc &d);
Expected<std::unique_ptr<Kernel>> makeLoraMatmul(MetalDevice &dev, const MatmulDesc &d,
                                                 std::unique_ptr<Kernel> base);
Expected<std::unique_ptr<Kernel>> makeMatmulEpilogue(MetalDevice &dev, const MatmulDesc &d,
                                                     std::unique_ptr<Kernel> base);

Expected<std::unique_ptr<Kernel>> MetalDevice::prepareEmbed(const EmbedDesc &d) {
  return EmbedKernel::make(*this, d);
}
Expected<std::unique_ptr<Kernel>> MetalDevice::prepareMatmul(const MatmulDesc &d) {
  auto base = MatmulKernel::make(*this, d);
  if (base && !d.lora.empty()) // adapters: their side path after it (MetalLora.mm)
    base = makeLoraMatmul(*this, d, std::move(*base));
  if (!base || (!d.bias.present() && d.activation == Activation::None))
    return base;
  // The image encoders' bias and GELU: an epilogue after it (MetalVision.mm).
  return makeMatmulEpilogue(*this, d, std::move(*base));
}
Expected<std::unique_ptr<Kernel>> MetalDevice::prepareAttention(const AttentionDesc &d) {
  return AttentionKernel::make(*this, d);
}
Expected<std::unique_ptr<Kernel>> MetalDevice::prepareMoe(const MoeDesc &d) {
  return makeMoeKernel(*this, d);
}
Expected<std::unique_ptr<Kernel>> MetalDevice::prepareDispatch(const DispatchDesc &d) {
  return DispatchKernel::make(d);
}
Expected<std::unique_ptr<Kernel>> MetalDevice::prepareCopyRow(const CopyRowDesc &d) {
  return CopyRowKernel::make(*this, d);
}
Expected<std::unique_ptr<Kernel>> MetalDevice::prepareAllReduce(const AllReduceDesc &d) {
  return AllReduceKernel::make(*this, d);
}

} // namespace fm::hal::mtl
