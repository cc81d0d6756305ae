// AVX2 LoRA products (built with -mavx2 -mfma -mf16c): 8 floats per
// register, f16 widened with vcvtph2ps, q8 bytes with vpmovzxbd.
#include "kernels/lora_impl.h"
#include "kernels/simd_avx2.h"

namespace fm::kernels::detail {
namespace avx2 {
namespace {

struct V : Simd {
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg loadU8(const uint8_t *p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(p))));
  }
};

} // namespace
} // namespace avx2

const LoraIsa kLoraAvx2 = {&LoraKernels<avx2::V>::down,
                           &LoraKernels<avx2::V>::up};

} // namespace fm::kernels::detail
