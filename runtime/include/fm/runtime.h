// The fm runtime's C++ API: load a compiled .fmb model, run it on tokens.
//
//   auto model = fm::Model::load("model.fmb");
//   if (!model) { fprintf(stderr, "%s\n", model.message().c_str()); ... }
//   fm::Session session(*model);
//   auto logits = session.prefill(prompt.data(), prompt.size());
//   auto next = session.decode(token);
//
// No exception crosses this API: failures come back as fm::Status or
// fm::Expected with a message that names the file and what is wrong.
#pragma once

#include "fm/communicator.h"
#include "fm/device_info.h"
#include "fm/logits_processor.h"
#include "fm/status.h"
#include "fm/tokenizer.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fm {

class Sampler; // fm/sampler.h
class Adapter; // fm/adapter.h

/// Every device kind, best first (the order of the default choice).
std::vector<DeviceInfo> probeDevices();

struct LoadOptions {
  /// The device to run on: "cpu", "vulkan", "metal" or "cuda"; empty picks
  /// the best present hardware device for which the artifact has code
  /// (never a software one such as lavapipe), which is the CPU when there
  /// is no GPU. Model::device() says which.
  std::string device;
  /// CUDA: replay each run's kernel launches as CUDA graphs (a decode step
  /// becomes one graph launch once its shape repeats); false launches every
  /// kernel directly (fm-run --no-cuda-graph). Other devices ignore it.
  bool cudaGraphs = true;
  /// Check the data section against the artifact's weights digest
  /// (BLAKE2b-256; reads every weight byte once). The program digest (the
  /// commands and the generated code) is checked at every load.
  bool verifyHash = false;
  /// Skip the program digest (the commands and the generated code). For
  /// fuzzers only, which need to reach the checks behind it; never load an
  /// executable with it off.
  bool skipProgramDigestForFuzzing = false;
  /// Load the generated code (fmc's ELF loader). Without it the model can
  /// still be inspected, and programs that dispatch no generated code still
  /// run. Loading an artifact's executable maps code that its programs
  /// then run: load only trusted artifacts with it.
  bool loadExecutable = true;
  /// Public keys (minisign's format: a .pub file's text, or its base64
  /// line) of the compilers whose artifacts may load. When not empty, an
  /// artifact loads only with a signature by one of them over its digests
  /// (`fmc compile --sign`), checked before any of its code is loaded; the
  /// program digest ties the signature to the code and commands, and
  /// verifyHash to the weights.
  std::vector<std::string> trustedKeys;
  /// The most bytes a session of the model may need: its KV caches, the
  /// activation arena and what the device copies (the weights, on a GPU;
  /// packed weights for prefill, on the CPU).
  /// An artifact that declares more is refused before anything is
  /// allocated, naming the field. 0: this machine's physical memory.
  uint64_t maxMemoryBytes = 0;
};

/// One program of the model ("prefill", "prefill_last", "decode").
struct ProgramInfo {
  std::string phase;
  int64_t maxRows = 0;     // most tokens one call processes
  int64_t arenaFloats = 0; // activation memory, in floats
  int64_t commands = 0;
  bool logitsLastRowOnly = false;
  /// AllReduce commands: the synchronizations one call makes (every rank
  /// runs every AllReduce).
  int64_t collectives = 0;
};

/// One KV cache of the model.
struct CacheInfo {
  std::string name;
  int64_t slots = 0, kvHeads = 0, headDim = 0, capacity = 0;
  /// Element type: "f32", or "i8" (round(x / s), with per-layer scales).
  std::string dtype;
  /// Bytes per element: 4 (f32) or 1 (i8).
  int64_t elementBytes = 4;
};

/// The image encoder of a model (an "encode_image" program): what it takes
/// and what it gives (docs/vit.md).
struct ImageEncoderInfo {
  /// The input tensor: [channels][height][width] float32.
  int64_t channels = 0, height = 0, width = 0;
  /// How an image file becomes that tensor: RGB, resized to width × height
  /// with `resample` ("bicubic" or "bilinear", PIL's Image.resize), scaled
  /// to [0, 1], then (x − mean[c]) / std[c].
  std::vector<double> mean, std;
  std::string resample;
  /// The adapter's output: `tokens` rows of `tokenWidth` floats per image.
  int64_t tokens = 0, tokenWidth = 0;
  /// A VLM's placeholder token id (its prompt holds `tokens` of them per
  /// image), or -1 for an encoder alone.
  int64_t imageTokenIndex = -1;
};

