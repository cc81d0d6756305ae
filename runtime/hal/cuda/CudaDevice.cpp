// The CUDA device (CudaDevice.h): opening, memory, queues, the registry's
// probe; its kernels are in CudaKernels.cpp.
#include "hal/cuda/CudaDevice.h"

#include "hal/cuda/CudaExecutable.h"
#include "hal/cuda/CudaPtx.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace fm::hal::cuda {

CudaBuffer::CudaBuffer(const DriverApi &api, CUdeviceptr ptr, uint64_t bytes)
    : Buffer(bytes, MemorySpace::Device, nullptr), api_(api), ptr_(ptr) {}

CudaBuffer::~CudaBuffer() {
  if (ptr_)
    api_.cuMemFree(ptr_);
}

CUdeviceptr devicePtr(const Buffer *buffer, uint64_t offset) {
  return static_cast<const CudaBuffer *>(buffer)->ptr() + offset;
}

CudaQueue::CudaQueue(CudaDevice &device, CUstream stream, bool graphs)
    : device_(device), stream_(stream), recorder_(device.api(), graphs) {
  std::lock_guard<std::mutex> lock(device_.queuesMutex_);
  device_.queues_.push_back(this);
}

CudaQueue::~CudaQueue() {
  {
    std::lock_guard<std::mutex> lock(device_.queuesMutex_);
    auto &queues = device_.queues_;
    queues.erase(std::remove(queues.begin(), queues.end(), this), queues.end());
  }
  // A segment still pending belongs to a run that failed: dropped.
  if (device_.enter())
    device_.api().cuStreamDestroy(stream_);
}

void CudaQueue::runConcurrently(int64_t n,
                                const std::function<void(int64_t)> &fn) {
  for (int64_t i = 0; i < n; ++i)
    fn(i);
}

Status CudaQueue::enter() const { return device_.enter(); }

Queue::LaunchCounts CudaQueue::launchCounts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {recorder_.graphLaunches(), recorder_.directLaunches()};
}

void CudaQueue::launch(CUfunction fn, Dim3 grid, Dim3 block, const uint64_t *args,
                       int numArgs) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    return; // nothing to do (e.g. 0 rows)
  const unsigned g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
  std::lock_guard<std::mutex> lock(mutex_);
  recorder_.recordLaunch(fn, g, b, args, numArgs);
}

void CudaQueue::copy(CUdeviceptr dst, CUdeviceptr src, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  recorder_.recordCopy(dst, src, bytes);
}

void CudaQueue::allReduce(const NcclComm &comm, CUdeviceptr data, uint64_t count) {
  if (count == 0)
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  recorder_.recordAllReduce(comm, data, count);
}

Status CudaQueue::submit() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (recorder_.empty())
    return Status::ok();
  // From whichever thread submits (the device's upload may be another's).
  FM_RETURN_IF_ERROR(device_.enter());
  return recorder_.submit(stream_);
}

Status CudaQueue::synchronize(const char *what) {
  FM_RETURN_IF_ERROR(submit());
  const DriverApi &api = device_.api();
  return check(api, api.cuStreamSynchronize(stream_),
               ("cuStreamSynchronize (" + std::string(what) + ")").c_str());
}

Status CudaQueue::copyFromHost(CUdeviceptr dst, const void *src, uint64_t bytes,
                               const char *what) {
  FM_RETURN_IF_ERROR(submit());
  const DriverApi &api = device_.api();
  return check(api, api.cuMemcpyHtoDAsync(dst, src, bytes, stream_),
               ("cuMemcpyHtoDAsync (" + std::string(what) + ")").c_str());
}

