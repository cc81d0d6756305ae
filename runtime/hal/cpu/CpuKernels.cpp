// The CPU device's prepared kernels: every pointer is resolved when the
// kernel is prepared (CPU buffers are host memory that never moves), so a
// run is the kernel call and nothing else.
#include "hal/cpu/CpuDevice.h"

#include "hal/cpu/CpuExecutable.h"
#include "hal/cpu/CpuLora.h"
#include "hal/cpu/Linear.h"
#include "hal/cpu/QuantMoe.h"
#include "kernels/attention.h"
#include "kernels/attention_flash.h"
#include "kernels/gemm.h"
#include "kernels/matmul.h"
#include "kernels/moe.h"
#include "kernels/pointwise.h"
#include "kernels/quantize.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace fm::hal {
namespace {

using rt::WeightRef;

float *hostFloats(const Rows &r) {
  return reinterpret_cast<float *>(r.buffer->host() + r.offset);
}

const uint8_t *hostBytes(const WeightDesc &w) {
  return w.buffer->host() + w.offset;
}

CpuQueue &cpu(Queue &queue) { return static_cast<CpuQueue &>(queue); }

// From this many rows a launch's attention runs by query blocks
// (attentionBlocked): each K/V block is read once per block of rows.
constexpr int64_t kBlockedAttentionRows = 16;

// Dense scratch regions are 64-byte aligned.
uint64_t alignUp(uint64_t bytes) { return (bytes + 63) & ~uint64_t(63); }

class EmbedKernel final : public Kernel {
public:
  explicit EmbedKernel(const EmbedDesc &d)
      : table_(weightRef(d.table, kernels::QActivations::F32)),
        out_(hostFloats(d.out)), stride_(d.out.stride), width_(d.out.width),
        rowBytes_(table_.rowBytes(d.out.width)) {}

  Status run(Queue &, const Launch &l) const override {
    for (int64_t r = 0; r < l.rows && width_ > 0; ++r) {
      float *out = out_ + r * stride_;
      if (l.embedRows && l.embedRows[r]) { // an image token
        std::memcpy(out, l.embedRows[r], width_ * sizeof(float));
        continue;
      }
      const uint8_t *row = static_cast<const uint8_t *>(table_.data) +
                           size_t(l.tokens[r]) * rowBytes_;
      switch (table_.kind) {
      case WeightRef::Kind::F32:
        std::memcpy(out, row, width_ * sizeof(float));
        break;
      case WeightRef::Kind::F16:
        for (int64_t c = 0; c < width_; ++c) {
          uint16_t h;
          std::memcpy(&h, row + 2 * c, sizeof(h));
          out[c] = kernels::halfToFloat(h);
        }
        break;
      case WeightRef::Kind::Quant:
        // Only the looked-up rows are unpacked.
        kernels::dequantizeRow(row, table_.format, width_, out);
        break;
      }
    }
    return Status::ok();
  }

private:
  WeightRef table_;
  float *out_;
  int64_t stride_, width_;
  size_t rowBytes_;
};

// From this many rows on an f32 weight goes through the packed GEMM
// (kernels/gemm.h), which beats matmulF32's dot products there.
constexpr int64_t kGemmMinRows = 32;

kernels::Activation kernelActivation(Activation a) {
  return a == Activation::GeluTanh    ? kernels::Activation::GeluTanh
         : a == Activation::QuickGelu ? kernels::Activation::QuickGelu
                                      : kernels::Activation::Gelu;
}

class MatmulKernel final : public Kernel {
public:
  MatmulKernel(const MatmulDesc &d, GemmWeights &gemm)
      : gemm_(gemm), x_(hostFloats(d.x)), xStride_(d.x.stride), y_(hostFloats(d.y)),
        yStride_(d.y.stride), k_(d.k), accumulate_(d.accumulate),
        bias_(d.bias.present()
                  ? reinterpret_cast<const float *>(hostBytes(d.bias))
                  : nullptr),
        activate_(d.activation != Activation::None),
        activation_(kernelActivation(d.activation)) {
    // One call per group of weights (matmulGroups).
    for (const MatmulGroup &m : matmulGroups(d.weights, d.activations, problem_))
      groups_.push_back({m.w, m.rows, m.col0, false, m.copy});
    // Launches of more rows than the matvec takes (prefill; linear() in
    // Linear.h) multiply packed weights as a GEMM over their Panel16 copy:
    // the artifact's, or one made before the program's first run
    // (beforeFirstRun), so that programs which never run cost no copies.
    // (A program of at most kMatvecMaxRows rows still gets its copies, as
    // the memory bound and fmc's artifact copies count them.)
    if (d.maxRows > 1 && d.activations != kernels::QActivations::F32)
      for (Group &g : groups_)
        if (g.w.kind == WeightRef::Kind::Quant &&
            kernels::gemmLayoutProblem(kernels::GemmLayout::Panel16,
                                       g.w.format, g.rows, k_)
                .empty()) {
          g.wantsGemm = true;
          g.w.gemm = g.copy;
        }
    // A strided x is gathered into dense rows first; a group narrower than
    // y's rows goes through dense scratch.
    if (d.maxRows > 1 && xStride_ != k_)
      xScratch_ = alignUp(uint64_t(d.maxRows) * k_ * sizeof(float));
    for (const Group &g : groups_)
      if (d.maxRows > 1 && yStride_ != g.rows)
        yScratch_ = std::max<uint64_t>(
            yScratch_, alignUp(uint64_t(d.maxRows) * g.rows * sizeof(float)));
    // The packed kernels' prepared activations, sized for the most rows
    // here so that a run allocates nothing (the HAL's contract).
    for (const Group &g : groups_)
      if (g.w.kind == WeightRef::Kind::Quant) {
        uint64_t bytes = kernels::qmatmulScratchBytes(g.w.format, d.maxRows,
                                                      k_, g.w.activations);
        if (g.wantsGemm)
          bytes = std::max<uint64_t>(
              bytes, kernels::qgemmScratchBytes(g.w.format, d.maxRows, k_,
                                                g.w.activations));
        packedScratch_ = std::max(packedScratch_, alignUp(bytes));
      }
  }

