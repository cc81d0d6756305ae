// Internal: the GEMM's activation preparation (layout in qgemm_isa.h),
// written once for the auto-vectorizer and instantiated in each ISA's file
// with that file's flags. The rounding is qmatmul's (qmatmul_impl.h,
// prepareRowFixed) operation for operation, so both quantize x alike.
#pragma once

#include "kernels/qgemm_isa.h"

#include <cmath>
#include <cstring>

namespace fm::kernels::gdetail {

template <typename Tag> struct Prepare {
  template <int D, int U>
  static void rowFixed(const float *x, int64_t K, QuantFormat f, int64_t m,
                       const Act &a) {
    // The prepare step owns the buffers the kernels later read as const.
    // Digit 0 of input k of unit u at q0[u * unitBytes + k], digit 1 (D == 2) at
    // q1[u * unitBytes + k]: two rows Kp apart, or side by side in one 64-byte
    // run per unit (the pair-tile layout, qgemm_isa.h).
    int8_t *q0 = const_cast<int8_t *>(a.xq) + (m * D) * a.ldx;
    int8_t *q1 = a.pairTile ? q0 + U : q0 + a.ldx;
    const int64_t unitBytes = a.pairTile ? 2 * U : U;
    // dx[u] and xs[g] of row m: at [m][u], or in the pair-tile layout at
    // [m / 16][u][m % 16] (qgemm_isa.h).
    const int64_t step = a.pairTile ? 16 : 1;
    float *dx = const_cast<float *>(a.dx) + actRowOffset(a, m, a.ldd);
    float *xs = const_cast<float *>(a.xs) + actRowOffset(a, m, a.lds);
    for (int64_t g = 0; g < a.lds; ++g)
      xs[g * step] = 0.0f;
    // Digit 0 weighs 2^S: 256 (int8x2), or 8 or 32 (int11 at 4 and 2 bits,
    // whose digit 1 is then within +-4 or +-16).
    const int shift = D == 2 ? a.hiShift : 0;
    const float hiWeight = static_cast<float>(1 << shift);
    // The 4-bit pair tile's fold adds half of each group's sum (qgemm_isa.h).
    const float sumWeight =
        a.pairTile && pairTileHalfOffset(f.bits) ? 0.5f : 1.0f;
    const int64_t blocks = K / U;
    for (int64_t u = 0; u < blocks; ++u) {
      const float *xu = x + u * U;
      // max |x| on the bits: NaN above inf above every finite value.
      uint32_t amaxBits = 0;
      for (int k = 0; k < U; ++k) {
        uint32_t b;
        std::memcpy(&b, xu + k, 4);
        b &= 0x7fffffffu;
        amaxBits = b > amaxBits ? b : amaxBits;
      }
      float amax;
      std::memcpy(&amax, &amaxBits, 4);
      const float d = amax / (127.0f * hiWeight);
      const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
      int32_t total = 0;
      for (int k = 0; k < U; ++k) {
        const float t = std::fmin(std::fmax(xu[k] * inv, -127.0f), 127.0f);
        const float hi = std::nearbyint(t);
        const int h = static_cast<int>(hi);
        q0[u * unitBytes + k] = static_cast<int8_t>(h);
        if constexpr (D == 2) {
          const float lo = std::nearbyint(
              std::fmin(std::fmax((t - hi) * hiWeight, -127.0f), 127.0f));
          const int l = static_cast<int>(lo);
          q1[u * unitBytes + k] = static_cast<int8_t>(l);
          total += h * (1 << shift) + l;
        } else {
          total += h;
        }
      }
      dx[u * step] = d;
      xs[u * U / f.group * step] += sumWeight * d * static_cast<float>(total);
    }
    // Padding inputs (group 32, K an odd number of groups).
    if (a.pairTile) {
      std::memset(q0 + 2 * K, 0, static_cast<size_t>(2 * (a.ldx - K)));
    } else {
      for (int64_t k = K; k < a.ldx; ++k) {
        q0[k] = 0;
        if constexpr (D == 2)
          q1[k] = 0;
      }
    }
    for (int64_t u = blocks; u < a.ldd; ++u)
      dx[u * step] = 0.0f;
  }

  template <int D>
  static void rows(const float *x, int64_t K, QuantFormat f, int64_t m0,
                   int64_t m1, const Act &a) {
    for (int64_t m = m0; m < m1; ++m) {
      if (a.unit == 64)
        rowFixed<D, 64>(x + m * K, K, f, m, a);
      else
        rowFixed<D, 32>(x + m * K, K, f, m, a);
    }
  }
};

} // namespace fm::kernels::gdetail
