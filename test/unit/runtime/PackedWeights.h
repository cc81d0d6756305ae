// Test support for the CPU matmul kernel's tests: two packed weights of one
// format placed in a weight buffer N0 rows, a gap of bytes, then N1 rows (a
// gap of 0: adjacent, so the kernel fuses them into one call).
#pragma once

#include "hal/Device.h"
#include "kernels/qformat.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace fm::test {

/// The bytes of `rows` ([N0 + N1] packed rows of K inputs in f) with `gap`
/// bytes between row N0 - 1 and row N0.
inline std::vector<uint8_t> splitPackedRows(const std::vector<uint8_t> &rows,
                                            kernels::QuantFormat f, int64_t K,
                                            int64_t N0, size_t gap) {
  const size_t split = N0 * kernels::packedRowBytes(f, K);
  std::vector<uint8_t> out(rows.size() + gap);
  std::memcpy(out.data(), rows.data(), split);
  std::memcpy(out.data() + split + gap, rows.data() + split,
              rows.size() - split);
  return out;
}

/// Appends the two weights of splitPackedRows's bytes in `buffer` to d.
inline void addSplitWeights(hal::MatmulDesc &d, hal::Buffer *buffer,
                            kernels::QuantFormat f, int64_t K, int64_t N0,
                            int64_t N1, size_t gap) {
  const size_t rowBytes = kernels::packedRowBytes(f, K);
  for (int i = 0; i < 2; ++i) {
    hal::WeightDesc w;
    w.buffer = buffer;
    w.offset = i == 0 ? 0 : N0 * rowBytes + gap;
    w.bytes = (i == 0 ? N0 : N1) * rowBytes;
    w.kind = hal::WeightKind::Quant;
    w.format = f;
    w.shape = {i == 0 ? N0 : N1, K};
    d.weights.push_back(w);
  }
}

} // namespace fm::test
