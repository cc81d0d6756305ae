// The CUDA block emulator's driver side: a DriverApi table whose device is
// this machine. Memory is host memory, a stream runs its work when it is
// issued, CUDA graphs are captured, instantiated, updated and replayed, and a
// kernel launch runs the kernel's own source compiled for the host
// (cuda_emu.h; the kernels of runtime/hal/cuda/kernels register themselves
// by name, as the PTX modules name them).
#pragma once

#include "hal/cuda/CudaDriver.h"

#include <cstdint>

namespace fm_cuda_emu {

/// The emulated driver (one sm_80 device). Lives as long as the process.
const fm::hal::cuda::DriverApi &driver();

/// Where FM_CUDA_EMULATE is set (runtime.cuda.emulated), makes the
/// process's CUDA driver the emulated one (setDriverForTests), so that
/// CudaDevice::open and the registry's "cuda" open on it; true if it did.
bool installIfAsked();

/// Counters since the process started, for tests.
struct Counts {
  int64_t launches = 0;      // kernels run (directly or in a replayed graph)
  int64_t graphLaunches = 0; // graphs replayed
  int64_t threads = 0;       // CUDA threads run, over all blocks
  int64_t streamSyncs = 0;   // cuStreamSynchronize calls
};
Counts counts();

} // namespace fm_cuda_emu
