// The CPU device (CpuDevice.h): buffers, queues and executables; its
// kernels are in CpuKernels.cpp.
#include "hal/cpu/CpuDevice.h"

#include "hal/cpu/CpuExecutable.h"
#include "kernels/isa.h"
#include "kernels/qgemm.h"
#include "kernels/qmatmul.h"

#include <cstring>
#include <thread>

namespace fm::hal {

HostBuffer::HostBuffer(rt::HostBlock block)
    : Buffer(block.size(), MemorySpace::Host, block.data()),
      block_(std::move(block)) {}

HostBuffer::HostBuffer(const uint8_t *data, uint64_t bytes)
    : Buffer(bytes, MemorySpace::Host, const_cast<uint8_t *>(data)) {}

CpuQueue::CpuQueue(const QueueOptions &options) {
  // A track lane runs its kernels inline, with no pool; the session's queue
  // always has one (of 1 thread when asked for 1).
  if (!options.trackLane)
    pool_ = std::make_unique<rt::ThreadPool>(options.threads);
  scratchOk_ = scratch_.allocate(options.scratchBytes);
}

void CpuQueue::runConcurrently(int64_t n,
                               const std::function<void(int64_t)> &fn) {
  if (!pool_ || pool_->numThreads() == 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  pool_->parallelFor(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      fn(i);
  });
}

CpuDevice::CpuDevice() = default;

std::string CpuDevice::description() const {
  return "cpu (" + std::string(kernels::kernelIsaName(kernels::kernelIsaBest())) +
         " kernels, " + kernels::qmatmulPathName() + " low-bit matmul, " +
         std::to_string(std::thread::hardware_concurrency()) +
         " hardware threads)";
}

Expected<std::unique_ptr<Buffer>> CpuDevice::allocate(uint64_t bytes,
                                                      MemorySpace space) {
  (void)space; // Every CPU buffer is host memory.
  rt::HostBlock block;
  if (!block.allocate(bytes))
    return Status::error("cpu: cannot allocate " + std::to_string(bytes) +
                         " bytes");
  return std::unique_ptr<Buffer>(new HostBuffer(std::move(block)));
}

Status CpuDevice::upload(Buffer &buffer, uint64_t offset, const void *data,
                         uint64_t bytes) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    return Status::error("cpu: upload of " + std::to_string(bytes) +
                         " bytes at " + std::to_string(offset) +
                         " is outside a buffer of " +
                         std::to_string(buffer.size()));
  if (bytes)
    std::memcpy(buffer.host() + offset, data, bytes);
  return Status::ok();
}

Status CpuDevice::download(const Buffer &buffer, uint64_t offset, void *data,
                           uint64_t bytes) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    return Status::error("cpu: download of " + std::to_string(bytes) +
                         " bytes at " + std::to_string(offset) +
                         " is outside a buffer of " +
                         std::to_string(buffer.size()));
  if (bytes)
    std::memcpy(data, buffer.host() + offset, bytes);
  return Status::ok();
}

Expected<std::unique_ptr<Buffer>> CpuDevice::importWeights(const uint8_t *data,
                                                           uint64_t bytes) {
  // Used in place from the artifact's mapping.
  return std::unique_ptr<Buffer>(new HostBuffer(data, bytes));
}

uint64_t CpuDevice::prefillCopyBytes(kernels::QuantFormat f, int64_t N,
                                     int64_t K) const {
  using kernels::GemmLayout;
  return kernels::gemmLayoutProblem(GemmLayout::Panel16, f, N, K).empty()
             ? kernels::gemmPackedBytes(GemmLayout::Panel16, f, N, K)
             : 0;
}

bool CpuDevice::readsLayout(const std::string &layout) const {
  return layout.empty() || layout == kRowMajorLayout;
}

bool CpuDevice::readsBeside(const std::string &layout) const {
  return layout == kernels::kPanel16LayoutName;
}

Expected<std::unique_ptr<Executable>>
CpuDevice::loadExecutable(const artifact::Executable &executable,
                          const std::string &artifactName) {
  auto exe = CpuExecutable::load(executable, artifactName);
  if (!exe)
    return exe.status();
  return std::unique_ptr<Executable>(std::move(*exe));
}

Expected<std::unique_ptr<Queue>>
CpuDevice::createQueue(const QueueOptions &options) {
  auto queue = std::make_unique<CpuQueue>(options);
  if (!queue->ok())
    return Status::error("cpu: cannot allocate " +
                         std::to_string(options.scratchBytes) +
                         " bytes of kernel scratch");
  return std::unique_ptr<Queue>(std::move(queue));
}

} // namespace fm::hal
