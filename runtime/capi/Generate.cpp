// fm.h: generation (tokens, text, chat), streamed to callbacks, guided by a
// constraint, cancellable from another thread.
#include "capi/Objects.h"

#include "fm/constrained_logits.h"
#include "fm/image_prompt.h"
#include "fm/speculative.h"

#include <algorithm>

using fm::capi::Call;
using fm::capi::guarded;
using fm::capi::Kind;

namespace {

// The message of a generation that fm_session_cancel stopped inside the
// runtime's loop (through the logits hook).
const char kCancelled[] = "cancelled by fm_session_cancel";

// Checks `params` (NULL: the defaults) into `out`.
fm_status generateParams(Call &call, const fm_session *session,
                         const fm_generate_params *params, fm_generate_params *out) {
  *out = fm_generate_params_default();
  if (!params)
    return FM_STATUS_OK;
  if (fm_status s = call.params(params, "params"))
    return s;
  *out = *params;
  if (out->max_new_tokens < 0)
    return call.fail(FM_STATUS_INVALID_ARGUMENT,
                     "params->max_new_tokens " + std::to_string(out->max_new_tokens) +
                         ": must be >= 0");
  if (out->prefill_chunk < 0)
    return call.fail(FM_STATUS_INVALID_ARGUMENT,
                     "params->prefill_chunk " + std::to_string(out->prefill_chunk) +
                         ": must be >= 0 (0: the model's largest)");
  if (out->n_stop_strings > 0 && !out->stop_strings)
    return call.null("params->stop_strings");
  for (size_t i = 0; i < out->n_stop_strings; ++i)
    if (!out->stop_strings[i])
      return call.null(("params->stop_strings[" + std::to_string(i) + "]").c_str());
  if (out->n_stop_ids > 0 && !out->stop_ids)
    return call.null("params->stop_ids");
  if (fm_status s = call.optionalHandle(out->constraint, Kind::Constraint,
                                        "params->constraint"))
    return s;
  if (out->constraint && out->constraint->model != session->model)
    return call.fail(FM_STATUS_INVALID_ARGUMENT,
                     "params->constraint was made for " +
                         out->constraint->model->name() + ", not for the session's " +
                         session->model->name());
  return FM_STATUS_OK;
}

fm::GenerateOptions textOptions(const fm_generate_params &p) {
  fm::GenerateOptions o;
  o.maxNewTokens = p.max_new_tokens;
  for (size_t i = 0; i < p.n_stop_strings; ++i)
    o.stopStrings.push_back(p.stop_strings[i]);
  o.stopIds.assign(p.stop_ids, p.stop_ids + p.n_stop_ids);
  o.useModelStopIds = p.use_model_stop_ids != 0;
  o.addSpecialTokens = p.add_special_tokens != 0;
  o.skipSpecialTokens = p.skip_special_tokens != 0;
  o.prefillChunk = p.prefill_chunk;
  return o;
}

fm_stop_reason stopReason(fm::StopReason r) {
  switch (r) {
  case fm::StopReason::MaxTokens:
    return FM_STOP_MAX_TOKENS;
  case fm::StopReason::StopId:
    return FM_STOP_ID;
  case fm::StopReason::StopString:
    return FM_STOP_STRING;
  case fm::StopReason::ContextFull:
    return FM_STOP_CONTEXT_FULL;
  case fm::StopReason::Callback:
    return FM_STOP_CALLBACK;
  }
  return FM_STOP_CALLBACK;
}

const char *stopName(fm_stop_reason r) {
  switch (r) {
  case FM_STOP_CONSTRAINT:
    return "constraint";
  case FM_STOP_MAX_TOKENS:
    return fm::stopReasonName(fm::StopReason::MaxTokens);
  case FM_STOP_ID:
    return fm::stopReasonName(fm::StopReason::StopId);
  case FM_STOP_STRING:
    return fm::stopReasonName(fm::StopReason::StopString);
  case FM_STOP_CONTEXT_FULL:
    return fm::stopReasonName(fm::StopReason::ContextFull);
  case FM_STOP_CALLBACK:
    break;
  }
  return fm::stopReasonName(fm::StopReason::Callback);
}

// One generation on a session: the cancel flag, the callbacks, the
// constraint, and the result it leaves in the session.
class Run {
public:
  Run(fm_session *s, const fm_generate_params &p) : s_(s), p_(p) {
    s->speculativeStats.reset();
    if (p.constraint)
      guide_ = fm::capi::startGuide(*p.constraint);
  }

  /// fm_session_cancel came before the generation started.
  bool cancelledAtStart() {
    cancelled_ = s_->cancel.exchange(false);
    return cancelled_;
  }

