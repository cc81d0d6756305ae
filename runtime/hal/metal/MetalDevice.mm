// The Metal device (MetalDevice.h): buffers, transfers, executables and
// queues; its kernels are in MetalKernels.mm, MetalMoe.mm and MetalLora.mm.
#include "hal/metal/MetalDevice.h"

#include "hal/metal/MetalExecutable.h"

#include <algorithm>
#include <cstring>
#include <unistd.h>

namespace fm::hal::mtl {

Expected<std::unique_ptr<MetalBuffer>> MetalBuffer::create(const MetalContext &ctx,
                                                           uint64_t bytes, MemorySpace space) {
  const uint64_t allocated = std::max<uint64_t>(16, (bytes + 15) & ~uint64_t(15));
  if (allocated > [ctx.device() maxBufferLength])
    return Status::error("metal: a " + std::to_string(bytes) +
                         "-byte buffer is over this device's maxBufferLength (" +
                         std::to_string([ctx.device() maxBufferLength]) + ")");
  id<MTLBuffer> buffer = [ctx.device() newBufferWithLength:allocated
                                                   options:MTLResourceStorageModeShared];
  if (!buffer)
    return Status::error("metal: newBufferWithLength failed (" + std::to_string(bytes) +
                         "-byte buffer)");
  uint8_t *contents = static_cast<uint8_t *>([buffer contents]);
  // Zeroed, as Device::allocate promises.
  std::memset(contents, 0, allocated);
  std::unique_ptr<MetalBuffer> b(
      new MetalBuffer(bytes, space, space == MemorySpace::Host ? contents : nullptr));
  b->buffer_ = buffer;
  b->allocated_ = allocated;
  return b;
}

std::unique_ptr<MetalBuffer> MetalBuffer::wrap(const MetalContext &ctx, const uint8_t *data,
                                               uint64_t bytes) {
  const uint64_t page = uint64_t(getpagesize());
  if (bytes == 0 || reinterpret_cast<uintptr_t>(data) % page != 0)
    return nullptr;
  // The length must be a whole number of pages: the last page of the
  // mapping is readable to its end.
  const uint64_t length = (bytes + page - 1) / page * page;
  if (length > [ctx.device() maxBufferLength])
    return nullptr;
  id<MTLBuffer> buffer =
      [ctx.device() newBufferWithBytesNoCopy:const_cast<uint8_t *>(data)
                                      length:length
                                     options:MTLResourceStorageModeShared
                                 deallocator:nil];
  if (!buffer)
    return nullptr;
  std::unique_ptr<MetalBuffer> b(new MetalBuffer(bytes, MemorySpace::Device, nullptr));
  b->buffer_ = buffer;
  b->allocated_ = length;
  return b;
}

Expected<std::unique_ptr<MetalDevice>> MetalDevice::open() {
  auto ctx = MetalContext::create();
  if (!ctx)
    return ctx.status();
  std::unique_ptr<MetalDevice> d(new MetalDevice());
  d->ctx_ = std::move(*ctx);
  d->pipelines_ = std::make_unique<PipelineLibrary>(d->ctx_);
  return d;
}

std::string MetalDevice::description() const { return "metal (" + ctx_->description() + ")"; }

Expected<std::unique_ptr<Buffer>> MetalDevice::allocate(uint64_t bytes, MemorySpace space) {
  auto b = MetalBuffer::create(*ctx_, bytes, space);
  if (!b)
    return b.status();
  return std::unique_ptr<Buffer>(std::move(*b));
}

// Shared storage: transfers are copies through the buffer's contents. The
// executor flushes (commits and waits) before the host reads results, so no
// command buffer is in flight here.
Status MetalDevice::upload(Buffer &buffer, uint64_t offset, const void *data,
                           uint64_t bytes) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    return Status::error("metal: upload of " + std::to_string(bytes) + " bytes at " +
                         std::to_string(offset) + " is outside a buffer of " +
                         std::to_string(buffer.size()));
  if (bytes == 0)
    return Status::ok();
  std::memcpy(static_cast<MetalBuffer &>(buffer).mapped() + offset, data, bytes);
  return Status::ok();
}

Status MetalDevice::download(const Buffer &buffer, uint64_t offset, void *data,
                             uint64_t bytes) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    return Status::error("metal: download of " + std::to_string(bytes) + " bytes at " +
                         std::to_string(offset) + " is outside a buffer of " +
                         std::to_string(buffer.size()));
  if (bytes == 0)
    return Status::ok();
  std::memcpy(data, static_cast<const MetalBuffer &>(buffer).mapped() + offset, bytes);
  return Status::ok();
}

Expected<std::unique_ptr<Buffer>> MetalDevice::importWeights(const uint8_t *data,
                                                             uint64_t bytes) {
  // In place where Metal can map the artifact's pages, else copied.
  if (auto wrapped = MetalBuffer::wrap(*ctx_, data, bytes))
    return std::unique_ptr<Buffer>(std::move(wrapped));
  auto b = MetalBuffer::create(*ctx_, bytes, MemorySpace::Device);
  if (!b)
    return Status::error(b.message() + " (the weights)");
  FM_RETURN_IF_ERROR(upload(**b, 0, data, bytes));
  return std::unique_ptr<Buffer>(std::move(*b));
}

Expected<std::unique_ptr<Executable>>
MetalDevice::loadExecutable(const artifact::Executable &executable,
                            const std::string &artifactName) {
  auto exe = MetalExecutable::load(*ctx_, executable, artifactName);
  if (!exe)
    return exe.status();
  return std::unique_ptr<Executable>(std::move(*exe));
}

Expected<std::unique_ptr<Queue>> MetalDevice::createQueue(const QueueOptions &options) {
  auto q = MetalQueue::create(ctx_, options);
  if (!q)
    return q.status();
  return std::unique_ptr<Queue>(std::move(*q));
}

} // namespace fm::hal::mtl
