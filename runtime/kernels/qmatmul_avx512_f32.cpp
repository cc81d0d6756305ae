// AVX-512 qmatmul with f32 activations (built with -mavx512f -mavx512bw
// -mavx512vl): the quants are widened to f32 (vpmovzxbd, shift, mask,
// vcvtdq2ps) and met with f32 x in the weight-byte order. No activation
// rounding, but ~4 instructions per 16 weights per plane, against one
// vpdpbusd per 64: the measured alternative to the VNNI path (qmatmul.h).
//
// Prepared activations, per superblock of 64 * P inputs (P = 8 / bits):
//   float x[P][64];   // x[j][p]: x of the input in plane j of weight byte p
//   float neg[64];    // -c * sum_j x[j][p] (c: balanced center, 0 affine)
// then, affine, float gsum[K / group] (sum of x over each group).
#include "kernels/qmatmul_impl.h"

#include <immintrin.h>

namespace fm::kernels::qdetail {
namespace avx512f32 {
namespace {

int64_t superblockFloats(QuantFormat f) { return 64 * (8 / f.bits) + 64; }

int64_t superblocks(QuantFormat f, int64_t K) {
  const int64_t sbInputs = 64 * (8 / f.bits);
  return (K + sbInputs - 1) / sbInputs;
}

int64_t preparedRowBytes(QuantFormat f, int64_t K) {
  int64_t floats = superblocks(f, K) * superblockFloats(f) +
                   (f.grid == QuantGrid::Affine ? K / f.group : 0);
  return (4 * floats + 63) / 64 * 64;
}

void prepare(const float *x, int64_t K, QuantFormat f, uint8_t *outBytes) {
  float *out = reinterpret_cast<float *>(outBytes);
  const int P = 8 / f.bits;
  const int64_t sbInputs = 64 * P, sbFloats = superblockFloats(f);
  const int64_t nsb = superblocks(f, K);
  const int64_t U = quantUnitInputs(f), unitBytes = U * f.bits / 8;
  const float c = f.grid == QuantGrid::Balanced ? balancedCenter(f.bits) : 0.0f;
  std::memset(out, 0, sizeof(float) * nsb * sbFloats);
  for (int64_t k = 0; k < K; ++k) {
    const int64_t sb = k / sbInputs, r = k % sbInputs;
    const int64_t u = r / U, i = r % U;
    const int64_t j = i / unitBytes, byte = u * unitBytes + i % unitBytes;
    float *base = out + sb * sbFloats;
    base[64 * j + byte] = x[k];
    base[64 * P + byte] -= c * x[k];
  }
  if (f.grid == QuantGrid::Affine) {
    float *gsum = out + nsb * sbFloats;
    for (int64_t g = 0; g < K / f.group; ++g) {
      float s = 0.0f;
      for (int64_t k = 0; k < f.group; ++k)
        s += x[g * f.group + k];
      gsum[g] = s;
    }
  }
}

constexpr int kRows = 4;

struct Ctx {
  const uint8_t *w;
  int64_t rowBytes, quantBytes, fullSteps, groups, sbFloats, gsumOffset;
  int tailBytes, bytesPerGroup, scalesPerChunk;
  __m512i spread;
  bool affine;
};

template <int Bits, int NR, bool Tail>
FM_Q_INLINE void step(const Ctx &c, int64_t st, const uint8_t *w,
                      const float *x, __m512 (&acc)[NR]) {
  constexpr int P = 8 / Bits;
  const __m512i mask = _mm512_set1_epi32((1 << Bits) - 1);
  const float *xs = x + st * c.sbFloats;
  const int chunks = Tail ? (c.tailBytes + 15) / 16 : 4;
  for (int n = 0; n < NR; ++n) {
    const uint8_t *row = w + n * c.rowBytes;
    for (int ch = 0; ch < chunks; ++ch) {
      const uint8_t *q = row + st * 64 + 16 * ch;
      __m128i bytes;
      if (Tail) {
        int left = c.tailBytes - 16 * ch;
        bytes = _mm_maskz_loadu_epi8(
            static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1), q);
      } else {
        bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(q));
      }
      const __m512i wd = _mm512_cvtepu8_epi32(bytes);
      __m512 dot = _mm512_loadu_ps(xs + 64 * P + 16 * ch);
      for (int j = 0; j < P; ++j) {
        __m512i pl =
            j == 0 ? _mm512_and_si512(wd, mask)
                   : _mm512_and_si512(_mm512_srli_epi32(wd, Bits * j), mask);
        dot = _mm512_fmadd_ps(_mm512_cvtepi32_ps(pl),
                              _mm512_loadu_ps(xs + 64 * j + 16 * ch), dot);
      }
      const int64_t firstGroup = (st * 64 + 16 * ch) / c.bytesPerGroup;
      const int count = Tail ? static_cast<int>(std::min<int64_t>(
                                   c.scalesPerChunk, c.groups - firstGroup))
                             : c.scalesPerChunk;
      const __m256i h =
          _mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << count) - 1),
                                   row + c.quantBytes + 2 * firstGroup);
      acc[n] = _mm512_fmadd_ps(
          dot, _mm512_permutexvar_ps(c.spread, _mm512_cvtph_ps(h)), acc[n]);
    }
  }
}

