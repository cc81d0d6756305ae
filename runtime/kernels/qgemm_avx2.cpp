// AVX2 qgemm (built with -mavx2 -mfma -mf16c): the two panels of a work
// unit are unpacked per 64-input block into tile rows (2 ymm of 8 outputs x
// 4 inputs each); a micro-tile of 4 prepared x rows x 16 outputs runs
// vpmaddubsw (u8 quants x s8 activations broadcast, pairs in int16) and
// vpmaddwd per tile row. vpmaddubsw saturates int16, so 8-bit quants are
// made signed (q - 128) and their sign moved onto x (|q - 128| <= 128).
#include "kernels/qgemm_prepare.h"

#include <immintrin.h>

#include <cstring>

namespace fm::kernels::gdetail {
namespace {

struct Tag {};

constexpr int kRows = 4;

template <int Bits> void unpack(const uint8_t *block, uint8_t *rows) {
  constexpr int V = 2 * Bits, P = 8 / Bits;
  const __m256i mask = _mm256_set1_epi8(static_cast<char>((1 << Bits) - 1));
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int v = 0; v < V; ++v)
    for (int half = 0; half < 2; ++half) {
      const __m256i vec = _mm256_loadu_si256(
          reinterpret_cast<const __m256i *>(block + 64 * v + 32 * half));
      for (int j = 0; j < P; ++j) {
        __m256i t;
        if constexpr (Bits == 8)
          t = _mm256_xor_si256(vec, flip); // q - 128 as int8
        else
          t = _mm256_and_si256(j ? _mm256_srli_epi16(vec, Bits * j) : vec,
                               mask);
        _mm256_store_si256(
            reinterpret_cast<__m256i *>(rows + 64 * (v + V * j) + 32 * half),
            t);
      }
    }
}

template <int Bits>
FM_GEMM_INLINE __m256i dot4(__m256i w, __m256i x, __m256i ones) {
  __m256i pairs;
  if constexpr (Bits == 8)
    pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  else
    pairs = _mm256_maddubs_epi16(w, x);
  return _mm256_madd_epi16(pairs, ones);
}

// kRows prepared rows x 16 outputs (2 ymm) of one panel's tile rows. The
// tile count is a constant where rangeBitsU calls it; the loop stays
// unrolled by 2 (fully unrolled measured slower, rangeBitsU).
template <int Bits>
FM_GEMM_INLINE void microTile(const int8_t *x, int64_t ldx, const uint8_t *b,
                              int tiles, __m256i (&acc)[kRows][2]) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int r = 0; r < kRows; ++r)
    acc[r][0] = acc[r][1] = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int t = 0; t < tiles; ++t) {
    const __m256i w0 =
        _mm256_load_si256(reinterpret_cast<const __m256i *>(b + 64 * t));
    const __m256i w1 =
        _mm256_load_si256(reinterpret_cast<const __m256i *>(b + 64 * t + 32));
    for (int r = 0; r < kRows; ++r) {
      int32_t quad;
      std::memcpy(&quad, x + r * ldx + 4 * t, 4);
      const __m256i xb = _mm256_set1_epi32(quad);
      acc[r][0] = _mm256_add_epi32(acc[r][0], dot4<Bits>(w0, xb, ones));
      acc[r][1] = _mm256_add_epi32(acc[r][1], dot4<Bits>(w1, xb, ones));
    }
  }
}

