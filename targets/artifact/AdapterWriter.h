// The .fmba adapter writer (runtime/schema/fmba.fbs): a PEFT adapter read
// against its base → A and Bᵀ of every projection, f16 or packed 8-bit
// with the runtime's own quantizer, bound to the base's source digest and
// architecture, digested, written atomically.
#pragma once

#include "fm/format.h"
#include "import/weights/PeftAdapter.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace fm::writer {

/// The base an adapter is compiled for (from its .fmb).
struct AdapterBaseInfo {
  std::string family, modelName;
  uint32_t vocabSize = 0, hiddenSize = 0, numLayers = 0;
  format::Digest sourceDigest{};
};

struct AdapterWriteOptions {
  /// Store A and Bᵀ as 8-bit balanced rows in groups of 32 (a matrix whose
  /// row length is no multiple of 32 stays f16); else f16.
  bool w8 = false;
};

struct AdapterSummary {
  uint64_t fileBytes = 0, dataBytes = 0, parameters = 0;
  unsigned loras = 0, q8Matrices = 0, f16Matrices = 0;
  int64_t minRank = 0, maxRank = 0;
  double minScale = 0, maxScale = 0;
  /// Over the q8 matrices: Σ squared error and Σ squared values.
  double sqError = 0, sqSum = 0;
  format::Digest digest{};
};

llvm::Expected<AdapterSummary> writeAdapter(const import::PeftAdapter &adapter,
                                            const AdapterBaseInfo &base,
                                            const AdapterWriteOptions &options,
                                            const std::string &path);

} // namespace fm::writer
