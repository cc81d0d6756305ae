// The CUDA device's prepared kernels: device pointers and kernel functions
// are resolved when a kernel is prepared; a run fills the launch
// parameters on the stack and records the launches on the queue
// (CudaQueue: they reach the stream when its segment is submitted).
#include "hal/cuda/CudaDevice.h"
#include "hal/cuda/CudaExecutable.h"
#include "hal/cuda/CudaLinear.h"

#include "kernels/qformat.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace fm::hal::cuda {
namespace {

CudaQueue &cudaQueue(Queue &queue) { return static_cast<CudaQueue &>(queue); }

CUdeviceptr rowsPtr(const Rows &r) { return devicePtr(r.buffer, r.offset); }

unsigned blocks(int64_t n, int64_t per) { return unsigned((n + per - 1) / per); }

// fm_qmatvec_<path>_q<bits>g<group><b|a> (kernels/matvec.cu).
std::string qmatvecName(const char *path, kernels::QuantFormat f) {
  return std::string("fm_qmatvec_") + path + "_q" + std::to_string(f.bits) +
         "g" + std::to_string(f.group) +
         (f.grid == kernels::QuantGrid::Affine ? "a" : "b");
}

// Matvec kernels: 8 warps per block, one output row each.
constexpr unsigned kMatvecThreads = 256;
constexpr int64_t kMatvecRows = kMatvecThreads / 32;

class EmbedKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(CudaDevice &dev,
                                                const EmbedDesc &d) {
    auto fn = dev.function("fm_embed");
    if (!fn)
      return fn.status();
    auto tokens = dev.allocateDevice(kChunk * sizeof(int32_t));
    if (!tokens)
      return tokens.status();
    std::unique_ptr<EmbedKernel> k(new EmbedKernel(dev, d, *fn));
    k->tokens_ = std::move(*tokens);
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    CudaQueue &q = cudaQueue(queue);
    FM_RETURN_IF_ERROR(q.enter());
    // The tokens are host memory: staged through a device buffer, a chunk
    // of rows at a time. The copy goes after the pending segment (a chunk's
    // launch reads the buffer before the next chunk's copy overwrites it).
    for (int64_t r0 = 0; r0 < l.rows; r0 += kChunk) {
      const int64_t n = std::min(kChunk, l.rows - r0);
      FM_RETURN_IF_ERROR(q.copyFromHost(tokens_->ptr(), l.tokens + r0,
                                        n * sizeof(int32_t), "tokens"));
      LaunchParams p;
      p.add(table_).add(rowBytes_).add(kind_).add(format_.bits)
          .add(format_.group).add(int(format_.grid == kernels::QuantGrid::Affine))
          .add(tokens_->ptr()).add(out_ + CUdeviceptr(r0 * stride_ * 4))
          .add(stride_).add(int(width_));
      dev_.launch(fn_, {unsigned(n)}, {256}, p, q);
      // A VLM's image tokens: their host rows over what the gather wrote
      // (each copy goes after the pending segment, so after the gather).
      for (int64_t r = r0; l.embedRows && r < r0 + n; ++r)
        if (l.embedRows[r])
          FM_RETURN_IF_ERROR(q.copyFromHost(out_ + CUdeviceptr(r * stride_ * 4),
                                            l.embedRows[r], uint64_t(width_) * 4,
                                            "image token rows"));
    }
    return Status::ok();
  }

private:
  static constexpr int64_t kChunk = 4096;
  EmbedKernel(CudaDevice &dev, const EmbedDesc &d, CUfunction fn)
      : dev_(dev), fn_(fn), table_(devicePtr(d.table.buffer, d.table.offset)),
        out_(rowsPtr(d.out)), stride_(d.out.stride), width_(d.out.width),
        format_(d.table.format) {
    switch (d.table.kind) {
    case WeightKind::F32:
      kind_ = 0;
      rowBytes_ = width_ * 4;
      break;
    case WeightKind::F16:
      kind_ = 1;
      rowBytes_ = width_ * 2;
      break;
    case WeightKind::Quant:
      kind_ = 2;
      rowBytes_ = int64_t(kernels::packedRowBytes(format_, width_));
      break;
    }
  }
  CudaDevice &dev_;
  CUfunction fn_;
  CUdeviceptr table_, out_;
  int64_t stride_, width_;
  kernels::QuantFormat format_;
  int kind_ = 0;
  int64_t rowBytes_ = 0;
  std::unique_ptr<CudaBuffer> tokens_;
};

class MatmulKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(CudaDevice &dev,
                                                const MatmulDesc &d) {
    std::unique_ptr<MatmulKernel> k(new MatmulKernel(dev, d));
    FM_RETURN_IF_ERROR(k->initLora(d));
    int64_t col = 0;
    bool dp4a = false;
    for (const WeightDesc &w : d.weights) {
      Part part;
      part.w = devicePtr(w.buffer, w.offset);
      part.rows = w.shape[0];
      part.col = col;
      col += part.rows;
      std::string name;
      switch (w.kind) {
      case WeightKind::F32:
        name = "fm_matvec_f32";
        break;
      case WeightKind::F16:
        name = "fm_matvec_f16";
        break;
      case WeightKind::Quant: {
        // From kGemmMinRows rows: the tensor-core GEMM (f16 x and weights,
        // f32 sums), whatever the activations choice.
        auto gemm = dev.function(qKernelName("fm_qgemm_mma", w.format).c_str());
        if (!gemm)
          return gemm.status();
        part.gemm = *gemm;
        // Int8 rounds x to one int8 digit per 32 inputs (dp4a); the other
        // choices keep f32 x, at least as exact as the CPU's Int8x2.
        part.dp4a = d.activations == kernels::QActivations::Int8;
        dp4a = dp4a || part.dp4a;
        name = qmatvecName(part.dp4a ? "dp4a" : "f32", w.format);
        break;
      }
      }
      part.kind = w.kind;
      auto fn = dev.function(name.c_str());
      if (!fn)
        return fn.status();
      part.fn = *fn;
      k->parts_.push_back(part);
    }
    // The image encoders' epilogue: y = act(y + bias) after the parts.
    if (d.bias.present() || d.activation != Activation::None) {
      auto fn = dev.function("fm_bias_act");
      if (!fn)
        return fn.status();
      k->biasAct_ = *fn;
      k->bias_ = d.bias.present() ? devicePtr(d.bias.buffer, d.bias.offset) : 0;
      static_assert(int(Activation::Gelu) == 1 && int(Activation::GeluTanh) == 2 &&
                        int(Activation::QuickGelu) == 3,
                    "fm_bias_act's act codes");
      k->act_ = int(d.activation);
    }
    if (dp4a) {
      auto fn = dev.function("fm_quantize_x_q8");
      if (!fn)
        return fn.status();
      k->quantize_ = *fn;
      const int64_t rows = std::max<int64_t>(1, d.maxRows);
      auto xq = dev.allocateDevice(uint64_t(rows) * d.k +
                                   uint64_t(rows) * (d.k / 32) * sizeof(float));
      if (!xq)
        return xq.status();
      k->xq_ = std::move(*xq);
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    CudaQueue &q = cudaQueue(queue);
    FM_RETURN_IF_ERROR(q.enter());
    const unsigned M = unsigned(l.rows);
    const int K = int(k_);
    const CUdeviceptr xs = xq_ ? xq_->ptr() + CUdeviceptr(l.rows * k_) : 0;
    // Every dp4a part is packed, so from kGemmMinRows rows none reads xq.
    if (xq_ && l.rows < kGemmMinRows) {
      LaunchParams p;
      p.add(x_).add(xStride_).add(K).add(xq_->ptr()).add(xs);
      dev_.launch(quantize_, {blocks(k_ / 32, 8), M}, {256}, p, q);
    }
    for (const Part &part : parts_) {
      LaunchParams p;
      if (usesGemm(part.kind, l.rows)) {
        p.add(x_).add(xStride_).add(part.w).add(y_ + CUdeviceptr(part.col * 4))
            .add(yStride_).add(int(M)).add(int(part.rows)).add(K)
            .add(int(accumulate_));
        const LaunchGeometry g = gemmGeometry(l.rows, part.rows);
        dev_.launch(part.gemm, g.grid, g.block, p, q);
        continue;
      }
      p.add(part.w);
      if (part.dp4a)
        p.add(xq_->ptr()).add(xs);
      else
        p.add(x_).add(xStride_);
      p.add(y_ + CUdeviceptr(part.col * 4)).add(yStride_).add(int(part.rows))
          .add(K).add(int(accumulate_));
      dev_.launch(part.fn, {blocks(part.rows, kMatvecRows), M}, {kMatvecThreads}, p,
                  q);
    }
    // The LoRA side path: every term's down product t = x·Aᵀ, then its up
    // product scale·t·Bᵀ added to its columns (before the bias and the
    // activation, as the CPU's CpuLora.cpp).
    for (const LoraPart &t : lora_)
      t.down.run(q, x_, xStride_, t_->ptr() + CUdeviceptr(t.tCol * 4), tStride_, l.rows, false);
    for (const LoraPart &t : lora_) {
      LaunchParams p;
      p.add(t_->ptr() + CUdeviceptr(t.tCol * 4)).add(tStride_).add(t.bt).add(t.kind)
          .add(t.group).add(int(t.rank)).add(int(t.rows)).add(t.scale)
          .add(y_ + CUdeviceptr(t.col0 * 4)).add(yStride_);
      dev_.launch(loraUp_, {blocks(t.rows, 256), M}, {256}, p, q);
    }
    if (biasAct_) {
      LaunchParams p;
      p.add(y_).add(yStride_).add(int(n_)).add(bias_).add(act_);
      dev_.launch(biasAct_, {M}, {256}, p, q);
    }
    return Status::ok();
  }

private:
  /// One adapter term: its down product (A, an nn.Linear [rank][k]) into
  /// columns tCol .. tCol + rank of t, and its up product's Bᵀ [rank][rows]
  /// (kind 1 f16, 2 packed 8-bit balanced) onto y's columns col0 ...
  struct LoraPart {
    Linear down;
    CUdeviceptr bt = 0;
    int kind = 1, group = 32;
    int64_t rank = 0, rows = 0, col0 = 0, tCol = 0;
    float scale = 1.0f;
  };

  /// What adapters store (the adapter compiler writes f16 or 8-bit
  /// balanced matrices): anything else is refused by name.
  static Status checkLoraMatrix(const WeightDesc &w, const char *what) {
    if (w.kind == WeightKind::F16 ||
        (w.kind == WeightKind::Quant && w.format.bits == 8 &&
         w.format.grid == kernels::QuantGrid::Balanced))
      return Status::ok();
    return Status::error(std::string("cuda: LoRA ") + what + " '" + w.name +
                         "' is neither f16 nor 8-bit balanced (what adapters store)");
  }

  Status initLora(const MatmulDesc &d) {
    if (d.lora.empty())
      return Status::ok();
    auto up = dev_.function("fm_lora_up");
    if (!up)
      return up.status();
    loraUp_ = *up;
    for (const LoraTerm &term : d.lora) {
      FM_RETURN_IF_ERROR(checkLoraMatrix(term.a, "A"));
      FM_RETURN_IF_ERROR(checkLoraMatrix(term.bt, "B^T"));
      if (term.bt.kind == WeightKind::Quant && term.rows % term.bt.format.group != 0)
        return Status::error("cuda: LoRA B^T '" + term.bt.name + "': " +
                             std::to_string(term.rows) + " columns are not whole groups of " +
                             std::to_string(term.bt.format.group));
      LoraPart t;
      auto down = Linear::make(dev_, term.a);
      if (!down)
        return down.status();
      t.down = *down;
      t.bt = devicePtr(term.bt.buffer, term.bt.offset);
      t.kind = term.bt.kind == WeightKind::F16 ? 1 : 2;
      t.group = int(term.bt.format.group);
      t.rank = term.rank;
      t.rows = term.rows;
      t.col0 = term.col0;
      t.tCol = tStride_;
      t.scale = term.scale;
      tStride_ += term.rank;
      lora_.push_back(t);
    }
    auto t = dev_.allocateDevice(uint64_t(std::max<int64_t>(1, maxRows_)) * tStride_ * 4);
    if (!t)
      return t.status();
    t_ = std::move(*t);
    return Status::ok();
  }

  struct Part {
    CUfunction fn = nullptr, gemm = nullptr;
    WeightKind kind = WeightKind::F32;
    CUdeviceptr w = 0;
    int64_t rows = 0, col = 0;
    bool dp4a = false;
  };
  MatmulKernel(CudaDevice &dev, const MatmulDesc &d)
      : dev_(dev), x_(rowsPtr(d.x)), y_(rowsPtr(d.y)), xStride_(d.x.stride),
        yStride_(d.y.stride), k_(d.k), n_(d.n), maxRows_(d.maxRows),
        accumulate_(d.accumulate) {}
  CudaDevice &dev_;
  std::vector<Part> parts_;
  CUdeviceptr x_, y_;
  int64_t xStride_, yStride_, k_, n_, maxRows_;
  bool accumulate_;
  std::vector<LoraPart> lora_;
  CUfunction loraUp_ = nullptr;
  std::unique_ptr<CudaBuffer> t_; // [maxRows][tStride_]: every term's t
  int64_t tStride_ = 0;
  CUfunction biasAct_ = nullptr; // the epilogue, where there is a bias or an activation
  CUdeviceptr bias_ = 0;
  int act_ = 0;
  CUfunction quantize_ = nullptr;
  std::unique_ptr<CudaBuffer> xq_; // [maxRows][k] int8, then [maxRows][k/32] f32
};

