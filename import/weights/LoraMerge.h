// LoraMerge: a WeightSource that serves a checkpoint's tensors with LoRA
// adapters merged into them, W' = W + Σ scale · s · B·A in f32, for
// `fmc compile --merge-adapter` (the weight streamer then packs W' as it
// would pack W: merged before quantization).
#pragma once

#include "import/weights/PeftAdapter.h"
#include "import/weights/WeightSource.h"

#include "llvm/ADT/StringMap.h"

#include <string>
#include <utility>
#include <vector>

namespace fm::import {

class MergedWeightSource final : public WeightSource {
public:
  /// `base` and the adapters must outlive the source. Each adapter comes
  /// with the scale that multiplies its s (1: as trained).
  MergedWeightSource(const WeightSource &base,
                     std::vector<std::pair<const PeftAdapter *, double>> adapters);

  /// A merged weight is an F32 tensor of the base's shape.
  const TensorInfo *lookup(llvm::StringRef name) const override;
  /// A merged weight's bytes are computed here and stay valid until data()
  /// of another merged weight (the streamer reads one tensor at a time).
  llvm::ArrayRef<uint8_t> data(const TensorInfo &t) const override;
  llvm::StringRef description() const override { return base_.description(); }

  /// Weights an adapter updates.
  size_t mergedWeights() const { return merged_.size(); }

private:
  struct Merged {
    TensorInfo info; // F32, the base's shape and name
    const TensorInfo *base = nullptr;
    std::vector<std::pair<const LoraWeights *, double>> loras; // and scale
  };
  const WeightSource &base_;
  llvm::StringMap<Merged> merged_;
  mutable std::string current_; // the merged weight in values_
  mutable std::vector<float> values_;
};

} // namespace fm::import
