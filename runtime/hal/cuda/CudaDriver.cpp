// Loads the CUDA driver API (CudaDriver.h) with dlopen and dlsym.
#include "hal/cuda/CudaDriver.h"

#include <dlfcn.h>
#include <atomic>
#include <mutex>

namespace fm::hal::cuda {
namespace {

struct Loaded {
  DriverApi api{};
  Status status;
};

template <typename F> bool bind(void *lib, const char *symbol, F &fn,
                                std::string &missing) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!fn)
    missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  return fn != nullptr;
}

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
  bind(lib, "cuInit", a.cuInit, missing);
  bind(lib, "cuDriverGetVersion", a.cuDriverGetVersion, missing);
  bind(lib, "cuGetErrorName", a.cuGetErrorName, missing);
  bind(lib, "cuGetErrorString", a.cuGetErrorString, missing);
  bind(lib, "cuDeviceGetCount", a.cuDeviceGetCount, missing);
  bind(lib, "cuDeviceGet", a.cuDeviceGet, missing);
  bind(lib, "cuDeviceGetName", a.cuDeviceGetName, missing);
  bind(lib, "cuDeviceGetAttribute", a.cuDeviceGetAttribute, missing);
  bind(lib, "cuDeviceTotalMem_v2", a.cuDeviceTotalMem, missing);
  bind(lib, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain, missing);
  bind(lib, "cuDevicePrimaryCtxRelease_v2", a.cuDevicePrimaryCtxRelease,
       missing);
  bind(lib, "cuCtxSetCurrent", a.cuCtxSetCurrent, missing);
  bind(lib, "cuCtxSynchronize", a.cuCtxSynchronize, missing);
  bind(lib, "cuMemAlloc_v2", a.cuMemAlloc, missing);
  bind(lib, "cuMemFree_v2", a.cuMemFree, missing);
  bind(lib, "cuMemsetD8_v2", a.cuMemsetD8, missing);
  bind(lib, "cuMemcpyHtoD_v2", a.cuMemcpyHtoD, missing);
  bind(lib, "cuMemcpyDtoH_v2", a.cuMemcpyDtoH, missing);
  bind(lib, "cuMemcpyHtoDAsync_v2", a.cuMemcpyHtoDAsync, missing);
  bind(lib, "cuMemcpyDtoDAsync_v2", a.cuMemcpyDtoDAsync, missing);
  bind(lib, "cuModuleLoadDataEx", a.cuModuleLoadDataEx, missing);
  bind(lib, "cuModuleUnload", a.cuModuleUnload, missing);
  bind(lib, "cuModuleGetFunction", a.cuModuleGetFunction, missing);
  bind(lib, "cuLaunchKernel", a.cuLaunchKernel, missing);
  bind(lib, "cuStreamCreate", a.cuStreamCreate, missing);
  bind(lib, "cuStreamDestroy_v2", a.cuStreamDestroy, missing);
  bind(lib, "cuStreamSynchronize", a.cuStreamSynchronize, missing);
  bind(lib, "cuEventCreate", a.cuEventCreate, missing);
  bind(lib, "cuEventDestroy_v2", a.cuEventDestroy, missing);
  bind(lib, "cuEventRecord", a.cuEventRecord, missing);
  bind(lib, "cuEventSynchronize", a.cuEventSynchronize, missing);
  bind(lib, "cuEventElapsedTime", a.cuEventElapsedTime, missing);
  // The graph entry points (cuGraphExecUpdate_v2: CUDA 12+): without them
  // hasGraphs() is false and every segment launches directly.
  std::string optional;
  bind(lib, "cuStreamBeginCapture_v2", a.cuStreamBeginCapture, optional);
  bind(lib, "cuStreamEndCapture", a.cuStreamEndCapture, optional);
  bind(lib, "cuGraphInstantiateWithFlags", a.cuGraphInstantiate, optional);
  bind(lib, "cuGraphExecUpdate_v2", a.cuGraphExecUpdate, optional);
  bind(lib, "cuGraphLaunch", a.cuGraphLaunch, optional);
  bind(lib, "cuGraphDestroy", a.cuGraphDestroy, optional);
  bind(lib, "cuGraphExecDestroy", a.cuGraphExecDestroy, optional);
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

Expected<const DriverApi *> driver() {
  if (const DriverApi *api = gTestDriver.load())
    return api;
  static Loaded *loaded = nullptr;
  static std::once_flag once;
  std::call_once(once, [] { loaded = new Loaded(load()); }); // never freed
  if (!loaded->status)
    return loaded->status;
  return &loaded->api;
}

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
