// The device layer (HAL): what the executor asks of a CPU, a Vulkan, a Metal
// or a CUDA device. Modelled on IREE's runtime/src/iree/hal/device.h and on
// fm/communicator.h: the executor walks a program's commands and, once per
// command at session creation, asks its device to prepare a Kernel from a
// device-independent description (buffers, weights, cache slots, shapes);
// running a program is then a loop of Kernel::run calls. A device owns its
// memory (buffers it allocates, the weights it imports), loads the
// generated code of its target, and implements the micro-kernels: matmul in
// every weight format, attention, embedding, MoE, plus copies and the hook
// for the collective at a track-block boundary; and those of the image
// encoders (docs/vit.md): patch embedding, LayerNorm, ViT attention, the
// adapter's 3x3 convolution and pooling.
#pragma once

#include "fm/communicator.h"
#include "fm/fmb_generated.h"
#include "fm/status.h"
#include "kernels/qformat.h"
#include "kernels/qmatmul.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fm::hal {

/// Where a buffer lives: host memory (the CPU device; pointers usable by
/// the host), or device memory (a GPU's; reached through upload/download).
enum class MemorySpace : uint8_t { Host, Device };

/// A device allocation, or a view of memory a device was given (the
/// artifact's mapped weights). Its size is fixed.
class Buffer {
public:
  virtual ~Buffer() = default;
  uint64_t size() const { return size_; }
  MemorySpace space() const { return space_; }
  /// The first byte, where the host can address it; else null.
  uint8_t *host() const { return host_; }

protected:
  Buffer(uint64_t size, MemorySpace space, uint8_t *host)
      : size_(size), space_(space), host_(host) {}

private:
  uint64_t size_;
  MemorySpace space_;
  uint8_t *host_;
};

/// A 2-D f32 activation view: row r, column c is the float at byte
/// `offset + 4 * (r * stride + c)` of `buffer`.
struct Rows {
  Buffer *buffer = nullptr;
  uint64_t offset = 0; // bytes
  int64_t stride = 0;  // floats between rows
  int64_t width = 0;   // columns
};

/// How a weight's bytes are stored.
enum class WeightKind : uint8_t { F32, F16, Quant };

/// A weight as a device's kernels read it: `bytes` bytes at `offset` of the
/// device's weight buffer, in `layout` ("" is the shared layout of the
/// schema; a named layout is a per-target variant the device asked for).
struct WeightDesc {
  Buffer *buffer = nullptr;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  WeightKind kind = WeightKind::F32;
  /// WeightKind::Quant: the packed format (kernels/qformat.h).
  kernels::QuantFormat format{8, 32, kernels::QuantGrid::Balanced};
  /// The shape ([] for a 0-d scalar).
  std::vector<int64_t> shape;
  std::string layout;
  /// A second copy of the weight, in a layout the device's kernels read
  /// beside the bytes above (a variant the device readsBeside: the CPU's
  /// "panel16" GEMM copy): bytes at `offset` of `buffer`; bytes 0: none.
  struct Copy {
    std::string layout;
    uint64_t offset = 0, bytes = 0;
  } beside;
  std::string name; // for messages
  /// Optional weights of a description are absent when buffer is null.
  bool present() const { return buffer != nullptr; }
};

/// Row 0 of a cache slot's K or V part: `capacity` rows of `width`
/// elements, f32 or int8.
struct CacheRows {
  Buffer *buffer = nullptr;
  uint64_t offset = 0; // bytes
  int64_t capacity = 0;
  int64_t width = 0;
  bool int8 = false;
};

/// What one call of a program processes: `rows` tokens at positions
/// pos .. pos + rows - 1 (`tokens` are theirs, for an embedding).
struct Launch {
  int64_t rows = 0;
  int64_t pos = 0;
  const int32_t *tokens = nullptr;
  /// A VLM's image tokens (null: none): row r of an embedding takes the
  /// `width` host floats at embedRows[r] instead of its token's row when
  /// that pointer is not null (an image placeholder).
  const float *const *embedRows = nullptr;
};

struct EmbedDesc {
  WeightDesc table; // [vocab][width]
  Rows out;
};

