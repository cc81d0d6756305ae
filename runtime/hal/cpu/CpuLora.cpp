// The fused LoRA matmul of the CPU device (CpuLora.h). Every pointer and
// every split is resolved when the kernel is prepared; a run is one
// parallelFor over the queue's threads:
//   phase 1: thread i prepares its rows of x for the packed weights (and
//            gathers them when x is strided) and computes its units of the
//            down products t = x·Aᵀ (all the A's of the matmul, one t);
//   one barrier (inside the dispatch: no hand-off back to the caller);
//   phase 2: thread i computes its columns of the base product, then adds
//            the bias, the up products s·t·Bᵀ of those columns (still in its
//            cache) and the activation.
// Phase 2's columns are units of 64 within a segment: a run of columns of
// one base weight group updated by the same adapter terms.
#include "hal/cpu/CpuLora.h"

#include "base/ThreadPool.h"
#include "hal/cpu/CpuDevice.h"
#include "hal/cpu/Linear.h"
#include "kernels/gemm.h"
#include "kernels/lora.h"
#include "kernels/matmul.h"
#include "kernels/pointwise.h"
#include "kernels/qgemm.h"
#include "kernels/qmatmul.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace fm::hal {
namespace {

using rt::WeightRef;

uint64_t alignUp(uint64_t bytes) { return (bytes + 63) & ~uint64_t(63); }

// Columns per phase-2 unit (the up kernels' unit, a multiple of the
// packed kernels' 16-row panels and tiles).
constexpr int64_t kUnitCols = 64;
// Prefill blocks of the row kernels: a block of w rows reused from L2
// across a block of x rows (as kernels/matmul.cpp and qmatmul.cpp).
constexpr int64_t kBlockRowsM = 128;
// From this many rows an f32 weight goes through the packed GEMM (as the
// plain matmul kernel, CpuKernels.cpp).
constexpr int64_t kGemmMinRows = 32;
// Below this many multiply-adds a run stays on the calling thread.
constexpr int64_t kMinParallelWork = 1 << 15;

kernels::LoraMatrix matrix(const WeightDesc &w) {
  kernels::LoraMatrix m;
  m.data = w.buffer->host() + w.offset;
  m.rows = w.shape[0];
  m.cols = w.shape[1];
  m.q8 = w.kind == WeightKind::Quant;
  m.group = w.format.group;
  return m;
}

bool continues(const WeightDesc &prev, const WeightDesc &next) {
  return prev.buffer == next.buffer && prev.offset + prev.bytes == next.offset &&
         prev.kind == next.kind && prev.format.group == next.format.group &&
         prev.shape[1] == next.shape[1];
}

kernels::Activation kernelActivation(Activation a) {
  return a == Activation::GeluTanh    ? kernels::Activation::GeluTanh
         : a == Activation::QuickGelu ? kernels::Activation::QuickGelu
                                      : kernels::Activation::Gelu;
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// All `parties` threads of one dispatch wait here until each has arrived.
// Spins (the phases are microseconds apart), yielding the core after a
// while so that an oversubscribed machine still makes progress.
void arriveAndWait(std::atomic<int> &arrived, int parties) {
  arrived.fetch_add(1, std::memory_order_acq_rel);
  for (int polls = 0; arrived.load(std::memory_order_acquire) < parties;
       ++polls) {
    if (polls < 2048)
      cpuRelax();
    else
      std::this_thread::yield();
  }
}

class FusedLoraMatmul final : public Kernel {
public:
  FusedLoraMatmul(const MatmulDesc &d, GemmWeights &gemm)
      : gemm_(gemm),
        x_(reinterpret_cast<const float *>(d.x.buffer->host() + d.x.offset)),
        xStride_(d.x.stride),
        y_(reinterpret_cast<float *>(d.y.buffer->host() + d.y.offset)),
        yStride_(d.y.stride), k_(d.k), accumulate_(d.accumulate),
        bias_(d.bias.present() ? reinterpret_cast<const float *>(
                                     d.bias.buffer->host() + d.bias.offset)
                               : nullptr),
        activate_(d.activation != Activation::None),
        activation_(kernelActivation(d.activation)), act_(d.activations) {
    planGroups(d);
    planLora(d);
    planUnits(d);
    planScratch(d);
  }

  uint64_t scratchBytes() const override { return scratch_; }
  /// Why the session cannot run this matmul ("" when it can), as
  /// matmulGroups says.
  const std::string &problem() const { return problem_; }

  Status beforeFirstRun(Queue &queue) override {
    // A weight whose copy is not available (memory) keeps the row kernel.
    for (Group &g : groups_)
      if (g.wantsGemm && !g.w.gemm)
        if (auto copy = gemm_.panel16(static_cast<const uint8_t *>(g.w.data),
                                      g.w.format, g.rows, k_,
                                      static_cast<CpuQueue &>(queue).pool())) {
          g.w.gemm = copy->data();
          gemmCopies_.push_back(std::move(copy));
        }
    // A slot's activations are prepared for qgemm only if every group
    // that reads them has its copy.
    for (Slot &s : slots_)
      s.ready = s.gemm;
    for (const Group &g : groups_)
      if (g.slot >= 0 && !g.w.gemm)
        slots_[g.slot].ready = false;
    return Status::ok();
  }

  Status run(Queue &queue, const Launch &l) const override {
    CpuQueue &q = static_cast<CpuQueue &>(queue);
    Run r;
    r.M = l.rows;
    if (r.M <= 0)
      return Status::ok();
    r.x = r.M > 1 && xStride_ != k_
              ? reinterpret_cast<float *>(q.scratch() + xOffset_)
              : x_;
    r.t = reinterpret_cast<float *>(q.scratch() + tOffset_);
    r.scratch = q.scratch();
    rt::ThreadPool *pool = q.pool();
    const int threads = pool ? pool->numThreads() : 1;
    if (threads <= 1 || r.M * width_ * k_ < kMinParallelWork) {
      prepare(r, 0, 1);
      columns(r, 0, 1);
      return Status::ok();
    }
    std::atomic<int> arrived{0};
    pool->parallelFor(threads, [&](int64_t begin, int64_t end) {
      if (end - begin != 1) { // run inline (a nested call): one party
        prepare(r, 0, 1);
        columns(r, 0, 1);
        return;
      }
      const int i = static_cast<int>(begin);
      prepare(r, i, threads);
      arriveAndWait(arrived, threads);
      columns(r, i, threads);
    });
    return Status::ok();
  }

private:
  struct Group {
    WeightRef w;
    int64_t rows = 0, col0 = 0; // y's columns [col0, col0 + rows)
    bool wantsGemm = false;     // a Panel16 copy before the first run
    int slot = -1;              // packed: its prepared activations
    const uint8_t *copy = nullptr; // the artifact's (matmulGroups)
  };
  // Columns [n0, n1) of y in one group, updated by ups_[segUps_[u0..u1)].
  struct Segment {
    int group;
    int64_t n0, n1;
    size_t u0, u1;
  };
  struct Unit {
    int segment;
    int64_t n0, n1;
  };
  // Prepared activations shared by the packed groups of one format.
  struct Slot {
    kernels::QuantFormat format;
    bool gemm;  // its groups want Panel16 copies
    bool ready; // all of them have one: runs of several rows use qgemm
    uint64_t offset;
  };
  struct Run {
    int64_t M;
    const float *x; // dense when M > 1
    float *t;
    uint8_t *scratch;
  };

  void planGroups(const MatmulDesc &d) {
    // Weights that lie back to back in one layout (the parts of a fused
    // projection) are one [n][k] matrix, as the plain matmul kernel has it.
    width_ = 0;
    for (const MatmulGroup &m : matmulGroups(d.weights, d.activations, problem_)) {
      groups_.push_back({m.w, m.rows, m.col0});
      groups_.back().copy = m.copy;
      width_ = m.col0 + m.rows;
    }
  }

  void planLora(const MatmulDesc &d) {
    // The A's in memory order: runs of adjacent ones (one adapter's stacked
    // projections) are one down product. t's columns follow that order.
    std::vector<size_t> order(d.lora.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const WeightDesc &x = d.lora[a].a, &y = d.lora[b].a;
      return x.buffer != y.buffer ? std::less<const Buffer *>()(x.buffer, y.buffer)
                                  : x.offset < y.offset;
    });
    std::vector<int64_t> tCol(d.lora.size());
    const WeightDesc *prev = nullptr;
    for (size_t i : order) {
      const LoraTerm &term = d.lora[i];
      if (prev && continues(*prev, term.a))
        downs_.back().a.rows += term.rank; // one [Σ rank][k] matrix
      else
        downs_.push_back({matrix(term.a), rank_});
      tCol[i] = rank_;
      rank_ += term.rank;
      prev = &term.a;
    }
    downUnits_ = kernels::loraDownUnits(downs_.data(), downs_.size());
    // The ups in the matmul's order (terms of one weight, one per adapter,
    // are added in that order).
    for (size_t i = 0; i < d.lora.size(); ++i) {
      ups_.push_back({tCol[i], matrix(d.lora[i].bt), y_ + d.lora[i].col0,
                      d.lora[i].scale});
      upCol0_.push_back(d.lora[i].col0);
    }
  }

  void planUnits(const MatmulDesc &d) {
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      Group &g = groups_[gi];
      const int64_t c0 = g.col0, c1 = g.col0 + g.rows;
      // Segment edges: the group's and every adapted weight's in it.
      std::vector<int64_t> edges{c0, c1};
      for (const LoraTerm &t : d.lora)
        for (int64_t e : {t.col0, t.col0 + t.rows})
          if (e > c0 && e < c1)
            edges.push_back(e);
      std::sort(edges.begin(), edges.end());
      edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
      // Packed launches of more rows than the matvec takes (usesGemm)
      // multiply by the Panel16 copy (exact activations keep the row
      // kernel), whose columns go by panels of 16: every segment must start
      // on one.
      bool panelEdges = true;
      for (int64_t e : edges)
        panelEdges = panelEdges && (e - c0) % 16 == 0;
      g.wantsGemm = d.maxRows > 1 && g.w.kind == WeightRef::Kind::Quant &&
                    d.activations != kernels::QActivations::F32 && panelEdges &&
                    kernels::gemmLayoutProblem(kernels::GemmLayout::Panel16,
                                               g.w.format, g.rows, k_)
                        .empty();
      if (g.wantsGemm)
        g.w.gemm = g.copy;
      for (size_t e = 0; e + 1 < edges.size(); ++e) {
        Segment s{static_cast<int>(gi), edges[e], edges[e + 1], segUps_.size(),
                  0};
        for (size_t u = 0; u < ups_.size(); ++u)
          if (upCol0_[u] <= s.n0 && s.n1 <= upCol0_[u] + ups_[u].bt.cols)
            segUps_.push_back(u);
        s.u1 = segUps_.size();
        for (int64_t n = s.n0; n < s.n1; n += kUnitCols)
          units_.push_back({static_cast<int>(segments_.size()), n,
                            std::min(n + kUnitCols, s.n1)});
        segments_.push_back(s);
      }
    }
  }

