// AVX-512 VNNI qgemm (built with -mavx512f -mavx512bw -mavx512vl
// -mavx512vnni): per 64-input block the two panels of a work unit are
// unpacked once into tile rows (16 outputs x 4 inputs per zmm), then a
// micro-tile of 8 prepared x rows x 32 outputs runs one vpdpbusd (u8
// quants x s8 activations broadcast) per tile row, row and panel, with the
// 16 int32 accumulators in registers; each unit's dots are then folded into
// f32 outputs (rangeBitsU, qgemm_x86.h). A lone x row takes the Panel16
// matvec (qgemm_matvec_x86.h).
#include "kernels/isa.h"
#include "kernels/qgemm_matvec_x86.h"
#include "kernels/qgemm_prepare.h"

#include <atomic>
#include <cstring>

namespace fm::kernels::gdetail {
namespace {

struct Tag {};
using K = X86<Tag>;

// Prepared rows per micro-tile: 16 accumulators + 2 weight rows + the
// broadcast.
constexpr int kRows = 8;

// One micro-tile: kRows prepared rows from `x` (ldx apart) against `Tiles`
// tile rows of both panels' unpacked rows `b0`, `b1`, from column k0 of x.
template <int Tiles>
FM_GEMM_INLINE void microTile(const int8_t *x, int64_t ldx,
                              const uint8_t *b0, const uint8_t *b1,
                              __m512i (&acc)[kRows][2]) {
  for (int r = 0; r < kRows; ++r)
    acc[r][0] = acc[r][1] = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (int t = 0; t < Tiles; ++t) {
    const __m512i w0 = _mm512_loadu_si512(b0 + 64 * t);
    const __m512i w1 = _mm512_loadu_si512(b1 + 64 * t);
    for (int r = 0; r < kRows; ++r) {
      int32_t quad;
      std::memcpy(&quad, x + r * ldx + 4 * t, 4);
      const __m512i xb = _mm512_set1_epi32(quad);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], w0, xb);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], w1, xb);
    }
  }
}