template <int Bits, int NR>
void tile(const Ctx &c, const uint8_t *w, const float *x, float *y,
          bool accumulate, Prefetcher *pf) {
  __m512 acc[NR];
  for (int n = 0; n < NR; ++n)
    acc[n] = _mm512_setzero_ps();
  const uint8_t *target = w + NR * c.rowBytes + kPrefetchBytes;
  for (int64_t st = 0; st < c.fullSteps; ++st) {
    if (pf) {
      target += pf->perStep;
      const uint8_t *stop = target < pf->end ? target : pf->end;
      for (; pf->cursor < stop; pf->cursor += 64)
        _mm_prefetch(reinterpret_cast<const char *>(pf->cursor), _MM_HINT_T0);
    }
    step<Bits, NR, false>(c, st, w, x, acc);
  }
  if (c.tailBytes)
    step<Bits, NR, true>(c, c.fullSteps, w, x, acc);
  for (int n = 0; n < NR; ++n) {
    float v = _mm512_reduce_add_ps(acc[n]);
    if (c.affine) {
      const uint16_t *mins = reinterpret_cast<const uint16_t *>(
          w + n * c.rowBytes + c.quantBytes + 2 * c.groups);
      const float *gsum = x + c.gsumOffset;
      for (int64_t g = 0; g < c.groups; ++g)
        v += _cvtsh_ss(mins[g]) * gsum[g];
    }
    y[n] = accumulate ? y[n] + v : v;
  }
}

template <int Bits>
void rangeBits(const Params &p, int64_t m0, int64_t m1, int64_t n0,
               int64_t n1) {
  Ctx c;
  c.w = p.w;
  c.rowBytes = p.rowBytes;
  c.quantBytes = quantBytes(p.f, p.K);
  c.fullSteps = c.quantBytes / 64;
  c.tailBytes = static_cast<int>(c.quantBytes % 64);
  c.groups = quantGroups(p.f, p.K);
  c.sbFloats = superblockFloats(p.f);
  c.gsumOffset = superblocks(p.f, p.K) * c.sbFloats;
  c.bytesPerGroup = p.f.group * Bits / 8;
  c.scalesPerChunk = std::max(1, 16 / c.bytesPerGroup);
  alignas(64) int idx[16];
  for (int i = 0; i < 16; ++i)
    idx[i] = i / std::min(c.bytesPerGroup, 16);
  c.spread = _mm512_load_si512(idx);
  c.affine = p.f.grid == QuantGrid::Affine;
  for (int64_t m = m0; m < m1; ++m) {
    const float *x = reinterpret_cast<const float *>(
        static_cast<const uint8_t *>(p.act) + m * p.actStride);
    float *y = p.y + m * p.ldy;
    const int64_t tileBytes = kRows * c.rowBytes;
    const int64_t steps = c.fullSteps > 0 ? c.fullSteps : 1;
    Prefetcher pf{c.w + n0 * c.rowBytes + tileBytes + kPrefetchBytes,
                  (tileBytes + steps - 1) / steps, c.w + n1 * c.rowBytes};
    int64_t n = n0;
    for (; n + kRows <= n1; n += kRows)
      tile<Bits, kRows>(c, c.w + n * c.rowBytes, x, y + n, p.accumulate, &pf);
    for (; n < n1; ++n)
      tile<Bits, 1>(c, c.w + n * c.rowBytes, x, y + n, p.accumulate, nullptr);
  }
}

void range(const Params &p, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  switch (p.f.bits) {
  case 2:
    return rangeBits<2>(p, m0, m1, n0, n1);
  case 4:
    return rangeBits<4>(p, m0, m1, n0, n1);
  default:
    return rangeBits<8>(p, m0, m1, n0, n1);
  }
}

} // namespace
} // namespace avx512f32

const QMatmulIsa kQMatmulAvx512F32 = {&avx512f32::prepare, &avx512f32::range,
                                      &avx512f32::preparedRowBytes,
                                      "avx512-f32"};

} // namespace fm::kernels::qdetail
