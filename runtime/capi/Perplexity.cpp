// fm.h: perplexity and KL divergence (fm::perplexity).
#include "capi/Objects.h"

#include "fm/perplexity.h"

using fm::capi::Call;
using fm::capi::guarded;
using fm::capi::Kind;

namespace {

fm_status score(Call &call, fm_session *session, const std::vector<int32_t> &tokens,
                const fm_perplexity_params &p, fm_session *base,
                fm_perplexity_result *result) {
  fm::PerplexityOptions o;
  o.ctx = p.ctx;
  o.chunks = p.chunks;
  o.bos = p.bos;
  o.prefillChunk = p.prefill_chunk;
  if (p.chunks < 0)
    return call.fail(FM_STATUS_INVALID_ARGUMENT,
                     "params->chunks " + std::to_string(p.chunks) + ": must be >= 0 (0: all)");
  session->chat.reset(); // the session is reset before every window
  if (base)
    base->chat.reset();
  auto r = fm::perplexity(*session->session, tokens, o, base ? base->session.get() : nullptr);
  if (!r)
    return call.fail(r.status());
  fm_perplexity_result &out = *result;
  out.ctx = r->ctx;
  out.chunks = r->chunks;
  out.tokens_scored = r->tokensScored;
  out.ppl = r->ppl;
  out.ppl_error = r->pplError;
  out.has_base = r->hasBase;
  out.base_ppl = r->basePpl;
  out.base_ppl_error = r->basePplError;
  out.delta_ppl = r->deltaPpl;
  out.delta_ppl_error = r->deltaPplError;
  out.kl_mean = r->klMean;
  out.kl_mean_error = r->klMeanError;
  out.kl_p90 = r->klP90;
  out.kl_p99 = r->klP99;
  out.kl_p999 = r->klP999;
  out.top1_agree = r->top1Agree;
  out.top1_agree_error = r->top1AgreeError;
  return FM_STATUS_OK;
}

fm_status common(Call &call, fm_session *session, const fm_perplexity_params *params,
                 fm_session *base, fm_perplexity_result *result,
                 fm_perplexity_params *p) {
  if (fm_status s = call.handle(session, Kind::Session, "session"))
    return s;
  if (fm_status s = call.optionalHandle(base, Kind::Session, "base"))
    return s;
  if (fm_status s = call.params(result, "result"))
    return s;
  *p = fm_perplexity_params_default();
  if (params) {
    if (fm_status s = call.params(params, "params"))
      return s;
    *p = *params;
  }
  return FM_STATUS_OK;
}

} // namespace

extern "C" {

fm_status fm_session_perplexity(fm_session *session, const int32_t *tokens, size_t n,
                                const fm_perplexity_params *params, fm_session *base,
                                fm_perplexity_result *result) {
  return guarded("fm_session_perplexity", [&](Call &call) {
    fm_perplexity_params p;
    if (fm_status s = common(call, session, params, base, result, &p))
      return s;
    if (!tokens && n > 0)
      return call.null("tokens");
    return score(call, session, std::vector<int32_t>(tokens, tokens + n), p, base,
                 result);
  });
}

fm_status fm_session_perplexity_text(fm_session *session, const char *text,
                                     const fm_perplexity_params *params,
                                     fm_session *base, fm_perplexity_result *result) {
  return guarded("fm_session_perplexity_text", [&](Call &call) {
    fm_perplexity_params p;
    if (fm_status s = common(call, session, params, base, result, &p))
      return s;
    if (!text)
      return call.null("text");
    const fm::Model &m = *session->model;
    if (!m.hasTokenizer())
      return call.fail(FM_STATUS_UNSUPPORTED,
                       m.name() + " embeds no tokenizer: score ids with "
                                  "fm_session_perplexity");
    if (base)
      if (fm::Status s = fm::checkPerplexityBase(m, *base->model); !s)
        return call.fail(s);
    auto tokenizer = m.tokenizer();
    if (!tokenizer)
      return call.fail(tokenizer.status());
    auto t = fm::perplexityTokens(*tokenizer, text);
    if (!t)
      return call.fail(t.status());
    p.bos = t->bos;
    return score(call, session, t->tokens, p, base, result);
  });
}

} // extern "C"
