// Packed low-bit weights repacked for prefill's GEMM (kernels/qgemm.h), once
// per loaded model: the CPU device's copy in GemmLayout::Panel16, shared by
// every session and program that multiplies more than one row by the weight.
#pragma once

#include "base/HostMemory.h"
#include "kernels/qformat.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::hal {

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
