// repackForGemm: qformat.h rows -> the Panel16 layout (qgemm_layout.h), and
// the checks of what can be repacked. Runs once per weight (the CPU device
// repacks at load: hal/cpu/GemmWeights.h).
#include "kernels/qgemm.h"

#include <cstring>

namespace fm::kernels {
namespace {

// The 64 quants of inputs [64 i, 64 i + 64) of a qformat.h row (inputs past
// K are 0).
void rowBlockQuants(const uint8_t *row, QuantFormat f, int64_t K, int64_t i,
                    uint8_t *q) {
  const int U = quantUnitInputs(f), unitBytes = U * f.bits / 8;
  const int planes = 8 / f.bits, mask = (1 << f.bits) - 1;
  for (int base = 0; base < kPanelBlockInputs; base += U) {
    const int64_t k0 = i * kPanelBlockInputs + base;
    if (k0 >= K) {
      std::memset(q + base, 0, static_cast<size_t>(U));
      continue;
    }
    const uint8_t *unit = row + (k0 / U) * unitBytes;
    for (int j = 0; j < planes; ++j)
      for (int b = 0; b < unitBytes; ++b)
        q[base + j * unitBytes + b] =
            static_cast<uint8_t>((unit[b] >> (f.bits * j)) & mask);
  }
}

} // namespace

std::string gemmLayoutProblem(GemmLayout layout, QuantFormat f, int64_t N,
                              int64_t K) {
  if (layout != GemmLayout::Panel16)
    return "unknown GEMM layout " + std::to_string(static_cast<int>(layout));
  if (!isValidQuantFormat(f))
    return "invalid quant format (bits " + std::to_string(f.bits) +
           ", group " + std::to_string(f.group) + ")";
  if (N <= 0 || K <= 0)
    return "empty weight (" + std::to_string(N) + " x " + std::to_string(K) +
           ")";
  if (K % f.group != 0)
    return "K = " + std::to_string(K) + " is not a multiple of the group " +
           std::to_string(f.group);
  return "";
}

size_t gemmPackedBytes(GemmLayout, QuantFormat f, int64_t N, int64_t K) {
  const PanelGeometry g = panelGeometry(f, N, K);
  return static_cast<size_t>(g.panels * g.panelBytes);
}

void repackForGemmPanels(GemmLayout layout, QuantFormat f, int64_t N,
                         int64_t K, const uint8_t *packed, uint8_t *out,
                         int64_t panelBegin, int64_t panelEnd) {
  if (!gemmLayoutProblem(layout, f, N, K).empty())
    return;
  const PanelGeometry g = panelGeometry(f, N, K);
  const size_t rowBytes = packedRowBytes(f, K);
  const int64_t groups = quantGroups(f, K);
  const int V = 2 * f.bits;
  const bool affine = f.grid == QuantGrid::Affine;
  uint8_t q[kPanelRows][kPanelBlockInputs];
  for (int64_t p = panelBegin; p < panelEnd && p < g.panels; ++p) {
    uint8_t *panel = out + p * g.panelBytes;
    std::memset(panel, 0, static_cast<size_t>(g.panelBytes));
    const int rows =
        static_cast<int>(N - p * kPanelRows < kPanelRows ? N - p * kPanelRows
                                                         : kPanelRows);
    for (int64_t i = 0; i < g.blocks; ++i) {
      std::memset(q, 0, sizeof(q));
      for (int r = 0; r < rows; ++r)
        rowBlockQuants(packed + (p * kPanelRows + r) * rowBytes, f, K, i, q[r]);
      // Tile row t, byte 4r + j = (row r, input 4t + j), in plane t / V of
      // vector t % V.
      uint8_t *block = panel + i * g.blockBytes;
      for (int t = 0; t < kTileRows; ++t) {
        uint8_t *vec = block + (t % V) * 64;
        const int shift = f.bits * (t / V);
        for (int r = 0; r < kPanelRows; ++r)
          for (int j = 0; j < 4; ++j)
            vec[4 * r + j] =
                static_cast<uint8_t>(vec[4 * r + j] | (q[r][4 * t + j] << shift));
      }
    }
    // Scales (and minimums): group gi's 16 halves; padded rows and groups
    // stay 0.
    for (int r = 0; r < rows; ++r) {
      const uint8_t *src =
          packed + (p * kPanelRows + r) * rowBytes + quantBytes(f, K);
      for (int64_t gi = 0; gi < groups; ++gi) {
        std::memcpy(panel + g.scaleOffset + gi * 32 + 2 * r, src + 2 * gi, 2);
        if (affine)
          std::memcpy(panel + g.minOffset + gi * 32 + 2 * r,
                      src + 2 * (groups + gi), 2);
      }
    }
  }
}

std::vector<uint8_t> repackForGemm(GemmLayout layout, QuantFormat f,
                                   int64_t N, int64_t K,
                                   const uint8_t *packed) {
  if (!gemmLayoutProblem(layout, f, N, K).empty())
    return {};
  const PanelGeometry g = panelGeometry(f, N, K);
  std::vector<uint8_t> out(static_cast<size_t>(g.panels * g.panelBytes));
  repackForGemmPanels(layout, f, N, K, packed, out.data(), 0, g.panels);
  return out;
}

} // namespace fm::kernels
