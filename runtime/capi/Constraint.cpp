// fm.h: guided generation's constraints (JSON Schema, GBNF, regex, tools).
#include "capi/Objects.h"

#include "fm/guided_tokenizer.h"

#include <cstring>

using fm::capi::Call;
using fm::capi::guarded;
using fm::capi::Kind;

namespace fm::capi {

Guide startGuide(const fm_constraint &c) {
  Guide g;
  if (c.tools)
    g.tools = std::make_unique<ToolCallDecoder>(*c.masker, c.syntax, c.choice);
  else
    g.decoder = std::make_unique<GuidedDecoder>(*c.masker);
  return g;
}

void guideOutput(const Guide &guide, std::string *text, int *complete,
                 int *isToolCall) {
  *isToolCall = guide.tools && guide.tools->inCall();
  if (*isToolCall) {
    *text = guide.tools->callText();
    *complete = guide.tools->callComplete();
  } else if (guide.tools) {
    *text = guide.tools->freeText(); // no call was opened
    *complete = 1;
  } else {
    *text = guide.decoder->text();
    *complete = guide.decoder->isComplete();
  }
}

} // namespace fm::capi

namespace {

// The grammar of `params` ("params->source: ..." on errors).
fm::Expected<fm::Grammar> grammarOf(const fm_constraint_params &p, fm_constraint *c) {
  const std::string source = p.source;
  switch (p.kind) {
  case FM_CONSTRAINT_JSON_SCHEMA:
    return fm::Grammar::fromJsonSchema(source);
  case FM_CONSTRAINT_GBNF:
    return fm::Grammar::fromGbnf(source);
  case FM_CONSTRAINT_REGEX:
    return fm::Grammar::fromRegex(source);
  case FM_CONSTRAINT_TOOLS: {
    auto set = fm::parseTools(source, "params->source");
    if (!set)
      return set.status();
    auto grammar = fm::Grammar::fromJsonSchema(set->callSchema);
    if (!grammar)
      return fm::Status::error(
          fm::toolSchemaMessage(*set, "params->source", grammar.message()));
    c->tools = true;
    return grammar;
  }
  }
  return fm::Status::error("params->kind " + std::to_string(int(p.kind)) +
                           " is no fm_constraint_kind");
}

} // namespace

extern "C" {

fm_status fm_constraint_create(const fm_model *model,
                               const fm_constraint_params *params,
                               fm_constraint **constraint) {
  return guarded("fm_constraint_create", [&](Call &call) {
    if (fm_status s = call.handle(model, Kind::Model, "model"))
      return s;
    if (fm_status s = call.params(params, "params"))
      return s;
    if (!params->source)
      return call.null("params->source");
    if (!constraint)
      return call.null("constraint");
    // A C caller may store any int in the enum; C++ may not load one that is
    // no enumerator (UBSan's -fsanitize=enum), so the check reads the int.
    static_assert(sizeof(fm_constraint_kind) == sizeof(int));
    int kind = 0;
    std::memcpy(&kind, &params->kind, sizeof kind);
    if (kind < FM_CONSTRAINT_JSON_SCHEMA || kind > FM_CONSTRAINT_TOOLS)
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       "params->kind " + std::to_string(kind) +
                           " is no fm_constraint_kind");
    auto c = std::make_unique<fm_constraint>();
    if (params->kind == FM_CONSTRAINT_TOOLS && params->tool_choice) {
      if (std::strcmp(params->tool_choice, "required") == 0)
        c->choice = fm::ToolChoice::Required;
      else if (std::strcmp(params->tool_choice, "auto") != 0)
        return call.fail(FM_STATUS_INVALID_ARGUMENT,
                         std::string("params->tool_choice '") + params->tool_choice +
                             "': must be auto or required (for none, generate "
                             "without a constraint)");
    }
    const fm::Model &m = *model->model;
    if (!m.hasTokenizer())
      return call.fail(FM_STATUS_UNSUPPORTED,
                       m.name() + " embeds no tokenizer: a constraint needs one");
    fm::Expected<fm::Tokenizer> tokenizer = m.tokenizer();
    if (!tokenizer)
      return call.fail(tokenizer.status());
    fm::Expected<fm::Grammar> grammar = grammarOf(*params, c.get());
    if (!grammar) // parseTools names params->source itself
      return call.fail(FM_STATUS_ERROR, (c->tools || params->kind == FM_CONSTRAINT_TOOLS
                                             ? ""
                                             : "params->source: ") +
                                            grammar.message());
    if (grammar->isEmpty())
      return call.fail(FM_STATUS_ERROR, "params->source: the grammar admits no text at all");
    c->model = model->model;
    c->eos = m.stopIds();
    auto masker = fm::TokenMasker::create(
        *grammar, fm::grammarVocabulary(*tokenizer, m.vocabSize(), c->eos));
    if (!masker)
      return call.fail(masker.status());
    c->masker.emplace(std::move(*masker));
    if (c->tools) {
      auto syntax = fm::toolCallSyntax(*tokenizer);
      if (!syntax)
        return call.fail(syntax.status());
      c->syntax = std::move(*syntax);
    }
    *constraint = fm::capi::publish(c.release());
    return FM_STATUS_OK;
  });
}

fm_status fm_constraint_free(fm_constraint *constraint) {
  return fm::capi::freeHandle("fm_constraint_free", constraint, Kind::Constraint,
                              "constraint");
}

const char *fm_constraint_error(const fm_constraint *constraint) {
  return fm::capi::handleError(constraint, constraint, Kind::Constraint);
}

} // extern "C"