namespace {

std::string deviceName(const DriverApi &api, CUdevice dev) {
  char name[256] = {};
  if (api.cuDeviceGetName(name, sizeof(name) - 1, dev) != CUDA_SUCCESS)
    return "unnamed GPU";
  return name;
}

int attribute(const DriverApi &api, CUdevice dev, int attr) {
  int v = 0;
  if (api.cuDeviceGetAttribute(&v, attr, dev) != CUDA_SUCCESS)
    return 0;
  return v;
}

// The PTX targets sm_80 (kernels/*.cu): older GPUs cannot run it.
constexpr int kMinSm = 80;

struct Found {
  const DriverApi *api = nullptr;
  CUdevice dev = 0;
  std::string description;
  int sm = 0;
  Status status;
};

Found find(const DriverApi &api, int ordinal) {
  Found f;
  f.api = &api;
  int count = 0;
  if (CUresult r = f.api->cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
    f.status = Status::error("cuDeviceGetCount failed: " + errorText(*f.api, r));
    return f;
  }
  if (ordinal >= count) {
    f.status = Status::error(count == 0 ? std::string("no CUDA device")
                                        : "no CUDA device " +
                                              std::to_string(ordinal) + " (" +
                                              std::to_string(count) + " found)");
    return f;
  }
  if (CUresult r = f.api->cuDeviceGet(&f.dev, ordinal); r != CUDA_SUCCESS) {
    f.status = Status::error("cuDeviceGet failed: " + errorText(*f.api, r));
    return f;
  }
  f.sm = 10 * attribute(*f.api, f.dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) +
         attribute(*f.api, f.dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  size_t mem = 0;
  f.api->cuDeviceTotalMem(&mem, f.dev);
  char line[384];
  std::snprintf(line, sizeof(line), "cuda (%s, sm_%d, %d SMs, %.0f GiB)",
                deviceName(*f.api, f.dev).c_str(), f.sm,
                attribute(*f.api, f.dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                double(mem) / double(1ull << 30));
  f.description = line;
  if (f.sm < kMinSm)
    f.status = Status::error(f.description + " is older than sm_" +
                             std::to_string(kMinSm) +
                             ", which the CUDA kernels need");
  return f;
}

} // namespace

fm::DeviceInfo probe() {
  fm::DeviceInfo info;
  info.name = "cuda";
  info.builtIn = true;
  auto api = driver();
  if (!api) {
    info.description = api.message();
    return info;
  }
  Found f = find(**api, 0);
  if (!f.status) {
    info.description = f.status.message();
    return info;
  }
  info.present = info.hardware = true;
  info.description = f.description;
  return info;
}

Expected<int> defaultOrdinal(int count, const std::function<const char *(const char *)> &env) {
  auto parse = [](const char *text, int &out) {
    char *end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < 0 || v > 1 << 20)
      return false;
    out = int(v);
    return true;
  };
  if (const char *asked = env("FM_CUDA_DEVICE")) {
    int ordinal = 0;
    if (!parse(asked, ordinal) || ordinal >= count)
      return Status::error("FM_CUDA_DEVICE='" + std::string(asked) +
                           "' is not a GPU ordinal below " + std::to_string(count) +
                           " (the GPUs found)");
    return ordinal;
  }
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char *rank = env(name)) {
      int r = 0;
      if (parse(rank, r) && count > 0)
        return r % count;
    }
  return 0;
}

