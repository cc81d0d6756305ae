// The packed GEMM in portable C++: the traits' "register" is a fixed array
// of 8 floats with element-wise loops, which compilers turn into baseline
// SIMD (two SSE registers on x86-64).
#include "kernels/gemm_impl.h"

namespace fm::kernels::detail {
namespace generic {
namespace {

struct GemmV {
  static constexpr int kLanes = 8;
  struct Reg {
    float v[kLanes];
  };
  // 4 x 16 accumulators: as many as baseline x86-64's 16 registers hold.
  static constexpr int kMR = 4, kNV = 2;
  static constexpr int64_t kKC = 256, kMC = 256, kNC = 2048;

  static Reg zero() {
    Reg r;
    for (int l = 0; l < kLanes; ++l)
      r.v[l] = 0.0f;
    return r;
  }
  static Reg broadcast(float x) {
    Reg r;
    for (int l = 0; l < kLanes; ++l)
      r.v[l] = x;
    return r;
  }
  static Reg fma(Reg a, Reg b, Reg c) {
    for (int l = 0; l < kLanes; ++l)
      c.v[l] += a.v[l] * b.v[l];
    return c;
  }
  static Reg add(Reg a, Reg b) {
    for (int l = 0; l < kLanes; ++l)
      a.v[l] += b.v[l];
    return a;
  }
  static Reg load(const float *p) {
    Reg r;
    for (int l = 0; l < kLanes; ++l)
      r.v[l] = p[l];
    return r;
  }
  static void store(float *p, Reg r) {
    for (int l = 0; l < kLanes; ++l)
      p[l] = r.v[l];
  }
  static Reg loadPartial(const float *p, int n) {
    Reg r = zero();
    for (int l = 0; l < n; ++l)
      r.v[l] = p[l];
    return r;
  }
  static void storePartial(float *p, Reg r, int n) {
    for (int l = 0; l < n; ++l)
      p[l] = r.v[l];
  }
  static void prefetch(const void *p) { __builtin_prefetch(p, 1, 3); }
};

} // namespace
} // namespace generic

const GemmIsa kGemmGeneric = Gemm<generic::GemmV>::table();

} // namespace fm::kernels::detail
