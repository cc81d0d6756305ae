// The Vulkan device's matmul with LoRA side paths (MatmulDesc::lora), the
// GPU mirror of hal/cpu/CpuLora.cpp, fused: first one down product t = x·Aᵀ
// per run of A's that lie back to back (the stacked projections of a fused
// matmul: x is read once for all of them; the matmul shader, A being an
// nn.Linear [rank][k] in f16 or 8-bit packed), then the base matmul's
// dispatches in the LORA variant of shaders/matmul.comp, whose output stage
// adds each term's s·t·Bᵀ on its columns, so y is written once. A base
// dispatch takes up to kLoraTerms terms: where more lie on its columns it
// is cut at the terms' column boundaries, and columns that more than
// kLoraTerms terms share (that many adapters stacked on one weight) get
// the rest in dispatches of the same shader with K = 0 (no base product)
// that add to y. t lives in the queue's scratch; the sets that bind it are
// written when the kernel first runs on a queue (as the MoE kernel's).
//
// The fused variant binds kFusedBindings storage buffers; Vulkan guarantees
// only 4 per shader stage. A device that allows fewer runs the LoRA matmul
// unfused in kernels of 3 bindings each: the downs, the base matmul's own
// dispatches, then one up product y += s·t·Bᵀ per term (shaders/lora_up.comp,
// as on the Metal device).
#include "hal/vulkan/VulkanDevice.h"
#include "hal/vulkan/VulkanKernelUtil.h"
#include "hal/vulkan/VulkanMatmulPlan.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace fm::hal::vk {
namespace {

using gpu::kLoraTerms;
using gpu::LoraMatmulPush;
using gpu::LoraMatmulTerm;
using UpPush = gpu::LoraUpPush;

// The fused dispatch's storage buffers: x, w, y, t and a Bᵀ per term.
constexpr uint32_t kFusedBindings = 4 + kLoraTerms;

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
  return Status::error("vulkan: LoRA " + std::string(what) + " '" + w.name +
                       "' is neither f16 nor 8-bit balanced (what adapters store)");
}

class LoraKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(VulkanDevice &dev, const MatmulDesc &d) {
    std::unique_ptr<LoraKernel> k(new LoraKernel(dev));
    FM_RETURN_IF_ERROR(k->init(d));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  uint64_t scratchBytes() const override { return tBytes_; }

  Status run(Queue &queue, const Launch &l) const override {
    auto &q = static_cast<VulkanQueue &>(queue);
    VulkanBuffer *scratch = q.scratch();
    if (!scratch || scratch->size() < scratchBytes())
      return Status::error("vulkan: a LoRA matmul needs " + std::to_string(scratchBytes()) +
                           " bytes of queue scratch");
    if (scratch->handle() != bound_) {
      FM_RETURN_IF_ERROR(bind(*scratch));
      bound_ = scratch->handle();
    }
    const uint32_t M = uint32_t(l.rows);
    // The downs write disjoint columns of t: one barrier (after whatever
    // wrote x or used the scratch before) for all of them.
    for (size_t i = 0; i < downs_.size(); ++i) {
      MatmulPush push = downs_[i].push;
      push.M = M;
      FM_RETURN_IF_ERROR(q.dispatch(*downs_[i].pipeline, downs_[i].set, &push,
                                    downs_[i].gx, downs_[i].gy, ceilDiv(M, kMr), i > 0));
    }
    if (base_)
      return runUnfused(q, l);
    // Then the fused dispatches: one barrier for t, then disjoint blocks of
    // y, except the extra terms' dispatches, which add to columns written
    // before them.
    bool first = true;
    for (const Fused &f : fused_) {
      if (f.m0 >= l.rows)
        continue;
      LoraMatmulPush push = f.push;
      push.base.M = uint32_t(std::min(f.rows, l.rows - f.m0));
      FM_RETURN_IF_ERROR(q.dispatch(*f.pipeline, f.set, &push, f.gx, f.gy,
                                    ceilDiv(push.base.M, kMr), !first && !f.adds));
      first = false;
    }
    return Status::ok();
  }

private:
  explicit LoraKernel(VulkanDevice &dev) : dev_(dev), sets_(dev.sharedContext()) {}

