// The Metal MoE kernel, a mirror of hal/vulkan/VulkanMoe.cpp: the router
// matmul, routing (moe_route), the slot plan with each expert's indirect
// dispatch sizes (moe_plan), every expert's up and down projections on only
// its slots (indirect dispatches: an expert without rows costs an empty
// dispatch), the shared expert, and the combine (moe_combine). The tables
// between them live in the queue's scratch (Kernel::scratchBytes); the
// bindings that point into it are resolved when the kernel first runs on a
// queue (and again if it runs on another queue's scratch).
#include "hal/metal/MetalDevice.h"
#include "hal/metal/MetalKernelUtil.h"

namespace fm::hal::mtl {
namespace {

using RoutePush = gpu::MoeRoutePush;
using PlanPush = gpu::MoePlanPush;
using UpPush = gpu::MoeUpPush;
using DownPush = gpu::MoeDownPush;
using CombinePush = gpu::MoeCombinePush;

/// A binding: a fixed range, or a region of the queue's scratch.
struct Source {
  BoundRange fixed;
  bool scratch = false;
  uint64_t offset = 0, bytes = 0; // scratch region
};

class MoeKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(MetalDevice &dev, const MoeDesc &d) {
    std::unique_ptr<MoeKernel> k(new MoeKernel(dev));
    FM_RETURN_IF_ERROR(k->init(d));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  uint64_t scratchBytes() const override { return scratchBytes_; }

  Status run(Queue &queue, const Launch &l) const override {
    auto &q = static_cast<MetalQueue &>(queue);
    MetalBuffer *scratch = q.scratch();
    if (!scratch || scratch->size() < scratchBytes_)
      return Status::error("metal: MoE needs " + std::to_string(scratchBytes_) +
                           " bytes of queue scratch");
    if (scratch->handle() != bound_) {
      for (const Set &s : sets_)
        FM_RETURN_IF_ERROR(resolve(s, *scratch));
      bound_ = scratch->handle();
    }
    const uint32_t M = uint32_t(l.rows), topK = uint32_t(topK_);
    MatmulPush router = routerPush_;
    router.M = M;
    FM_RETURN_IF_ERROR(q.dispatch(*routerPipe_, ranges(routerSet_), &router, router.tilesX,
                                  1, ceilDiv(M, kMr)));
    if (hasShared_) {
      MatmulPush gate = sharedGatePush_;
      gate.M = M;
      FM_RETURN_IF_ERROR(q.dispatch(*sharedGatePipe_, ranges(sharedGateSet_), &gate, 1, 1,
                                    ceilDiv(M, kMr)));
      UpPush up = sharedUp_.push;
      up.M = M;
      FM_RETURN_IF_ERROR(q.dispatch(*sharedUp_.pipeline, ranges(sharedUp_.set), &up,
                                    ceilDiv(sharedI_, kTeams), ceilDiv(M, kMr), 1));
    }
    RoutePush route{M, uint32_t(experts_), topK, normTopk_ ? 1u : 0u};
    FM_RETURN_IF_ERROR(
        q.dispatch(*routePipe_, ranges(routeSet_), &route, ceilDiv(M, 64), 1, 1));
    PlanPush plan{M * topK, uint32_t(experts_), ceilDiv(I_, kTeams), ceilDiv(K_, kTeams), kMr};
    FM_RETURN_IF_ERROR(q.dispatch(*planPipe_, ranges(planSet_), &plan, 1, 1, 1));
    for (size_t e = 0; e < ups_.size(); ++e) {
      UpPush up = ups_[e].push;
      up.M = M;
      FM_RETURN_IF_ERROR(q.dispatchIndirect(*ups_[e].pipeline, ranges(ups_[e].set), &up,
                                            scratch->handle(), argsOffset(e, 0)));
    }
    for (size_t e = 0; e < downs_.size(); ++e) {
      DownPush down = downs_[e].push;
      down.M = M;
      FM_RETURN_IF_ERROR(q.dispatchIndirect(*downs_[e].pipeline, ranges(downs_[e].set), &down,
                                            scratch->handle(), argsOffset(e, 1)));
    }
    if (hasShared_) {
      DownPush down = sharedDown_.push;
      down.M = M;
      FM_RETURN_IF_ERROR(q.dispatch(*sharedDown_.pipeline, ranges(sharedDown_.set), &down,
                                    ceilDiv(K_, kTeams), ceilDiv(M, kMr), 1));
    }
    CombinePush combine = combinePush_;
    combine.M = M;
    return q.dispatch(*combinePipe_, ranges(combineSet_), &combine, ceilDiv(K_, 64), M, 1);
  }

private:
  explicit MoeKernel(MetalDevice &dev) : dev_(dev) {}

  struct Set {
    std::vector<Source> sources;
    mutable std::vector<BoundRange> ranges; // resolved against the bound scratch
  };
  template <typename P> struct Op {
    const Pipeline *pipeline = nullptr;
    size_t set = 0;
    P push{};
  };