Expected<std::unique_ptr<CudaDevice>> CudaDevice::openDefault(const CudaOptions &options) {
  auto api = driver();
  if (!api)
    return api.status();
  int count = 0;
  if (CUresult r = (*api)->cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return Status::error("cuDeviceGetCount failed: " + errorText(**api, r));
  auto ordinal = defaultOrdinal(count, [](const char *name) { return std::getenv(name); });
  if (!ordinal)
    return ordinal.status();
  return openOn(**api, *ordinal, options);
}

Expected<std::unique_ptr<CudaDevice>> CudaDevice::open(int ordinal,
                                                       const CudaOptions &options) {
  auto api = driver();
  if (!api)
    return api.status();
  return openOn(**api, ordinal, options);
}

Expected<std::unique_ptr<CudaDevice>>
CudaDevice::openOn(const DriverApi &api, int ordinal, const CudaOptions &options) {
  Found f = find(api, ordinal);
  if (!f.status)
    return f.status;
  CUcontext ctx = nullptr;
  FM_RETURN_IF_ERROR(check(api, api.cuDevicePrimaryCtxRetain(&ctx, f.dev),
                           "cuDevicePrimaryCtxRetain"));
  std::unique_ptr<CudaDevice> d(new CudaDevice(api, f.dev, ctx, options));
  d->description_ = f.description;
  d->sm_ = f.sm;
  // DDR: two transfers per clock; kHz * bits / 8 * 2 = bytes/ms.
  d->peakGBps_ =
      2.0 * attribute(api, f.dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) * 1e3 *
      attribute(api, f.dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH) / 8.0 /
      1e9;
  FM_RETURN_IF_ERROR(d->enter());
  for (size_t i = 0; i < kNumPtxModules; ++i) {
    char log[8192] = {};
    int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log) - 1))};
    CUmodule module = nullptr;
    CUresult r = api.cuModuleLoadDataEx(&module, kPtxModules[i].ptx, 2, options,
                                        values);
    if (r != CUDA_SUCCESS)
      return Status::error(std::string("cuda: loading the PTX of kernels/") +
                           kPtxModules[i].name + ".cu failed: " +
                           errorText(api, r) + (log[0] ? ": " : "") + log);
    d->modules_.push_back(module);
  }
  return d;
}

CudaDevice::CudaDevice(const DriverApi &api, CUdevice dev, CUcontext ctx,
                       const CudaOptions &options)
    : api_(api), dev_(dev), ctx_(ctx), options_(options) {}

CudaDevice::~CudaDevice() {
  if (enter()) {
    nccl_.clear(); // ncclCommDestroy while the context lives
    for (CUmodule m : modules_)
      api_.cuModuleUnload(m);
  }
  api_.cuDevicePrimaryCtxRelease(dev_);
}

uint32_t CudaDevice::collectiveCapabilities() const {
  return nccl().isOk() ? kNcclCollectives : 0u;
}

Status CudaDevice::useCollectives(Communicator &ranks, uint32_t common) {
  std::lock_guard<std::mutex> lock(ncclMutex_);
  if (nccl_.count(&ranks))
    return Status::ok(); // an earlier session over the same ranks agreed alike
  NcclEntry e;
  if (common & kNcclCollectives) {
    FM_RETURN_IF_ERROR(enter());
    auto made = NcclComm::create(ranks);
    if (!made)
      return made.status();
    e.comm = std::move(*made);
  } else {
    auto mine = nccl();
    e.why = mine ? "a rank has no NCCL or no CUDA device" : mine.message();
    if (ranks.rank() == 0)
      std::fprintf(stderr, "fm: cuda: the all-reduce of %d ranks is staged through the host "
                           "(%s)\n",
                   ranks.size(), e.why.c_str());
  }
  nccl_.emplace(&ranks, std::move(e));
  return Status::ok();
}

const NcclComm *CudaDevice::ncclFor(const Communicator &ranks, std::string *why) {
  std::lock_guard<std::mutex> lock(ncclMutex_);
  auto it = nccl_.find(&ranks);
  if (it == nccl_.end()) {
    if (why)
      *why = "the ranks made no agreement (hal::agreeCollectives)";
    return nullptr;
  }
  if (why)
    *why = it->second.why;
  return it->second.comm.get();
}