  /// The unfused path after the downs: the plain matmul kernel (its first
  /// dispatch takes a barrier it does not need, as it reads none of t: the
  /// price of running the plain kernel itself), then the ups, each after a barrier where
  /// it adds to what an up since the last barrier wrote. A skipped
  /// dispatch's barrier goes to the next one that runs.
  Status runUnfused(VulkanQueue &q, const Launch &l) const {
    FM_RETURN_IF_ERROR(base_->run(q, l));
    bool barrier = false;
    for (const Up &u : ups_) {
      barrier = barrier || !u.independent;
      if (u.m0 >= l.rows)
        continue;
      UpPush push = u.push;
      push.M = uint32_t(std::min(u.rows, l.rows - u.m0));
      FM_RETURN_IF_ERROR(
          q.dispatch(*u.pipeline, u.set, &push, u.gx, u.gy, ceilDiv(push.M, kMr), !barrier));
      barrier = false;
    }
    return Status::ok();
  }

  struct Down {
    const Pipeline *pipeline = nullptr;
    VkDescriptorSet set = VK_NULL_HANDLE;
    BoundRange x, a;
    MatmulPush push{};
    uint32_t gx = 1, gy = 1;
  };
  struct Fused {
    const Pipeline *pipeline = nullptr;
    VkDescriptorSet set = VK_NULL_HANDLE;
    std::vector<BoundRange> ranges; // binding 3 (t) is rewritten by bind()
    int64_t m0 = 0, rows = 0;
    bool adds = false; // extra terms on columns a dispatch before wrote
    LoraMatmulPush push{};
    uint32_t gx = 1, gy = 1;
  };
  // A term as the fused dispatches bind it.
  struct Term {
    BoundRange bt;
    int64_t col0 = 0, rows = 0;
    LoraMatmulTerm push{}; // col0 relative to column 0 of the matmul
  };
  // Unfused: one term's up product for activation rows [m0, m0 + rows).
  struct Up {
    const Pipeline *pipeline = nullptr;
    VkDescriptorSet set = VK_NULL_HANDLE;
    BoundRange bt, y; // binding 0 (t) is written by bind()
    int64_t m0 = 0, rows = 0;
    bool independent = false; // no up since the last barrier wrote its block
    UpPush push{};
    uint32_t gx = 1, gy = 1;
  };

  /// Points every set's t binding at `scratch`.
  Status bind(const VulkanBuffer &scratch) const {
    auto t = bindRange(dev_.context(), scratch, 0, tBytes_, 4, "LoRA scratch");
    if (!t)
      return t.status();
    auto &sets = const_cast<DescriptorSets &>(sets_);
    for (const Down &dn : downs_)
      sets.write(dn.set, {dn.x, dn.a, *t});
    for (const Fused &f : fused_) {
      std::vector<BoundRange> ranges = f.ranges;
      ranges[3] = *t;
      sets.write(f.set, ranges);
    }
    for (const Up &u : ups_)
      sets.write(u.set, {*t, u.bt, u.y});
    return Status::ok();
  }

