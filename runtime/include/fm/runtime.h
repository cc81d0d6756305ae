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

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fm {

class Sampler; // fm/sampler.h

/// Every device kind, best first (the order of the default choice).
std::vector<DeviceInfo> probeDevices();

struct LoadOptions {
  /// The device to run on: "cpu", "vulkan", "metal" or "cuda"; empty picks
  /// the best present hardware device for which the artifact has code
  /// (never a software one such as lavapipe), which is the CPU when there
  /// is no GPU. Model::device() says which.
  std::string device;
  /// Check the data section against the artifact's weights digest
  /// (BLAKE2b-256; reads every weight byte once). The program digest (the
  /// commands and the generated code) is checked at every load.
  bool verifyHash = false;
  /// Skip the program digest (the commands and the generated code). For
  /// fuzzers only, which need to reach the checks behind it; never load an
  /// executable with it off.
  bool skipProgramDigestForFuzzing = false;
  /// Load the generated code (dlopen). Without it the model can still be
  /// inspected, and programs that dispatch no generated code still run.
  /// Loading an artifact's executable runs its code: load only trusted
  /// artifacts with it.
  bool loadExecutable = true;
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

  struct Impl;
  /// Internal; for Session.
  const Impl &impl() const { return *impl_; }

private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
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
  /// Int8x2 (default) quantizes x per block to two int8 digits (~16-bit,
  /// logits ~1e-4 of f32 x) for integer dot products; Int8 to one digit
  /// (ggml's Q8: ~1% of max |logit|, faster only where compute-bound); F32
  /// keeps f32 x (exact, 3-4x slower decode).
  enum class Activations { Int8x2, Int8, F32 };
  Activations activations = Activations::Int8x2;
};

/// What a session has done, for reports.
struct SessionStats {
  int ranks = 1; // processes running the model together
  int rank = 0;  // this one (it runs this rank's partition)
  /// AllReduce commands run (by every program), and the wall time spent in
  /// them: the reduction across ranks (waiting for the slowest included)
  /// and the scale.
  int64_t collectives = 0;
  double collectiveMs = 0.0;
  /// decode() calls, and the AllReduce commands they ran.
  int64_t decodeTokens = 0;
  int64_t decodeCollectives = 0;
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

  /// Forgets the context: the next token goes to position 0.
  Status reset();
  /// Tokens processed so far: the position of the next token.
  int64_t position() const;

  /// Feeds `n` tokens at position(). With `allLogits`, returns the logits
  /// of every one of them ([n][vocab], teacher forcing); otherwise only of
  /// the last (1 row), using the "prefill_last" program where the model has
  /// one. The tokens go through in chunks of at most `chunk` rows (0: the
  /// program's max_rows); chunk 1 runs the "decode" program per token, as
  /// generation would. Every token is checked against the vocabulary, and
  /// the context against the cache capacity, before anything runs.
  Expected<Logits> prefill(const int32_t *tokens, int64_t n,
                           bool allLogits = false, int64_t chunk = 0);
  Expected<Logits> prefill(const std::vector<int32_t> &tokens,
                           bool allLogits = false, int64_t chunk = 0) {
    return prefill(tokens.data(), static_cast<int64_t>(tokens.size()),
                   allLogits, chunk);
  }

  /// Feeds one token at position(); returns its logits (vocab floats,
  /// valid until the next call).
  Expected<const float *> decode(int32_t token);

  /// Samples the next token from `logits`: on rank 0, then broadcast, so
  /// that every rank feeds the same token back (one rank: just samples).
  Expected<int32_t> sample(Sampler &sampler, const float *logits);

  /// Counters since the session was built.
  SessionStats stats() const;

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
                                          LogitsProcessor &processor,
                                          const TokenCallback &callback = {});

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace fm
