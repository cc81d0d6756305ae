// Guided generation in Session::generate: fm::GuidedDecoder masks every step's logits to the
// tokens a grammar allows (end-of-sequence only where the text is complete), and
// fm::ToolCallDecoder lets a model write free text or one tool call constrained to its tools.
#pragma once

#include "fm/grammar.h"
#include "fm/logits_processor.h"
#include "fm/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fm {

/// A TokenConstraint that follows one grammar over one vocabulary: before each sample it sets
/// the logit of every token the grammar refuses to -infinity; a token that is the only one
/// allowed is forced (not sampled); when only end-of-sequence ids are allowed the first is
/// forced, so generation ends as soon as the text is complete. Thread-compatible: one per
/// generation; the TokenMasker (and its cache) may be shared by many.
class GuidedDecoder final : public TokenConstraint {
public:
  explicit GuidedDecoder(const TokenMasker &masker);

  Expected<Step> process(float *logits, int64_t vocab) override;
  Status accept(int32_t token) override;
  bool finished() const override { return matcher_.isFinished(); }

  /// Feeds text the model wrote before the constraint began (a tool call's opener): as many
  /// bytes as fit; returns how many. The text becomes part of text().
  size_t acceptText(std::string_view bytes);
  /// The text so far is a complete match (finished() included).
  bool isComplete() const { return matcher_.isFinished() || matcher_.isAccepting(); }
  /// The bytes matched so far (end-of-sequence tokens contribute none).
  const std::string &text() const { return text_; }
  /// Tokens taken without sampling (forced), for reports.
  int64_t forcedTokens() const { return forced_; }
  /// The bytes the grammar wanted next, for messages ("'}', '\"'").
  std::string describeExpected() const { return matcher_.describeExpected(); }

private:
  TokenMasker masker_;
  GrammarMatcher matcher_;
  std::vector<uint32_t> mask_;
  std::vector<int32_t> eos_;
  std::string text_;
  int64_t forced_ = 0;
};

/// OpenAI's tool_choice.
enum class ToolChoice { Auto, Required, None };

/// An OpenAI-style list of tools as the grammar of one call.
struct ToolSet {
  std::vector<std::string> names;
  /// The JSON Schema of one call: anyOf, one branch per tool, of
  /// {"name": {"const": NAME}, "arguments": PARAMETERS} (both required, nothing else).
  std::string callSchema;
  /// Where each tool's parameters are in the tools file ("/0/function/parameters").
  std::vector<std::string> parameterPointers;
};

/// Reads a tools list: `[{"type": "function", "function": {"name": N, "description": D,
/// "parameters": SCHEMA}}, ...]` (an item may also be the bare function object). A tool without
/// parameters takes an empty object. Errors name `what`, the JSON pointer and the problem;
/// malformed JSON gives line and column. The parameter schemas are checked when the call
/// schema is compiled (Grammar::fromJsonSchema names the tool's pointer).
Expected<ToolSet> parseTools(std::string_view toolsJson, const std::string &what);
/// A compile error of ToolSet::callSchema ("schema /$defs/tool1/...: ...") said in terms of the
/// tools file ("tools.json: /1/function/parameters/...: ...").
std::string toolSchemaMessage(const ToolSet &tools, const std::string &what,
                              const std::string &message);

/// How a chat template marks a tool call in the model's text.
struct ToolCallSyntax {
  /// The bytes that start a call in free text: Qwen's "<tool_call>", or `{"name"` for a
  /// template that writes the call as bare JSON (Llama 3.1, or no template; the default).
  std::string opener = "{\"name\"";
  /// The opener is the call's own first bytes (`{"name"`), not a marker before it.
  bool openerIsCall = true;
  /// Tokens written between a marker opener and the call ("\n" for Qwen), forced; and the
  /// opener's own tokens, forced first when the call is required.
  std::vector<int32_t> afterOpener;
  std::vector<int32_t> openerTokens;
};

/// A TokenConstraint for tool calling. Auto: the text is free (unmasked) until the model writes
/// the opener, then the call is constrained by a GuidedDecoder over the call grammar (bytes of
/// the opener's token past a bare-JSON opener are fed to it as far as they fit); Required: the
/// call (after the forced opener tokens, for a marker opener) from the first token. Generation
/// ends at an end-of-sequence token in free text or when the call is complete.
class ToolCallDecoder final : public TokenConstraint {
public:
  /// `call` masks the call grammar; `choice` is Auto or Required (None needs no processor).
  ToolCallDecoder(const TokenMasker &call, ToolCallSyntax syntax, ToolChoice choice);

  Expected<Step> process(float *logits, int64_t vocab) override;
  Status accept(int32_t token) override;
  bool finished() const override;

  /// The model began a call.
  bool inCall() const { return state_ == State::Call; }
  /// The call's JSON text so far (complete when callComplete()).
  const std::string &callText() const { return call_.text(); }
  bool callComplete() const { return state_ == State::Call && call_.isComplete(); }
  /// The free text before the call (or all of it when there was no call).
  const std::string &freeText() const { return free_; }

private:
  enum class State { Free, Forcing, Call };
  const std::string &bytesOf(int32_t token) const;

  TokenMasker masker_;
  ToolCallSyntax syntax_;
  GuidedDecoder call_;
  State state_;
  size_t forcing_ = 0; // next index into the forced sequence
  std::vector<int32_t> forcedSeq_;
  std::string free_;
  bool freeDone_ = false;
};

} // namespace fm
