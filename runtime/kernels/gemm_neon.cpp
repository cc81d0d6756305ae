// The packed GEMM for AArch64 NEON (baseline there): an 8 x 12 register
// tile (24 accumulators, 3 vectors of w, one broadcast of x: 28 of the 32
// q registers).
#include "kernels/gemm_impl.h"

#include <arm_neon.h>

#include <cstring>

namespace fm::kernels::detail {
namespace neon {
namespace {

struct GemmV {
  using Reg = float32x4_t;
  static constexpr int kLanes = 4;
  static constexpr int kMR = 8, kNV = 3;
  static constexpr int64_t kKC = 256, kMC = 256, kNC = 2040;

  static Reg zero() { return vdupq_n_f32(0.0f); }
  static Reg broadcast(float v) { return vdupq_n_f32(v); }
  static Reg fma(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }
  static Reg add(Reg a, Reg b) { return vaddq_f32(a, b); }
  static Reg load(const float *p) { return vld1q_f32(p); }
  static void store(float *p, Reg v) { vst1q_f32(p, v); }
  static Reg loadPartial(const float *p, int n) {
    float buffer[4] = {};
    std::memcpy(buffer, p, static_cast<size_t>(n) * sizeof(float));
    return vld1q_f32(buffer);
  }
  static void storePartial(float *p, Reg v, int n) {
    float buffer[4];
    vst1q_f32(buffer, v);
    std::memcpy(p, buffer, static_cast<size_t>(n) * sizeof(float));
  }
  static void prefetch(const void *p) { __builtin_prefetch(p, 1, 3); }
};

} // namespace
} // namespace neon

const GemmIsa kGemmNeon = Gemm<neon::GemmV>::table();

} // namespace fm::kernels::detail