  uint64_t scratchBytes() const override {
    return xScratch_ + yScratch_ + packedScratch_;
  }
  /// Why the session cannot run this matmul ("" when it can): a GEMM copy
  /// in the artifact that does not fit its weight.
  const std::string &problem() const { return problem_; }

  Status beforeFirstRun(Queue &queue) override {
    // A weight whose copy is not available (memory) keeps the row kernel.
    for (Group &g : groups_)
      if (g.wantsGemm && !g.w.gemm)
        if (auto copy = gemm_.panel16(static_cast<const uint8_t *>(g.w.data),
                                      g.w.format, g.rows, k_,
                                      cpu(queue).pool())) {
          g.w.gemm = copy->data();
          gemmCopies_.push_back(std::move(copy));
        }
    return Status::ok();
  }

  Status run(Queue &queue, const Launch &l) const override {
    CpuQueue &q = cpu(queue);
    const int64_t M = l.rows;
    const float *x = x_;
    if (M > 1 && xStride_ != k_) {
      float *dense = reinterpret_cast<float *>(q.scratch());
      for (int64_t r = 0; r < M; ++r)
        std::memcpy(dense + r * k_, x_ + r * xStride_, k_ * sizeof(float));
      x = dense;
    }
    for (const Group &g : groups_) {
      float *y = y_ + g.col0;
      if (M == 1 || yStride_ == g.rows) {
        product(g, x, M, y, q);
        continue;
      }
      // y's rows are wider than this group's columns: go through dense
      // scratch (bringing y's values in when accumulating).
      float *dense = reinterpret_cast<float *>(q.scratch() + xScratch_);
      const size_t bytes = g.rows * sizeof(float);
      if (accumulate_)
        for (int64_t r = 0; r < M; ++r)
          std::memcpy(dense + r * g.rows, y + r * yStride_, bytes);
      product(g, x, M, dense, q);
      for (int64_t r = 0; r < M; ++r)
        std::memcpy(y + r * yStride_, dense + r * g.rows, bytes);
    }
    return Status::ok();
  }

private:
  struct Group {
    WeightRef w;
    int64_t rows = 0;
    int64_t col0 = 0;       // first column of y
    bool wantsGemm = false; // a GEMM copy before the first run
    const uint8_t *copy = nullptr; // the artifact's (besidePanel16)
  };

