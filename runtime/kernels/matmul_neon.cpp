// NEON matmul/matvec for AArch64 (NEON is baseline there): 4 floats per
// register, f16 weights widened with fcvtl.
#include "kernels/matmul_isa.h"
#include "kernels/matmul_tiles.h"

#include <arm_neon.h>

#include <cstring>

namespace fm::kernels::detail {
namespace neon {
namespace {

struct V {
  using Reg = float32x4_t;
  static constexpr int kLanes = 4;
  // 16 accumulators + 4 rows of x + 1 of w out of 32 registers.
  static constexpr int kMR = 4, kNR = 4;
  static constexpr int64_t kKC = 512;
  static constexpr int kMatvecRows = 8;
  // 3 x 8 accumulators + 3 rows of x + 1 of w: the multi-row matvec.
  static constexpr int kMatvecPassRows = 3;
  static constexpr int kPrefetchBytes = 0;

  static Reg zero() { return vdupq_n_f32(0.0f); }
  static Reg fma(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }
  static Reg load(const float *p) { return vld1q_f32(p); }
  static Reg load(const uint16_t *p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
  }
  static Reg loadPartial(const float *p, int n) {
    float buffer[4] = {};
    std::memcpy(buffer, p, static_cast<size_t>(n) * sizeof(float));
    return vld1q_f32(buffer);
  }
  static Reg loadPartial(const uint16_t *p, int n) {
    uint16_t buffer[4] = {};
    std::memcpy(buffer, p, static_cast<size_t>(n) * sizeof(uint16_t));
    return load(buffer);
  }
  static float sum(Reg a) { return vaddvq_f32(a); }
  static void sum4(const Reg *r, float *out) {
    vst1q_f32(out, vpaddq_f32(vpaddq_f32(r[0], r[1]), vpaddq_f32(r[2], r[3])));
  }
  static void prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }
};

} // namespace
} // namespace neon

const MatmulIsa kMatmulNeon = {&matmulRange<neon::V, float>,
                               &matmulRange<neon::V, uint16_t>};

} // namespace fm::kernels::detail