// The fold of a unit's dots into the f32 outputs is acc += s dx dot (then
// + mo xs at a group's end), or, where a unit is a whole group of a
// balanced grid, acc += s (dx dot + (o - c) xs): one multiply fewer (as on
// AVX-512 VNNI, qgemm_avx512.cpp). Measured on a Zen 4 through
// qgemmOn(Avx2) (fm-gemm-yardstick's avx2 column, w4 g32 int8x2, 1 thread):
// 18.9% -> 19.6% of oneDNN, with the tile loop unrolled by 2; unrolled
// fully (the compiler's choice once the tile count is a constant) 17.2%.
template <int D, int Bits, int U, bool Centred>
void rangeBitsU(const Params &p, int64_t m0, int64_t m1, int64_t p0,
                int64_t p1) {
  const QuantFormat f = p.f;
  const Act &a = p.act;
  constexpr int halves = kPanelBlockInputs / U, tilesPerHalf = U / 4;
  const int64_t rows = m1 - m0;
  const int64_t prepRows = (rows * D + kRows - 1) / kRows * kRows;
  const float offset = Bits == 8 ? 128.0f : 0.0f;
  const bool affine = f.grid == QuantGrid::Affine;
  const float c = balancedCenter(f.bits);
  const float offsetLessCentre = offset - c; // mo / s, balanced
  alignas(32) uint8_t bb[kTileRows * 64];
  alignas(32) float acc[kMaxUnitRows * 16];
  for (int64_t pi = p0; pi < p1; ++pi) {
    const uint8_t *panel = p.w + pi * p.geo.panelBytes;
    std::memset(acc, 0, sizeof(float) * 16 * rows);
    for (int64_t b = 0; b < p.geo.blocks; ++b) {
      unpack<Bits>(panel + b * p.geo.blockBytes, bb);
      for (int h = 0; h < halves; ++h) {
        const int64_t u = b * halves + h, k0 = u * U, g = k0 / f.group;
        const bool groupEnd = Centred || (k0 + U) % f.group == 0;
        __m256 s[2], mo[2];
        for (int i = 0; i < 2; ++i) {
          s[i] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(
              panel + p.geo.scaleOffset + g * 32 + 16 * i)));
          mo[i] = affine
                      ? _mm256_fmadd_ps(
                            s[i], _mm256_set1_ps(offset),
                            _mm256_cvtph_ps(_mm_loadu_si128(
                                reinterpret_cast<const __m128i *>(
                                    panel + p.geo.minOffset + g * 32 + 16 * i))))
                      : _mm256_mul_ps(s[i], _mm256_set1_ps(offset - c));
        }
        for (int64_t r0 = 0; r0 < prepRows; r0 += kRows) {
          __m256i dots[kRows][2];
          microTile<Bits>(a.xq + (m0 * D + r0) * a.ldx + k0, a.ldx,
                          bb + 64 * tilesPerHalf * h, tilesPerHalf, dots);
          for (int i = 0; i < kRows / D; ++i) {
            const int64_t m = m0 + r0 / D + i;
            if (m >= m1)
              break;
            const __m256 dx = _mm256_set1_ps(a.dx[m * a.ldd + u]);
            const float xs = groupEnd ? a.xs[m * a.lds + g] : 0.0f;
            for (int j = 0; j < 2; ++j) {
              __m256i d = dots[D * i][j];
              if constexpr (D == 2)
                d = _mm256_add_epi32(_mm256_slli_epi32(d, a.hiShift),
                                     dots[D * i + 1][j]);
              float *out = acc + (m - m0) * 16 + 8 * j;
              __m256 v;
              if constexpr (Centred) {
                const __m256 oxs = _mm256_set1_ps(offsetLessCentre * xs);
                v = _mm256_fmadd_ps(
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), dx, oxs), s[j],
                    _mm256_load_ps(out));
              } else {
                v = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(d), dx),
                                    s[j], _mm256_load_ps(out));
                if (groupEnd)
                  v = _mm256_fmadd_ps(mo[j], _mm256_set1_ps(xs), v);
              }
              _mm256_store_ps(out, v);
            }
          }
        }
      }
    }
    const int64_t n0 = pi * kPanelRows;
    const int64_t valid = p.N - n0 < kPanelRows ? p.N - n0 : kPanelRows;
    for (int64_t m = m0; m < m1; ++m)
      for (int64_t r = 0; r < valid; ++r) {
        float *out = p.y + m * p.ldy + n0 + r;
        const float v = acc[(m - m0) * 16 + r];
        *out = p.accumulate ? *out + v : v;
      }
  }
}

template <int D, int Bits>
void rangeBits(const Params &p, int64_t m0, int64_t m1, int64_t p0,
               int64_t p1) {
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

const GemmIsa kGemmAvx2[2] = {
    {&Prepare<Tag>::rows<2>, &range<2>, nullptr, nullptr},
    {&Prepare<Tag>::rows<1>, &range<1>, nullptr, nullptr}};

} // namespace fm::kernels::gdetail