/// A loaded, verified model: immutable and shareable between sessions (and
/// threads). Weights are used in place from a read-only mapping of the file.
class Model {
public:
  /// Maps and verifies `path`; on failure the message starts with `path`.
  static Expected<std::shared_ptr<Model>> load(const std::string &path,
                                               const LoadOptions &options = {});
  /// As load(), from a copy of `size` bytes; `name` stands for the file in
  /// messages.
  static Expected<std::shared_ptr<Model>>
  loadFromBuffer(const uint8_t *data, size_t size, const std::string &name,
                 const LoadOptions &options = {});

  ~Model();
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  /// The path (or name) it was loaded from.
  const std::string &name() const;
  const std::string &family() const;
  const std::string &modelName() const;
  /// The checkpoint's config.json, as imported.
  const std::string &configJson() const;
  /// The device the model runs on ("cpu", ...), and one line about it.
  const std::string &device() const;
  const std::string &deviceDescription() const;
  /// The targets the artifact has executables for ("cpu", ...).
  const std::vector<std::string> &targets() const;
  int64_t vocabSize() const;
  int64_t hiddenSize() const;
  int64_t numLayers() const;
  /// Parameter count of the model.
  int64_t parameters() const;
  /// Bytes of all weights (as stored, after quantization).
  int64_t weightBytes() const;
  /// Storage bits per weight of the quantized (Q2/Q4/Q8) projection
  /// weights, their scales and minimums included: Σ bytes · 8 / Σ elements
  /// over the packed weights other than embedding tables (and so a tied LM
  /// head), as `fmc inspect` reports it; e.g. 4.5 for q4 in balanced groups
  /// of 32. 0 when no projection is quantized.
  double bitsPerWeight() const;
  /// Whether SessionOptions::Activations::Int11 changes any of this model's
  /// GEMMs here: it runs on the CPU device, the CPU takes Int11 in one AMX
  /// tile per group (fm::int11TakesEffect), and a packed projection is in
  /// such a format (balanced group 32 at 2 or 4 bits, group 64 at 2).
  /// Elsewhere Int11 is Int8x2.
  bool int11TakesEffect() const;
  /// KV-cache bytes per token of context, all caches together (as stored:
  /// an i8 cache takes a quarter of an f32 one).
  int64_t kvBytesPerToken() const;
  /// The most tokens a session can hold: the smallest cache capacity, or 0
  /// when the model has no KV cache (no limit).
  int64_t contextLength() const;
  const std::vector<ProgramInfo> &programs() const;
  /// The program of `phase`, or null.
  const ProgramInfo *program(const std::string &phase) const;
  const std::vector<CacheInfo> &caches() const;
  /// The format and target triple of the device's executable ("" when
  /// there is none).
  const std::string &executableFormat() const;
  const std::string &executableTriple() const;
  /// Whether the generated code was loaded (LoadOptions::loadExecutable and
  /// a program dispatches it).
  bool executableLoaded() const;
  /// MPI ranks the model's tracks are partitioned over (1: not
  /// partitioned); a session needs a Communicator of exactly this many
  /// ranks when > 1.
  int64_t ranks() const;
  /// Tracks per track block and track blocks (0: not a track model).
  int64_t numTracks() const;
  int64_t numTrackBlocks() const;
  /// The key id (16 hex digits, as minisign prints it) of the trusted key
  /// whose signature was checked at load; empty without trustedKeys.
  const std::string &signedBy() const;
  /// Bytes a session needs as the artifact declares them (KV caches, the
  /// largest arena) plus the weights the device copies; kernel scratch
  /// comes on top (Session::memoryBytes()).
  uint64_t sessionBytes() const;
  uint64_t copiedWeightBytes() const;
  /// Of sessionBytes(): the device's copies of packed weights for prefill
  /// (the CPU's GEMM layout), at most one per weight, shared by the model's
  /// sessions and made when a program that multiplies the weight by several
  /// rows first runs; and those made so far.
  uint64_t prefillCopyBytes() const;
  uint64_t prefillCopiesMade() const;
  /// An error when the file changed since it was loaded (size or
  /// modification time), and with `weights` also when the data section no
  /// longer matches the weights digest (reads every byte). Sessions check
  /// the size and time before every call, so that a truncated file gives
  /// this error rather than a SIGBUS where it can.
  Status checkFile(bool weights = false) const;