  /// The token path's callback.
  fm::Session::TokenCallback tokenCallback() {
    return [this](int32_t token) {
      if (s_->cancel.load()) {
        cancelled_ = true;
        return false;
      }
      if (p_.on_token && !p_.on_token(token, p_.user_data)) {
        stopped_ = true;
        return false;
      }
      return true;
    };
  }

  /// The text path's callback.
  fm::TextCallback textCallback() {
    return [this](std::string_view text) {
      if (p_.on_text && !p_.on_text(text.data(), text.size(), p_.user_data)) {
        stopped_ = true;
        return false;
      }
      return true;
    };
  }

  /// Hooks the cancel check and the constraint into the text path's
  /// options: the hook sees every step, so a cancel stops the generation
  /// before its next token.
  void hook(fm::GenerateOptions *o) {
    fm::LogitsProcessor constrain;
    if (fm::TokenConstraint *c = guide_.constraint()) {
      // The ids that end a complete output: the constraint's end of
      // sequence (the model's stop ids) and the caller's.
      std::vector<int32_t> stops = p_.constraint->eos;
      stops.insert(stops.end(), o->stopIds.begin(), o->stopIds.end());
      for (int32_t id : p_.constraint->eos)
        if (std::find(o->stopIds.begin(), o->stopIds.end(), id) == o->stopIds.end())
          o->stopIds.push_back(id);
      constrained_ = std::make_unique<fm::ConstrainedLogits>(*c, stops);
      constrain = constrained_->hook();
    }
    o->logitsProcessor = [this, constrain](const std::vector<int32_t> &generated,
                                           float *logits, int64_t vocab) {
      if (s_->cancel.load()) {
        cancelled_ = true;
        sofar_ = generated;
        return fm::Status::error(kCancelled);
      }
      return constrain ? constrain(generated, logits, vocab) : fm::Status::ok();
    };
  }

  /// After the text path: the constraint follows the last tokens.
  fm::Status follow(const fm::Generation &g) {
    return constrained_ ? constrained_->follow(g.tokens) : fm::Status::ok();
  }

  /// The result of a text generation (or a chat turn's reply).
  fm_status finishText(Call &call, const fm::Expected<fm::Generation> &g,
                       fm_generation *result) {
    // A cancel that stopped the prompt's prefill between its chunks.
    if (!g && s_->cancel.load())
      cancelled_ = true;
    s_->cancel.store(false);
    if (!g && !cancelled_)
      return call.fail(g.status());
    fm_stop_reason stop = FM_STOP_CALLBACK;
    if (g) {
      if (fm::Status st = follow(*g); !st)
        return call.fail(st);
      s_->tokens = g->tokens;
      s_->prompt = g->prompt;
      s_->text = g->text;
      stop = stopReason(g->stop);
      prefillMs_ = g->prefillMs;
      decodeMs_ = g->decodeMs;
    } else { // cancelled inside the loop: what was sampled so far
      s_->tokens = sofar_;
      s_->text.clear();
      if (auto t = s_->model->tokenizer(); t)
        if (auto text = t->decode(sofar_, p_.skip_special_tokens != 0); text)
          s_->text = *text;
    }
    // A complete constraint ends a text with a stop id (FM_STOP_ID).
    return fill(call, stop, result);
  }

  /// The result of the token path.
  fm_status finishTokens(Call &call, const fm::Expected<std::vector<int32_t>> &ids,
                         const std::vector<int32_t> &prompt, fm_generation *result) {
    if (!ids && s_->cancel.load()) { // stopped in the prompt's prefill
      s_->cancel.store(false);
      cancelled_ = true;
      s_->tokens.clear();
      s_->prompt = prompt;
      s_->text.clear();
      return fill(call, FM_STOP_CALLBACK, result);
    }
    s_->cancel.store(false);
    if (!ids)
      return call.fail(ids.status());
    s_->tokens = *ids;
    s_->prompt = prompt;
    s_->text.clear();
    if (s_->model->hasTokenizer())
      if (auto t = s_->model->tokenizer(); t)
        if (auto text = t->decode(*ids, p_.skip_special_tokens != 0); text)
          s_->text = *text;
    const fm::Session &ss = *s_->session;
    const int64_t capacity = ss.model().contextLength();
    fm_stop_reason stop;
    if (cancelled_ || stopped_)
      stop = FM_STOP_CALLBACK;
    else if (guide_.constraint() && guide_.constraint()->finished())
      stop = FM_STOP_CONSTRAINT;
    else if (int64_t(ids->size()) == p_.max_new_tokens)
      stop = FM_STOP_MAX_TOKENS;
    else if (capacity > 0 && ss.position() >= capacity)
      stop = FM_STOP_CONTEXT_FULL;
    else
      stop = guide_.constraint() ? FM_STOP_CONSTRAINT : FM_STOP_CALLBACK;
    return fill(call, stop, result);
  }

