// The CUDA block emulator's kernel side: what runtime/hal/cuda/kernels/*.cu
// use of CUDA, defined for a host C++ compile (-DFM_CUDA_EMU, this header
// first), so that the kernels' own source runs on this machine, which has no
// GPU. Each CUDA thread of a block is a fiber of the launching thread; the
// blocks of a grid run one after another (so `__shared__` is a static);
// __syncthreads and the
// warp intrinsics (shuffle, vote, mma.sync m16n8k16) meet at barriers that
// count only the threads still in the block (CudaEmu.cpp).
//
// What it checks: the kernels' indexing, arithmetic, shared-memory and
// barrier use, against the CPU kernels (test/unit/cuda, runtime.cuda.emulated).
// What it cannot: PTX codegen, the memory model of a real GPU, warp
// divergence inside a shuffle, speed.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>
#include <stdint.h>
#include <utility>

namespace fm_cuda_emu {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};
extern thread_local Dim3 tThreadIdx, tBlockIdx, tBlockDim, tGridDim;

/// __syncthreads; __syncthreads_or (every thread gets the OR).
void syncThreads();
bool syncThreadsOr(bool predicate);
/// __any_sync over the calling thread's warp.
bool warpAny(bool predicate);
/// Every lane of the warp offers `value`; returns the value lane `from`
/// offered (a lane past the warp's last reads its own).
uint64_t warpExchange(uint64_t value, unsigned from);
unsigned laneId();

template <class T> T shflXor(T v, int laneMask) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "one slot per lane");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = warpExchange(bits, laneId() ^ unsigned(laneMask));
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

/// IEEE binary16 bits to f32, and f32 to binary16 rounded to nearest even.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);

/// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 over the warp: c += a·b
/// with the PTX ISA fragment layouts (kernels/gemm.cu's header).
void mma16816(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);

} // namespace fm_cuda_emu

struct uint2 {
  uint32_t x, y;
};
struct uint4 {
  uint32_t x, y, z, w;
};

#ifndef FM_CUDA_EMU_NO_MACROS // CudaEmu.cpp, which includes more after this
// After every system header: glibc and libstdc++ spell attributes that
// these names would break.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static
#define threadIdx (fm_cuda_emu::tThreadIdx)
#define blockIdx (fm_cuda_emu::tBlockIdx)
#define blockDim (fm_cuda_emu::tBlockDim)
#define gridDim (fm_cuda_emu::tGridDim)
#define __syncthreads() fm_cuda_emu::syncThreads()
#define __syncthreads_or(p) fm_cuda_emu::syncThreadsOr(p)
#define __any_sync(mask, p) fm_cuda_emu::warpAny(p)
#define __shfl_xor_sync(mask, v, o) fm_cuda_emu::shflXor(v, o)

template <class T> inline T __ldg(const T *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
inline float __expf(float x) { return expf(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
#endif

/// Registers kernel `fn` of the emulated modules under its own name.
namespace fm_cuda_emu {
using Thunk = void (*)(void *fn, void **args);
int registerKernel(const char *name, void *fn, Thunk thunk, const unsigned *argBytes,
                   int numArgs);

template <class... A, size_t... I>
void callWith(void (*f)(A...), void **args, std::index_sequence<I...>) {
  f(*static_cast<A *>(args[I])...);
}
template <class... A> void thunkOf(void *fn, void **args) {
  callWith(reinterpret_cast<void (*)(A...)>(fn), args, std::index_sequence_for<A...>{});
}
template <class... A> int registerKernel(const char *name, void (*f)(A...)) {
  static const unsigned bytes[sizeof...(A) + 1] = {unsigned(sizeof(A))..., 0u};
  return registerKernel(name, reinterpret_cast<void *>(f), &thunkOf<A...>, bytes,
                        int(sizeof...(A)));
}
} // namespace fm_cuda_emu

#define FM_EMU_KERNEL(name)                                                          \
  [[maybe_unused]] static const int fm_emu_registered_##name =                     \
      fm_cuda_emu::registerKernel(#name, &name);