  const BoundRange *ranges(size_t set) const { return sets_[set].ranges.data(); }
  uint64_t argsOffset(size_t e, int down) const {
    return regions_[kArgs].offset + (6 * e + 3 * down) * 4;
  }

  Status resolve(const Set &s, const MetalBuffer &scratch) const {
    for (size_t i = 0; i < s.sources.size(); ++i) {
      const Source &src = s.sources[i];
      if (!src.scratch)
        continue;
      auto r = bindRange(scratch, src.offset, src.bytes, 4, "MoE scratch");
      if (!r)
        return r.status();
      s.ranges[i] = *r;
    }
    return Status::ok();
  }

  /// The bindings of one dispatch (the scratch ones resolved at the first
  /// run).
  size_t makeSet(std::vector<Source> sources) {
    Set s;
    for (const Source &src : sources)
      s.ranges.push_back(src.fixed);
    s.sources = std::move(sources);
    sets_.push_back(std::move(s));
    return sets_.size() - 1;
  }

  Source fixed(const BoundRange &r) {
    Source s;
    s.fixed = r;
    return s;
  }
  Source region(int r) const {
    Source s;
    s.scratch = true;
    s.offset = regions_[r].offset;
    s.bytes = regions_[r].bytes;
    return s;
  }
  Expected<Source> weight(const WeightDesc &w) {
    WeightBinding b(w);
    auto r = bindRange(mbuf(w.buffer), w.offset, w.bytes, b.elemSize, "weight '" + w.name + "'");
    if (!r)
      return r.status();
    return fixed(*r);
  }

  enum Region { kLogits, kSel, kWgt, kFirst, kList, kArgs, kH, kHShared, kO, kG, kRegions };
  struct Span {
    uint64_t offset = 0, bytes = 0;
  };

  Status init(const MoeDesc &d) {
    const int64_t M = d.maxRows, E = int64_t(d.gate.size()), k = d.topK;
    K_ = uint32_t(d.x.width);
    I_ = uint32_t(d.gate.front().shape[0]);
    experts_ = E;
    topK_ = k;
    normTopk_ = d.normTopk;
    hasShared_ = d.hasShared;
    sharedI_ = d.hasShared ? uint32_t(d.sharedGate.shape[0]) : 0;
    if (k < 1 || k > 8 || k > E)
      return Status::error("metal: MoE top_k " + std::to_string(k) +
                           " (the kernel keeps 1 to 8 of the experts)");
    const uint64_t slots = uint64_t(M) * k;
    const uint64_t sizes[kRegions] = {
        uint64_t(M) * E * 4,     slots * 4,        slots * 4,
        uint64_t(2 * E + 1) * 4, slots * 4,        uint64_t(E) * 6 * 4,
        slots * I_ * 4,          uint64_t(M) * std::max<uint32_t>(sharedI_, 1) * 4,
        (slots + M) * K_ * 4,    uint64_t(M) * 4};
    const uint64_t align = 256;
    uint64_t at = 0;
    for (int r = 0; r < kRegions; ++r) {
      regions_[r] = {at, sizes[r]};
      at += (sizes[r] + align - 1) / align * align;
    }
    scratchBytes_ = at;

    auto xr = bindRows(d.x, 0, M, "MoE input");
    auto yr = bindRows(d.y, 0, M, "MoE output");
    if (!xr)
      return xr.status();
    if (!yr)
      return yr.status();
    const Source x = fixed(*xr);

    {
      WeightBinding b(d.router);
      auto p = dev_.pipelines().get("matmul_" + b.suffix, 3, sizeof(MatmulPush), b.spec);
      if (!p)
        return p.status();
      routerPipe_ = *p;
      auto w = weight(d.router);
      if (!w)
        return w.status();
      routerSet_ = makeSet({x, *w, region(kLogits)});
      routerPush_ = {xr->elem, uint32_t(d.x.stride), 0, uint32_t(E),
                     w->fixed.elem, b.rowElems(d.router, K_), K_, uint32_t(E),
                     0, ceilDiv(E, kTeams), 0};
    }
    {
      auto p = dev_.pipelines().get("moe_route", 3, sizeof(RoutePush));
      if (!p)
        return p.status();
      routePipe_ = *p;
      routeSet_ = makeSet({region(kLogits), region(kSel), region(kWgt)});
    }
    {
      auto p = dev_.pipelines().get("moe_plan", 4, sizeof(PlanPush));
      if (!p)
        return p.status();
      planPipe_ = *p;
      planSet_ = makeSet({region(kSel), region(kList), region(kFirst), region(kArgs)});
    }
    for (int64_t e = 0; e < E; ++e) {
      auto up = makeUp(d, d.gate[e], d.up[e], x, *xr, uint32_t(e), false);
      if (!up)
        return up.status();
      ups_.push_back(*up);
      auto down = makeDown(d.down[e], I_, uint32_t(e), false);
      if (!down)
        return down.status();
      downs_.push_back(*down);
    }
    if (d.hasShared) {
      auto up = makeUp(d, d.sharedGate, d.sharedUp, x, *xr, 0, true);
      if (!up)
        return up.status();
      sharedUp_ = *up;
      auto down = makeDown(d.sharedDown, sharedI_, 0, true);
      if (!down)
        return down.status();
      sharedDown_ = *down;
      WeightBinding b(d.sharedExpertGate);
      auto p = dev_.pipelines().get("matmul_" + b.suffix, 3, sizeof(MatmulPush), b.spec);
      if (!p)
        return p.status();
      sharedGatePipe_ = *p;
      auto w = weight(d.sharedExpertGate);
      if (!w)
        return w.status();
      sharedGateSet_ = makeSet({x, *w, region(kG)});
      sharedGatePush_ = {xr->elem, uint32_t(d.x.stride), 0, 1, w->fixed.elem,
                         b.rowElems(d.sharedExpertGate, K_), K_, 1, 0, 1, 0};
    }
    {
      auto p = dev_.pipelines().get("moe_combine", 4, sizeof(CombinePush));
      if (!p)
        return p.status();
      combinePipe_ = *p;
      combineSet_ = makeSet({region(kO), region(kWgt), region(kG), fixed(*yr)});
      combinePush_ = {yr->elem, uint32_t(d.y.stride), K_, uint32_t(k), 0,
                      d.accumulate ? 1u : 0u, d.hasShared ? 1u : 0u};
    }
    return Status::ok();
  }

