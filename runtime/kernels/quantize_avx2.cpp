// The quantizer's scale search for AVX2 (built with -mavx2 -mf16c
// -ffp-contract=off): batches of 8 candidates per ymm, F16C rounding.
#define FM_QUANTIZE_X86 1
#include "kernels/quantize_search_impl.h"

#include <immintrin.h>

#include <algorithm>

namespace fm::kernels::qsearch {
namespace {

struct Avx2Tag {
  static constexpr bool kX86 = true;
  static constexpr bool kWide = false;
  static void toHalfAndBack(float *v, int count) {
    for (int i = 0; i < count; i += 8) {
      float lanes[8] = {};
      const int n = count - i < 8 ? count - i : 8;
      for (int j = 0; j < n; ++j)
        lanes[j] = std::min(std::max(v[i + j], -65504.0f), 65504.0f);
      const __m128i h = _mm256_cvtps_ph(
          _mm256_loadu_ps(lanes), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_storeu_ps(lanes, _mm256_cvtph_ps(h));
      for (int j = 0; j < n; ++j)
        v[i + j] = lanes[j];
    }
  }
};

} // namespace

const SearchIsa kSearchAvx2 = Search<Avx2Tag>::kTable;

} // namespace fm::kernels::qsearch