  Status init(const MatmulDesc &d) {
    VulkanContext &ctx = dev_.context();
    auto x = bindRows(ctx, d.x, 0, d.maxRows, "LoRA matmul input");
    if (!x)
      return x.status();
    // y's first rows (those one binding covers) only stand in for bindings
    // no dispatch reads; the dispatches bind y per part of its rows, so a
    // long prefill's output may outgrow one binding.
    const int64_t yRows = std::min(d.maxRows, rowsPerBinding(ctx, d.y));
    if (yRows <= 0)
      return Status::error("vulkan: a row of the LoRA matmul output exceeds one binding");
    auto y = bindRows(ctx, d.y, 0, yRows, "LoRA matmul output");
    if (!y)
      return y.status();
    std::vector<int64_t> tCol;
    FM_RETURN_IF_ERROR(initDowns(d, *x, *y, &tCol));
    if (rank_ >= 65536)
      return Status::error("vulkan: LoRA ranks summing to " + std::to_string(rank_) +
                           " on one matmul (at most 65535)");
    std::vector<Term> terms;
    for (size_t i = 0; i < d.lora.size(); ++i) {
      const LoraTerm &lt = d.lora[i];
      const WeightDesc &bt = lt.bt;
      if (bt.shape.size() != 2 || bt.shape[0] != lt.rank || bt.shape[1] != lt.rows)
        return Status::error("vulkan: LoRA B^T '" + bt.name + "' is not [rank][rows]");
      auto br = bindRange(ctx, vbuf(bt.buffer), bt.offset, bt.bytes, 1,
                          "LoRA B^T '" + bt.name + "'");
      if (!br)
        return br.status();
      Term t;
      t.bt = *br;
      t.col0 = lt.col0;
      t.rows = lt.rows;
      t.push = {br->elem,
                int32_t(lt.col0),
                uint32_t(lt.rows),
                uint32_t(tCol[i]) | uint32_t(lt.rank) << 16,
                bt.kind == WeightKind::F16 ? 0u : uint32_t(bt.format.group),
                lt.scale};
      terms.push_back(t);
    }
    auto plan = planMatmul(ctx, d);
    if (!plan)
      return plan.status();
    if (ctx.storageBuffers() < kFusedBindings)
      return initUnfused(d, tCol);
    for (const MatmulPart &p : *plan)
      FM_RETURN_IF_ERROR(addPart(p, terms, *y));
    return Status::ok();
  }

  /// The unfused path: the plain matmul kernel of the base weights (the
  /// bias and activation stay in prepareMatmul's epilogue after this
  /// kernel), then per term and per binding of y's rows an up product.
  Status initUnfused(const MatmulDesc &d, const std::vector<int64_t> &tCol) {
    VulkanContext &ctx = dev_.context();
    MatmulDesc plain = d;
    plain.lora.clear();
    plain.bias = WeightDesc{};
    plain.activation = Activation::None;
    auto base = dev_.prepareMatmul(plain);
    if (!base)
      return base.status();
    base_ = std::move(*base);
    const int64_t mChunk = rowsPerBinding(ctx, d.y);
    if (mChunk <= 0)
      return Status::error("vulkan: LoRA matmul output rows exceed one binding");
    // The blocks (columns x rows) the ups wrote since the last barrier.
    struct Block {
      int64_t c0, c1, m0, m1;
    };
    std::vector<Block> written;
    for (size_t i = 0; i < d.lora.size(); ++i) {
      const LoraTerm &lt = d.lora[i];
      WeightBinding b(lt.bt);
      auto pipeline = dev_.pipelines().get("lora_up_" + b.suffix, 3, sizeof(UpPush), b.spec);
      if (!pipeline)
        return pipeline.status();
      auto bt = bindRange(ctx, vbuf(lt.bt.buffer), lt.bt.offset, lt.bt.bytes, b.elemSize,
                          "LoRA B^T '" + lt.bt.name + "'");
      if (!bt)
        return bt.status();
      const uint32_t N = uint32_t(lt.rows);
      for (int64_t m0 = 0; m0 < d.maxRows; m0 += mChunk) {
        Up u;
        u.pipeline = *pipeline;
        u.bt = *bt;
        u.m0 = m0;
        u.rows = std::min(mChunk, d.maxRows - m0);
        auto y = bindRows(ctx, d.y, m0, u.rows, "LoRA matmul output");
        if (!y)
          return y.status();
        u.y = *y;
        const Block blk{lt.col0, lt.col0 + lt.rows, m0, m0 + u.rows};
        u.independent = !ups_.empty(); // the first waits for t and the base
        for (const Block &w : written)
          if (w.c0 < blk.c1 && blk.c0 < w.c1 && w.m0 < blk.m1 && blk.m0 < w.m1)
            u.independent = false;
        if (!u.independent)
          written.clear();
        written.push_back(blk);
        foldTiles(ceilDiv(N, 64), &u.gx, &u.gy);
        u.push = {uint32_t(m0 * rank_),
                  uint32_t(rank_),
                  uint32_t(tCol[i]),
                  y->elem + uint32_t(lt.col0),
                  uint32_t(d.y.stride),
                  bt->elem,
                  b.rowElems(lt.bt, N),
                  uint32_t(lt.rank),
                  N,
                  0,
                  u.gx,
                  lt.scale};
        // Until the first run binds the scratch, t's binding is y (never
        // used).
        auto set = sets_.make(**pipeline, {u.y, u.bt, u.y});
        if (!set)
          return set.status();
        u.set = *set;
        ups_.push_back(u);
      }
    }
    return Status::ok();
  }

