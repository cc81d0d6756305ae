// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"), so
// that the runtime builds and runs on machines without CUDA: the few types
// and entry points the CUDA device uses, declared here (ABI of cuda.h,
// CUDA 12 and 13; no CUDA header is needed to build).
#pragma once

#include "fm/status.h"

#include <cstdint>
#include <string>

namespace fm::hal::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;
using CUgraphNode = struct CUgraphNode_st *;
/// cuGraphExecUpdate_v2's result (cuda.h CUgraphExecUpdateResultInfo_v1).
struct CUgraphExecUpdateResultInfo {
  int result;
  CUgraphNode errorNode, errorFromNode;
};
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;

constexpr CUresult CUDA_SUCCESS = 0;
// CUdevice_attribute values (cuda.h).
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36; // kHz
constexpr int CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37; // bits
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
// CUjit_option values (cuda.h) for cuModuleLoadDataEx's error log.
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

/// The driver's entry points (the versioned symbols cuda.h maps to).
struct DriverApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);           // _v2
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);            // _v2
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);              // _v2
  CUresult (*cuMemFree)(CUdeviceptr);                         // _v2
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t); // _v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t); // _v2
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);       // _v2
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t,
                                CUstream);                     // _v2
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t,
                                CUstream);                     // _v2
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                                 void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream); // _v2
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent); // _v2
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  // CUDA graphs (CudaGraph.h), optional: null where the driver lacks one,
  // and then the launches run directly.
  CUresult (*cuStreamBeginCapture)(CUstream, int);          // _v2
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
  CUresult (*cuGraphInstantiate)(CUgraphExec *, CUgraph,
                                 unsigned long long);       // WithFlags
  CUresult (*cuGraphExecUpdate)(CUgraphExec, CUgraph,
                                CUgraphExecUpdateResultInfo *); // _v2
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphDestroy)(CUgraph);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  bool hasGraphs() const {
    return cuStreamBeginCapture && cuStreamEndCapture && cuGraphInstantiate &&
           cuGraphExecUpdate && cuGraphLaunch && cuGraphDestroy && cuGraphExecDestroy;
  }
};

/// The process's driver: loaded and cuInit'ed once, on first use, and
/// never unloaded. An error says why there is none ("no CUDA driver here
/// (libcuda.so.1: cannot open shared object file...)", "cuInit failed:
/// CUDA_ERROR_NO_DEVICE ...").
Expected<const DriverApi *> driver();

/// Makes driver() return `api` from now on (null: the process's libcuda
/// again), so that the device registry and `LoadOptions::device = "cuda"`
/// open on it: the tests' CUDA emulator (test/unit/cuda/emu). `api` must
/// outlive every device opened on it.
void setDriverForTests(const DriverApi *api);

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for an error code.
std::string errorText(const DriverApi &api, CUresult r);

/// `what` failed: ok for CUDA_SUCCESS, else "cuda: WHAT: <errorText>".
Status check(const DriverApi &api, CUresult r, const char *what);

} // namespace fm::hal::cuda