/// A low-rank side path on one weight of a matmul (a LoRA adapter):
/// y[:, col0 .. col0 + rows) += scale · (x · aᵀ) · btᵀ, with a = A
/// [rank][k] and bt = Bᵀ [rank][rows], f16 or packed 8-bit
/// (WeightKind::Quant, 8 bits, balanced). Terms whose `a`s lie back to back
/// in one buffer and format (the stacked projections of a fused matmul, as
/// the adapter compiler writes them) form one [Σ rank][k] product, so x is
/// read once for all of them.
struct LoraTerm {
  WeightDesc a, bt;
  int64_t rank = 0;
  int64_t col0 = 0, rows = 0; // the weight's columns of y
  float scale = 1.0f;         // alpha / r (or / sqrt r), times the user's scale
};

/// An elementwise function applied after a matmul (the GELU family of the
/// ViT MLPs; kernels/pointwise.h has the definitions).
enum class Activation : uint8_t { None, Gelu, GeluTanh, QuickGelu };

/// y = act(x · concat(weights)ᵀ + bias) (+ y); the weights are stacked
/// along their rows (all [rows_i][k]), so weight i writes columns [col_i,
/// col_i + rows_i). An activation excludes accumulate.
struct MatmulDesc {
  Rows x, y;
  int64_t k = 0, n = 0;
  bool accumulate = false;
  std::vector<WeightDesc> weights;
  WeightDesc bias; // f32 [n], or absent
  Activation activation = Activation::None;
  int64_t maxRows = 1; // the most rows a launch gives
  /// How packed weights meet the activations (the session's choice).
  kernels::QActivations activations = kernels::QActivations::Int8x2;
  /// The session's adapters on these weights, added after W·x (empty: the
  /// base alone, the same kernel as without adapters).
  std::vector<LoraTerm> lora;
};

/// Causal GQA attention of the launch's rows over one cache slot.
struct AttentionDesc {
  Rows q, out;
  CacheRows k, v;
  int64_t heads = 0, kvHeads = 0, headDim = 0, window = 0;
  float scale = 1.0f;
  /// int8 caches: the scales the slot's K and V were stored with.
  float kScale = 1.0f, vScale = 1.0f;
  int64_t maxRows = 1;
};

/// The Moe command (schema: Moe): routing, experts, optional shared expert.
struct MoeDesc {
  Rows x, y;
  WeightDesc router;
  std::vector<WeightDesc> gate, up, down;
  bool hasShared = false;
  WeightDesc sharedGate, sharedUp, sharedDown, sharedExpertGate;
  int64_t topK = 1;
  bool normTopk = false, accumulate = false;
  int64_t maxRows = 1;
  kernels::QActivations activations = kernels::QActivations::Int8x2;
  /// The session's threads (the CPU runs up to this many experts at once,
  /// each with scratch of its own).
  int threads = 1;
};

/// The patch embedding of an image encoder: the [channels][height][width]
/// image at `image` (one row), cut into patch × patch patches (row-major),
/// each flattened (channel, row, column) times weight [dim][channels·
/// patch²]ᵀ + bias (+ pos [patches][dim]); `out` gets the registers [R][dim]
/// first when present, then the patches.
struct PatchEmbedDesc {
  Rows image, out;
  int64_t channels = 0, height = 0, width = 0, patch = 0;
  WeightDesc weight, bias; // f32
  WeightDesc pos, registers; // f32, or absent
};

/// y = (x − mean) / sqrt(var + eps) · weight + bias per row (biased
/// variance) for the launch's rows; y may be x.
struct LayerNormDesc {
  Rows x, y;
  WeightDesc weight, bias; // f32 [width]
  float eps = 1e-6f;
};

/// A ViT block's attention (kernels/vit_attention.h states the semantics):
/// qkv [registers + gridH·gridW][3·heads·headDim] → out [same][heads·
/// headDim]; window 0 is global attention.
struct VitAttentionDesc {
  Rows qkv, out;
  int64_t registers = 0, gridH = 0, gridW = 0, heads = 0, headDim = 0;
  int64_t window = 0;
  float scale = 1.0f;
  WeightDesc relPosH, relPosW; // f32 [2S − 1][headDim], or both absent
  WeightDesc padQkv;           // f32 [3·heads·headDim] (a padded token), or absent: zeros
};

