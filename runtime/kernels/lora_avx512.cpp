// AVX-512 LoRA products (built with -mavx512f -mavx512bw -mavx512vl): 16
// floats per register, f16 widened with vcvtph2ps, q8 bytes with vpmovzxbd,
// tails with masked loads and stores.
#include "kernels/lora_impl.h"
#include "kernels/simd_avx512.h"

namespace fm::kernels::detail {
namespace avx512 {
namespace {

struct V : Simd {
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg loadU8(const uint8_t *p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(p))));
  }
};

} // namespace
} // namespace avx512

const LoraIsa kLoraAvx512 = {&LoraKernels<avx512::V>::down,
                             &LoraKernels<avx512::V>::up};

} // namespace fm::kernels::detail