// Per unit the int32 dots of a row and a panel are folded into its 16 f32
// outputs. In general that is acc += s dx dot (then + mo xs at a group's
// end); where a unit is a whole group of a balanced grid (group 32 or 64:
// the defaults), the grid offset joins the first product instead,
// acc += s (dx dot - c xs): one multiply fewer per fold. The folds share
// the multiply pipes with vpdpbusd; on a Zen 4 (fm-gemm-yardstick, the 2.9B
// llama's matrices, M 64, 1 thread) this took w4 g32 from 53% to 64% of
// oneDNN with int8 x and from 31% to 40% with int8x2, w2 g64 from 70% to
// 79% and 38% to 45%. The tile loop is unrolled by 2 only: fully unrolled
// it ran at 0.55-0.6x the speed of this, and left to the compiler (which
// unrolls U = 32's 8 tiles fully) at 0.88x at w4 g32.
template <int D, int Bits, int U, bool Centred>
void rangeBitsU(const Params &p, int64_t m0, int64_t m1, int64_t p0,
                int64_t p1) {
  const QuantFormat f = p.f;
  const Act &a = p.act;
  constexpr int halves = kPanelBlockInputs / U, tilesPerHalf = U / 4;
  const float negCentre = -balancedCenter(f.bits);
  const int64_t rows = m1 - m0;
  // Prepared rows of the unit, in whole micro-tiles (the buffer holds
  // whole 16-row tiles; rows past the unit are computed and dropped).
  const int64_t prepRows = (rows * D + kRows - 1) / kRows * kRows;
  alignas(64) uint8_t bb[2][kTileRows * 64];
  alignas(64) float acc[kMaxUnitRows * 32];
  for (int64_t pi = p0; pi < p1; pi += 2) {
    // A lone last panel is computed twice and stored once.
    const int panels = p1 - pi >= 2 ? 2 : 1;
    const uint8_t *panel[2] = {p.w + pi * p.geo.panelBytes,
                               p.w + (pi + panels - 1) * p.geo.panelBytes};
    std::memset(acc, 0, sizeof(float) * 32 * rows);
    for (int64_t b = 0; b < p.geo.blocks; ++b) {
      const uint8_t *rowsOf[2];
      for (int j = 0; j < 2; ++j) {
        const uint8_t *block = panel[j] + b * p.geo.blockBytes;
        if constexpr (Bits == 8) {
          rowsOf[j] = block; // its tile rows as they are
        } else {
          K::unpack<Bits>(block, bb[j]);
          rowsOf[j] = bb[j];
        }
      }
      for (int h = 0; h < halves; ++h) {
        const int64_t u = b * halves + h, k0 = u * U, g = k0 / f.group;
        const bool groupEnd = Centred || (k0 + U) % f.group == 0;
        __m512 s[2], mo[2];
        for (int j = 0; j < 2; ++j)
          K::scales(panel[j], p.geo, f, g, &s[j], &mo[j]);
        const uint8_t *t0 = rowsOf[0] + 64 * tilesPerHalf * h;
        const uint8_t *t1 = rowsOf[1] + 64 * tilesPerHalf * h;
        for (int64_t r0 = 0; r0 < prepRows; r0 += kRows) {
          __m512i dots[kRows][2];
          microTile<tilesPerHalf>(a.xq + (m0 * D + r0) * a.ldx + k0, a.ldx,
                                  t0, t1, dots);
          for (int i = 0; i < kRows / D; ++i) {
            const int64_t m = m0 + r0 / D + i;
            if (m >= m1)
              break;
            const float dx = a.dx[m * a.ldd + u];
            const float xs = groupEnd ? a.xs[m * a.lds + g] : 0.0f;
            for (int j = 0; j < 2; ++j) {
              const __m512i dj[2] = {dots[D * i][j], dots[D * i + D - 1][j]};
              const __m512i dot = K::combine<D>(dj, a.hiShift);
              float *out = acc + (m - m0) * 32 + 16 * j;
              if constexpr (Centred)
                K::foldCentred(out, dot, dx, s[j], negCentre * xs);
              else
                K::fold(out, dot, dx, s[j], groupEnd, mo[j], xs);
            }
          }
        }
      }
    }
    K::store(p, acc, m0, m1, pi, panels);
  }
}

template <int D, int Bits>
void rangeBits(const Params &p, int64_t m0, int64_t m1, int64_t p0,
               int64_t p1) {
  if (m1 - m0 == 1)
    return avx512VnniMatvec(p, m0, p0, p1);
  withUnit(p, [&](auto unit, auto centred) {
    rangeBitsU<D, Bits, decltype(unit)::value, decltype(centred)::value>(
        p, m0, m1, p0, p1);
  });
}

template <int D>
void range(const Params &p, int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
  switch (p.f.bits) {
  case 2:
    return rangeBits<D, 2>(p, m0, m1, p0, p1);
  case 4:
    return rangeBits<D, 4>(p, m0, m1, p0, p1);
  default:
    return rangeBits<D, 8>(p, m0, m1, p0, p1);
  }
}

} // namespace

std::atomic<bool> gMatvecGfni{true};

void avx512VnniMatvec(const Params &p, int64_t m, int64_t p0, int64_t p1) {
  if (cpuHasGfni() && gMatvecGfni.load(std::memory_order_relaxed))
    return avx512VnniGfniMatvec(p, m, p0, p1);
  PanelMatvec<Tag, false>::run(p, m, p0, p1);
}

const GemmIsa kGemmAvx512Vnni[2] = {
    {&Prepare<Tag>::rows<2>, &range<2>, nullptr, nullptr},
    {&Prepare<Tag>::rows<1>, &range<1>, nullptr, nullptr}};

} // namespace fm::kernels::gdetail