class AttentionKernel final : public Kernel {
public:
  // Keys per split at least; a decode row over a long cache gets up to
  // kMaxSplits splits (one block each per head).
  static constexpr int64_t kMinChunk = 128;
  static constexpr int64_t kMaxSplits = 64;
  static constexpr int64_t kMaxHeadDim = 256; // kernels/attention.cu
  // Partials a launch may write (scratch size): prefill rows get fewer
  // splits.
  static constexpr int64_t kMaxPartials = 8192;

  static Expected<std::unique_ptr<Kernel>> make(CudaDevice &dev,
                                                const AttentionDesc &d) {
    if (d.headDim > kMaxHeadDim || d.headDim <= 0)
      return Status::error("cuda: attention head size " +
                           std::to_string(d.headDim) +
                           " is outside the CUDA kernel's 1.." +
                           std::to_string(kMaxHeadDim));
    if (d.kvHeads <= 0 || d.heads % d.kvHeads != 0)
      return Status::error("cuda: attention heads " + std::to_string(d.heads) +
                           " not a multiple of kv heads " +
                           std::to_string(d.kvHeads));
    auto split = dev.function(d.k.int8 ? "fm_attention_split_i8"
                                       : "fm_attention_split_f32");
    if (!split)
      return split.status();
    auto combine = dev.function("fm_attention_combine");
    if (!combine)
      return combine.status();
    std::unique_ptr<AttentionKernel> k(new AttentionKernel(dev, d));
    k->split_ = *split;
    k->combine_ = *combine;
    const int64_t rows = std::max<int64_t>(1, d.maxRows);
    k->maxSplits_ = std::max<int64_t>(
        1, std::min(kMaxSplits, kMaxPartials / (rows * d.heads)));
    auto partial = dev.allocateDevice(uint64_t(rows) * d.heads * k->maxSplits_ *
                                      (d.headDim + 2) * sizeof(float));
    if (!partial)
      return partial.status();
    k->partial_ = std::move(*partial);
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    CudaQueue &q = cudaQueue(queue);
    FM_RETURN_IF_ERROR(q.enter());
    // The most keys a row sees: the last row's.
    int64_t visible = l.pos + l.rows;
    if (window_ > 0)
      visible = std::min(visible, window_);
    const int64_t splits =
        std::max<int64_t>(1, std::min<int64_t>(maxSplits_, blocks(visible, kMinChunk)));
    const int chunk = int(blocks(visible, splits));
    LaunchParams p;
    p.add(q_).add(qStride_).add(k_).add(v_).add(int(heads_)).add(int(kvHeads_))
        .add(int(headDim_)).add(scale_).add(kScale_).add(vScale_).add(l.pos)
        .add(window_).add(chunk).add(partial_->ptr());
    dev_.launch(split_, {unsigned(heads_), unsigned(splits), unsigned(l.rows)}, {128}, p,
                q);
    LaunchParams c;
    c.add(partial_->ptr()).add(int(splits)).add(int(heads_)).add(int(headDim_))
        .add(out_).add(outStride_);
    dev_.launch(combine_, {unsigned(heads_), unsigned(l.rows)}, {128}, c, q);
    return Status::ok();
  }

private:
  AttentionKernel(CudaDevice &dev, const AttentionDesc &d)
      : dev_(dev), q_(rowsPtr(d.q)), out_(rowsPtr(d.out)),
        k_(devicePtr(d.k.buffer, d.k.offset)),
        v_(devicePtr(d.v.buffer, d.v.offset)), qStride_(d.q.stride),
        outStride_(d.out.stride), heads_(d.heads), kvHeads_(d.kvHeads),
        headDim_(d.headDim), window_(d.window), scale_(d.scale),
        kScale_(d.k.int8 ? d.kScale : 1.0f),
        vScale_(d.v.int8 ? d.vScale : 1.0f) {}
  CudaDevice &dev_;
  CUfunction split_ = nullptr, combine_ = nullptr;
  CUdeviceptr q_, out_, k_, v_;
  int64_t qStride_, outStride_, heads_, kvHeads_, headDim_, window_;
  float scale_, kScale_, vScale_;
  int64_t maxSplits_ = 1;
  std::unique_ptr<CudaBuffer> partial_;
};

