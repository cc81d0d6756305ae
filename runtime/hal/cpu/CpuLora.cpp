// The LoRA side path of a CPU matmul (CpuLora.h). Every pointer is resolved
// when the kernel is prepared; a run is the base kernel, one down product
// into queue scratch (after the base kernel's own scratch) and one up
// product into y, each one parallelFor over all terms.
#include "hal/cpu/CpuLora.h"

#include "hal/cpu/CpuDevice.h"
#include "kernels/lora.h"

#include <algorithm>
#include <functional>
#include <vector>

namespace fm::hal {
namespace {

uint64_t alignUp(uint64_t bytes) { return (bytes + 63) & ~uint64_t(63); }

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

class LoraMatmulKernel final : public Kernel {
public:
  LoraMatmulKernel(const MatmulDesc &d, std::unique_ptr<Kernel> base)
      : base_(std::move(base)),
        x_(reinterpret_cast<const float *>(d.x.buffer->host() + d.x.offset)),
        xStride_(d.x.stride), yStride_(d.y.stride) {
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
    // The ups in the matmul's order: terms of one weight (one per adapter)
    // are consecutive and write the same columns, as loraUp requires.
    float *y = reinterpret_cast<float *>(d.y.buffer->host() + d.y.offset);
    for (size_t i = 0; i < d.lora.size(); ++i)
      ups_.push_back({tCol[i], matrix(d.lora[i].bt), y + d.lora[i].col0,
                      d.lora[i].scale});
    tOffset_ = alignUp(base_->scratchBytes());
    scratch_ = tOffset_ + uint64_t(d.maxRows) * rank_ * sizeof(float);
  }

  uint64_t scratchBytes() const override { return scratch_; }
  Status beforeFirstRun() override { return base_->beforeFirstRun(); }

  Status run(Queue &queue, const Launch &l) const override {
    FM_RETURN_IF_ERROR(base_->run(queue, l));
    CpuQueue &q = static_cast<CpuQueue &>(queue);
    float *t = reinterpret_cast<float *>(q.scratch() + tOffset_);
    kernels::loraDown(x_, l.rows, xStride_, t, rank_, downs_.data(),
                      downs_.size(), q.pool());
    kernels::loraUp(t, l.rows, rank_, yStride_, ups_.data(), ups_.size(),
                    q.pool());
    return Status::ok();
  }

private:
  std::unique_ptr<Kernel> base_;
  const float *x_;
  int64_t xStride_, yStride_;
  std::vector<kernels::LoraDown> downs_;
  std::vector<kernels::LoraUp> ups_;
  int64_t rank_ = 0; // Σ rank: t's columns
  uint64_t tOffset_ = 0, scratch_ = 0;
};

} // namespace

std::unique_ptr<Kernel> makeLoraMatmul(const MatmulDesc &desc,
                                       std::unique_ptr<Kernel> base) {
  return std::unique_ptr<Kernel>(new LoraMatmulKernel(desc, std::move(base)));
}

} // namespace fm::hal
