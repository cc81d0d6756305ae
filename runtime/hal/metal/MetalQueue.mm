// A session's command encoding and submission (MetalDevice.h).
#include "hal/metal/MetalDevice.h"

namespace fm::hal::mtl {

Expected<std::unique_ptr<MetalQueue>> MetalQueue::create(std::shared_ptr<MetalContext> ctx,
                                                         const QueueOptions &options) {
  std::unique_ptr<MetalQueue> q(new MetalQueue(ctx));
  if (options.scratchBytes > 0) {
    auto s = MetalBuffer::create(*ctx, options.scratchBytes, MemorySpace::Device);
    if (!s)
      return Status::error(s.message() + " (kernel scratch)");
    q->scratch_ = std::move(*s);
  }
  return q;
}

MetalQueue::~MetalQueue() {
  // Work encoded but never flushed is ended and dropped (never committed).
  if (encoder_)
    [encoder_ endEncoding];
  encoder_ = nil;
  cmd_ = nil;
}

void MetalQueue::runConcurrently(int64_t n, const std::function<void(int64_t)> &fn) {
  // One command stream: tracks are encoded in turn (the GPU runs each
  // dispatch wide instead).
  for (int64_t i = 0; i < n; ++i)
    fn(i);
}

Status MetalQueue::begin() {
  if (encoder_)
    return Status::ok();
  @autoreleasepool {
    cmd_ = [ctx_->queue() commandBuffer];
    if (!cmd_)
      return Status::error("metal: commandBuffer failed");
    encoder_ = [cmd_ computeCommandEncoderWithDispatchType:MTLDispatchTypeSerial];
    if (!encoder_) {
      cmd_ = nil;
      return Status::error("metal: computeCommandEncoderWithDispatchType failed");
    }
  }
  return Status::ok();
}

void MetalQueue::bind(const Pipeline &p, const BoundRange *ranges, const void *push) {
  [encoder_ setComputePipelineState:p.state];
  for (uint32_t i = 0; i < p.bindings; ++i)
    [encoder_ setBuffer:ranges[i].buffer offset:ranges[i].offset atIndex:i];
  if (p.pushBytes)
    [encoder_ setBytes:push length:p.pushBytes atIndex:p.bindings];
}

Status MetalQueue::dispatch(const Pipeline &p, const BoundRange *ranges, const void *push,
                            uint32_t x, uint32_t y, uint32_t z) {
  if (x == 0 || y == 0 || z == 0)
    return Status::ok();
  FM_RETURN_IF_ERROR(begin());
  bind(p, ranges, push);
  [encoder_ dispatchThreadgroups:MTLSizeMake(x, y, z) threadsPerThreadgroup:p.threads];
  return Status::ok();
}

Status MetalQueue::dispatchIndirect(const Pipeline &p, const BoundRange *ranges,
                                    const void *push, id<MTLBuffer> args, uint64_t offset) {
  FM_RETURN_IF_ERROR(begin());
  bind(p, ranges, push);
  [encoder_ dispatchThreadgroupsWithIndirectBuffer:args
                              indirectBufferOffset:offset
                             threadsPerThreadgroup:p.threads];
  return Status::ok();
}

Status MetalQueue::update(const MetalBuffer &buffer, uint64_t offset, const void *data,
                          uint64_t bytes) {
  if (bytes == 0)
    return Status::ok();
  FM_RETURN_IF_ERROR(begin());
  @autoreleasepool {
    // The bytes are copied now (the caller's rows may change before the
    // command buffer runs). Metal orders the encoders of one command buffer
    // by the buffers they use (default hazard tracking), as the Vulkan
    // device's barriers do.
    id<MTLBuffer> src = [ctx_->device() newBufferWithBytes:data
                                                    length:bytes
                                                   options:MTLResourceStorageModeShared];
    if (!src)
      return Status::error("metal: newBufferWithBytes failed (" + std::to_string(bytes) +
                           " bytes of image rows)");
    [encoder_ endEncoding];
    encoder_ = nil;
    id<MTLBlitCommandEncoder> blit = [cmd_ blitCommandEncoder];
    if (!blit)
      return Status::error("metal: blitCommandEncoder failed");
    [blit copyFromBuffer:src
             sourceOffset:0
                 toBuffer:buffer.handle()
        destinationOffset:offset
                     size:bytes];
    [blit endEncoding];
    // The next dispatch (and flush) continue in a compute encoder of the
    // same command buffer.
    encoder_ = [cmd_ computeCommandEncoderWithDispatchType:MTLDispatchTypeSerial];
    if (!encoder_)
      return Status::error("metal: computeCommandEncoderWithDispatchType failed");
  }
  return Status::ok();
}

Status MetalQueue::flush() {
  if (!encoder_)
    return Status::ok();
  @autoreleasepool {
    [encoder_ endEncoding];
    encoder_ = nil;
    id<MTLCommandBuffer> cmd = cmd_;
    cmd_ = nil;
    [cmd commit];
    [cmd waitUntilCompleted];
    if ([cmd status] == MTLCommandBufferStatusError)
      return nsError([cmd error], "a command buffer of the session's kernels");
    if (@available(macOS 10.15, iOS 10.3, *)) {
      const double ms = ([cmd GPUEndTime] - [cmd GPUStartTime]) * 1e3;
      if (ms > 0)
        deviceMs_ += ms;
    }
  }
  return Status::ok();
}

} // namespace fm::hal::mtl