  void planScratch(const MatmulDesc &d) {
    uint64_t offset = 0;
    if (d.maxRows > 1 && xStride_ != k_) { // the gathered dense x
      xOffset_ = offset;
      offset += alignUp(uint64_t(d.maxRows) * k_ * sizeof(float));
    }
    tOffset_ = offset;
    offset += alignUp(uint64_t(d.maxRows) * rank_ * sizeof(float));
    for (Group &g : groups_) {
      if (g.w.kind != WeightRef::Kind::Quant)
        continue;
      const kernels::QuantFormat f = g.w.format;
      for (size_t s = 0; s < slots_.size() && g.slot < 0; ++s)
        if (slots_[s].format.bits == f.bits &&
            slots_[s].format.group == f.group &&
            slots_[s].format.grid == f.grid && slots_[s].gemm == g.wantsGemm)
          g.slot = static_cast<int>(s);
      if (g.slot >= 0)
        continue;
      uint64_t bytes = kernels::qmatmulScratchBytes(f, d.maxRows, k_, act_);
      if (g.wantsGemm)
        bytes = std::max<uint64_t>(
            bytes, kernels::qgemmScratchBytes(f, d.maxRows, k_, act_));
      g.slot = static_cast<int>(slots_.size());
      slots_.push_back({f, g.wantsGemm, false, offset});
      offset += alignUp(bytes);
    }
    scratch_ = offset;
  }

