// The CPU device: host memory, the artifact's native code (fmc's own ELF
// loader), and the runtime's own micro-kernels (runtime/kernels:
// AVX-512/AVX2/NEON/generic, chosen at run time), threaded over a
// per-session thread pool.
#pragma once

#include "base/HostMemory.h"
#include "base/ThreadPool.h"
#include "hal/Device.h"
#include "hal/cpu/GemmWeights.h"

#include <memory>
#include <string>

namespace fm::hal {

/// Host memory: an owned zeroed block, or a view of memory it was given.
class HostBuffer final : public Buffer {
public:
  /// Takes ownership of `block`.
  explicit HostBuffer(rt::HostBlock block);
  /// A view of `bytes` at `data` (not owned).
  HostBuffer(const uint8_t *data, uint64_t bytes);

private:
  rt::HostBlock block_;
};

/// A CPU queue: a thread pool (none for a single-threaded track queue) and
/// a scratch block.
class CpuQueue final : public Queue {
public:
  explicit CpuQueue(const QueueOptions &options);
  bool ok() const { return scratchOk_; }
  int threads() const override { return pool_ ? pool_->numThreads() : 1; }
  void runConcurrently(int64_t n,
                       const std::function<void(int64_t)> &fn) override;
  /// Null on a single-threaded track queue (kernels then run inline).
  rt::ThreadPool *pool() const { return pool_.get(); }
  uint8_t *scratch() const { return scratch_.data(); }

private:
  std::unique_ptr<rt::ThreadPool> pool_;
  rt::HostBlock scratch_;
  bool scratchOk_ = true;
};

class CpuDevice final : public Device {
public:
  CpuDevice();

  const std::string &name() const override { return name_; }
  const std::string &target() const override { return name_; }
  std::string description() const override;

  Expected<std::unique_ptr<Buffer>> allocate(uint64_t bytes,
                                             MemorySpace space) override;
  Status upload(Buffer &buffer, uint64_t offset, const void *data,
                uint64_t bytes) override;
  Status download(const Buffer &buffer, uint64_t offset, void *data,
                  uint64_t bytes) override;
  Expected<std::unique_ptr<Buffer>> importWeights(const uint8_t *data,
                                                  uint64_t bytes) override;
  bool importCopiesWeights() const override { return false; }
  uint64_t prefillCopyBytes(kernels::QuantFormat f, int64_t N,
                            int64_t K) const override;
  uint64_t prefillCopiesMade() const override { return gemmWeights_.bytes(); }
  bool readsLayout(const std::string &layout) const override;
  /// "panel16" (kernels::kPanel16LayoutName): the GEMM copy fmc writes, which
  /// a matmul of several rows reads instead of repacking the rows.
  bool readsBeside(const std::string &layout) const override;
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
  // CpuVisionKernels.cpp
  Expected<std::unique_ptr<Kernel>>
  preparePatchEmbed(const PatchEmbedDesc &) override;
  Expected<std::unique_ptr<Kernel>>
  prepareLayerNorm(const LayerNormDesc &) override;
  Expected<std::unique_ptr<Kernel>>
  prepareVitAttention(const VitAttentionDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareConv3x3(const Conv3x3Desc &) override;
  Expected<std::unique_ptr<Kernel>> prepareAvgPool(const AvgPoolDesc &) override;

  /// The layout name of a relocated copy of the shared layout: the CPU reads
  /// it like the shared bytes (used to test variant selection end to end;
  /// repacked GEMM layouts add names here).
  static constexpr const char *kRowMajorLayout = "row-major";

  /// The Panel16 copies of this device's weights that its matmul kernels
  /// for more than one row read (prefill as a GEMM).
  GemmWeights &gemmWeights() { return gemmWeights_; }

private:
  std::string name_ = "cpu";
  GemmWeights gemmWeights_;
};

} // namespace fm::hal
