// The CUDA block emulator's driver side: a DriverApi table whose device is
// this machine. Memory is host memory, a stream runs its work when it is
// issued, CUDA graphs are captured, instantiated, updated and replayed, and a
// kernel launch runs the kernel's own source compiled for the host
// (cuda_emu.h; the kernels of runtime/hal/cuda/kernels register themselves
// by name, as the PTX modules name them).
#pragma once

#include "fm/communicator.h"
#include "hal/cuda/CudaDriver.h"

#include <cstdint>

namespace fm_cuda_emu {

/// The emulated driver (one sm_80 device). Lives as long as the process.
const fm::hal::cuda::DriverApi &driver();

/// Where FM_CUDA_EMULATE is set (runtime.cuda.emulated), makes the
/// process's CUDA driver the emulated one (setDriverForTests), so that
/// CudaDevice::open and the registry's "cuda" open on it; true if it did.
bool installIfAsked();

/// Makes the process's NCCL (setNcclForTests) an emulated one over the
/// emulated device's memory whose ranks are those of `ranks` (the test's
/// MPI world): ncclCommInitRank checks its rank and size against them, and
/// an all-reduce is `ranks.allReduceSum` on the floats in place, run when
/// the stream reaches it (captured into a graph like a kernel, replayed
/// with it). Null: the process's NCCL again. `ranks` must outlive every
/// communicator made meanwhile.
void installNccl(fm::Communicator *ranks);

/// Counters since the process started, for tests.
struct Counts {
  int64_t launches = 0;      // kernels run (directly or in a replayed graph)
  int64_t graphLaunches = 0; // graphs replayed
  int64_t threads = 0;       // CUDA threads run, over all blocks
  int64_t streamSyncs = 0;   // cuStreamSynchronize calls
  int64_t ncclAllReduces = 0; // emulated ncclAllReduce run (not recorded)
  int64_t ncclFloats = 0;     // the floats they summed
  int64_t dtoh = 0, htod = 0; // synchronous copies (cuMemcpyDtoH, cuMemcpyHtoD)
};
Counts counts();

} // namespace fm_cuda_emu
