// Device helpers shared by the hand-written CUDA kernels: f16 bits to f32,
// warp reductions, the dp4a instruction. Written as inline PTX so that the
// kernels need only clang's CUDA mode, not cuda_fp16.h or nvcc. Compiled
// for the host instead (FM_CUDA_EMU: the block emulator of
// test/unit/cuda/emu), the PTX is replaced by the emulator's equivalents.
#pragma once

#include <stdint.h>

namespace fm_cuda {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float halfBitsToFloat(uint16_t h) {
#ifdef FM_CUDA_EMU
  return fm_cuda_emu::halfToFloat(h);
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#endif
}

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

/// Sum over the four byte products of a (unsigned bytes) and b (signed
/// bytes), plus c: PTX dp4a.u32.s32 (sm_61 and newer).
__device__ __forceinline__ int dp4a(uint32_t a, int32_t b, int32_t c) {
#ifdef FM_CUDA_EMU
  for (int i = 0; i < 4; ++i)
    c += int(uint8_t(a >> (8 * i))) * int(int8_t(uint32_t(b) >> (8 * i)));
  return c;
#else
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#endif
}

/// Sum over all threads of a block of `blockDim.x` (a multiple of 32, at
/// most 1024); every thread gets the result. `shared` holds 32 floats.
__device__ __forceinline__ float blockSum(float v, float *shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warpSum(v);
  __syncthreads(); // shared may still be read by a previous call
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  v = lane < warps ? shared[lane] : 0.0f;
  return warpSum(v);
}

} // namespace fm_cuda