  /// Whether the artifact carries a tokenizer (fmc compile embeds the
  /// tokenizer.json + tokenizer_config.json beside the checkpoint).
  bool hasTokenizer() const;
  /// The artifact's tokenizer, parsed on the first call and then shared
  /// (thread-safe); an error naming the file when the artifact has none.
  Expected<Tokenizer> tokenizer() const;
  /// BLAKE2b-256 (64 hex digits) of the embedded tokenizer.json and
  /// tokenizer_config.json, each prefixed by its length; "" without a
  /// tokenizer. Two artifacts tokenize alike when these are equal
  /// (fm::perplexity checks a KL base with it).
  std::string tokenizerDigest() const;
  /// Token ids that end a generation (EOS of tokenizer_config.json,
  /// config.json and generation_config.json, as fmc compile found them);
  /// empty without a tokenizer.
  const std::vector<int32_t> &stopIds() const;
  /// The image encoder, or null when the model has none.
  const ImageEncoderInfo *imageEncoder() const;
  /// Whether the model has a decoder (prefill/decode programs); an image
  /// encoder alone (fm_vit) has none.
  bool hasDecoder() const;

  struct Impl;
  /// Internal; for Session.
  const Impl &impl() const { return *impl_; }

private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Whether `other`, used as `model`'s `role` ("draft", "KL base"), means
/// by each token id what `model` does: the same logits width
/// (Model::vocabSize) and the same embedded tokenizer, or none in both
/// (Model::tokenizerDigest). Otherwise an error naming both files: "the
/// ROLE B has a vocabulary of N tokens, A one of M: CONSEQUENCE", or "the
/// ROLE B and A do not tokenize alike: B embeds tokenizer 0123…, A embeds
/// no tokenizer (BLAKE2b of tokenizer.json and tokenizer_config.json)".
Status checkSameTokens(const Model &model, const Model &other,
                       const std::string &role,
                       const std::string &consequence);

/// A LoRA adapter attached to a session, with a scale that multiplies its
/// alpha / r (llama.cpp's --lora-scaled; 1: as trained, 0: no effect).
struct AdapterUse {
  std::shared_ptr<const Adapter> adapter;
  float scale = 1.0f;
};

struct SessionOptions {
  /// Threads for the kernels, the caller's included; <= 0: one per core.
  /// The tracks of a track block run concurrently, one thread per track.
  int threads = 0;
  /// The ranks that run the model together, one session per rank (not
  /// owned; it must outlive the session). Null: this process alone. A
  /// model partitioned over N > 1 ranks needs exactly N; rank r runs rank
  /// r's share of every track block.
  Communicator *communicator = nullptr;
  /// How packed low-bit weights meet their activations (this session's):
  /// Int8x2 quantizes x per block to two int8 digits (~16-bit, logits ~1e-4
  /// of f32 x) for integer dot products; Int8 to one digit (ggml's Q8: ~1%
  /// of max |logit|, faster only where compute-bound); F32 keeps f32 x
  /// (exact, 3-4x slower decode). Int11, the default, is Int8x2 except for
  /// the prefill GEMMs the CPU takes in one AMX tile per group (balanced
  /// group-32 weights at 2 or 4 bits and group-64 ones at 2, such as w4 g32
  /// and w2 g64): those round x to 13 bits (w2) or 12 (w4) per 32 inputs,
  /// 32x / 16x finer than Int8, and run ~1.2-1.3x faster
  /// than Int8x2, which takes twice the tile products. On QAT-grid afm7
  /// checkpoints its logits are within ~1% of max |logit| (Int8x2: 0.4%)
  /// with the same greedy argmax at 359 of 360 positions at w4 (Int8x2
  /// the same; Int8 344). int11TakesEffect says whether it changes anything
  /// on this CPU.
  enum class Activations { Int8x2, Int8, F32, Int11 };
  Activations activations = Activations::Int11;
  /// LoRA adapters from the start (Session::setAdapters).
  std::vector<AdapterUse> adapters{};
};

/// Whether Activations::Int11 differs from Int8x2 on this CPU (AMX).
bool int11TakesEffect();
/// "int8x2", "int8", "f32" or "int11".
const char *activationsName(SessionOptions::Activations a);
/// The Activations named `name` (activationsName's names); false for any
/// other name.
bool parseActivations(std::string_view name, SessionOptions::Activations *out);

/// What a session has done, for reports.
struct SessionStats {
  int ranks = 1; // processes running the model together
  int rank = 0;  // this one (it runs this rank's partition)
  /// AllReduce commands run (by every program), and the wall time spent in
  /// them: the reduction across ranks (waiting for the slowest included)
  /// and the scale.
  int64_t collectives = 0;
  double collectiveMs = 0.0;
  /// How the ranks' sums travel: "" (one rank), "host" (MPI on host
  /// memory), "NCCL 2.x.y" (the CUDA device, GPU to GPU; its time is GPU
  /// time, not in collectiveMs).
  std::string collectiveTransport;
  /// decode() calls, and the AllReduce commands they ran.
  int64_t decodeTokens = 0;
  int64_t decodeCollectives = 0;
  /// Milliseconds the device spent executing the session's runs, from GPU
  /// timestamps; negative where the device does not measure it (the CPU).
  double deviceMs = -1.0;
  /// The session's kernel launches: segments of recorded work run as one
  /// CUDA graph launch, and kernels launched one by one; negative where
  /// the device does not count them (every device but CUDA).
  int64_t graphLaunches = -1;
  int64_t directLaunches = -1;
  /// Milliseconds the session's first run of each program spent preparing
  /// it (the CPU's one-time repack of packed weights for prefill's GEMM;
  /// 0 where a copy was already made by another session): part of that
  /// run's wall time, not of its computation.
  double firstRunMs = 0.0;
};

/// The tokens an image encoder made of one image: `rows` × `width` floats,
/// row-major. Points into the session; valid until its next encodeImage,
/// prefill or clearImages.
struct ImageTokens {
  const float *data = nullptr;
  int64_t rows = 0;
  int64_t width = 0;
};

/// Rows of logits, `rows` × `vocab` floats, row-major. Points into the
/// session; valid until its next call.
struct Logits {
  const float *data = nullptr;
  int64_t rows = 0;
  int64_t vocab = 0;
  const float *row(int64_t r) const { return data + r * vocab; }
  /// The last row: the next-token distribution after the last input.
  const float *last() const { return data + (rows - 1) * vocab; }
};

/// Why a text generation ended.
enum class StopReason {
  MaxTokens,   // GenerateOptions::maxNewTokens were generated
  StopId,      // a stop id (EOS) was sampled
  StopString,  // the text reached a stop string
  ContextFull, // the KV cache is full
  Callback,    // the callback returned false
};
/// "max-new-tokens", "stop-id", "stop-string", "context-full", "callback".
const char *stopReasonName(StopReason reason);

/// Masks (or reshapes) the logits of the next token before it is sampled:
/// `logits` holds `vocab` floats, `generated` the ids sampled so far.
using LogitsProcessor = std::function<Status(
    const std::vector<int32_t> &generated, float *logits, int64_t vocab)>;

/// How Session::generate turns a prompt into text.
struct GenerateOptions {
  int64_t maxNewTokens = 256;
  /// Generation ends when the text reaches one of these; the text handed
  /// out stops right before it. Empty strings are ignored.
  std::vector<std::string> stopStrings;
  /// Generation ends when one of these ids is sampled (its text is not
  /// handed out); Model::stopIds() are added unless useModelStopIds is off.
  std::vector<int32_t> stopIds;
  bool useModelStopIds = true;
  /// generate(text): add the tokenizer's special tokens (BOS) to the
  /// prompt, as Hugging Face's tokenizer(text) does by default.
  bool addSpecialTokens = true;
  /// Leave special tokens out of the text (HF skip_special_tokens).
  bool skipSpecialTokens = false;
  /// Prompt tokens per prefill call (0: the program's max rows).
  int64_t prefillChunk = 0;
  /// Called before every token is sampled, with the logits it is sampled
  /// from (vocab floats, writable: ids past the tokenizer's vocabulary are
  /// already -infinity) and the ids sampled so far in this generation. Set
  /// an id's logit to -infinity to forbid it: constrained decoding (a
  /// grammar's token mask) hooks in here. An error ends the generation with
  /// that error.
  LogitsProcessor logitsProcessor;
};

/// What Session::generate did.
struct Generation {
  /// All the text handed to the callback, in one string.
  std::string text;
  /// The sampled ids, a stop id that ended it included.
  std::vector<int32_t> tokens;
  /// The prompt's ids as encoded (generate(text)) or given (generateText).
  std::vector<int32_t> prompt;
  /// Prompt tokens prefilled for it (prompt.size()).
  int64_t promptTokens = 0;
  StopReason stop = StopReason::MaxTokens;
  /// Wall time of the prompt's prefill and of the decode steps; prefillMs
  /// is without firstRunMs.
  double prefillMs = 0.0, decodeMs = 0.0;
  /// Milliseconds the prefill spent preparing programs on their first run
  /// (SessionStats::firstRunMs: the CPU's one-time GEMM repack), timed
  /// apart so that prefillMs measures the computation.
  double firstRunMs = 0.0;
  int64_t decodeTokens = 0; // decode() calls
};

/// Called with each piece of generated text as soon as it is whole: never
/// half a UTF-8 character, never text that may be the start of a stop
/// string. Return false to stop.
using TextCallback = std::function<bool(std::string_view text)>;

/// One conversation: KV caches, activations and a thread pool over a
/// shared Model. Not thread-safe; use one session per thread. Memory is
/// allocated when the session is built; calls allocate nothing in the
/// per-command loop.
class Session {
public:
  /// Allocates the caches and activations; if that fails, status() says why
  /// and every call returns that error.
  explicit Session(std::shared_ptr<Model> model,
                   const SessionOptions &options = {});
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// Whether the session could be built.
  const Status &status() const;
  const Model &model() const;
  int threads() const;