  /// y[M][g.rows] (dense) (+)= act(x · gᵀ + bias): the packed GEMM for
  /// many rows of an f32 weight (it adds the bias), else the kernel of the
  /// weight's format and the bias after it.
  void product(const Group &g, const float *x, int64_t M, float *y,
               CpuQueue &q) const {
    const float *bias = bias_ ? bias_ + g.col0 : nullptr;
    if (g.w.kind == WeightRef::Kind::F32 && M >= kGemmMinRows) {
      kernels::gemmF32(x, M, k_, static_cast<const float *>(g.w.data), g.rows,
                       bias, y, accumulate_, q.pool());
    } else {
      rt::linear(g.w, x, M, k_, g.rows, y, accumulate_, q.pool(),
                 packedScratch_ ? q.scratch() + xScratch_ + yScratch_
                                : nullptr);
      if (bias)
        for (int64_t r = 0; r < M; ++r)
          for (int64_t c = 0; c < g.rows; ++c)
            y[r * g.rows + c] += bias[c];
    }
    if (activate_)
      kernels::activate(activation_, y, M * g.rows, q.pool());
  }

  GemmWeights &gemm_;
  std::vector<Group> groups_;
  std::vector<std::shared_ptr<const rt::HostBlock>> gemmCopies_;
  float *x_;
  int64_t xStride_;
  float *y_;
  int64_t yStride_, k_;
  bool accumulate_;
  const float *bias_;
  bool activate_;
  kernels::Activation activation_;
  uint64_t xScratch_ = 0, yScratch_ = 0, packedScratch_ = 0;
  std::string problem_;
};

class AttentionKernel final : public Kernel {
public:
  explicit AttentionKernel(const AttentionDesc &d)
      : q_(hostFloats(d.q)), out_(hostFloats(d.out)), qStride_(d.q.stride),
        outStride_(d.out.stride) {
    a_.H = d.heads;
    a_.KVH = d.kvHeads;
    a_.D = d.headDim;
    a_.scale = d.scale;
    a_.window = d.window;
    a_.k = d.k.buffer->host() + d.k.offset;
    a_.v = d.v.buffer->host() + d.v.offset;
    a_.capacity = d.k.capacity;
    a_.int8 = d.k.int8;
    a_.kScale = d.kScale;
    a_.vScale = d.vScale;
  }