  Expected<Op<UpPush>> makeUp(const MoeDesc &d, const WeightDesc &gate, const WeightDesc &up,
                              const Source &x, const BoundRange &xr, uint32_t expert,
                              bool shared) {
    WeightBinding b(gate), bu(up);
    if (!b.sameAs(bu))
      return Status::error("metal: MoE gate '" + gate.name + "' and up '" + up.name +
                           "' are stored differently (the kernel reads both alike)");
    auto p = dev_.pipelines().get("moe_up_" + b.suffix, 6, sizeof(UpPush), b.spec);
    if (!p)
      return p.status();
    auto g = weight(gate), u = weight(up);
    if (!g)
      return g.status();
    if (!u)
      return u.status();
    Op<UpPush> op;
    op.pipeline = *p;
    op.set = makeSet({x, *g, *u, region(kList), region(kFirst), region(shared ? kHShared : kH)});
    op.push = {xr.elem,
               uint32_t(d.x.stride),
               g->fixed.elem,
               u->fixed.elem,
               b.rowElems(gate, K_),
               K_,
               uint32_t(gate.shape[0]),
               expert,
               uint32_t(topK_),
               shared ? 1u : 0u,
               0};
    return op;
  }

  Expected<Op<DownPush>> makeDown(const WeightDesc &down, uint32_t I, uint32_t expert,
                                  bool shared) {
    WeightBinding b(down);
    auto p = dev_.pipelines().get("moe_down_" + b.suffix, 5, sizeof(DownPush), b.spec);
    if (!p)
      return p.status();
    auto w = weight(down);
    if (!w)
      return w.status();
    Op<DownPush> op;
    op.pipeline = *p;
    op.set = makeSet(
        {region(shared ? kHShared : kH), *w, region(kList), region(kFirst), region(kO)});
    op.push = {w->fixed.elem, b.rowElems(down, I), I, K_, expert, uint32_t(topK_),
               shared ? 1u : 0u, 0};
    return op;
  }

  MetalDevice &dev_;
  std::vector<Set> sets_;
  mutable id<MTLBuffer> bound_ = nil; // the scratch the sets point at
  Span regions_[kRegions];
  uint64_t scratchBytes_ = 0;
  uint32_t K_ = 0, I_ = 0, sharedI_ = 0;
  int64_t experts_ = 0, topK_ = 1;
  bool normTopk_ = false, hasShared_ = false;

  const Pipeline *routerPipe_ = nullptr, *routePipe_ = nullptr, *planPipe_ = nullptr,
                 *combinePipe_ = nullptr, *sharedGatePipe_ = nullptr;
  size_t routerSet_ = 0, routeSet_ = 0, planSet_ = 0, combineSet_ = 0, sharedGateSet_ = 0;
  MatmulPush routerPush_{}, sharedGatePush_{};
  CombinePush combinePush_{};
  std::vector<Op<UpPush>> ups_;
  std::vector<Op<DownPush>> downs_;
  Op<UpPush> sharedUp_;
  Op<DownPush> sharedDown_;
};

} // namespace

Expected<std::unique_ptr<Kernel>> makeMoeKernel(MetalDevice &dev, const MoeDesc &d) {
  return MoeKernel::make(dev, d);
}

} // namespace fm::hal::mtl
