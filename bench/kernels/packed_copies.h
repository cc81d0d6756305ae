// Copies of one random packed low-bit weight for the cold matvec benchmarks
// (fm-qmatvec-planes, fm-matvec-layouts): enough of them that cycling
// through them reads from DRAM (coldBytes), each 64-byte aligned, with
// random quants and 0.01 scales; and the median of a sample.
#pragma once

#include "cold_bytes.h"
#include "kernels/qformat.h"
#include "kernels/quantize.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace fm::bench {

using Bytes = std::unique_ptr<uint8_t, decltype(&std::free)>;

inline Bytes alignedBytes(int64_t n) {
  return Bytes(
      static_cast<uint8_t *>(std::aligned_alloc(64, (n + 63) / 64 * 64)),
      &std::free);
}

/// ceil(coldBytes() / bytes) + 1 copies of N random rows of K inputs in f
/// (qformat.h's row layout).
inline std::vector<Bytes> coldPackedCopies(kernels::QuantFormat f, int64_t N,
                                           int64_t K, std::mt19937 &rng) {
  const int64_t rowBytes = static_cast<int64_t>(kernels::packedRowBytes(f, K));
  const int64_t quants = kernels::quantBytes(f, K);
  const int64_t bytes = N * rowBytes;
  const int64_t copies = coldBytes() / bytes + 1;
  const uint16_t h = kernels::floatToHalf(0.01f);
  std::vector<Bytes> w;
  for (int64_t c = 0; c < copies; ++c) {
    w.push_back(alignedBytes(bytes));
    uint8_t *p = w.back().get();
    for (int64_t n = 0; n < N; ++n) {
      uint8_t *row = p + n * rowBytes;
      for (int64_t i = 0; i < quants; ++i)
        row[i] = static_cast<uint8_t>(rng());
      for (int64_t i = quants; i + 1 < rowBytes; i += 2)
        std::memcpy(row + i, &h, 2);
    }
  }
  return w;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace fm::bench