  Status run(Queue &queue, const Launch &l) const override {
    rt::ThreadPool *pool = cpu(queue).pool();
    kernels::AttentionArgs a = a_;
    const int64_t width = a.H * a.D;
    if (l.rows == 1 || (qStride_ == width && outStride_ == width)) {
      a.q = q_;
      a.out = out_;
      a.S = l.rows;
      a.pos0 = l.pos;
      // A block of prompt rows walks each K/V block once (flash-style).
      if (l.rows >= kBlockedAttentionRows)
        kernels::attentionBlocked(a, pool);
      else
        kernels::attention(a, pool);
      return Status::ok();
    }
    // The kernel takes dense rows: one call per strided row.
    for (int64_t r = 0; r < l.rows; ++r) {
      a.q = q_ + r * qStride_;
      a.out = out_ + r * outStride_;
      a.S = 1;
      a.pos0 = l.pos + r;
      kernels::attention(a, pool);
    }
    return Status::ok();
  }

private:
  kernels::AttentionArgs a_;
  float *q_, *out_;
  int64_t qStride_, outStride_;
};

class MoeKernel final : public Kernel {
public:
  MoeKernel(const MoeDesc &d, GemmWeights &gemm)
      : gemm_(gemm), x_(hostFloats(d.x)), xStride_(d.x.stride),
        y_(hostFloats(d.y)), yStride_(d.y.stride) {
    kernels::MoeShape shape;
    shape.hidden = d.x.width;
    shape.experts = static_cast<int64_t>(d.gate.size());
    shape.intermediate = d.gate.front().shape[0];
    shape.topK = d.topK;
    if (d.hasShared)
      shape.sharedIntermediate = d.sharedGate.shape[0];
    kernels::MoeShape planned = shape;
    planned.rows = d.maxRows;
    auto isQuant = [](const WeightDesc &w) { return w.kind == WeightKind::Quant; };
    quant_ = isQuant(d.router) ||
             std::any_of(d.gate.begin(), d.gate.end(), isQuant) ||
             std::any_of(d.up.begin(), d.up.end(), isQuant) ||
             std::any_of(d.down.begin(), d.down.end(), isQuant) ||
             (d.hasShared && (isQuant(d.sharedGate) || isQuant(d.sharedUp) ||
                              isQuant(d.sharedDown) ||
                              isQuant(d.sharedExpertGate)));
    if (quant_) {
      // Packed experts: the runtime's Moe over per-weight kinds.
      q_.shape = shape;
      q_.normTopk = d.normTopk;
      q_.accumulate = d.accumulate;
      q_.router = weightRef(d.router, d.activations);
      for (const auto *list : {&d.gate, &d.up, &d.down})
        for (const WeightDesc &w : *list)
          refs_.push_back(weightRef(w, d.activations));
      const size_t E = d.gate.size();
      q_.gate = refs_.data();
      q_.up = q_.gate + E;
      q_.down = q_.up + E;
      if (d.hasShared) {
        q_.sharedGate = weightRef(d.sharedGate, d.activations);
        q_.sharedUp = weightRef(d.sharedUp, d.activations);
        q_.sharedDown = weightRef(d.sharedDown, d.activations);
        q_.sharedExpertGate = weightRef(d.sharedExpertGate, d.activations);
      }
      // The experts' matmuls get their scratch from the queue's, one region
      // per thread that runs experts at once: a run allocates nothing.
      rt::QuantMoeArgs sizing = q_;
      sizing.shape = planned;
      q_.shape.opsScratchBytes = rt::quantMoeMatmulScratchBytes(sizing);
      q_.shape.threads = std::max(1, d.threads);
      planned.opsScratchBytes = q_.shape.opsScratchBytes;
      planned.threads = q_.shape.threads;
      // The whole of it, threads included, against the loader's bound (which
      // counts one thread without these regions).
      const size_t floats = rt::quantMoeScratchFloats(planned);
      if (floats > kernels::kMoeMaxScratchFloats)
        problem_ = "moe needs " + std::to_string(floats) +
                   " floats of scratch on " + std::to_string(planned.threads) +
                   " threads (a region of " +
                   std::to_string(planned.opsScratchBytes) +
                   " bytes per thread for the experts' matmuls), more than "
                   "this runtime allocates (" +
                   std::to_string(kernels::kMoeMaxScratchFloats) + ")";
      scratch_ = floats * sizeof(float);
      // Launches of several rows run each expert's gathered rows as a GEMM
      // over Panel16 copies, made before the program's first run.
      wantsGemm_ = d.maxRows > 1 && d.activations != kernels::QActivations::F32;
      return;
    }
    f_.shape = shape;
    f_.normTopk = d.normTopk;
    f_.accumulate = d.accumulate;
    f_.f16 = d.router.kind == WeightKind::F16;
    f_.router = hostBytes(d.router);
    for (const auto *list : {&d.gate, &d.up, &d.down})
      for (const WeightDesc &w : *list)
        pointers_.push_back(hostBytes(w));
    const size_t E = d.gate.size();
    f_.gate = pointers_.data();
    f_.up = f_.gate + E;
    f_.down = f_.up + E;
    if (d.hasShared) {
      f_.sharedGate = hostBytes(d.sharedGate);
      f_.sharedUp = hostBytes(d.sharedUp);
      f_.sharedDown = hostBytes(d.sharedDown);
      f_.sharedExpertGate = hostBytes(d.sharedExpertGate);
    }
    scratch_ = kernels::moeScratchFloats(planned) * sizeof(float);
  }

  uint64_t scratchBytes() const override { return scratch_; }
  /// Why the session cannot run this Moe ("" when it can).
  const std::string &problem() const { return problem_; }

  Status beforeFirstRun(Queue &queue) override {
    if (!wantsGemm_)
      return Status::ok();
    rt::ThreadPool *pool = cpu(queue).pool();
    const int64_t E = q_.shape.experts, K = q_.shape.hidden;
    for (int64_t e = 0; e < E; ++e)
      swigluCopies(refs_[e], refs_[E + e], refs_[2 * E + e],
                   q_.shape.intermediate, K, pool);
    if (q_.shape.sharedIntermediate > 0)
      swigluCopies(q_.sharedGate, q_.sharedUp, q_.sharedDown,
                   q_.shape.sharedIntermediate, K, pool);
    wantsGemm_ = false;
    return Status::ok();
  }