  // Whether slot s (and its groups) go through qgemm in a run of M rows:
  // as linear() chooses (Linear.h), up to kMatvecMaxRows rows take the
  // matvec, each row as the decode step computes it.
  static bool usesGemm(const Slot &s, int64_t M) {
    return M > kernels::kMatvecMaxRows && s.ready;
  }

  // Phase 1 of thread `part` of `parts`.
  void prepare(const Run &r, int part, int parts) const {
    const auto [m0, m1] = rt::ThreadPool::chunk(r.M, parts, part);
    if (r.x != x_) // gather this thread's rows of a strided x
      for (int64_t m = m0; m < m1; ++m)
        std::memcpy(const_cast<float *>(r.x) + m * k_, x_ + m * xStride_,
                    k_ * sizeof(float));
    for (const Slot &s : slots_) {
      uint8_t *buf = r.scratch + s.offset;
      if (usesGemm(s, r.M))
        kernels::qgemmPrepareRows(r.x, r.M, k_, s.format, act_, buf, m0, m1);
      else
        kernels::qmatmulPrepareRows(r.x, k_, s.format, act_, buf, m0, m1);
    }
    const auto [u0, u1] = rt::ThreadPool::chunk(downUnits_, parts, part);
    kernels::loraDownRange(x_, r.M, xStride_, r.t, rank_, downs_.data(),
                           downs_.size(), u0, u1);
  }

  // Phase 2 of thread `part` of `parts`: its units, a segment at a time.
  void columns(const Run &r, int part, int parts) const {
    const auto [b, e] = rt::ThreadPool::chunk(
        static_cast<int64_t>(units_.size()), parts, part);
    for (int64_t u = b; u < e;) {
      const int seg = units_[u].segment;
      const int64_t n0 = units_[u].n0;
      while (u < e && units_[u].segment == seg)
        ++u;
      segmentColumns(r, segments_[seg], n0, units_[u - 1].n1);
    }
  }

