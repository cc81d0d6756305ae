// The Metal device: shared-storage buffers, the artifact's MSL
// (MetalExecutable), and the hand-written kernels (the Vulkan device's GLSL
// translated to MSL at build time, MetalShaders.h), encoded into one
// command buffer per program run (MetalQueue) and committed at
// Queue::flush(). A thin mirror of hal/vulkan/VulkanDevice.h: the same
// kernels, bindings, push-constant words and dispatch grids.
//
// UNVERIFIED: never compiled or run (the project has no Mac);
// scripts/check-metal.sh is what a Mac runs to check it. Objective-C++.
#pragma once

#include "hal/Device.h"
#include "hal/metal/MetalContext.h"
#include "hal/metal/MetalPipelines.h"

#include <memory>
#include <string>
#include <vector>

namespace fm::hal::mtl {

/// An MTLBuffer in shared storage (the host and the GPU see the same
/// memory: Apple GPUs are unified-memory, and on a discrete Mac GPU Metal
/// pages it), or a no-copy view of page-aligned weights. Only Host buffers
/// expose host().
class MetalBuffer final : public Buffer {
public:
  static Expected<std::unique_ptr<MetalBuffer>>
  create(const MetalContext &ctx, uint64_t bytes, MemorySpace space);
  /// The weights at `data` in place (newBufferWithBytesNoCopy) when `data`
  /// is page-aligned and Metal accepts it; else null (the caller copies).
  static std::unique_ptr<MetalBuffer> wrap(const MetalContext &ctx, const uint8_t *data,
                                           uint64_t bytes);

  id<MTLBuffer> handle() const { return buffer_; }
  uint8_t *mapped() const { return static_cast<uint8_t *>([buffer_ contents]); }
  /// Bytes of the MTLBuffer (size() rounded up; Metal has no empty buffers).
  uint64_t allocatedSize() const { return allocated_; }

private:
  MetalBuffer(uint64_t size, MemorySpace space, uint8_t *host) : Buffer(size, space, host) {}
  id<MTLBuffer> buffer_ = nil;
  uint64_t allocated_ = 0;
};

/// One session's queue: a command buffer with one compute encoder that the
/// kernels encode into (begun at the first kernel after a flush), GPU
/// timestamps of every command buffer, and the session's scratch.
class MetalQueue final : public Queue {
public:
  static Expected<std::unique_ptr<MetalQueue>>
  create(std::shared_ptr<MetalContext> ctx, const QueueOptions &options);
  ~MetalQueue() override;

  int threads() const override { return 1; }
  void runConcurrently(int64_t n, const std::function<void(int64_t)> &fn) override;
  Status flush() override;
  double deviceMs() const override { return deviceMs_; }

  /// The scratch of QueueOptions::scratchBytes (null when 0).
  MetalBuffer *scratch() const { return scratch_.get(); }

  /// Encodes a dispatch of x·y·z threadgroups of `p` with ranges[i] at
  /// [[buffer(i)]] (p.bindings of them) and `push` (p.pushBytes bytes) at
  /// [[buffer(p.bindings)]]. The encoder is serial (MTLDispatchTypeSerial):
  /// each dispatch sees the writes of the ones before, the barrier the
  /// Vulkan device records between dependent dispatches.
  Status dispatch(const Pipeline &p, const BoundRange *ranges, const void *push,
                  uint32_t x, uint32_t y, uint32_t z);
  /// The same with the threadgroup counts read from `args` at `offset`
  /// (three uint32, MTLDispatchThreadgroupsIndirectArguments, written by an
  /// earlier dispatch).
  Status dispatchIndirect(const Pipeline &p, const BoundRange *ranges, const void *push,
                          id<MTLBuffer> args, uint64_t offset);
  /// Encodes a write of `bytes` host bytes (copied now) at `offset` of
  /// `buffer`, after every dispatch encoded before and before every one
  /// after (a VLM's image rows into its embedding): a blit from a copy of
  /// them between two compute encoders of the command buffer (the
  /// counterpart of VulkanQueue::update).
  Status update(const MetalBuffer &buffer, uint64_t offset, const void *data,
                uint64_t bytes);

private:
  explicit MetalQueue(std::shared_ptr<MetalContext> ctx) : ctx_(std::move(ctx)) {}
  Status begin();
  void bind(const Pipeline &p, const BoundRange *ranges, const void *push);

  std::shared_ptr<MetalContext> ctx_;
  id<MTLCommandBuffer> cmd_ = nil;
  id<MTLComputeCommandEncoder> encoder_ = nil;
  double deviceMs_ = 0.0;
  std::unique_ptr<MetalBuffer> scratch_;
};

class MetalDevice final : public Device {
public:
  static Expected<std::unique_ptr<MetalDevice>> open();

  const std::string &name() const override { return name_; }
  const std::string &target() const override { return name_; }
  std::string description() const override;

  Expected<std::unique_ptr<Buffer>> allocate(uint64_t bytes, MemorySpace space) override;
  Status upload(Buffer &buffer, uint64_t offset, const void *data, uint64_t bytes) override;
  Status download(const Buffer &buffer, uint64_t offset, void *data,
                  uint64_t bytes) override;
  Expected<std::unique_ptr<Buffer>> importWeights(const uint8_t *data,
                                                  uint64_t bytes) override;
  bool readsLayout(const std::string &layout) const override { return layout.empty(); }
  Expected<std::unique_ptr<Executable>>
  loadExecutable(const artifact::Executable &executable,
                 const std::string &artifactName) override;
  Expected<std::unique_ptr<Queue>> createQueue(const QueueOptions &options) override;

  Expected<std::unique_ptr<Kernel>> prepareEmbed(const EmbedDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareMatmul(const MatmulDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareAttention(const AttentionDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareMoe(const MoeDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareDispatch(const DispatchDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareCopyRow(const CopyRowDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareAllReduce(const AllReduceDesc &) override;
  // The image encoders' kernels (MetalVision.mm).
  Expected<std::unique_ptr<Kernel>> preparePatchEmbed(const PatchEmbedDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareLayerNorm(const LayerNormDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareVitAttention(const VitAttentionDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareConv3x3(const Conv3x3Desc &) override;
  Expected<std::unique_ptr<Kernel>> prepareAvgPool(const AvgPoolDesc &) override;

  MetalContext &context() const { return *ctx_; }
  const std::shared_ptr<MetalContext> &sharedContext() const { return ctx_; }
  PipelineLibrary &pipelines() { return *pipelines_; }

private:
  MetalDevice() = default;

  std::string name_ = "metal";
  std::shared_ptr<MetalContext> ctx_;
  std::unique_ptr<PipelineLibrary> pipelines_;
};

} // namespace fm::hal::mtl