  fm::TokenConstraint *constraint() const { return guide_.constraint(); }

private:
  fm_status fill(Call &call, fm_stop_reason stop, fm_generation *result) {
    fm_generation &r = *result;
    r.tokens = s_->tokens.data();
    r.n_tokens = s_->tokens.size();
    r.prompt = s_->prompt.data();
    r.n_prompt = s_->prompt.size();
    r.text = s_->text.c_str();
    r.text_size = s_->text.size();
    r.stop = stop;
    r.stop_name = stopName(stop);
    r.constrained = nullptr;
    r.complete = 1;
    r.is_tool_call = 0;
    if (guide_.constraint()) {
      fm::capi::guideOutput(guide_, &s_->constrained, &r.complete, &r.is_tool_call);
      r.constrained = s_->constrained.c_str();
    }
    r.context = nullptr;
    r.n_context = 0;
    r.reused_tokens = 0;
    r.prefill_ms = prefillMs_;
    r.decode_ms = decodeMs_;
    if (cancelled_)
      return call.fail(FM_STATUS_CANCELLED, kCancelled);
    return FM_STATUS_OK;
  }

  fm_session *s_;
  const fm_generate_params &p_;
  fm::capi::Guide guide_;
  std::unique_ptr<fm::ConstrainedLogits> constrained_;
  bool cancelled_ = false, stopped_ = false;
  std::vector<int32_t> sofar_;
  double prefillMs_ = 0.0, decodeMs_ = 0.0;
};

// The checks every generating function makes.
fm_status common(Call &call, fm_session *session, fm_sampler *sampler,
                 const fm_generate_params *params, fm_generation *result,
                 fm_generate_params *p) {
  if (fm_status s = call.handle(session, Kind::Session, "session"))
    return s;
  if (fm_status s = call.handle(sampler, Kind::Sampler, "sampler"))
    return s;
  if (fm_status s = call.params(result, "result"))
    return s;
  return generateParams(call, session, params, p);
}

// The text functions need the model's tokenizer.
fm_status needTokenizer(Call &call, const fm_session *session) {
  const fm::Model &m = *session->model;
  if (!m.hasTokenizer())
    return call.fail(FM_STATUS_UNSUPPORTED,
                     m.name() + " embeds no tokenizer: text needs one (generate "
                                "ids with fm_session_generate_tokens)");
  return FM_STATUS_OK;
}

// fm_session_set_speculative's drafter for one generation, or an error (a
// draft session freed since).
fm_status makeDrafter(Call &call, fm_session *session,
                      std::unique_ptr<fm::Drafter> *out) {
  const fm_session::Speculative &spec = *session->speculative;
  if (!spec.draft) {
    *out = std::make_unique<fm::LookupDrafter>(session->model->vocabSize(),
                                               spec.lookupNgram);
    return FM_STATUS_OK;
  }
  if (fm_status s = call.handle(spec.draft, Kind::Session,
                                "the draft session (fm_session_set_speculative)"))
    return s;
  *out = std::make_unique<fm::ModelDrafter>(*spec.draft->session, spec.draftSampler,
                                            spec.options);
  return FM_STATUS_OK;
}

} // namespace