  /// The down products, one per run of adjacent A's; tCol[i]: term i's
  /// first column of t.
  Status initDowns(const MatmulDesc &d, const BoundRange &x, const BoundRange &y,
                   std::vector<int64_t> *tCol) {
    VulkanContext &ctx = dev_.context();
    // The A's in memory order: runs of adjacent ones are one down product
    // (t's columns follow that order, as on the CPU).
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
    tCol->assign(d.lora.size(), 0);
    const WeightDesc *prev = nullptr;
    for (size_t i : order) {
      const LoraTerm &term = d.lora[i];
      FM_RETURN_IF_ERROR(checkMatrix(term.a, "A"));
      FM_RETURN_IF_ERROR(checkMatrix(term.bt, "B^T"));
      if (term.a.shape.size() != 2 || term.a.shape[1] != d.k || term.a.shape[0] != term.rank)
        return Status::error("vulkan: LoRA A '" + term.a.name + "' is not [rank][k]");
      if (prev && continues(*prev, term.a)) {
        runs.back().rank += term.rank;
        runs.back().bytes += term.a.bytes;
      } else {
        runs.push_back({&term.a, term.rank, rank_, term.a.bytes});
      }
      (*tCol)[i] = rank_;
      rank_ += term.rank;
      prev = &term.a;
    }
    tBytes_ = uint64_t(d.maxRows) * uint64_t(rank_) * 4;
    // Until the first run binds the scratch, t's binding points at y (a
    // valid range, never used).
    for (const Run &r : runs) {
      WeightBinding b(*r.first);
      auto p = dev_.pipelines().get("matmul_" + b.suffix, 3, sizeof(MatmulPush), b.spec);
      if (!p)
        return p.status();
      auto a = bindRange(ctx, vbuf(r.first->buffer), r.first->offset, r.bytes, b.elemSize,
                         "LoRA A '" + r.first->name + "'");
      if (!a)
        return a.status();
      auto set = sets_.make(**p, {x, *a, y});
      if (!set)
        return set.status();
      Down dn;
      dn.pipeline = *p;
      dn.set = *set;
      dn.x = x;
      dn.a = *a;
      dn.push = {x.elem,
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
      downs_.push_back(dn);
    }
    return Status::ok();
  }

  /// The fused dispatches of base part `p`: its columns cut where the
  /// terms on them begin or end, the pieces merged while their terms fit
  /// one dispatch; terms beyond kLoraTerms on the same columns in
  /// dispatches of their own with K = 0.
  Status addPart(const MatmulPart &p, const std::vector<Term> &terms, const BoundRange &y) {
    const int64_t c0 = p.col, c1 = p.col + p.n;
    std::vector<int64_t> cuts = {c0, c1};
    for (const Term &t : terms)
      for (int64_t c : {t.col0, t.col0 + t.rows})
        if (c > c0 && c < c1)
          cuts.push_back(c);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    // The terms on each piece [cuts[i], cuts[i + 1]) (they cover it whole).
    auto termsOn = [&](size_t i) {
      std::vector<size_t> on;
      for (size_t j = 0; j < terms.size(); ++j)
        if (terms[j].col0 <= cuts[i] && terms[j].col0 + terms[j].rows >= cuts[i + 1])
          on.push_back(j);
      return on;
    };
    std::vector<size_t> group;
    int64_t start = c0;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      std::vector<size_t> on = termsOn(i);
      const std::vector<size_t> fits(on.begin(), on.begin() + std::min<size_t>(on.size(), kLoraTerms));
      std::vector<size_t> merged = group;
      for (size_t j : fits)
        if (std::find(merged.begin(), merged.end(), j) == merged.end())
          merged.push_back(j);
      if (merged.size() > size_t(kLoraTerms)) {
        FM_RETURN_IF_ERROR(addFused(narrowPart(p, start, cuts[i] - start), group, terms, y, false));
        start = cuts[i];
        merged = fits;
      }
      group = merged;
    }
    FM_RETURN_IF_ERROR(addFused(narrowPart(p, start, c1 - start), group, terms, y, false));
    // The terms that did not fit: K = 0 dispatches that add to y.
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      std::vector<size_t> on = termsOn(i);
      for (size_t first = kLoraTerms; first < on.size(); first += kLoraTerms) {
        const std::vector<size_t> extra(on.begin() + first,
                                        on.begin() + std::min(on.size(), first + kLoraTerms));
        MatmulPart part = narrowPart(p, cuts[i], cuts[i + 1] - cuts[i]);
        part.push.K = 0;
        part.push.accumulate = 1;
        FM_RETURN_IF_ERROR(addFused(part, extra, terms, y, true));
      }
    }
    return Status::ok();
  }

  Status addFused(const MatmulPart &p, const std::vector<size_t> &on,
                  const std::vector<Term> &terms, const BoundRange &y, bool adds) {
    if (p.n <= 0)
      return Status::ok();
    auto pipeline = dev_.pipelines().get("matmul_lora_" + p.b.suffix, kFusedBindings,
                                         sizeof(LoraMatmulPush), p.b.spec);
    if (!pipeline)
      return pipeline.status();
    Fused f;
    f.pipeline = *pipeline;
    f.m0 = p.m0;
    f.rows = p.rows;
    f.adds = adds;
    f.gx = p.gx;
    f.gy = p.gy;
    f.push.base = p.push;
    f.push.tOff = uint32_t(p.m0 * rank_);
    f.push.tStride = uint32_t(rank_);
    // Unused term slots: rank 0, their binding any valid range (y).
    f.ranges = {p.x, p.wr, p.y, y};
    for (int j = 0; j < kLoraTerms; ++j) {
      if (size_t(j) < on.size()) {
        const Term &t = terms[on[j]];
        f.push.term[j] = t.push;
        f.push.term[j].col0 = int32_t(t.col0 - p.col);
        f.ranges.push_back(t.bt);
      } else {
        f.push.term[j] = {};
        f.ranges.push_back(y);
      }
    }
    auto set = sets_.make(**pipeline, f.ranges);
    if (!set)
      return set.status();
    f.set = *set;
    fused_.push_back(std::move(f));
    return Status::ok();
  }

  VulkanDevice &dev_;
  DescriptorSets sets_;
  std::vector<Down> downs_;
  std::vector<Fused> fused_;
  std::unique_ptr<Kernel> base_; // unfused: the base matmul, then
  std::vector<Up> ups_;     // the up products
  int64_t rank_ = 0; // Σ rank: t's columns
  uint64_t tBytes_ = 0;
  mutable VkBuffer bound_ = VK_NULL_HANDLE; // the scratch the sets point at
};

} // namespace

Expected<std::unique_ptr<Kernel>> makeLoraMatmul(VulkanDevice &dev, const MatmulDesc &d) {
  return LoraKernel::make(dev, d);
}

} // namespace fm::hal::vk
