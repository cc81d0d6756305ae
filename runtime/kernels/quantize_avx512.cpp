// The quantizer's scale search for AVX-512 (built with -mavx512f
// -mavx512vl -mavx512dq -mprefer-vector-width=512 -ffp-contract=off):
// batches of 16 candidates per zmm, F16C rounding.
#define FM_QUANTIZE_X86 1
#include "kernels/quantize_search_impl.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics trip -Wuninitialized inside the header (see
// simd_avx512.h): silenced around the include.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#include <algorithm>

namespace fm::kernels::qsearch {
namespace {

struct Avx512Tag {
  static constexpr bool kX86 = true;
  static constexpr bool kWide = true;
  static void toHalfAndBack(float *v, int count) {
    for (int i = 0; i < count; i += 16) {
      float lanes[16] = {};
      const int n = count - i < 16 ? count - i : 16;
      for (int j = 0; j < n; ++j)
        lanes[j] = std::min(std::max(v[i + j], -65504.0f), 65504.0f);
      const __m256i h = _mm512_cvtps_ph(
          _mm512_loadu_ps(lanes), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm512_storeu_ps(lanes, _mm512_cvtph_ps(h));
      for (int j = 0; j < n; ++j)
        v[i + j] = lanes[j];
    }
  }
};

} // namespace

const SearchIsa kSearchAvx512 = Search<Avx512Tag>::kTable;

} // namespace fm::kernels::qsearch
