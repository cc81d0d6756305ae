// The data section of an artifact: which parameters it holds, where, and in
// which format (planWeights, from the fm.param attributes that
// fm-quantize-weights set), and the stream that reads each one through a
// WeightSource, converts or packs it, digests it and hands the bytes on, one
// tensor at a time (a 3B model never sits in memory). After the shared
// bytes come the CPU's GEMM copies (WeightVariant "cpu" / "panel16") of the
// packed weights prefill multiplies as a GEMM, repacked from the bytes just
// written, so that the runtime need not repack them when it loads.
#pragma once

#include "fm/format.h"
#include "import/weights/WeightSource.h"
#include "kernels/qformat.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fm::writer {

/// One parameter as the artifact stores it.
struct StoredWeight {
  enum class Kind : uint8_t { F32, F16, Quant };
  std::string key;
  std::vector<int64_t> shape;
  Kind kind = Kind::F32;
  kernels::QuantFormat format{8, 32, kernels::QuantGrid::Balanced}; // Quant
  uint64_t offset = 0; // in the data section, a multiple of 64
  uint64_t bytes = 0;
  /// Kind::Quant: the CPU's Panel16 copy (kernels/qgemm_layout.h) after
  /// the shared bytes of every weight; gemmBytes 0: none.
  uint64_t gemmOffset = 0, gemmBytes = 0;
};

/// The data section: every parameter the module uses, once, in order of
/// first use (so stacked projections lie back to back), then the GEMM
/// copies in the same order (so theirs do too).
struct WeightPlan {
  std::vector<StoredWeight> weights;
  llvm::StringMap<uint32_t> index; // key → position in weights
  uint64_t dataSize = 0;           // bytes, a multiple of 64
  uint64_t parameters = 0;         // elements
  uint64_t gemmBytes = 0;          // of the GEMM copies, padding included
  unsigned gemmCopies = 0;
};

struct WeightPlanOptions {
  /// Give a Panel16 copy to every packed weight that an fmk.matmul of more
  /// than one row multiplies (prefill, the image encoder; not the LM head of
  /// a program returning every row's logits) and that the layout holds
  /// (kernels::gemmLayoutProblem): the artifact runs on the CPU target.
  bool cpuGemmCopies = false;
};

WeightPlan planWeights(mlir::ModuleOp module,
                       const WeightPlanOptions &options = {});

/// The quantization error of one packed tensor.
struct QuantErrorEntry {
  std::string name;
  unsigned bits = 0;
  double relativeRms = 0, sqError = 0, sqSum = 0;
  uint64_t elements = 0, bytes = 0;
};

struct StreamResult {
  format::Digest digest{}; // of the data section
  /// Of the source tensors as `source` served them (fmb.fbs:
  /// source_digest), independent of how they were stored.
  format::Digest sourceDigest{};
  std::vector<QuantErrorEntry> quantErrors; // per packed tensor, in order
};

/// Reads `size` bytes at `offset` of the data section already given to the
/// sink (the GEMM copies are repacked from the packed bytes written).
using DataReader = std::function<llvm::Error(uint64_t offset, void *data,
                                             size_t size)>;

/// Streams the plan's weights from `source` to `sink` (exactly
/// plan.dataSize bytes, padding included), converting each as its
/// StoredWeight says; the GEMM copies need `readBack` (may be empty
/// without them). `progress` (optional) gets "writing weights N%" lines
/// for large models.
llvm::Expected<StreamResult>
streamWeights(const WeightPlan &plan, const import::WeightSource &source,
              const std::function<llvm::Error(const void *, size_t)> &sink,
              const std::function<void(llvm::StringRef)> &progress = {},
              const DataReader &readBack = {});

} // namespace fm::writer