extern "C" {

fm_status fm_session_generate_tokens(fm_session *session, const int32_t *prompt,
                                     size_t n, fm_sampler *sampler,
                                     const fm_generate_params *params,
                                     fm_generation *result) {
  return guarded("fm_session_generate_tokens", [&](Call &call) {
    fm_generate_params p;
    if (fm_status s = common(call, session, sampler, params, result, &p))
      return s;
    if (!prompt)
      return call.null("prompt");
    if (n == 0)
      return call.fail(FM_STATUS_INVALID_ARGUMENT, "n is 0: the prompt is empty");
    std::vector<int32_t> ids(prompt, prompt + n);
    Run run(session, p);
    if (run.cancelledAtStart())
      return run.finishTokens(call, std::vector<int32_t>{}, ids, result);
    fm::Session &ss = *session->session;
    if (session->speculative) {
      std::unique_ptr<fm::Drafter> drafter;
      if (fm_status s = makeDrafter(call, session, &drafter))
        return s;
      fm::SpeculativeOptions o = session->speculative->options;
      o.prefillChunk = p.prefill_chunk;
      auto r = fm::generateSpeculative(ss, *drafter, ids, p.max_new_tokens,
                                       sampler->sampler, o, run.constraint(),
                                       run.tokenCallback());
      if (r)
        session->speculativeStats = r->stats;
      return run.finishTokens(call,
                              r ? fm::Expected<std::vector<int32_t>>(r->tokens)
                                : fm::Expected<std::vector<int32_t>>(r.status()),
                              ids, result);
    }
    auto out = run.constraint()
                   ? ss.generate(ids, p.max_new_tokens, sampler->sampler,
                                 *run.constraint(), run.tokenCallback())
                   : ss.generate(ids, p.max_new_tokens, sampler->sampler,
                                 run.tokenCallback());
    return run.finishTokens(call, out, ids, result);
  });
}

fm_status fm_session_generate_text(fm_session *session, const char *prompt,
                                   fm_sampler *sampler,
                                   const fm_generate_params *params,
                                   fm_generation *result) {
  return guarded("fm_session_generate_text", [&](Call &call) {
    fm_generate_params p;
    if (fm_status s = common(call, session, sampler, params, result, &p))
      return s;
    if (!prompt)
      return call.null("prompt");
    if (fm_status s = needTokenizer(call, session))
      return s;
    // A VLM's pending images: the prompt's markers take them.
    fm::Session &ss = *session->session;
    auto text = fm::imagePromptText(*session->model, prompt, ss.pendingImages(),
                                    "image (fm_session_add_image_*)");
    if (!text)
      return call.fail(text.status(), FM_STATUS_INVALID_ARGUMENT);
    Run run(session, p);
    if (run.cancelledAtStart())
      return run.finishText(call, fm::Status::error(kCancelled), result);
    fm::GenerateOptions options = textOptions(p);
    run.hook(&options);
    if (session->speculative) {
      std::unique_ptr<fm::Drafter> drafter;
      if (fm_status s = makeDrafter(call, session, &drafter))
        return s;
      // The prompt encoded as Session::generate(text) encodes it.
      fm::Expected<fm::Tokenizer> tokenizer = session->model->tokenizer();
      if (!tokenizer)
        return call.fail(tokenizer.status());
      fm::Expected<std::vector<fm::TokenId>> ids =
          tokenizer->encode(*text, options.addSpecialTokens);
      if (!ids)
        return call.fail(ids.status(), FM_STATUS_INVALID_ARGUMENT);
      fm::SpeculativeStats stats;
      auto g = fm::generateTextSpeculative(ss, *drafter, *ids, sampler->sampler, options,
                                           session->speculative->options,
                                           run.textCallback(), &stats);
      if (g)
        session->speculativeStats = stats;
      return run.finishText(call, g, result);
    }
    auto g = ss.generate(*text, sampler->sampler, options, run.textCallback());
    return run.finishText(call, g, result);
  });
}

fm_status fm_session_chat_start(fm_session *session, const char *system,
                                const char *extra_json) {
  return guarded("fm_session_chat_start", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    if (fm_status s = needTokenizer(call, session))
      return s;
    session->chat.reset();
    if (fm::Status s = session->session->reset(); !s)
      return call.fail(s);
    fm::ConversationOptions options;
    if (system)
      options.system = system;
    if (extra_json)
      options.extraJson = extra_json;
    fm::Expected<fm::Conversation> chat = fm::Conversation::start(*session->session, options);
    if (!chat)
      return call.fail(chat.status(), FM_STATUS_UNSUPPORTED);
    session->chat.emplace(std::move(*chat));
    return FM_STATUS_OK;
  });
}

fm_status fm_session_chat_say(fm_session *session, const char *user,
                              fm_sampler *sampler, const fm_generate_params *params,
                              fm_generation *result) {
  return guarded("fm_session_chat_say", [&](Call &call) {
    fm_generate_params p;
    if (fm_status s = common(call, session, sampler, params, result, &p))
      return s;
    if (!user)
      return call.null("user");
    if (!session->chat)
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       "the session has no chat: call fm_session_chat_start first");
    Run run(session, p);
    if (run.cancelledAtStart())
      return run.finishText(call, fm::Status::error(kCancelled), result);
    fm::GenerateOptions options = textOptions(p);
    run.hook(&options);
    fm::Expected<fm::ChatTurn> turn =
        session->chat->say(user, sampler->sampler, options, run.textCallback());
    fm_status s = run.finishText(
        call, turn ? fm::Expected<fm::Generation>(turn->reply)
                   : fm::Expected<fm::Generation>(turn.status()),
        result);
    if (turn && (s == FM_STATUS_OK || s == FM_STATUS_CANCELLED)) {
      session->context = turn->context;
      result->context = session->context.data();
      result->n_context = session->context.size();
      result->reused_tokens = turn->reusedTokens;
      result->prompt = session->context.data();
      result->n_prompt = session->context.size();
    }
    return s;
  });
}

} // extern "C"
