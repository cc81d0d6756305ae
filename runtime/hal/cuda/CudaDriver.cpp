// Loads the CUDA driver API (CudaDriver.h) with dlopen and dlsym.
#include "hal/cuda/CudaDriver.h"

#include "hal/cuda/DlLibrary.h"

namespace fm::hal::cuda {
namespace {

using Loaded = LoadedLibrary<DriverApi>;

Loaded load() {
  Loaded l;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    l.status = Status::error(std::string("no CUDA driver here (") +
                             (why ? why : "libcuda.so.1 not found") + ")");
    return l;
  }
  DriverApi &a = l.api;
  std::string missing;
  bindSymbol(lib, "cuInit", a.cuInit, missing);
  bindSymbol(lib, "cuDriverGetVersion", a.cuDriverGetVersion, missing);
  bindSymbol(lib, "cuGetErrorName", a.cuGetErrorName, missing);
  bindSymbol(lib, "cuGetErrorString", a.cuGetErrorString, missing);
  bindSymbol(lib, "cuDeviceGetCount", a.cuDeviceGetCount, missing);
  bindSymbol(lib, "cuDeviceGet", a.cuDeviceGet, missing);
  bindSymbol(lib, "cuDeviceGetName", a.cuDeviceGetName, missing);
  bindSymbol(lib, "cuDeviceGetAttribute", a.cuDeviceGetAttribute, missing);
  bindSymbol(lib, "cuDeviceTotalMem_v2", a.cuDeviceTotalMem, missing);
  bindSymbol(lib, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain, missing);
  bindSymbol(lib, "cuDevicePrimaryCtxRelease_v2", a.cuDevicePrimaryCtxRelease, missing);
  bindSymbol(lib, "cuCtxSetCurrent", a.cuCtxSetCurrent, missing);
  bindSymbol(lib, "cuCtxSynchronize", a.cuCtxSynchronize, missing);
  bindSymbol(lib, "cuMemAlloc_v2", a.cuMemAlloc, missing);
  bindSymbol(lib, "cuMemFree_v2", a.cuMemFree, missing);
  bindSymbol(lib, "cuMemsetD8_v2", a.cuMemsetD8, missing);
  bindSymbol(lib, "cuMemcpyHtoD_v2", a.cuMemcpyHtoD, missing);
  bindSymbol(lib, "cuMemcpyDtoH_v2", a.cuMemcpyDtoH, missing);
  bindSymbol(lib, "cuMemcpyHtoDAsync_v2", a.cuMemcpyHtoDAsync, missing);
  bindSymbol(lib, "cuMemcpyDtoDAsync_v2", a.cuMemcpyDtoDAsync, missing);
  bindSymbol(lib, "cuModuleLoadDataEx", a.cuModuleLoadDataEx, missing);
  bindSymbol(lib, "cuModuleUnload", a.cuModuleUnload, missing);
  bindSymbol(lib, "cuModuleGetFunction", a.cuModuleGetFunction, missing);
  bindSymbol(lib, "cuLaunchKernel", a.cuLaunchKernel, missing);
  bindSymbol(lib, "cuStreamCreate", a.cuStreamCreate, missing);
  bindSymbol(lib, "cuStreamDestroy_v2", a.cuStreamDestroy, missing);
  bindSymbol(lib, "cuStreamSynchronize", a.cuStreamSynchronize, missing);
  bindSymbol(lib, "cuEventCreate", a.cuEventCreate, missing);
  bindSymbol(lib, "cuEventDestroy_v2", a.cuEventDestroy, missing);
  bindSymbol(lib, "cuEventRecord", a.cuEventRecord, missing);
  bindSymbol(lib, "cuEventSynchronize", a.cuEventSynchronize, missing);
  bindSymbol(lib, "cuEventElapsedTime", a.cuEventElapsedTime, missing);
  // The graph entry points (cuGraphExecUpdate_v2: CUDA 12+): without them
  // hasGraphs() is false and every segment launches directly.
  std::string optional;
  bindSymbol(lib, "cuStreamBeginCapture_v2", a.cuStreamBeginCapture, optional);
  bindSymbol(lib, "cuStreamEndCapture", a.cuStreamEndCapture, optional);
  bindSymbol(lib, "cuGraphInstantiateWithFlags", a.cuGraphInstantiate, optional);
  bindSymbol(lib, "cuGraphExecUpdate_v2", a.cuGraphExecUpdate, optional);
  bindSymbol(lib, "cuGraphLaunch", a.cuGraphLaunch, optional);
  bindSymbol(lib, "cuGraphDestroy", a.cuGraphDestroy, optional);
  bindSymbol(lib, "cuGraphExecDestroy", a.cuGraphExecDestroy, optional);
  if (!missing.empty()) {
    l.status = Status::error("the CUDA driver libcuda.so.1 lacks " + missing +
                             " (too old a driver?)");
    return l;
  }
  if (CUresult r = a.cuInit(0); r != CUDA_SUCCESS)
    l.status = Status::error("cuInit failed: " + errorText(a, r));
  return l;
}

} // namespace

namespace {
std::atomic<const DriverApi *> gTestDriver{nullptr};
} // namespace

void setDriverForTests(const DriverApi *api) { gTestDriver.store(api); }

Expected<const DriverApi *> driver() { return loadOnce(gTestDriver, &load); }

std::string errorText(const DriverApi &api, CUresult r) {
  const char *name = nullptr, *text = nullptr;
  if (api.cuGetErrorName)
    api.cuGetErrorName(r, &name);
  if (api.cuGetErrorString)
    api.cuGetErrorString(r, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(r);
  if (text)
    s += std::string(" (") + text + ")";
  return s;
}

Status check(const DriverApi &api, CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return Status::ok();
  return Status::error(std::string("cuda: ") + what + ": " + errorText(api, r));
}

} // namespace fm::hal::cuda
