// Internal: register-tiled matmul/matvec written once over a SIMD traits type
// and instantiated by each ISA file (matmul_avx2.cpp, matmul_avx512.cpp,
// matmul_neon.cpp).
//
// Everything here is a template on the traits type V, which each ISA file
// defines in its own namespace, so every instantiation has a distinct symbol.
// That matters: an inline function shared by files built with different
// -m flags could be merged by the linker into its AVX-512 copy and then run
// on a CPU without AVX-512. For the same reason this header uses no
// standard-library templates.
//
// V provides:
//   Reg, kLanes                          one SIMD register of floats
//   kMR, kNR                             prefill register tile (rows of x, w)
//   kKC                                  prefill K block, in elements
//   kMatvecRows                          w rows per matvec step
//   kMatvecPassRows                      rows of x per matvec pass over
//                                        them (kMatvecPassRows x
//                                        kMatvecRows accumulators)
//   kPrefetchBytes                       matvec prefetch distance (0 = off)
//   zero(), fma(a, b, c) = a*b + c
//   load(const float *), load(const uint16_t *)            kLanes elements
//   loadPartial(const float *, int n), (const uint16_t *, int n)
//                                        n < kLanes elements, rest zero,
//                                        never touching memory past p + n
//   sum(Reg) -> float, sum4(const Reg *r, float *out)       horizontal sums
//   prefetch(const void *)
#pragma once

#include "kernels/isa.h" // kMatvecMaxRows

#include <cstdint>

namespace fm::kernels::detail {

/// Computes an MR x NR block of y over k in [0, kLen): y[m][n] = dot(x row
/// m, w row n), added to y when `add`. The accumulators stay in registers:
/// each k step loads MR + NR vectors for MR * NR FMAs.
template <typename V, int MR, int NR, bool Prefetch, typename W>
void matmulTile(const float *x, int64_t ldx, const W *w, int64_t ldw,
                int64_t kLen, float *y, int64_t ldy, bool add) {
  using Reg = typename V::Reg;
  constexpr int L = V::kLanes;
  Reg acc[MR][NR];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int n = 0; n < NR; ++n)
      acc[m][n] = V::zero();

  int64_t k = 0;
  for (; k + L <= kLen; k += L) {
    if constexpr (Prefetch) {
#pragma GCC unroll 8
      for (int n = 0; n < NR; ++n)
        V::prefetch(reinterpret_cast<const void *>(
            reinterpret_cast<uintptr_t>(w + n * ldw + k) + V::kPrefetchBytes));
    }
    Reg xv[MR];
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
      xv[m] = V::load(x + m * ldx + k);
#pragma GCC unroll 8
    for (int n = 0; n < NR; ++n) {
      Reg wv = V::load(w + n * ldw + k);
#pragma GCC unroll 8
      for (int m = 0; m < MR; ++m)
        acc[m][n] = V::fma(xv[m], wv, acc[m][n]);
    }
  }
  if (k < kLen) {
    int rest = static_cast<int>(kLen - k);
    Reg xv[MR];
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
      xv[m] = V::loadPartial(x + m * ldx + k, rest);
#pragma GCC unroll 8
    for (int n = 0; n < NR; ++n) {
      Reg wv = V::loadPartial(w + n * ldw + k, rest);
#pragma GCC unroll 8
      for (int m = 0; m < MR; ++m)
        acc[m][n] = V::fma(xv[m], wv, acc[m][n]);
    }
  }

#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    float sums[NR];
    int n = 0;
#pragma GCC unroll 8
    for (; n + 4 <= NR; n += 4)
      V::sum4(&acc[m][n], &sums[n]);
#pragma GCC unroll 8
    for (; n < NR; ++n)
      sums[n] = V::sum(acc[m][n]);
    float *yRow = y + m * ldy;
#pragma GCC unroll 8
    for (n = 0; n < NR; ++n)
      yRow[n] = add ? yRow[n] + sums[n] : sums[n];
  }
}

template <typename W>
using MatmulTileFn = void (*)(const float *x, int64_t ldx, const W *w,
                              int64_t ldw, int64_t kLen, float *y, int64_t ldy,
                              bool add);

/// The tiles for every edge shape: kTable[(mr - 1) * NR + (nr - 1)] is the
/// mr x nr tile, mr in [1, MR], nr in [1, NR].
template <typename V, typename W, int MR, int NR, bool Prefetch>
struct MatmulTileTable {
  template <int... I> struct Build {
    static constexpr MatmulTileFn<W> kTable[sizeof...(I)] = {
        &matmulTile<V, I / NR + 1, I % NR + 1, Prefetch, W>...};
  };
  template <int N, int... I> struct Seq : Seq<N - 1, N - 1, I...> {};
  template <int... I> struct Seq<0, I...> { using Type = Build<I...>; };
  static MatmulTileFn<W> get(int64_t mr, int64_t nr) {
    return Seq<MR * NR>::Type::kTable[(mr - 1) * NR + (nr - 1)];
  }
};

/// The MatmulRangeFn of an ISA: see matmul_isa.h.
template <typename V, typename W>
void matmulRange(const float *x, int64_t K, const W *w, float *y, int64_t ldy,
                 int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                 bool accumulate) {
  if (m1 - m0 <= kMatvecMaxRows) {
    // Decode matvec of 1 .. kMatvecMaxRows rows (isa.h): x stays in L1
    // while kMatvecRows rows of w stream past it, one load of x per
    // kMatvecRows FMAs; the rows of x in passes of kMatvecPassRows over the
    // same rows of w (the later passes read them from L1). Output (m, n)
    // is one chain over all of K whatever the tile's rows of x, so each
    // row's result is bit for bit that of a call with that row alone.
    constexpr int R = V::kMatvecRows, MR = V::kMatvecPassRows;
    using Table = MatmulTileTable<V, W, MR, R, (V::kPrefetchBytes > 0)>;
    for (int64_t n = n0; n < n1; n += R) {
      const int64_t nr = n1 - n < R ? n1 - n : R;
      for (int64_t m = m0; m < m1; m += MR)
        Table::get(m1 - m < MR ? m1 - m : MR, nr)(x + m * K, K, w + n * K, K,
                                                  K, y + m * ldy + n, ldy,
                                                  accumulate);
    }
    return;
  }
  // Prefill: for each K block, each MR x NR tile of y is computed from MR
  // rows of x and NR rows of w. The NR rows of w (NR * kKC elements) stay in
  // L1 while the loop over m streams the x block from L2.
  constexpr int MR = V::kMR, NR = V::kNR;
  using Table = MatmulTileTable<V, W, MR, NR, false>;
  for (int64_t k0 = 0; k0 < K; k0 += V::kKC) {
    int64_t kLen = K - k0 < V::kKC ? K - k0 : V::kKC;
    bool add = accumulate || k0 > 0;
    for (int64_t n = n0; n < n1; n += NR) {
      int64_t nr = n1 - n < NR ? n1 - n : NR;
      for (int64_t m = m0; m < m1; m += MR) {
        int64_t mr = m1 - m < MR ? m1 - m : MR;
        Table::get(mr, nr)(x + m * K + k0, K, w + n * K + k0, K, kLen,
                           y + m * ldy + n, ldy, add);
      }
    }
  }
}

} // namespace fm::kernels::detail
