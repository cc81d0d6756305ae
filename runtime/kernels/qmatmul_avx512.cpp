// AVX-512 VNNI qmatmul (built with -mavx512f -mavx512bw -mavx512vl
// -mavx512vnni): int8 activations (one or two digits), 64 quant bytes per
// step, one vpdpbusd (u8 quants x s8 activations) per plane and digit; the
// planes split by shift and mask. qmatmul_avx512_gfni.cpp is the same
// kernel for CPUs with GFNI as well.
#include "kernels/qmatmul_avx512_v.h"

namespace fm::kernels::qdetail {

const QMatmulIsa kQMatmulAvx512Vnni[2] = {
    IsaPair<avx512vnni::V<false>>::kTables[0],
    IsaPair<avx512vnni::V<false>>::kTables[1]};

} // namespace fm::kernels::qdetail