  Status run(Queue &queue, const Launch &l) const override {
    CpuQueue &q = cpu(queue);
    float *scratch = reinterpret_cast<float *>(q.scratch());
    if (quant_) {
      rt::QuantMoeArgs a = q_;
      a.shape.rows = l.rows;
      a.x = x_;
      a.xStride = xStride_;
      a.y = y_;
      a.yStride = yStride_;
      rt::quantMoe(a, scratch, q.pool());
      return Status::ok();
    }
    kernels::MoeArgs a = f_;
    a.shape.rows = l.rows;
    a.x = x_;
    a.xStride = xStride_;
    a.y = y_;
    a.yStride = yStride_;
    kernels::moe(a, scratch, q.pool());
    return Status::ok();
  }

private:
  /// The GEMM copy of packed weight w ([N][K]), when it has none yet.
  void copy(WeightRef &w, int64_t N, int64_t K, rt::ThreadPool *pool) {
    if (w.kind != WeightRef::Kind::Quant || w.gemm)
      return;
    if (kernels::gemmLayoutProblem(kernels::GemmLayout::Panel16, w.format, N,
                                   K)
            .empty())
      if (auto c = gemm_.panel16(static_cast<const uint8_t *>(w.data),
                                 w.format, N, K, pool)) {
        w.gemm = c->data();
        gemmCopies_.push_back(std::move(c));
      }
  }
  /// Copies of one SwiGLU's weights ([I][K] gate and up, [K][I] down): gate
  /// and up as one [2I][K] copy where they run as one matmul (QuantMoe's
  /// handleStacked: up follows gate in one format).
  void swigluCopies(WeightRef &gate, WeightRef &up, WeightRef &down,
                    int64_t I, int64_t K, rt::ThreadPool *pool) {
    const bool stacked =
        gate.sameLayout(up) &&
        static_cast<const char *>(gate.data) + size_t(I) * gate.rowBytes(K) ==
            static_cast<const char *>(up.data);
    if (stacked) {
      copy(gate, 2 * I, K, pool);
    } else {
      copy(gate, I, K, pool);
      copy(up, I, K, pool);
    }
    copy(down, K, I, pool);
  }

  GemmWeights &gemm_;
  std::vector<std::shared_ptr<const rt::HostBlock>> gemmCopies_;
  bool wantsGemm_ = false;
  bool quant_ = false;
  rt::QuantMoeArgs q_;
  std::vector<WeightRef> refs_; // the experts' gate, up, down
  kernels::MoeArgs f_;
  std::vector<const void *> pointers_;
  float *x_;
  int64_t xStride_;
  float *y_;
  int64_t yStride_;
  uint64_t scratch_ = 0;
  std::string problem_;
};

class DispatchKernel final : public Kernel {
public:
  DispatchKernel(CpuExecutable::Function fn, std::vector<void *> args)
      : fn_(fn), args_(std::move(args)) {}

  Status run(Queue &, const Launch &l) const override {
    fn_(const_cast<void **>(args_.data()), l.rows, l.pos);
    return Status::ok();
  }

private:
  CpuExecutable::Function fn_;
  std::vector<void *> args_;
};

class CopyRowKernel final : public Kernel {
public:
  explicit CopyRowKernel(const CopyRowDesc &d)
      : src_(hostFloats(d.src)), dst_(hostFloats(d.dst)),
        srcStride_(d.src.stride), width_(d.src.width) {}

  Status run(Queue &, const Launch &l) const override {
    if (width_ > 0)
      std::memmove(dst_, src_ + (l.rows - 1) * srcStride_,
                   width_ * sizeof(float));
    return Status::ok();
  }

private:
  float *src_, *dst_;
  int64_t srcStride_, width_;
};

class AllReduceKernel final : public Kernel {
public:
  explicit AllReduceKernel(const AllReduceDesc &d)
      : data_(hostFloats(d.out)), stride_(d.out.stride), width_(d.out.width),
        scale_(d.scale), comm_(d.comm), stats_(d.stats) {
    for (const Rows &in : d.inputs) {
      if (in.buffer == d.out.buffer && in.offset == d.out.offset &&
          in.stride == d.out.stride)
        inPlace_ = true; // out already holds this input
      else
        inputs_.push_back({hostFloats(in), in.stride});
    }
    if (d.maxRows > 1 && stride_ != width_)
      scratch_ = uint64_t(d.maxRows) * width_ * sizeof(float);
  }

  uint64_t scratchBytes() const override { return scratch_; }