Status CudaDevice::enter() const {
  return check(api_, api_.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
}

Expected<CUfunction> CudaDevice::function(const char *name) const {
  for (CUmodule m : modules_) {
    CUfunction fn = nullptr;
    if (api_.cuModuleGetFunction(&fn, m, name) == CUDA_SUCCESS)
      return fn;
  }
  return Status::error(std::string("cuda: no kernel '") + name +
                       "' in the embedded PTX");
}

void CudaDevice::launch(CUfunction fn, Dim3 grid, Dim3 block, const LaunchParams &params,
                        CudaQueue &queue) const {
  queue.launch(fn, grid, block, params.values(), params.size());
}

Status CudaDevice::submitQueues() {
  std::lock_guard<std::mutex> lock(queuesMutex_);
  for (CudaQueue *q : queues_)
    FM_RETURN_IF_ERROR(q->submit());
  return Status::ok();
}

Expected<std::unique_ptr<CudaBuffer>> CudaDevice::allocateDevice(uint64_t bytes) {
  FM_RETURN_IF_ERROR(enter());
  CUdeviceptr ptr = 0;
  // cuMemAlloc refuses 0 bytes: an empty buffer has no pointer.
  if (bytes) {
    if (CUresult r = api_.cuMemAlloc(&ptr, bytes); r != CUDA_SUCCESS)
      return Status::error("cuda: cannot allocate " + std::to_string(bytes) +
                           " bytes of device memory: " + errorText(api_, r));
    if (CUresult r = api_.cuMemsetD8(ptr, 0, bytes); r != CUDA_SUCCESS) {
      api_.cuMemFree(ptr);
      return Status::error("cuda: cuMemsetD8: " + errorText(api_, r));
    }
  }
  return std::make_unique<CudaBuffer>(api_, ptr, bytes);
}

Expected<std::unique_ptr<Buffer>> CudaDevice::allocate(uint64_t bytes,
                                                       MemorySpace space) {
  (void)space; // Every buffer of this device is device memory.
  auto b = allocateDevice(bytes);
  if (!b)
    return b.status();
  return std::unique_ptr<Buffer>(std::move(*b));
}

namespace {
Status inRange(const Buffer &buffer, uint64_t offset, uint64_t bytes,
               const char *what) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    return Status::error(std::string("cuda: ") + what + " of " +
                         std::to_string(bytes) + " bytes at " +
                         std::to_string(offset) +
                         " is outside a buffer of " +
                         std::to_string(buffer.size()));
  return Status::ok();
}
} // namespace

// The synchronous copies run on the legacy stream, which waits for the work
// of the blocking streams: but only for the work that reached them, so
// every queue's recorded segment is submitted first.
Status CudaDevice::upload(Buffer &buffer, uint64_t offset, const void *data,
                          uint64_t bytes) {
  FM_RETURN_IF_ERROR(inRange(buffer, offset, bytes, "upload"));
  if (!bytes)
    return Status::ok();
  FM_RETURN_IF_ERROR(enter());
  FM_RETURN_IF_ERROR(submitQueues());
  return check(api_, api_.cuMemcpyHtoD(devicePtr(&buffer, offset), data, bytes),
               "cuMemcpyHtoD");
}

Status CudaDevice::download(const Buffer &buffer, uint64_t offset, void *data,
                            uint64_t bytes) {
  FM_RETURN_IF_ERROR(inRange(buffer, offset, bytes, "download"));
  if (!bytes)
    return Status::ok();
  FM_RETURN_IF_ERROR(enter());
  FM_RETURN_IF_ERROR(submitQueues());
  return check(api_, api_.cuMemcpyDtoH(data, devicePtr(&buffer, offset), bytes),
               "cuMemcpyDtoH");
}

Expected<std::unique_ptr<Buffer>> CudaDevice::importWeights(const uint8_t *data,
                                                            uint64_t bytes) {
  auto b = allocateDevice(bytes);
  if (!b)
    return b.status();
  if (bytes)
    FM_RETURN_IF_ERROR(upload(**b, 0, data, bytes));
  return std::unique_ptr<Buffer>(std::move(*b));
}

Expected<std::unique_ptr<Executable>>
CudaDevice::loadExecutable(const artifact::Executable &executable,
                           const std::string &artifactName) {
  auto e = CudaExecutable::load(*this, executable, artifactName);
  if (!e)
    return e.status();
  return std::unique_ptr<Executable>(std::move(*e));
}

Expected<std::unique_ptr<Queue>>
CudaDevice::createQueue(const QueueOptions &) {
  FM_RETURN_IF_ERROR(enter());
  CUstream stream = nullptr;
  // Flags 0: a blocking stream, ordered with the synchronous copies.
  FM_RETURN_IF_ERROR(check(api_, api_.cuStreamCreate(&stream, 0),
                           "cuStreamCreate"));
  return std::unique_ptr<Queue>(new CudaQueue(*this, stream, options_.graphs));
}

} // namespace fm::hal::cuda
