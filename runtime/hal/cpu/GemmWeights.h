// Packed low-bit weights repacked for prefill's GEMM (kernels/qgemm.h), once
// per loaded model: the CPU device's copy in GemmLayout::Panel16, shared by
// every session and program that multiplies more than one row by the weight.
#pragma once

#include "base/HostMemory.h"
#include "hal/Device.h"
#include "hal/cpu/Linear.h"
#include "kernels/qformat.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::hal {

/// The kernels' view of a weight (host memory: the CPU's buffers).
rt::WeightRef weightRef(const WeightDesc &w, kernels::QActivations act);

/// The Panel16 copy fmc wrote into the artifact beside packed weight w
/// (WeightDesc::beside, "panel16"), which a matmul of several rows reads
/// instead of making one; null when w has none, or when the copy does not
/// fit w, and then `problem` says why, naming the weight.
const uint8_t *besidePanel16(const WeightDesc &w, std::string &problem);

/// One kernel call of a matmul over several weights.
struct MatmulGroup {
  rt::WeightRef w;
  int64_t rows = 0, col0 = 0;    // y's columns [col0, col0 + rows)
  const uint8_t *copy = nullptr; // the artifact's Panel16 copy of its rows
};

/// A matmul's weights as kernel calls: weights that lie back to back in
/// one layout (the parts of a fused projection, written so by the compiler)
/// are one [rows][k] matrix, one call. Their copies in the artifact
/// (besidePanel16) continue each other the same way when every part but
/// the last fills its panels; where they do not, the parts are calls of
/// their own. `problem` as besidePanel16's.
std::vector<MatmulGroup> matmulGroups(const std::vector<WeightDesc> &weights,
                                      kernels::QActivations act,
                                      std::string &problem);

/// The Panel16 copies of one device's weights. The artifact's shared bytes
/// stay as they are (decode's matvec reads rows); the copy costs as many
/// bytes again (the same bits per weight) and is made the first time a
/// kernel for more than one row asks for it.
class GemmWeights {
public:
  /// The Panel16 copy of N rows of K inputs packed in format f at `packed`
  /// (which outlives this object), repacked on the first call with these
  /// arguments, split by panels over `pool` (the session's threads; null:
  /// the calling thread); null when the weight cannot be repacked
  /// (gemmLayoutProblem) or the memory is not available (the caller then
  /// keeps the row kernel).
  std::shared_ptr<const rt::HostBlock> panel16(const uint8_t *packed,
                                               kernels::QuantFormat f,
                                               int64_t N, int64_t K,
                                               rt::ThreadPool *pool);

  /// Bytes held by the copies.
  uint64_t bytes() const;
  /// Wall seconds spent repacking, over every copy made.
  double repackSeconds() const;

private:
  using Key = std::tuple<const uint8_t *, int, int, int, int64_t, int64_t>;
  mutable std::mutex mutex_;
  std::map<Key, std::shared_ptr<const rt::HostBlock>> copies_;
  uint64_t bytes_ = 0;
  double repackSeconds_ = 0.0;
};

} // namespace fm::hal
