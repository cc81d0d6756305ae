// fm-run's guided generation: --json-schema / --grammar / --regex / --tools with --tool-choice,
// over the vocabulary of --tokenizer; prints text (or the tool call) and says when the output
// is incomplete.
#pragma once

#include "fm/guided.h"
#include "fm/runtime.h"
#include "fm/sampler.h"
#include "fm/tokenizer.h"
#include "fm/tool_call_stream.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

namespace fmrun {

/// Exit status when generation stopped (--max-new-tokens or a full context) before the grammar
/// was complete: the output printed is a prefix of a match.
constexpr int kIncomplete = 3;

struct GuidedArgs {
  std::string tokenizer;
  std::string jsonSchema;
  std::string grammar;
  std::string regex;
  std::string tools;
  std::string toolChoice = "auto";
  std::vector<std::string> eos;
};

/// Adds --tokenizer, --json-schema, --grammar, --regex, --tools, --tool-choice, --eos.
void addGuidedOptions(CLI::App &app, GuidedArgs &args);

/// The guided part of one generation (and, with --tokenizer, the text output).
class Guided {
public:
  /// Null (and no error) when no option asks for it. `modelVocab` is the model's logits width.
  static fm::Expected<std::unique_ptr<Guided>> create(const GuidedArgs &args, int64_t modelVocab);
  /// For the text modes (--prompt, --chat): over the artifact's own `tokenizer` (--tokenizer is
  /// refused), the end-of-sequence ids being the model's `stopIds` and the --eos tokens. Null
  /// when no option asks for it (--tool-choice none included, unless --eos is given).
  static fm::Expected<std::unique_ptr<Guided>> forText(const GuidedArgs &args,
                                                       const fm::Tokenizer &tokenizer,
                                                       int64_t modelVocab,
                                                       const std::vector<int32_t> &stopIds);

  /// The constraint of the current generation (null: --tool-choice none, or --eos alone).
  fm::TokenConstraint *constraint() const { return processor_; }
  /// A fresh constraint for the next generation (each chat reply starts over).
  void restart();
  /// The end-of-sequence ids (the text modes stop at them).
  const std::vector<int32_t> &eos() const { return eos_; }
  /// --tools: the current generation's ToolCallDecoder (null without --tools).
  const fm::ToolCallDecoder *tools() const { return tools_.get(); }
  /// --tools: a splitter of the streamed text into the free text and the call, for one
  /// generation (fm/tool_call_stream.h).
  fm::ToolCallStream toolStream() const { return fm::ToolCallStream(syntax_.opener, choice_); }

  /// What the generation produced: the text (or the tool call as JSON), and whether the
  /// grammar (the call) is complete.
  struct Output {
    std::string text;
    bool complete = true;
  };
  Output output(const std::vector<int32_t> &generated) const;
  /// The note on stderr for an incomplete output; returns kIncomplete, or 0 when complete.
  int noteIfIncomplete(const Output &out, size_t tokens) const;

  /// One step: restricts `logits` (vocab floats) and picks the next token, sampled by the
  /// session (rank 0, broadcast) or forced. Sets *stop when generation is complete before it.
  fm::Expected<int32_t> next(fm::Session &session, fm::Sampler &sampler, const float *logits,
                             bool *stop);
  /// The last token ended generation (end-of-sequence, or the tool call is complete).
  bool finished() const;
  /// Prints the output (text, or the tool call as one JSON line); returns fm-run's exit status:
  /// 0, or kIncomplete with a note on stderr when the grammar is not complete.
  int print(const std::vector<int32_t> &generated) const;

private:
  /// The masker and the first constraint, over tokenizer_ and eos_ (nothing when unconstrained).
  fm::Status buildConstraint(const GuidedArgs &args, int64_t modelVocab);

  fm::Tokenizer tokenizer_;
  fm::ToolCallSyntax syntax_;
  fm::ToolChoice choice_ = fm::ToolChoice::Auto;
  bool isTools_ = false;
  std::unique_ptr<fm::TokenMasker> masker_;
  std::unique_ptr<fm::GuidedDecoder> decoder_;
  std::unique_ptr<fm::ToolCallDecoder> tools_;
  fm::TokenConstraint *processor_ = nullptr; // one of the two, or none (text only)
  std::vector<int32_t> eos_;
  std::vector<float> masked_;
  bool textOnlyDone_ = false;
};

} // namespace fmrun
