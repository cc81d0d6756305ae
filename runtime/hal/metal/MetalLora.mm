// The Metal device's matmul with LoRA side paths (MatmulDesc::lora), a
// mirror of hal/vulkan/VulkanLora.cpp: the base kernel, unchanged, then one
// down product t = x·Aᵀ per run of A's that lie back to back (the matmul
// kernel, A being an nn.Linear [rank][k] in f16 or 8-bit packed), then one
// up product y += scale·t·Bᵀ per term (shaders/lora_up.comp). t lives in
// the queue's scratch; its bindings are resolved when the kernel first runs
// on a queue (as the MoE kernel's).
#include "hal/metal/MetalDevice.h"
#include "hal/metal/MetalKernelUtil.h"

#include <algorithm>
#include <functional>

namespace fm::hal::mtl {
namespace {

using UpPush = gpu::LoraUpPush;

bool continues(const WeightDesc &prev, const WeightDesc &next) {
  return prev.buffer == next.buffer && prev.offset + prev.bytes == next.offset &&
         prev.kind == next.kind && prev.format.group == next.format.group &&
         prev.shape[1] == next.shape[1];
}

Status checkMatrix(const WeightDesc &w, const char *what) {
  if (w.kind == WeightKind::F16)
    return Status::ok();
  if (w.kind == WeightKind::Quant && w.format.bits == 8 &&
      w.format.grid == kernels::QuantGrid::Balanced)
    return Status::ok();
  return Status::error("metal: LoRA " + std::string(what) + " '" + w.name +
                       "' is neither f16 nor 8-bit balanced (what adapters store)");
}

class LoraKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(MetalDevice &dev, const MatmulDesc &d,
                                                std::unique_ptr<Kernel> base) {
    std::unique_ptr<LoraKernel> k(new LoraKernel(dev, std::move(base)));
    FM_RETURN_IF_ERROR(k->init(d));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  uint64_t scratchBytes() const override { return tOffset_ + tBytes_; }

  Status run(Queue &queue, const Launch &l) const override {
    FM_RETURN_IF_ERROR(base_->run(queue, l));
    auto &q = static_cast<MetalQueue &>(queue);
    MetalBuffer *scratch = q.scratch();
    if (!scratch || scratch->size() < scratchBytes())
      return Status::error("metal: a LoRA matmul needs " + std::to_string(scratchBytes()) +
                           " bytes of queue scratch");
    if (scratch->handle() != bound_) {
      FM_RETURN_IF_ERROR(bind(*scratch));
      bound_ = scratch->handle();
    }
    const uint32_t M = uint32_t(l.rows);
    for (const Down &dn : downs_) {
      MatmulPush push = dn.push;
      push.M = M;
      FM_RETURN_IF_ERROR(
          q.dispatch(*dn.pipeline, dn.ranges.data(), &push, dn.gx, dn.gy, ceilDiv(M, kMr)));
    }
    for (const Up &up : ups_) {
      UpPush push = up.push;
      push.M = M;
      FM_RETURN_IF_ERROR(
          q.dispatch(*up.pipeline, up.ranges.data(), &push, up.gx, up.gy, ceilDiv(M, kMr)));
    }
    return Status::ok();
  }

private:
  LoraKernel(MetalDevice &dev, std::unique_ptr<Kernel> base)
      : dev_(dev), base_(std::move(base)) {}

  struct Down {
    const Pipeline *pipeline = nullptr;
    mutable std::vector<BoundRange> ranges; // x, a, t
    MatmulPush push{};
    uint32_t gx = 1, gy = 1;
  };
  struct Up {
    const Pipeline *pipeline = nullptr;
    mutable std::vector<BoundRange> ranges; // t, b, y
    UpPush push{};
    uint32_t gx = 1, gy = 1;
  };

  /// Points every t binding at `scratch`.
  Status bind(const MetalBuffer &scratch) const {
    auto t = bindRange(scratch, tOffset_, tBytes_, 4, "LoRA scratch");
    if (!t)
      return t.status();
    for (const Down &dn : downs_)
      dn.ranges[2] = *t;
    for (const Up &up : ups_)
      up.ranges[0] = *t;
    return Status::ok();
  }

  Status init(const MatmulDesc &d) {
    auto x = bindRows(d.x, 0, d.maxRows, "LoRA matmul input");
    if (!x)
      return x.status();
    auto y = bindRows(d.y, 0, d.maxRows, "LoRA matmul output");
    if (!y)
      return y.status();
    // The A's in memory order: runs of adjacent ones are one down product
    // (t's columns follow that order, as on the CPU and on Vulkan).
    std::vector<size_t> order(d.lora.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const WeightDesc &p = d.lora[a].a, &q = d.lora[b].a;
      return p.buffer != q.buffer ? std::less<const Buffer *>()(p.buffer, q.buffer)
                                  : p.offset < q.offset;
    });
    struct Run {
      const WeightDesc *first;
      int64_t rank, tCol;
      uint64_t bytes;
    };
    std::vector<Run> runs;
    std::vector<int64_t> tCol(d.lora.size());
    const WeightDesc *prev = nullptr;
    for (size_t i : order) {
      const LoraTerm &term = d.lora[i];
      FM_RETURN_IF_ERROR(checkMatrix(term.a, "A"));
      FM_RETURN_IF_ERROR(checkMatrix(term.bt, "B^T"));
      if (term.a.shape.size() != 2 || term.a.shape[1] != d.k || term.a.shape[0] != term.rank)
        return Status::error("metal: LoRA A '" + term.a.name + "' is not [rank][k]");
      if (prev && continues(*prev, term.a)) {
        runs.back().rank += term.rank;
        runs.back().bytes += term.a.bytes;
      } else {
        runs.push_back({&term.a, term.rank, rank_, term.a.bytes});
      }
      tCol[i] = rank_;
      rank_ += term.rank;
      prev = &term.a;
    }
    const uint64_t align = 256;
    tOffset_ = (base_->scratchBytes() + align - 1) / align * align;
    tBytes_ = uint64_t(d.maxRows) * uint64_t(rank_) * 4;
    // Until the first run binds the scratch, t's binding is y (never used).
    for (const Run &r : runs) {
      WeightBinding b(*r.first);
      auto p = dev_.pipelines().get("matmul_" + b.suffix, 3, sizeof(MatmulPush), b.spec);
      if (!p)
        return p.status();
      auto a = bindRange(mbuf(r.first->buffer), r.first->offset, r.bytes, b.elemSize,
                         "LoRA A '" + r.first->name + "'");
      if (!a)
        return a.status();
      Down dn;
      dn.pipeline = *p;
      dn.ranges = {*x, *a, *y};
      dn.push = {x->elem,
                 uint32_t(d.x.stride),
                 uint32_t(r.tCol),
                 uint32_t(rank_),
                 a->elem,
                 b.rowElems(*r.first, d.k),
                 uint32_t(d.k),
                 uint32_t(r.rank),
                 0,
                 0,
                 0};
      foldTiles(ceilDiv(uint64_t(r.rank), kTeams), &dn.gx, &dn.gy);
      dn.push.tilesX = dn.gx;
      downs_.push_back(std::move(dn));
    }
    for (size_t i = 0; i < d.lora.size(); ++i) {
      const LoraTerm &term = d.lora[i];
      const WeightDesc &bt = term.bt;
      if (bt.shape.size() != 2 || bt.shape[0] != term.rank || bt.shape[1] != term.rows)
        return Status::error("metal: LoRA B^T '" + bt.name + "' is not [rank][rows]");
      WeightBinding b(bt);
      auto p = dev_.pipelines().get("lora_up_" + b.suffix, 3, sizeof(UpPush), b.spec);
      if (!p)
        return p.status();
      auto br = bindRange(mbuf(bt.buffer), bt.offset, bt.bytes, b.elemSize,
                          "LoRA B^T '" + bt.name + "'");
      if (!br)
        return br.status();
      Up up;
      up.pipeline = *p;
      up.ranges = {*y, *br, *y};
      const uint32_t N = uint32_t(term.rows);
      foldTiles(ceilDiv(N, 64), &up.gx, &up.gy);
      up.push = {0,
                 uint32_t(rank_),
                 uint32_t(tCol[i]),
                 y->elem + uint32_t(term.col0),
                 uint32_t(d.y.stride),
                 br->elem,
                 b.rowElems(bt, N),
                 uint32_t(term.rank),
                 N,
                 0,
                 up.gx,
                 term.scale};
      ups_.push_back(std::move(up));
    }
    return Status::ok();
  }

  MetalDevice &dev_;
  std::unique_ptr<Kernel> base_;
  std::vector<Down> downs_;
  std::vector<Up> ups_;
  int64_t rank_ = 0; // Σ rank: t's columns
  uint64_t tOffset_ = 0, tBytes_ = 0;
  mutable id<MTLBuffer> bound_ = nil; // the scratch the bindings point at
};

} // namespace

Expected<std::unique_ptr<Kernel>> makeLoraMatmul(MetalDevice &dev, const MatmulDesc &d,
                                                 std::unique_ptr<Kernel> base) {
  return LoraKernel::make(dev, d, std::move(base));
}

} // namespace fm::hal::mtl