  // y's columns [n0, n1) of segment s: base, bias, ups, activation.
  void segmentColumns(const Run &r, const Segment &s, int64_t n0,
                      int64_t n1) const {
    const Group &g = groups_[s.group];
    const int64_t M = r.M, ldy = yStride_;
    const int64_t a = n0 - g.col0, b = n1 - g.col0; // the group's columns
    float *y = y_ + g.col0;
    bool biased = false;
    // Decode streams the weight rows in one call (the kernels prefetch
    // ahead within it); prefill blocks them so that a block of w rows is
    // reused from L2 across a block of x rows.
    const int64_t step = M == 1 ? b - a : kUnitCols;
    switch (g.w.kind) {
    case WeightRef::Kind::Quant: {
      const uint8_t *act = r.scratch + slots_[g.slot].offset;
      if (usesGemm(slots_[g.slot], M)) {
        kernels::qgemmColumns(r.x, M, k_, g.w.gemm, g.w.format, g.rows, y, ldy,
                              accumulate_, act_, act, a, b);
        break;
      }
      const uint8_t *w = static_cast<const uint8_t *>(g.w.data);
      for (int64_t c = a; c < b; c += step)
        for (int64_t m = 0; m < M; m += kBlockRowsM)
          kernels::qmatmulBlock(r.x, act, k_, w, g.w.format, y, ldy,
                                accumulate_, act_, m, std::min(m + kBlockRowsM, M),
                                c, std::min(c + step, b));
      break;
    }
    case WeightRef::Kind::F16: {
      const uint16_t *w = static_cast<const uint16_t *>(g.w.data);
      for (int64_t c = a; c < b; c += step)
        for (int64_t m = 0; m < M; m += kBlockRowsM)
          kernels::matmulF16WBlock(r.x, k_, w, y, ldy, m,
                                   std::min(m + kBlockRowsM, M), c,
                                   std::min(c + step, b), accumulate_);
      break;
    }
    case WeightRef::Kind::F32: {
      const float *w = static_cast<const float *>(g.w.data);
      if (M >= kGemmMinRows && ldy == g.rows) { // the packed GEMM, bias too
        kernels::gemmF32Block(r.x, M, k_, w, g.rows,
                              bias_ ? bias_ + g.col0 : nullptr, y, accumulate_,
                              0, M, a, b);
        biased = true;
        break;
      }
      for (int64_t c = a; c < b; c += step)
        for (int64_t m = 0; m < M; m += kBlockRowsM)
          kernels::matmulF32Block(r.x, k_, w, y, ldy, m,
                                  std::min(m + kBlockRowsM, M), c,
                                  std::min(c + step, b), accumulate_);
      break;
    }
    }
    if (bias_ && !biased)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t c = a; c < b; ++c)
          y[m * ldy + c] += bias_[g.col0 + c];
    for (size_t i = s.u0; i < s.u1; ++i) {
      const size_t u = segUps_[i];
      kernels::loraUpColumns(r.t, M, rank_, ldy, ups_[u], n0 - upCol0_[u],
                             n1 - upCol0_[u]);
    }
    if (activate_)
      for (int64_t m = 0; m < M; ++m)
        kernels::activate(activation_, y + m * ldy + a, b - a, nullptr);
  }

  GemmWeights &gemm_;
  std::string problem_;
  std::vector<Group> groups_;
  std::vector<std::shared_ptr<const rt::HostBlock>> gemmCopies_;
  const float *x_;
  int64_t xStride_;
  float *y_;
  int64_t yStride_, k_, width_ = 0;
  bool accumulate_;
  const float *bias_;
  bool activate_;
  kernels::Activation activation_;
  kernels::QActivations act_;

  std::vector<kernels::LoraDown> downs_;
  int64_t downUnits_ = 0;
  std::vector<kernels::LoraUp> ups_;
  std::vector<int64_t> upCol0_; // each up's first column of y
  int64_t rank_ = 0;            // Σ rank: t's columns

  std::vector<Segment> segments_;
  std::vector<size_t> segUps_;
  std::vector<Unit> units_;
  std::vector<Slot> slots_;
  uint64_t xOffset_ = 0, tOffset_ = 0, scratch_ = 0;
};

} // namespace

Expected<std::unique_ptr<Kernel>> makeLoraMatmul(const MatmulDesc &desc,
                                       GemmWeights &gemm) {
  auto kernel = std::make_unique<FusedLoraMatmul>(desc, gemm);
  if (!kernel->problem().empty())
    return Status::error("cpu: " + kernel->problem());
  return std::unique_ptr<Kernel>(std::move(kernel));
}

} // namespace fm::hal
