// Internal: what a session's LoRA adapters add to the base weights, as the
// executor hands it to the device (hal::LoraTerm), and the adapter's own
// state behind fm::Adapter (fm/adapter.h).
#pragma once

#include "Executor.h"
#include "fm/adapter.h"
#include "hal/Device.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace fm::rt {

/// One adapter's update of one base weight: y += scale · B·(A·x).
struct LoraPiece {
  hal::WeightDesc a, bt; // A [rank][in], Bᵀ [rank][out], on the model's device
  int64_t rank = 0;
  float scale = 1.0f; // the adapter's s times the session's scale
};

/// Per base weight index: the pieces of a session's adapters, in the order
/// they were attached (empty: the base alone).
using LoraTable = std::vector<std::vector<LoraPiece>>;

/// The device-side state of a loaded model (for binding adapters to it).
const LoadedModel &loadedModel(const Model &model);

} // namespace fm::rt

namespace fm {

struct Adapter::Impl {
  std::shared_ptr<Model> model;
  std::unique_ptr<AdapterFile> file;
  std::unique_ptr<hal::Buffer> data; // the data section, on the model's device
  /// Every lora: the base weight it updates and its piece (scale: the
  /// adapter's own s).
  std::vector<std::pair<uint32_t, rt::LoraPiece>> pieces;
  int64_t maxRank = 0;
};

} // namespace fm
