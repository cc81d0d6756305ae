// The vgf2p8affineqb matrices that take one plane of 2- or 4-bit quants out
// of their bytes: shared by the row-layout matvec (qmatmul_avx512_v.h) and
// the Panel16 one (qgemm_matvec_x86.h). Plain constants: no intrinsics.
#pragma once

#include <cstdint>

namespace fm::kernels {

/// The GF(2) matrix (vgf2p8affineqb's 8 x 8 bits, row 7 - i makes result
/// bit i) that takes plane J of a byte of Bits-bit quants down to its low
/// Bits bits and clears the others.
constexpr uint64_t gfniPlaneMatrix(int Bits, int J) {
  uint64_t m = 0;
  for (int i = 0; i < Bits; ++i)
    m |= (uint64_t(1) << (Bits * J + i)) << (8 * (7 - i));
  return m;
}
static_assert(gfniPlaneMatrix(4, 1) == 0x1020408000000000ull,
              "bits 4-7 -> 0-3");
static_assert(gfniPlaneMatrix(2, 3) == 0x4080000000000000ull,
              "bits 6-7 -> 0-1");

} // namespace fm::kernels