  /// The ranks the session runs on with its model (SessionOptions::
  /// communicator; a single process of its own when none was given): every
  /// rank must make the same calls, so a decision one rank makes (a sample)
  /// is broadcast from rank 0.
  Communicator &communicator() const;

  /// Forgets the context: the next token goes to position 0.
  Status reset();
  /// Tokens processed so far: the position of the next token.
  int64_t position() const;
  /// The tokens of the context, in order (position() of them): what the KV
  /// cache holds.
  const std::vector<int32_t> &tokens() const;
  /// Keeps the first `n` tokens of the context and forgets the rest (n <=
  /// position()): the next token goes to position n, and the cache rows
  /// from n on are rewritten as tokens come. For a conversation whose next
  /// prompt shares only a prefix with what was fed (fm/conversation.h).
  Status keepPrefix(int64_t n);

  /// Feeds `n` tokens at position(). With `allLogits`, returns the logits
  /// of every one of them ([n][vocab], teacher forcing); otherwise only of
  /// the last (1 row), using the "prefill_last" program where the model has
  /// one. The tokens go through in chunks of at most `chunk` rows (0: the
  /// program's max_rows); chunk 1 runs the "decode" program per token, as
  /// generation would. Every token is checked against the vocabulary, and
  /// the context against the cache capacity, before anything runs. In a
  /// VLM the image placeholders must number the pending images (see
  /// encodeImage) times the tokens per image, in runs of whole images.
  Expected<Logits> prefill(const int32_t *tokens, int64_t n,
                           bool allLogits = false, int64_t chunk = 0);
  /// A flag another thread may set to stop a long prefill: prefill() reads
  /// it before each chunk and, once it is set, returns an error ("prefill
  /// interrupted after k of n tokens") with the chunks run so far kept in
  /// the context (position() says how far it got) and the pending images
  /// dropped. The flag is only read, never cleared; nullptr (the default)
  /// is none. It must outlive the session or be unset first. With a
  /// communicator of several ranks every rank must see the same flag at
  /// the same chunk (a rank stopping alone would leave the others waiting):
  /// leave it unset there.
  void setInterrupt(const std::atomic<bool> *flag);
  Expected<Logits> prefill(const std::vector<int32_t> &tokens,
                           bool allLogits = false, int64_t chunk = 0) {
    return prefill(tokens.data(), static_cast<int64_t>(tokens.size()),
                   allLogits, chunk);
  }

