// fm-run's text modes: --prompt / --prompt-file (generate text, streamed to
// stdout) and --chat (a conversation with the checkpoint's chat template),
// both with the artifact's embedded tokenizer.
#pragma once

#include "Guided.h"
#include "Images.h"
#include "LogitBias.h"
#include "Speculative.h"

#include "fm/communicator.h"
#include "fm/constrained_logits.h"
#include "fm/runtime.h"
#include "fm/sampler.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fmrun {

struct TextArgs {
  // The text modes' own options.
  std::string prompt, promptFile;
  bool chat = false;
  std::string system, chatFile;
  std::vector<std::string> stop;
  bool noSpecialTokens = false;
  // fm-run's options they share.
  std::string model, device, activations = "int11";
  std::vector<std::string> trustedKeys; // minisign public key files
  uint64_t maxMemory = 0;               // bytes; 0: physical memory
  int threads = 0;
  bool verifyHash = false, stats = false;
  bool cudaGraphs = true; // --no-cuda-graph: false
  int64_t maxNewTokens = 256, prefillChunk = 0;
  float temperature = 0.0f, topP = 1.0f;
  int topK = 0;
  uint64_t seed = 0;
  GuidedArgs guided; // --json-schema, --grammar, --regex, --tools, --eos
  std::vector<std::string> logitBias; // --logit-bias ID=BIAS
  std::vector<std::string> adapters;  // --adapter FILE[:scale]
  ImageArgs images; // --image, --image-tensor: one per <image> marker
  SpeculativeArgs speculative; // --draft, --lookup and their options
};

/// Whether the command line asks for a text mode.
inline bool isTextMode(const TextArgs &a) {
  return a.chat || !a.prompt.empty() || !a.promptFile.empty() ||
         !a.chatFile.empty();
}

/// Runs --prompt/--prompt-file or --chat; the exit status. `comm`: the MPI
/// ranks (null: this process alone).
int runText(const TextArgs &args, fm::Communicator *comm);

// Shared by the two modes (TextRun.cpp).
int fail(const std::string &message);
struct Loaded {
  std::shared_ptr<fm::Model> model;
  std::unique_ptr<fm::Session> session;
  std::unique_ptr<Drafting> drafting; // --draft, --lookup (--prompt)
  double loadMs = 0.0;
  std::unique_ptr<Guided> guided; // null: no guided option
  LogitBias bias;                 // --logit-bias
};
/// Loads the model and builds the session as fm-run does for --tokens; an
/// error message, or "" with `out` filled.
std::string loadForText(const TextArgs &args, fm::Communicator *comm,
                        Loaded *out);
/// Its two steps. Loads the artifact at `path` with the load options of
/// `args` (--device, --verify-hash, --trusted-key, --max-memory) and, on
/// the `leader`, says on stderr which device runs it.
std::string loadModel(const TextArgs &args, const std::string &path,
                      bool leader, std::shared_ptr<fm::Model> *out);
/// A session of `model` with the session options of `args` (--activations,
/// --threads) and the --adapter files `adapters`.
std::string makeSession(const TextArgs &args,
                        const std::shared_ptr<fm::Model> &model,
                        const std::vector<std::string> &adapters,
                        fm::Communicator *comm,
                        std::unique_ptr<fm::Session> *out);
fm::GenerateOptions generateOptions(const TextArgs &args);
fm::Sampler makeSampler(const TextArgs &args);
double peakRssMb();

/// Guided generation in the text modes: the --logit-bias and then the constraint of one
/// generation (one --prompt, one chat reply) hooked into its options, and the output written to
/// stdout (on the leader). Without either it writes the text as it comes.
class TextGuide {
public:
  /// Restarts the loaded guided constraint (if any) and hooks it, after the bias, into
  /// `options`. `leader`: this process writes the output.
  TextGuide(Loaded &loaded, fm::GenerateOptions *options, bool leader);
  // The hook refers to this object.
  TextGuide(const TextGuide &) = delete;
  TextGuide &operator=(const TextGuide &) = delete;
  /// Writes a piece of the generated text as it is generated: all of it, or with --tools the
  /// free text as soon as no later text can make it the start of a call (the call itself is
  /// written as one line once the constraint has it complete). False when stdout fails.
  bool write(std::string_view piece);
  /// The output ends its own line (--tools: the call's line, or the free text and a newline).
  bool endsLine() const { return stream_.has_value(); }
  /// After the generation: the constraint follows its last tokens; with --tools, what is left
  /// of the output (the rest of the free text, or the call) is written and ends its line;
  /// returns 0, or kIncomplete (with a note) when the output is not complete.
  fm::Expected<int> finish(const fm::Generation &generation);

private:
  /// Once the constraint has the call: the free text is over; a finished call is written.
  void followCall();
  /// Writes the call as one line (after a newline when the free text left a line open).
  void writeCall();

  Guided *guided_;
  bool leader_;
  std::unique_ptr<fm::ConstrainedLogits> constrained_;
  std::optional<fm::ToolCallStream> stream_; // --tools
  bool callWritten_ = false;
  bool writeFailed_ = false;
};
/// "[1, 17, 42]", for the --stats lines.
std::string idsJson(const std::vector<int32_t> &ids);
/// `"graph_launches": G, "direct_launches": D` of the session's stats (null
/// where the device does not count them), for the --stats lines.
std::string launchesJson(const fm::SessionStats &stats);
/// Writes `text` to stdout at once (streaming).
bool writeOut(std::string_view text);

/// The chat mode (ChatRun.cpp).
int runChat(const TextArgs &args, Loaded &loaded, fm::Communicator *comm);

} // namespace fmrun