class CopyRowKernel final : public Kernel {
public:
  explicit CopyRowKernel(const CopyRowDesc &d)
      : src_(rowsPtr(d.src)), dst_(rowsPtr(d.dst)),
        srcStride_(d.src.stride), width_(d.src.width) {}

  Status run(Queue &queue, const Launch &l) const override {
    CudaQueue &q = cudaQueue(queue);
    if (width_ <= 0 || l.rows <= 0)
      return Status::ok();
    q.copy(dst_, src_ + CUdeviceptr((l.rows - 1) * srcStride_ * 4), width_ * sizeof(float));
    return Status::ok();
  }

private:
  CUdeviceptr src_, dst_;
  int64_t srcStride_, width_;
};

class AllReduceKernel final : public Kernel {
public:
  static Expected<std::unique_ptr<Kernel>> make(CudaDevice &dev,
                                                const AllReduceDesc &d) {
    auto add = dev.function("fm_add_rows");
    auto scale = dev.function("fm_scale_rows");
    auto zero = dev.function("fm_zero_rows");
    if (!add)
      return add.status();
    if (!scale)
      return scale.status();
    if (!zero)
      return zero.status();
    std::unique_ptr<AllReduceKernel> k(new AllReduceKernel(dev, d));
    k->add_ = *add;
    k->scale_ = *scale;
    k->zero_ = *zero;
    if (d.comm && d.comm->size() > 1) {
      // GPU to GPU where every rank agreed on NCCL; else through the host.
      k->nccl_ = dev.ncclFor(*d.comm);
      if (!k->nccl_)
        k->host_.resize(size_t(std::max<int64_t>(1, d.maxRows)) * d.out.width);
      if (d.stats)
        d.stats->transport = k->nccl_ ? k->nccl_->version() : "host";
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(Queue &queue, const Launch &l) const override {
    CudaQueue &q = cudaQueue(queue);
    FM_RETURN_IF_ERROR(q.enter());
    const auto t0 = std::chrono::steady_clock::now();
    const unsigned M = unsigned(l.rows);
    if (width_ > 0) {
      // This rank's partials into out (the first one copies, unless out
      // already holds it).
      for (size_t i = 0; i < inputs_.size(); ++i) {
        LaunchParams p;
        p.add(inputs_[i].ptr).add(inputs_[i].stride).add(out_).add(stride_)
            .add(int(width_)).add(int(i > 0 || inPlace_));
        dev_.launch(add_, {M}, {256}, p, q);
      }
      if (inputs_.empty() && !inPlace_) {
        LaunchParams p;
        p.add(out_).add(stride_).add(int(width_));
        dev_.launch(zero_, {M}, {256}, p, q);
      }
      if (nccl_) {
        // Device memory to device memory, after the sums above on the
        // same stream; recorded, so a decode step stays one graph. Rows
        // with gaps between them go one by one (one NCCL group).
        if (stride_ == width_)
          q.allReduce(*nccl_, out_, uint64_t(l.rows * width_));
        else
          for (int64_t r = 0; r < l.rows; ++r)
            q.allReduce(*nccl_, out_ + CUdeviceptr(r * stride_ * 4), uint64_t(width_));
      } else if (comm_ && comm_->size() > 1) {
        // Staged through the host: one collective of the dense rows, once
        // the sums above are done.
        const DriverApi &api = dev_.api();
        FM_RETURN_IF_ERROR(q.synchronize("all-reduce host staging"));
        float *h = host_.data();
        for (int64_t r = 0; r < l.rows; ++r)
          FM_RETURN_IF_ERROR(check(
              api,
              api.cuMemcpyDtoH(h + r * width_, out_ + CUdeviceptr(r * stride_ * 4),
                               width_ * 4),
              "cuMemcpyDtoH (all-reduce)"));
        FM_RETURN_IF_ERROR(comm_->allReduceSum(h, l.rows * width_));
        for (int64_t r = 0; r < l.rows; ++r)
          FM_RETURN_IF_ERROR(check(
              api,
              api.cuMemcpyHtoD(out_ + CUdeviceptr(r * stride_ * 4),
                               h + r * width_, width_ * 4),
              "cuMemcpyHtoD (all-reduce)"));
      }
      if (factor_ != 1.0f) {
        LaunchParams p;
        p.add(out_).add(stride_).add(int(width_)).add(factor_);
        dev_.launch(scale_, {M}, {256}, p, q);
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
    CUdeviceptr ptr;
    int64_t stride;
  };
  AllReduceKernel(CudaDevice &dev, const AllReduceDesc &d)
      : dev_(dev), out_(rowsPtr(d.out)), stride_(d.out.stride),
        width_(d.out.width), factor_(d.scale), comm_(d.comm), stats_(d.stats) {
    for (const Rows &in : d.inputs) {
      if (in.buffer == d.out.buffer && in.offset == d.out.offset &&
          in.stride == d.out.stride)
        inPlace_ = true;
      else
        inputs_.push_back({rowsPtr(in), in.stride});
    }
  }
  CudaDevice &dev_;
  CUfunction add_ = nullptr, scale_ = nullptr, zero_ = nullptr;
  CUdeviceptr out_;
  int64_t stride_, width_;
  float factor_;
  Communicator *comm_;
  const NcclComm *nccl_ = nullptr; // null: host staging (or one rank)
  CollectiveStats *stats_;
  std::vector<Input> inputs_;
  bool inPlace_ = false;
  mutable std::vector<float> host_; // the staging rows (sized at prepare)
};

} // namespace

Expected<std::unique_ptr<Kernel>> CudaDevice::prepareEmbed(const EmbedDesc &d) {
  return EmbedKernel::make(*this, d);
}

Expected<std::unique_ptr<Kernel>>
CudaDevice::prepareMatmul(const MatmulDesc &d) {
  return MatmulKernel::make(*this, d);
}

Expected<std::unique_ptr<Kernel>>
CudaDevice::prepareAttention(const AttentionDesc &d) {
  return AttentionKernel::make(*this, d);
}

Expected<std::unique_ptr<Kernel>> CudaDevice::prepareMoe(const MoeDesc &d) {
  return makeMoeKernel(*this, d);
}

Expected<std::unique_ptr<Kernel>>
CudaDevice::prepareDispatch(const DispatchDesc &d) {
  return makeDispatchKernel(*this, d);
}

Expected<std::unique_ptr<Kernel>>
CudaDevice::prepareCopyRow(const CopyRowDesc &d) {
  return std::unique_ptr<Kernel>(new CopyRowKernel(d));
}

Expected<std::unique_ptr<Kernel>>
CudaDevice::prepareAllReduce(const AllReduceDesc &d) {
  return AllReduceKernel::make(*this, d);
}

} // namespace fm::hal::cuda