  /// Runs the model's image encoder on one image: `count` floats
  /// [channels][height][width] as Model::imageEncoder() says (fm/image.h
  /// makes them from a PNG or JPEG file). Returns the adapter's tokens. In
  /// a VLM they are also kept for the next prefill: the prompt's image
  /// placeholders (ImageEncoderInfo::imageTokenIndex) take the kept images'
  /// tokens in order, `tokens` placeholders per image, and that prefill
  /// uses them up. Errors name what is wrong (no encoder, a wrong size).
  Expected<ImageTokens> encodeImage(const float *image, int64_t count);
  /// Keeps an image's tokens made earlier by encodeImage (rows × width
  /// floats as it returned them) for the next prefill, as encodeImage does,
  /// without running the encoder again: for a conversation whose re-rendered
  /// prompt prefills an image that the KV cache no longer holds. An error
  /// when the model is no VLM or `count` is not one image's tokens.
  Status addImageTokens(const float *tokens, int64_t count);
  /// Images encoded and not yet used by a prefill.
  int64_t pendingImages() const;
  /// Forgets the pending images.
  void clearImages();

  /// Feeds one token at position(); returns its logits (vocab floats,
  /// valid until the next call).
  Expected<const float *> decode(int32_t token);

  /// Samples the next token from `logits`: on rank 0, then broadcast, so
  /// that every rank feeds the same token back (one rank: just samples).
  Expected<int32_t> sample(Sampler &sampler, const float *logits);

