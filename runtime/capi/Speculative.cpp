// fm.h: speculative decoding's settings on a session (a draft model's
// session, or prompt lookup); Generate.cpp runs the generations.
#include "capi/Objects.h"

using fm::capi::Call;
using fm::capi::guarded;
using fm::capi::Kind;

extern "C" {

fm_speculative_params fm_speculative_params_default(void) {
  fm_speculative_params p = {};
  p.struct_size = sizeof(p);
  fm::SpeculativeOptions o;
  p.draft_max = o.draftMax;
  p.draft_min = o.draftMin;
  p.draft_p_min = o.draftPMin;
  p.lookup_ngram = 3;
  return p;
}

fm_status fm_session_set_speculative(fm_session *session,
                                     const fm_speculative_params *params) {
  return guarded("fm_session_set_speculative", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    if (!params) {
      session->speculative.reset();
      return FM_STATUS_OK;
    }
    if (fm_status s = call.params(params, "params"))
      return s;
    const fm_speculative_params &p = *params;
    // The ranges fm-run's --draft-max, --draft-min, --draft-p-min and
    // --lookup take.
    if (p.draft_max < 1)
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       "params->draft_max " + std::to_string(p.draft_max) + ": must be >= 1");
    if (p.draft_min < 0 || p.draft_min > p.draft_max)
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       "params->draft_min " + std::to_string(p.draft_min) +
                           ": must be in [0, draft_max " + std::to_string(p.draft_max) +
                           "]");
    if (!(p.draft_p_min >= 0.0f && p.draft_p_min <= 1.0f))
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       "params->draft_p_min " + std::to_string(p.draft_p_min) +
                           ": must be in [0, 1]");
    if (fm_status s = call.optionalHandle(p.draft, Kind::Session, "params->draft"))
      return s;
    if (fm_status s =
            call.optionalHandle(p.draft_sampler, Kind::Sampler, "params->draft_sampler"))
      return s;
    if (!p.draft && p.lookup_ngram < 1)
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       "params->lookup_ngram " + std::to_string(p.lookup_ngram) +
                           ": must be >= 1");
    if (p.draft == session)
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       "params->draft is the session itself: the draft needs a session "
                       "of its own");
    if (p.draft)
      if (fm::Status s = fm::checkDraft(*session->model, *p.draft->model); !s)
        return call.fail(s, FM_STATUS_INVALID_ARGUMENT);
    fm_session::Speculative spec;
    spec.draft = p.draft;
    if (p.draft_sampler)
      spec.draftSampler = p.draft_sampler->sampler;
    spec.options.draftMax = p.draft_max;
    spec.options.draftMin = p.draft_min;
    spec.options.draftPMin = p.draft_p_min;
    spec.lookupNgram = p.lookup_ngram;
    session->speculative = std::move(spec);
    return FM_STATUS_OK;
  });
}

} // extern "C"
