// MergedWeightSource (LoraMerge.h): W + Σ scale·s·B·A, one weight at a time.
#include "import/weights/LoraMerge.h"

namespace fm::import {

MergedWeightSource::MergedWeightSource(
    const WeightSource &base,
    std::vector<std::pair<const PeftAdapter *, double>> adapters)
    : base_(base) {
  for (const auto &[adapter, scale] : adapters)
    for (const LoraWeights &l : adapter->loras) {
      const TensorInfo *t = base.lookup(l.weight);
      if (!t)
        continue; // the reader checked the adapter against the model
      Merged &m = merged_[l.weight];
      if (!m.base) {
        m.base = t;
        m.info = *t;
        m.info.dtype = DType::F32;
        m.info.nbytes = 4 * t->numElements();
      }
      m.loras.emplace_back(&l, scale);
    }
}

const TensorInfo *MergedWeightSource::lookup(llvm::StringRef name) const {
  auto it = merged_.find(name);
  return it == merged_.end() ? base_.lookup(name) : &it->second.info;
}

llvm::ArrayRef<uint8_t> MergedWeightSource::data(const TensorInfo &t) const {
  auto it = merged_.find(t.name);
  if (it == merged_.end() || &it->second.info != &t)
    return base_.data(t);
  const Merged &m = it->second;
  if (current_ != t.name) {
    readF32(base_, *m.base, values_);
    const int64_t out = m.base->shape[0], in = m.base->shape[1];
    for (const auto &[l, scale] : m.loras) {
      // Row o of W gains Σ_i (scale · s · B[o][i]) · A[i][:].
      const float s = float(scale * l->scale);
      for (int64_t o = 0; o < out; ++o) {
        float *row = values_.data() + o * in;
        for (int64_t i = 0; i < l->rank; ++i) {
          const float c = s * l->b[o * l->rank + i];
          const float *a = l->a.data() + i * in;
          for (int64_t k = 0; k < in; ++k)
            row[k] += c * a[k];
        }
      }
    }
    current_ = t.name;
  }
  return {reinterpret_cast<const uint8_t *>(values_.data()),
          values_.size() * sizeof(float)};
}

} // namespace fm::import
