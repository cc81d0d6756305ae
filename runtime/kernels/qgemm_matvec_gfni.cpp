// The Panel16 matvec (qgemm_matvec_x86.h) for CPUs with GFNI (built with
// qgemm_avx512.cpp's flags and -mgfni): a 2- or 4-bit tile row above its
// vector's lowest plane is one vgf2p8affineqb instead of a shift and a mask.
#include "kernels/qgemm_matvec_x86.h"

namespace fm::kernels::gdetail {
namespace {
struct Tag {};
} // namespace

void avx512VnniGfniMatvec(const Params &p, int64_t m, int64_t p0, int64_t p1) {
  PanelMatvec<Tag, true>::run(p, m, p0, p1);
}

} // namespace fm::kernels::gdetail
