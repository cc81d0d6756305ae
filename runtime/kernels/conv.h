// The convolution-shaped steps of an image encoder and its adapter (see
// docs/vit.md): the patch embedding (Conv2d with stride = kernel), the
// adapter's 3x3 convolution with zero padding 1, and its average pooling.
// The convolutions are an unfold (im2col) into rows that match the
// checkpoint's weight.reshape(out, -1), then one packed GEMM (gemm.h).
#pragma once

#include <cstdint>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::kernels {

/// PyTorch Conv2d(channels, C, kernel p, stride p) on image [channels][H][W]:
/// out[py·gw + px][c] = bias[c] + pos[py·gw + px][c] + Σ weight[c][ch][r][s]
/// · image[ch][py·p + r][px·p + s], with gh = H / p and gw = W / p (the
/// remainder is ignored, as Conv2d does). Patches are row-major; weight is
/// [C][channels][p][p]; pos ([gh·gw][C]) may be null. out must not overlap
/// the inputs.
void patchEmbed(const float *image, int64_t channels, int64_t H, int64_t W,
                int64_t p, const float *weight, int64_t C, const float *bias,
                const float *pos, float *out, fm::rt::ThreadPool *pool);

/// Conv2d(Cin, Cout, 3, stride 1, padding 1) on a channels-last grid:
/// y[t][o] = bias[o] + Σ weight[o][i][dy][dx] · x[(gy + dy − 1)·gw + gx + dx
/// − 1][i] over the taps inside the gh × gw grid (t = gy·gw + gx). x is
/// [gh·gw][Cin], weight [Cout][Cin][3][3], bias [Cout] (may be null), y
/// [gh·gw][Cout]. The unfolded rows (gh·gw × 9·Cin floats) live in a buffer
/// of the calling thread that is kept for the next call.
void conv3x3(const float *x, int64_t gh, int64_t gw, int64_t Cin,
             const float *weight, int64_t Cout, const float *bias, float *y,
             fm::rt::ThreadPool *pool);

/// The unfold of conv3x3: cols[t][i·9 + dy·3 + dx] = x[(gy + dy − 1)·gw +
/// gx + dx − 1][i] (0 outside the grid), the column order of
/// weight.reshape(Cout, Cin·9); cols holds gh·gw × 9·Cin floats. For
/// weights in other formats than f32, multiplied by a matmul kernel.
void conv3x3Unfold(const float *x, int64_t gh, int64_t gw, int64_t Cin,
                   float *cols, fm::rt::ThreadPool *pool);

/// The adapter's average pooling of x [g·g][D] (channels last) to
/// [gOut·gOut][D]: stride s = g / gOut, kernel k = g − (gOut − 1)·s, so the
/// last window ends at the grid's edge; out token (oy, ox) is the mean of
/// the k × k tokens from (oy·s, ox·s). Requires 1 <= gOut <= g.
void adapterAvgPool(const float *x, int64_t g, int64_t D, int64_t gOut,
                    float *y, fm::rt::ThreadPool *pool);

/// The stride and kernel of adapterAvgPool.
inline int64_t adapterPoolStride(int64_t g, int64_t gOut) { return g / gOut; }
inline int64_t adapterPoolKernel(int64_t g, int64_t gOut) {
  return g - (gOut - 1) * adapterPoolStride(g, gOut);
}

} // namespace fm::kernels
