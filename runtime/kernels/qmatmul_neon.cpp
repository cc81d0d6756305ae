// NEON qmatmul for AArch64: int8 activations (one or two digits), 16 quant
// bytes per step,
// sdot where the compiler targets the dot-product extension
// (__ARM_FEATURE_DOTPROD, e.g. -march=armv8.2-a+dotprod; Apple M1 and
// later), else smull/smlal into int16 and pairwise adds. Quants are used
// as signed bytes: 2/4-bit ones as they are, 8-bit ones minus 128.
#include "kernels/qmatmul_impl.h"

#include <arm_neon.h>

namespace fm::kernels::qdetail {
namespace neon {
namespace {

struct V {
  using Q = int8x16_t;
  using I = int32x4_t;
  using F = float32x4_t;
  static constexpr int kBytes = 16, kLanes = 4;
  static constexpr int kOffset8 = 128;
  static constexpr const char *kName = "neon";
  // The multi-row matvec's rows per pass over a w row: 4 accumulators
  // beside the planes and the chains.
  static constexpr int kMatvecPassRows = 4;

  static Q loadW(const uint8_t *p) { return vreinterpretq_s8_u8(vld1q_u8(p)); }
  static Q loadWPartial(const uint8_t *p, int n) {
    uint8_t buffer[16] = {};
    std::memcpy(buffer, p, static_cast<size_t>(n));
    return loadW(buffer);
  }
  template <int Bits, int J> static Q plane(Q w) {
    if constexpr (Bits == 8) {
      return veorq_s8(w, vdupq_n_s8(static_cast<int8_t>(-128)));
    } else {
      const uint8x16_t u = vreinterpretq_u8_s8(w);
      const uint8x16_t mask = vdupq_n_u8((1 << Bits) - 1);
      if constexpr (J == 0)
        return vreinterpretq_s8_u8(vandq_u8(u, mask));
      else
        return vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(u, Bits * J), mask));
    }
  }
  static I izero() { return vdupq_n_s32(0); }
  static I shl8(I v) { return vshlq_n_s32(v, 8); }
  static I iadd(I a, I b) { return vaddq_s32(a, b); }
  template <int Bits> static I dot(I acc, const Q *planes, const int8_t *x) {
    constexpr int P = 8 / Bits;
#if defined(__ARM_FEATURE_DOTPROD)
    acc = vdotq_s32(acc, planes[0], vld1q_s8(x));
    for (int j = 1; j < P; ++j)
      acc = vdotq_s32(acc, planes[j], vld1q_s8(x + 64 * j));
    return acc;
#else
    // |products| <= 4 * 3 * 127 (2 bits), 2 * 15 * 127, 128 * 127: int16.
    int8x16_t xv = vld1q_s8(x);
    int16x8_t lo = vmull_s8(vget_low_s8(planes[0]), vget_low_s8(xv));
    int16x8_t hi = vmull_high_s8(planes[0], xv);
    for (int j = 1; j < P; ++j) {
      xv = vld1q_s8(x + 64 * j);
      lo = vmlal_s8(lo, vget_low_s8(planes[j]), vget_low_s8(xv));
      hi = vmlal_high_s8(hi, planes[j], xv);
    }
    // Lane i = bytes 4i..4i+3, as sdot.
    return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)));
#endif
  }
  static F cvt(I v) { return vcvtq_f32_s32(v); }
  static F load(const float *p) { return vld1q_f32(p); }
  static F zero() { return vdupq_n_f32(0.0f); }
  static F fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }
  static F fmsub(F a, F b, F c) { return vfmaq_f32(vnegq_f32(c), a, b); }
  static float hsum(F v) { return vaddvq_f32(v); }

  using Spread = int; // lanes per group: 2, or >= 4
  static Spread spread(int lanesPerGroup) { return lanesPerGroup; }
  static F halves(const uint8_t *p, int count) {
    uint16_t buffer[4] = {};
    std::memcpy(buffer, p, 2 * static_cast<size_t>(count));
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(buffer)));
  }
  static F scales(const uint8_t *p, int count, Spread lanesPerGroup) {
    F v = halves(p, count);
    return lanesPerGroup == 2 ? vzip1q_f32(v, v) : vdupq_laneq_f32(v, 0);
  }
  static float dotHalf(const uint16_t *h, const float *f, int64_t n) {
    F acc = zero();
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
      acc = fma(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h + i))),
                vld1q_f32(f + i), acc);
    float sum = hsum(acc);
    for (; i < n; ++i)
      sum += vgetq_lane_f32(halves(reinterpret_cast<const uint8_t *>(h + i), 1),
                            0) *
             f[i];
    return sum;
  }
  static void prefetchL2(const uint8_t *p) { __builtin_prefetch(p, 0, 2); }
};

} // namespace
} // namespace neon

const QMatmulIsa kQMatmulNeon[2] = {IsaPair<neon::V>::kTables[0],
                                    IsaPair<neon::V>::kTables[1]};

} // namespace fm::kernels::qdetail
