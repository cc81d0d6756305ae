// repackForGemm: qformat.h rows -> the Panel16 layout (qgemm_layout.h), and
// the checks of what can be repacked. Runs once per weight (the CPU device
// repacks at load: hal/cpu/GemmWeights.h).
#include "kernels/qgemm.h"

#include <cstring>

namespace fm::kernels {
namespace {

// One panel, written for the auto-vectorizer (the bit width a constant):
// per 64-input block, each row's quants are unpacked into bytes, the 16 x 16
// words of 4 inputs transposed into tile rows, and the tile rows OR-ed into
// their bit planes; the scale pass copies 16 halves per group.
template <int Bits>
void repackPanel(const uint8_t *rows0, size_t rowBytes, int rows,
                 QuantFormat f, int64_t K, const PanelGeometry &g,
                 uint8_t *panel) {
  constexpr int V = 2 * Bits, planes = 8 / Bits, mask = (1 << Bits) - 1;
  const int U = quantUnitInputs(f), unitBytes = U * Bits / 8;
  alignas(64) uint8_t q[kPanelRows][kPanelBlockInputs];
  alignas(64) uint8_t tile[kTileRows][64];
  std::memset(q, 0, sizeof(q)); // rows past `rows` stay 0
  for (int64_t i = 0; i < g.blocks; ++i) {
    for (int r = 0; r < rows; ++r) {
      const uint8_t *row = rows0 + r * rowBytes;
      for (int base = 0; base < kPanelBlockInputs; base += U) {
        const int64_t k0 = i * kPanelBlockInputs + base;
        uint8_t *out = q[r] + base;
        if (k0 >= K) { // group 32 pads K by one group
          std::memset(out, 0, static_cast<size_t>(U));
          continue;
        }
        const uint8_t *unit = row + (k0 / U) * unitBytes;
        for (int j = 0; j < planes; ++j)
          for (int b = 0; b < unitBytes; ++b)
            out[j * unitBytes + b] =
                static_cast<uint8_t>((unit[b] >> (Bits * j)) & mask);
      }
    }
    // Tile row t, byte 4r + j = (row r, input 4t + j).
    for (int t = 0; t < kTileRows; ++t)
      for (int r = 0; r < kPanelRows; ++r)
        std::memcpy(&tile[t][4 * r], &q[r][4 * t], 4);
    // Vector v holds tile rows v + V j in bits [Bits j, Bits j + Bits).
    uint8_t *block = panel + i * g.blockBytes;
    for (int v = 0; v < V; ++v)
      for (int b = 0; b < 64; ++b) {
        unsigned acc = 0;
        for (int j = 0; j < planes; ++j)
          acc |= unsigned(tile[v + V * j][b]) << (Bits * j);
        block[v * 64 + b] = static_cast<uint8_t>(acc);
      }
  }
  // Scales (and minimums): group gi's 16 halves; padded rows and groups
  // stay 0.
  const int64_t groups = quantGroups(f, K);
  const bool affine = f.grid == QuantGrid::Affine;
  std::memset(panel + g.scaleOffset, 0,
              static_cast<size_t>(g.panelBytes - g.scaleOffset));
  for (int r = 0; r < rows; ++r) {
    const uint8_t *src = rows0 + r * rowBytes + quantBytes(f, K);
    for (int64_t gi = 0; gi < groups; ++gi) {
      std::memcpy(panel + g.scaleOffset + gi * 32 + 2 * r, src + 2 * gi, 2);
      if (affine)
        std::memcpy(panel + g.minOffset + gi * 32 + 2 * r,
                    src + 2 * (groups + gi), 2);
    }
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
  for (int64_t p = panelBegin; p < panelEnd && p < g.panels; ++p) {
    const int rows =
        static_cast<int>(N - p * kPanelRows < kPanelRows ? N - p * kPanelRows
                                                         : kPanelRows);
    const uint8_t *src = packed + p * kPanelRows * rowBytes;
    uint8_t *panel = out + p * g.panelBytes;
    switch (f.bits) {
    case 2:
      repackPanel<2>(src, rowBytes, rows, f, K, g, panel);
      break;
    case 4:
      repackPanel<4>(src, rowBytes, rows, f, K, g, panel);
      break;
    default:
      repackPanel<8>(src, rowBytes, rows, f, K, g, panel);
      break;
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
