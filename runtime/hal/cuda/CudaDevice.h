// The CUDA device: device memory, one stream per queue, the hand-written
// kernels (kernels/*.cu as embedded PTX, JIT-compiled by the driver when the
// device opens) and the generated ones (fmc --target cuda: the artifact's
// PTX, CudaExecutable.h) through the driver API loaded at run time
// (CudaDriver.h).
#pragma once

#include "fm/device_info.h"
#include "hal/Device.h"
#include "hal/cuda/CudaDriver.h"
#include "hal/cuda/CudaGraph.h"
#include "hal/cuda/Nccl.h"

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fm::hal::cuda {

class CudaDevice;

/// Device memory (cuMemAlloc), freed with the buffer.
class CudaBuffer final : public Buffer {
public:
  CudaBuffer(const DriverApi &api, CUdeviceptr ptr, uint64_t bytes);
  ~CudaBuffer() override;
  CudaBuffer(const CudaBuffer &) = delete;
  CudaBuffer &operator=(const CudaBuffer &) = delete;
  CUdeviceptr ptr() const { return ptr_; }

private:
  const DriverApi &api_;
  CUdeviceptr ptr_;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// A kernel's launch parameters, one 64-bit slot per argument (what
/// cuLaunchKernel's argument pointers point at). Lives on the stack of a
/// run; never copied.
class LaunchParams {
public:
  LaunchParams() = default;
  LaunchParams(const LaunchParams &) = delete;
  template <typename T> LaunchParams &add(T value) {
    static_assert(sizeof(T) <= sizeof(uint64_t), "one slot per argument");
    slots_[n_] = 0;
    std::memcpy(&slots_[n_], &value, sizeof(T));
    ++n_;
    return *this;
  }
  const uint64_t *values() const { return slots_; }
  int size() const { return n_; }

private:
  static constexpr int kMax = 16;
  uint64_t slots_[kMax];
  int n_ = 0;
};

/// What a CUDA device is opened with (hal::DeviceOptions, fm-run's flags).
struct CudaOptions {
  /// Replay each segment of a queue's launches as one CUDA graph
  /// (CudaGraph.h); false (fm-run --no-cuda-graph) launches every kernel
  /// directly.
  bool graphs = true;
};

/// A stream (blocking, so the synchronous copies of upload/download wait
/// for the kernels before them) and the recorder of its pending segment:
/// the kernels and device copies of a run are recorded, not launched, and
/// reach the stream when the segment is submitted (CudaGraph.h). Anything
/// that must come after them on the stream or see their results submits
/// first: a copy from the host (copyFromHost), a host synchronization
/// (synchronize, flush), the device's upload and download. Kernels of a
/// queue run in order; the device runs one track after another.
class CudaQueue final : public Queue {
public:
  CudaQueue(CudaDevice &device, CUstream stream, bool graphs);
  ~CudaQueue() override;
  int threads() const override { return 1; }
  void runConcurrently(int64_t n,
                       const std::function<void(int64_t)> &fn) override;
  /// The end of a program run: its segment submitted and waited for.
  Status flush() override { return synchronize("a program run"); }
  LaunchCounts launchCounts() const override;
  CUstream stream() const { return stream_; }
  /// Makes the device's context current on the calling thread.
  Status enter() const;

  /// Records a launch of `fn` (nothing for an empty grid, e.g. 0 rows).
  void launch(CUfunction fn, Dim3 grid, Dim3 block, const uint64_t *args, int numArgs);
  /// Records a device-to-device copy.
  void copy(CUdeviceptr dst, CUdeviceptr src, uint64_t bytes);
  /// Records an in-place sum of `count` floats at `data` across the ranks
  /// of `comm` (ncclAllReduce on the stream).
  void allReduce(const NcclComm &comm, CUdeviceptr data, uint64_t count);
  /// Puts the pending segment on the stream (as one graph or directly).
  Status submit();
  /// Submits, then waits for the stream; an error names `what` waited
  /// ("cuda: cuStreamSynchronize (MoE router logits): ...").
  Status synchronize(const char *what);
  /// An asynchronous copy from host memory, after the pending segment on
  /// the stream (it is not recorded: a graph cannot hold a copy from
  /// pageable memory, whose contents change per run).
  Status copyFromHost(CUdeviceptr dst, const void *src, uint64_t bytes, const char *what);

private:
  CudaDevice &device_;
  CUstream stream_;
  // Guards the recorder: the device's upload and download, on whatever
  // thread calls them, submit every queue's pending segment.
  mutable std::mutex mutex_;
  GraphRecorder recorder_;
};

class CudaDevice final : public Device {
public:
  /// Opens GPU `ordinal`: its primary context and the kernel modules.
  static Expected<std::unique_ptr<CudaDevice>> open(int ordinal = 0,
                                                    const CudaOptions &options = {});
  /// open() on defaultOrdinal's GPU.
  static Expected<std::unique_ptr<CudaDevice>> openDefault(const CudaOptions &options = {});
  /// open() on the driver table `api` instead of the process's libcuda
  /// (the tests' fake driver, test/unit/cuda/graph_test.cpp); `api` must
  /// outlive the device.
  static Expected<std::unique_ptr<CudaDevice>>
  openOn(const DriverApi &api, int ordinal = 0, const CudaOptions &options = {});
  ~CudaDevice() override;

  const std::string &name() const override { return name_; }
  const std::string &target() const override { return name_; }
  std::string description() const override { return description_; }

  Expected<std::unique_ptr<Buffer>> allocate(uint64_t bytes,
                                             MemorySpace space) override;
  Status upload(Buffer &buffer, uint64_t offset, const void *data,
                uint64_t bytes) override;
  Status download(const Buffer &buffer, uint64_t offset, void *data,
                  uint64_t bytes) override;
  Expected<std::unique_ptr<Buffer>> importWeights(const uint8_t *data,
                                                  uint64_t bytes) override;
  bool readsLayout(const std::string &layout) const override {
    return layout.empty();
  }
  Expected<std::unique_ptr<Executable>>
  loadExecutable(const artifact::Executable &executable,
                 const std::string &artifactName) override;
  Expected<std::unique_ptr<Queue>>
  createQueue(const QueueOptions &options) override;

  Expected<std::unique_ptr<Kernel>> prepareEmbed(const EmbedDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareMatmul(const MatmulDesc &) override;
  Expected<std::unique_ptr<Kernel>>
  prepareAttention(const AttentionDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareMoe(const MoeDesc &) override;
  Expected<std::unique_ptr<Kernel>>
  prepareDispatch(const DispatchDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareCopyRow(const CopyRowDesc &) override;
  Expected<std::unique_ptr<Kernel>>
  prepareAllReduce(const AllReduceDesc &) override;
  /// kNcclCollectives where NCCL loads (Nccl.h).
  uint32_t collectiveCapabilities() const override;
  /// With kNcclCollectives in `common`, the NCCL communicator over `ranks`
  /// (NcclComm::create; once per Communicator, kept as long as the device);
  /// without, the ranks' sums are staged through the host, which rank 0
  /// says once, with why.
  Status useCollectives(Communicator &ranks, uint32_t common) override;
  // The image encoders' kernels (CudaVision.cpp).
  Expected<std::unique_ptr<Kernel>> preparePatchEmbed(const PatchEmbedDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareLayerNorm(const LayerNormDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareVitAttention(const VitAttentionDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareConv3x3(const Conv3x3Desc &) override;
  Expected<std::unique_ptr<Kernel>> prepareAvgPool(const AvgPoolDesc &) override;

  // For the kernels (CudaKernels.cpp) and the GPU tests.
  const DriverApi &api() const { return api_; }
  /// Makes the context current on the calling thread.
  Status enter() const;
  /// The kernel `name` of the embedded modules.
  Expected<CUfunction> function(const char *name) const;
  /// Records a launch on `queue` (CudaQueue::launch).
  void launch(CUfunction fn, Dim3 grid, Dim3 block, const LaunchParams &params,
              CudaQueue &queue) const;
  /// Device memory the kernels own (scratch), in a Buffer.
  Expected<std::unique_ptr<CudaBuffer>> allocateDevice(uint64_t bytes);
  /// The NCCL communicator useCollectives made over `ranks`; null where the
  /// ranks stage their sums through the host (NCCL missing on some rank,
  /// a rank on another device, FM_NCCL=0, or no agreement was made), with
  /// `why` set.
  const NcclComm *ncclFor(const Communicator &ranks, std::string *why = nullptr);
  /// Compute capability, e.g. 90 for sm_90.
  int smVersion() const { return sm_; }
  /// Theoretical DRAM bandwidth from the memory clock and bus width, GB/s.
  double peakGBps() const { return peakGBps_; }

private:
  friend class CudaQueue; // registers itself (queues_)
  CudaDevice(const DriverApi &api, CUdevice dev, CUcontext ctx, const CudaOptions &options);
  /// Submits every queue's pending segment: what upload and download copy
  /// must come after the kernels recorded before them.
  Status submitQueues();
  const DriverApi &api_;
  CUdevice dev_;
  CUcontext ctx_;
  std::vector<CUmodule> modules_;
  std::string name_ = "cuda";
  std::string description_;
  int sm_ = 0;
  double peakGBps_ = 0.0;
  CudaOptions options_;
  std::mutex queuesMutex_;
  std::vector<CudaQueue *> queues_; // the live queues (submitQueues)
  /// Per Communicator: its NCCL communicator (null: host staging, and why).
  struct NcclEntry {
    std::unique_ptr<NcclComm> comm;
    std::string why;
  };
  std::mutex ncclMutex_;
  std::map<const Communicator *, NcclEntry> nccl_;
};

/// The GPU a process opens when none is named (the registry's "cuda"):
/// FM_CUDA_DEVICE when set (an ordinal below `count`), else the process's
/// rank on its node (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
/// SLURM_LOCALID, the first set) modulo `count`, so that the MPI ranks of a
/// node, one per track, take a GPU each; else 0. `env` reads a variable
/// (std::getenv; the tests pass their own). An FM_CUDA_DEVICE that is no
/// ordinal below `count` is an error naming it.
Expected<int> defaultOrdinal(int count, const std::function<const char *(const char *)> &env);

/// What the registry lists: present with the GPU's description, or absent
/// with the reason (no driver, no device, a GPU older than sm_80).
fm::DeviceInfo probe();

/// The Moe command's kernel (CudaMoe.cpp).
Expected<std::unique_ptr<Kernel>> makeMoeKernel(CudaDevice &dev, const MoeDesc &d);

/// The device pointer of `rows`'s first float (its buffer is a CudaBuffer).
CUdeviceptr devicePtr(const Buffer *buffer, uint64_t offset);

} // namespace fm::hal::cuda
