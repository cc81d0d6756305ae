// The embedding gather of the CUDA device: out[r] = table[tokens[r]] for a
// table stored f32, f16 or in a packed low-bit format (qformat.h), unpacked
// per looked-up row. One block per token; not hot (once per token), so the
// format is a run-time argument.
#include "common.cuh"

/// kind: 0 f32, 1 f16, 2 packed (bits, group, affine as in qformat.h).
extern "C" __global__ void __launch_bounds__(256)
    fm_embed(const uint8_t *table, int64_t rowBytes, int kind, int bits,
             int group, int affine, const int32_t *tokens, float *out,
             int64_t outStride, int width) {
  const uint8_t *row = table + int64_t(tokens[blockIdx.x]) * rowBytes;
  float *o = out + blockIdx.x * outStride;
  if (kind == 0) {
    const float *r = reinterpret_cast<const float *>(row);
    for (int c = threadIdx.x; c < width; c += blockDim.x)
      o[c] = r[c];
    return;
  }
  if (kind == 1) {
    const uint16_t *r = reinterpret_cast<const uint16_t *>(row);
    for (int c = threadIdx.x; c < width; c += blockDim.x)
      o[c] = fm_cuda::halfBitsToFloat(r[c]);
    return;
  }
  const int unit = group < 64 ? group : 64;
  const int unitBytes = unit * bits / 8, mask = (1 << bits) - 1;
  const uint16_t *scales =
      reinterpret_cast<const uint16_t *>(row + int64_t(width) * bits / 8);
  const uint16_t *mins = scales + width / group;
  const float center = affine ? 0.0f : ((1 << bits) - 1) * 0.5f;
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    const int u = c / unit, i = c % unit;
    const int j = i / unitBytes, byte = i % unitBytes;
    const int q = (row[u * unitBytes + byte] >> (bits * j)) & mask;
    const int g = c / group;
    const float s = fm_cuda::halfBitsToFloat(scales[g]);
    o[c] = affine ? float(q) * s + fm_cuda::halfBitsToFloat(mins[g])
                  : (float(q) - center) * s;
  }
}
