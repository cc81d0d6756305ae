// Internal: a branch-free e^x for x <= 0 that compilers vectorize (softmax
// arguments are never positive), used by attention and the sampler.
#pragma once

#include <cstdint>
#include <cstring>

namespace fm::kernels::detail {

/// Tag: a type private to the calling file. Kernel files are compiled with
/// different -m flags; a plain inline function shared between them could be
/// merged by the linker into its widest-ISA copy, so every user gets its
/// own instantiation instead.
template <typename Tag> struct ExpApprox {
  /// e^x for x <= 0 within ~2 ulp; exactly 0 below -87.3 (where e^x leaves
  /// the normal floats), for -inf and for NaN.
  static float nonPositive(float x) {
    bool underflow = !(x >= -87.3f);
    x = underflow ? 0.0f : x;
    // e^x = 2^n · e^r with n = round(x / ln 2), |r| <= ln 2 / 2 (Cephes
    // expf). Adding and subtracting 1.5 · 2^23 rounds to an integer
    // without a libm call.
    constexpr float kRound = 12582912.0f;
    float n = (x * 1.44269504088896341f + kRound) - kRound;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    // Computed before the select: under the default -ftrapping-math a
    // multiply inside a ?: arm is conditional, and blocks vectorization.
    float result = p * scale;
    return underflow ? 0.0f : result;
  }
};

} // namespace fm::kernels::detail