  /// Counters since the session was built.
  SessionStats stats() const;
  /// Bytes the session allocated: KV caches, arena, kernel scratch of each
  /// queue (0 when it could not be built).
  uint64_t memoryBytes() const;

  /// Runs the session's projections as y = W·x + Σ scale·s·B(A·x) over
  /// `adapters` (summed in order), replacing the ones it had; an empty list
  /// runs the base alone, exactly as a session that never had any. Each
  /// adapter must be loaded for this session's model (Adapter::load); the
  /// base's weights are shared, not copied. The context is kept: tokens
  /// already in the KV cache stay as the earlier adapters computed them
  /// (reset() to start over). On error the session keeps its adapters.
  Status setAdapters(const std::vector<AdapterUse> &adapters);
  /// The adapters the session runs with.
  const std::vector<AdapterUse> &adapters() const;

  /// Called with each generated token; return false to stop.
  using TokenCallback = std::function<bool(int32_t token)>;

  /// Prefills `prompt` (at position()), then samples up to `maxNewTokens`
  /// tokens (sample()), feeding each back but the last. Stops early when the callback
  /// returns false or the context is full. Returns the generated tokens.
  Expected<std::vector<int32_t>> generate(const std::vector<int32_t> &prompt,
                                          int64_t maxNewTokens,
                                          Sampler &sampler,
                                          const TokenCallback &callback = {});
  /// As above, with `processor` restricting every step's logits before the
  /// sample (guided generation: fm::GuidedDecoder): it may force a token
  /// (not sampled) or stop; generation also stops once it is finished()
  /// (that token is returned but not fed back).
  Expected<std::vector<int32_t>> generate(const std::vector<int32_t> &prompt,
                                          int64_t maxNewTokens,
                                          Sampler &sampler,
                                          TokenConstraint &processor,
                                          const TokenCallback &callback = {});

  /// Text in, text out with the model's tokenizer (Model::tokenizer):
  /// encodes `prompt`, prefills it at position(), then samples and decodes
  /// token by token, handing the text to `callback` as it is produced, until
  /// a stop id, a stop string, maxNewTokens, a full context or the
  /// callback ends it. Ids the tokenizer has no token for are never
  /// sampled. Each token is fed back but the last one sampled, as in the
  /// token version.
  Expected<Generation> generate(std::string_view prompt, Sampler &sampler,
                                const GenerateOptions &options = {},
                                const TextCallback &callback = {});
  /// As generate(text), from prompt ids already encoded (a rendered chat);
  /// options.addSpecialTokens does not apply.
  Expected<Generation> generateText(const std::vector<int32_t> &prompt,
                                    Sampler &sampler,
                                    const GenerateOptions &options = {},
                                    const TextCallback &callback = {});

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace fm