/// Conv2d(Cin, Cout, 3, padding 1) over a gridH × gridW grid of tokens:
/// x [tokens][Cin] → y [tokens][Cout]. The weight [Cout][Cin][3][3] is read
/// as an nn.Linear [Cout][9·Cin] over the unfolded taps (f32, f16 or a
/// packed format).
struct Conv3x3Desc {
  Rows x, y;
  int64_t gridH = 0, gridW = 0;
  WeightDesc weight;
  WeightDesc bias; // f32 [Cout], or absent
  kernels::QActivations activations = kernels::QActivations::Int8x2;
};

/// The adapter's average pooling of a grid × grid grid of tokens (x) to
/// outGrid × outGrid (y): stride grid / outGrid, kernel grid − (outGrid −
/// 1)·stride.
struct AvgPoolDesc {
  Rows x, y;
  int64_t grid = 0, outGrid = 0;
};

/// One argument of a generated function.
struct DispatchArg {
  enum class Kind : uint8_t { Buffer, Weight, Cache } kind = Kind::Buffer;
  Rows rows;         // Buffer
  WeightDesc weight; // Weight
  CacheRows cache;   // Cache
};

class Executable;

struct DispatchDesc {
  const Executable *executable = nullptr;
  uint32_t function = 0;
  std::vector<DispatchArg> args;
  int64_t maxRows = 1;
};

struct CopyRowDesc {
  Rows src, dst; // the launch's last row of src into row 0 of dst
};

/// Device::collectiveCapabilities bits.
enum CollectiveCapability : uint32_t {
  kNcclCollectives = 1u << 0, // ncclAllReduce on device memory (CUDA)
};
constexpr int kCollectiveCapabilityBits = 1;

/// Counters of the collectives a session ran.
struct CollectiveStats {
  int64_t allReduces = 0; // AllReduce commands run
  double ms = 0.0;        // wall time in them (the reduction and the scale)
  /// How the ranks' rows meet: "" (one rank), "host" (the Communicator's
  /// allReduceSum on host memory), or "NCCL 2.x.y" (the CUDA device's
  /// ncclAllReduce on device memory, whose time runs on the GPU and is not
  /// in `ms`).
  std::string transport;
};

/// out = scale · Σ over the ranks of `comm` of (Σ of that rank's inputs).
/// `inputs` are this rank's; one may be `out` itself (it then starts the
/// sum), the others do not overlap it.
struct AllReduceDesc {
  std::vector<Rows> inputs;
  Rows out;
  float scale = 1.0f;
  Communicator *comm = nullptr;
  CollectiveStats *stats = nullptr;
  int64_t maxRows = 1;
};

/// A device's execution context for one session (the CPU's: a thread pool
/// and scratch; a GPU's: a stream or a queue). Not thread-safe: a queue
/// serves one caller, and concurrent tracks each get their own.
class Queue {
public:
  virtual ~Queue() = default;
  /// Threads the queue's kernels use (1 for a track's queue).
  virtual int threads() const = 0;
  /// Calls fn(0) .. fn(n - 1), concurrently where the device can; returns
  /// when all returned.
  virtual void runConcurrently(int64_t n,
                               const std::function<void(int64_t)> &fn) = 0;
  /// Completes the work the queue's kernels were given since the last
  /// flush: a GPU queue, whose kernels record commands, submits them and
  /// waits; the CPU ran them when called. The executor flushes at the end
  /// of every program run, before the host reads results (a kernel that
  /// must reach the host mid-program, such as a collective, flushes too).
  virtual Status flush() { return Status::ok(); }
  /// Milliseconds the device spent executing this queue's submissions
  /// (GPU timestamps); negative when the device does not measure them.
  virtual double deviceMs() const { return -1.0; }
  /// Kernel launches so far: segments of recorded work replayed as one
  /// graph launch, and kernels launched one by one; negative where the
  /// device does not count them (every device but CUDA).
  struct LaunchCounts {
    int64_t graph = -1, direct = -1;
  };
  virtual LaunchCounts launchCounts() const { return {}; }
};