  Status run(Queue &queue, const Launch &l) const override {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t M = l.rows;
    if (width_ > 0) {
      // This rank's partials into out.
      for (size_t i = 0; i < inputs_.size(); ++i) {
        const bool first = i == 0 && !inPlace_;
        for (int64_t r = 0; r < M; ++r) {
          float *row = data_ + r * stride_;
          const float *in = inputs_[i].data + r * inputs_[i].stride;
          if (first)
            std::memcpy(row, in, width_ * sizeof(float));
          else
            for (int64_t c = 0; c < width_; ++c)
              row[c] += in[c];
        }
      }
      if (inputs_.empty() && !inPlace_)
        for (int64_t r = 0; r < M; ++r)
          std::memset(data_ + r * stride_, 0, width_ * sizeof(float));
      const bool dense = M == 1 || stride_ == width_;
      if (comm_ && comm_->size() > 1) {
        // One collective per call: a strided buffer is packed first.
        float *data = data_;
        if (!dense) {
          data = reinterpret_cast<float *>(cpu(queue).scratch());
          for (int64_t r = 0; r < M; ++r)
            std::memcpy(data + r * width_, data_ + r * stride_,
                        width_ * sizeof(float));
        }
        FM_RETURN_IF_ERROR(comm_->allReduceSum(data, M * width_));
        if (!dense)
          for (int64_t r = 0; r < M; ++r)
            std::memcpy(data_ + r * stride_, data + r * width_,
                        width_ * sizeof(float));
      }
      if (scale_ != 1.0f)
        for (int64_t r = 0; r < M; ++r) {
          float *row = data_ + r * stride_;
          for (int64_t c = 0; c < width_; ++c)
            row[c] *= scale_;
        }
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
  struct Input {
    const float *data;
    int64_t stride;
  };
  float *data_;
  int64_t stride_, width_;
  std::vector<Input> inputs_;
  bool inPlace_ = false;
  float scale_;
  Communicator *comm_;
  CollectiveStats *stats_;
  uint64_t scratch_ = 0;
};

template <typename K, typename D, typename... More>
Expected<std::unique_ptr<Kernel>> make(const D &desc, More &...more) {
  return std::unique_ptr<Kernel>(new K(desc, more...));
}

} // namespace

Expected<std::unique_ptr<Kernel>> CpuDevice::prepareEmbed(const EmbedDesc &d) {
  return make<EmbedKernel>(d);
}

Expected<std::unique_ptr<Kernel>>
CpuDevice::prepareMatmul(const MatmulDesc &d) {
  if (d.lora.empty()) {
    auto kernel = std::make_unique<MatmulKernel>(d, gemmWeights_);
    if (!kernel->problem().empty())
      return Status::error("cpu: " + kernel->problem());
    return std::unique_ptr<Kernel>(std::move(kernel));
  }
  // Adapters: the fused kernel of CpuLora.cpp (base and side path in one
  // dispatch).
  return makeLoraMatmul(d, gemmWeights_);
}

Expected<std::unique_ptr<Kernel>>
CpuDevice::prepareAttention(const AttentionDesc &d) {
  return make<AttentionKernel>(d);
}

Expected<std::unique_ptr<Kernel>> CpuDevice::prepareMoe(const MoeDesc &d) {
  auto kernel = std::make_unique<MoeKernel>(d, gemmWeights_);
  if (!kernel->problem().empty())
    return Status::error("cpu: " + kernel->problem());
  return std::unique_ptr<Kernel>(std::move(kernel));
}

Expected<std::unique_ptr<Kernel>>
CpuDevice::prepareDispatch(const DispatchDesc &d) {
  const auto *exe = static_cast<const CpuExecutable *>(d.executable);
  if (!exe || d.function >= exe->numFunctions())
    return Status::error("cpu: dispatch of function " +
                         std::to_string(d.function) +
                         ", which the loaded executable does not have");
  std::vector<void *> args;
  args.reserve(d.args.size());
  for (const DispatchArg &a : d.args) {
    switch (a.kind) {
    case DispatchArg::Kind::Buffer:
      args.push_back(hostFloats(a.rows));
      break;
    case DispatchArg::Kind::Weight:
      args.push_back(const_cast<uint8_t *>(hostBytes(a.weight)));
      break;
    case DispatchArg::Kind::Cache:
      args.push_back(a.cache.buffer->host() + a.cache.offset);
      break;
    }
  }
  return std::unique_ptr<Kernel>(
      new DispatchKernel(exe->function(d.function), std::move(args)));
}

Expected<std::unique_ptr<Kernel>>
CpuDevice::prepareCopyRow(const CopyRowDesc &d) {
  return make<CopyRowKernel>(d);
}

Expected<std::unique_ptr<Kernel>>
CpuDevice::prepareAllReduce(const AllReduceDesc &d) {
  return make<AllReduceKernel>(d);
}

} // namespace fm::hal
