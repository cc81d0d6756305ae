// AVX-512 VNNI qmatmul for CPUs with GFNI too (built with
// qmatmul_avx512.cpp's flags and -mgfni): the same kernel, with each 2- or
// 4-bit plane above the lowest taken out of the weight bytes by one
// vgf2p8affineqb rather than a shift and a mask, which leaves 20 of the
// 2-bit int8x2 step's 23 vector operations (and 13 of the 4-bit one's 14)
// to share ports 0 and 5 with the memory stream (docs/benchmarks.md).
#include "kernels/qmatmul_avx512_v.h"

namespace fm::kernels::qdetail {

const QMatmulIsa kQMatmulAvx512VnniGfni[2] = {
    IsaPair<avx512vnni::V<true>>::kTables[0],
    IsaPair<avx512vnni::V<true>>::kTables[1]};

} // namespace fm::kernels::qdetail