struct QueueOptions {
  int threads = 1; // <= 0: one per core
  /// A queue for one track of a section whose tracks run concurrently
  /// (Queue::runConcurrently of the session's queue): its kernels run on the
  /// calling thread, single-threaded.
  bool trackLane = false;
  uint64_t scratchBytes = 0; // the most any kernel run on it needs
};

/// One prepared command. run() must not allocate.
class Kernel {
public:
  virtual ~Kernel() = default;
  /// Called by the executor before the first run of the kernel's program
  /// (so never for a program a session does not run), outside run(): where
  /// a device makes what only runs read and what costs memory to hold (the
  /// CPU's GEMM copies of packed weights, Device::prefillCopyBytes), on
  /// the threads of `queue` (the session's). May allocate; a second call
  /// changes nothing.
  virtual Status beforeFirstRun(Queue & /*queue*/) { return Status::ok(); }
  virtual Status run(Queue &queue, const Launch &launch) const = 0;
  /// Bytes of queue scratch a run needs (QueueOptions::scratchBytes).
  virtual uint64_t scratchBytes() const { return 0; }
};

/// An artifact's generated code, loaded for the device.
class Executable {
public:
  virtual ~Executable() = default;
  virtual size_t numFunctions() const = 0;
};

class Device {
public:
  virtual ~Device() = default;

  /// "cpu", "vulkan", "metal" or "cuda".
  virtual const std::string &name() const = 0;
  /// The Executable.target whose code the device runs ("cpu" for cpu).
  virtual const std::string &target() const = 0;
  /// One line for reports: "cpu (x86_64, avx512-vnni, 2 cores)".
  virtual std::string description() const = 0;

  /// `bytes` zeroed bytes in `space`.
  virtual Expected<std::unique_ptr<Buffer>> allocate(uint64_t bytes,
                                                     MemorySpace space) = 0;
  virtual Status upload(Buffer &buffer, uint64_t offset, const void *data,
                        uint64_t bytes) = 0;
  virtual Status download(const Buffer &buffer, uint64_t offset, void *data,
                          uint64_t bytes) = 0;

  /// Makes the artifact's data section (`bytes` at `data`, which outlives
  /// the buffer) readable by the device's kernels: the CPU device uses it in
  /// place, a GPU device copies it to its memory.
  virtual Expected<std::unique_ptr<Buffer>> importWeights(const uint8_t *data,
                                                          uint64_t bytes) = 0;
  /// Whether importWeights copies the data section into memory of its own
  /// (a GPU) rather than using it in place (the CPU): the memory bound a
  /// model load checks counts the copy.
  virtual bool importCopiesWeights() const { return true; }
  /// Bytes the device holds beside the imported weights for a matmul of
  /// several rows over the packed weight of N rows of K inputs in `f` (the
  /// CPU's copy in its GEMM layout), made at most once per weight, when a
  /// program using it first runs; 0 where it makes none. The memory bound a
  /// model load checks counts them.
  virtual uint64_t prefillCopyBytes(kernels::QuantFormat, int64_t /*N*/,
                                    int64_t /*K*/) const {
    return 0;
  }
  /// Bytes of those copies made so far.
  virtual uint64_t prefillCopiesMade() const { return 0; }
  /// Whether the device's kernels read weights stored in `layout` (a
  /// WeightVariant of its target); "" (the shared layout) always.
  virtual bool readsLayout(const std::string &layout) const = 0;
  /// Whether the device's kernels read a WeightVariant of its target in
  /// `layout` beside the shared bytes (WeightDesc::beside) rather than
  /// instead of them: the CPU's "panel16" GEMM copy, which prefill reads
  /// while decode keeps the rows.
  virtual bool readsBeside(const std::string & /*layout*/) const {
    return false;
  }

  /// Loads an executable of target(); `artifactName` starts error messages.
  virtual Expected<std::unique_ptr<Executable>>
  loadExecutable(const artifact::Executable &executable,
                 const std::string &artifactName) = 0;

  virtual Expected<std::unique_ptr<Queue>>
  createQueue(const QueueOptions &options) = 0;

  // The micro-kernels and glue. A description's buffers, weights and cache
  // rows outlive the kernel; the loader checked every shape.
  virtual Expected<std::unique_ptr<Kernel>> prepareEmbed(const EmbedDesc &) = 0;
  virtual Expected<std::unique_ptr<Kernel>> prepareMatmul(const MatmulDesc &) = 0;
  virtual Expected<std::unique_ptr<Kernel>>
  prepareAttention(const AttentionDesc &) = 0;
  virtual Expected<std::unique_ptr<Kernel>> prepareMoe(const MoeDesc &) = 0;
  virtual Expected<std::unique_ptr<Kernel>>
  prepareDispatch(const DispatchDesc &) = 0;
  virtual Expected<std::unique_ptr<Kernel>>
  prepareCopyRow(const CopyRowDesc &) = 0;
  /// What this device could sum a session's rows across ranks with beyond
  /// the Communicator on host memory, which every device can: bits of
  /// CollectiveCapability (the CUDA device's kNcclCollectives where NCCL
  /// loads). 0: host only.
  virtual uint32_t collectiveCapabilities() const { return 0; }
  /// The capabilities every rank of `ranks` has (agreeCollectives), given
  /// to every rank's device at the same point, before the session's
  /// kernels are prepared: a device makes what its kernels will share here
  /// (the CUDA device's NCCL communicator, itself a collective of the
  /// ranks whose `common` has it, so all or none make it).
  virtual Status useCollectives(Communicator & /*ranks*/, uint32_t /*common*/) {
    return Status::ok();
  }
  /// The collective hook: the buffer's rows summed across the ranks of
  /// desc.comm (a device stages through the host where it must).
  virtual Expected<std::unique_ptr<Kernel>>
  prepareAllReduce(const AllReduceDesc &) = 0;

  // The image encoders' kernels. A device without them refuses an
  // encode_image program when a session is built (the default here), so a
  // device can be added before it has them.
  virtual Expected<std::unique_ptr<Kernel>>
  preparePatchEmbed(const PatchEmbedDesc &) {
    return noVisionKernel("patch embedding");
  }
  virtual Expected<std::unique_ptr<Kernel>>
  prepareLayerNorm(const LayerNormDesc &) {
    return noVisionKernel("LayerNorm");
  }
  virtual Expected<std::unique_ptr<Kernel>>
  prepareVitAttention(const VitAttentionDesc &) {
    return noVisionKernel("ViT attention");
  }
  virtual Expected<std::unique_ptr<Kernel>>
  prepareConv3x3(const Conv3x3Desc &) {
    return noVisionKernel("3x3 convolution");
  }
  virtual Expected<std::unique_ptr<Kernel>> prepareAvgPool(const AvgPoolDesc &) {
    return noVisionKernel("average pooling");
  }

protected:
  Status noVisionKernel(const char *what) const {
    return Status::error("device '" + name() + "' has no " + what +
                         " kernel (image encoders run on the cpu device)");
  }
};

/// How a session's ranks will sum their rows: each rank's device says what
/// it can (collectiveCapabilities), the bits every rank has are found with
/// one allReduceSum over `ranks` (a bit whose sum is the rank count), and
/// each device is told them (useCollectives). Every rank calls it once per
/// session before preparing kernels, whatever its device, so that ranks on
/// different devices (a node without a GPU) agree on the host, and none
/// waits in a collective the others skip. Nothing for one rank.
inline Status agreeCollectives(Device &device, Communicator &ranks) {
  if (ranks.size() <= 1)
    return Status::ok();
  const uint32_t mine = device.collectiveCapabilities();
  float votes[kCollectiveCapabilityBits];
  for (int b = 0; b < kCollectiveCapabilityBits; ++b)
    votes[b] = (mine >> b) & 1u ? 1.0f : 0.0f;
  FM_RETURN_IF_ERROR(ranks.allReduceSum(votes, kCollectiveCapabilityBits));
  uint32_t common = 0;
  for (int b = 0; b < kCollectiveCapabilityBits; ++b)
    if (int(votes[b]) == ranks.size())
      common |= 1u << b;
  return device.useCollectives(ranks, common);
}

} // namespace fm::hal
